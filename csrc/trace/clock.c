/* climio tracer core: the timer. On x86 with an invariant TSC that the kernel also uses as its
 * clocksource, events hold raw TSC ticks (rdtsc, cheaper than the vDSO clock_gettime in VMs)
 * until they are converted to CLOCK_REALTIME ns, every 128 events (while they are still in the
 * cache) and at each flush, by the line through a (TSC, CLOCK_REALTIME) anchor taken then and
 * the previous one (see ct_convert). Elsewhere, or with CLIMIO_TRACE_CLOCK=realtime,
 * clock_gettime(CLOCK_REALTIME). */
#include "core.h"

#include <fcntl.h>
#include <unistd.h>
#if CT_HAVE_TSC
#include <cpuid.h>
#endif

uint64_t ct_t0_ns;

uint64_t ct_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t an0_tsc, an0_ns;   /* anchor at process start */
static uint64_t ap_tsc, ap_ns;     /* the previous conversion's anchor (or the start's) */
static uint64_t ar_tsc, ar_ns;     /* the long-term rate's reference: >= 10 ms before ap */
static uint64_t arc_tsc, arc_ns;   /* its successor */

/* A (TSC, CLOCK_REALTIME) pair. One whose two TSC reads are far apart (an interrupt or a
 * preemption between them: the pair would be off by up to half of it) is taken again. */
static void ct_anchor(uint64_t *tsc, uint64_t *ns) {
#if CT_HAVE_TSC
    uint64_t best = ~0ull;
    for (int i = 0; i < 8 && best > 1000; i++) {
        uint64_t a = __rdtsc();
        uint64_t t = ct_realtime_ns();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *ns = t;
            *tsc = a + (b - a) / 2;
        }
    }
#else
    *ns = ct_realtime_ns();
    *tsc = *ns;
#endif
}

static uint64_t ns_per_tick_32(uint64_t d_ns, uint64_t d_tsc) {   /* 32.32 fixed point; 0: none */
    if (!d_tsc || (int64_t)d_ns <= 0 || (int64_t)d_tsc <= 0) return 0;
    double s = (double)d_ns / (double)d_tsc;
    return s > 0.01 && s < 100 ? (uint64_t)(s * 4294967296.0) : 0;
}

/* c - (c_tsc - t) * mult, for t before c_tsc (or slightly after) */
static inline uint64_t tick_to_ns(uint64_t t, uint64_t c_tsc, uint64_t c_ns, uint64_t mult) {
    uint64_t d = c_tsc - t;
    if (CT_LIKELY(d < (1ull << 31) && mult < (1ull << 32))) return c_ns - (d * mult >> 32);   /* no overflow */
    return c_ns - (uint64_t)(int64_t)(((__int128)(int64_t)d * (__int128)mult) >> 32);
}

/* Raw ticks -> CLOCK_REALTIME ns, in place (async-signal-safe). A new anchor is taken; ticks
 * since the previous anchor are mapped by the line through the two (so consecutive batches
 * join up: no step back between them, whatever the error of an anchor), older ticks (calls that
 * began before it) by the long-term rate (>= 10 ms, else since the start) from the previous
 * anchor backwards. */
void ct_convert(ct_event *ev, size_t n) {
    if (!ct_use_tsc || !n) return;
    uint64_t c_tsc, c_ns;
    do ct_anchor(&c_tsc, &c_ns); while ((int64_t)(c_ns - an0_ns) < 100000 && (int64_t)(c_ns - an0_ns) >= 0);
    uint64_t m_long = 0;
    if ((int64_t)(c_ns - ar_ns) >= 10000000) m_long = ns_per_tick_32(c_ns - ar_ns, c_tsc - ar_tsc);
    if (!m_long) m_long = ns_per_tick_32(c_ns - an0_ns, c_tsc - an0_tsc);
    if (!m_long) m_long = (uint64_t)(4294967296.0 / 2.5);           /* clock stepped: a guess */
    uint64_t m_in = ns_per_tick_32(c_ns - ap_ns, c_tsc - ap_tsc);   /* 0: stepped back, or no time */
    uint64_t p_tsc = ap_tsc, p_ns = ap_ns;
    if (!m_in) { m_in = m_long; p_tsc = 0; }                         /* one line for all, from c */
    for (size_t i = 0; i < n; i++) {
        uint64_t a = ev[i].t_start, b = ev[i].t_end;
        ev[i].t_start = CT_LIKELY(a >= p_tsc) ? tick_to_ns(a, c_tsc, c_ns, m_in) : tick_to_ns(a, p_tsc, p_ns, m_long);
        ev[i].t_end = CT_LIKELY(b >= p_tsc) ? tick_to_ns(b, c_tsc, c_ns, m_in) : tick_to_ns(b, p_tsc, p_ns, m_long);
    }
    ap_tsc = c_tsc;
    ap_ns = c_ns;
    /* the long-term reference moves up once its successor is 10 ms old: rates over 10-20 ms
     * windows when converting often (following NTP's adjustments), longer otherwise */
    if ((int64_t)(c_ns - arc_ns) >= 10000000 || (int64_t)(c_ns - arc_ns) < 0) {
        ar_tsc = arc_tsc;
        ar_ns = arc_ns;
        arc_tsc = c_tsc;
        arc_ns = c_ns;
    }
}

static int ct_tsc_usable(void) {
#if CT_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8))) return 0;   /* invariant */
    char cs[64] = {0};
    int fd = ct_r_open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = ct_r_read(fd, cs, sizeof cs - 1);
    ct_r_close(fd);
    return n >= 3 && strncmp(cs, "tsc", 3) == 0;   /* the kernel trusts it across CPUs */
#else
    return 0;
#endif
}

/* The start of this process's trace (and of a fork child's): t0 and the anchors. */
void ct_clock_restart(void) {
    ct_t0_ns = ct_realtime_ns();
    ct_anchor(&an0_tsc, &an0_ns);
    ap_tsc = ar_tsc = arc_tsc = an0_tsc;
    ap_ns = ar_ns = arc_ns = an0_ns;
}

void ct_clock_start(int realtime_clock) {
    ct_use_tsc = !realtime_clock && ct_tsc_usable();
    ct_clock_restart();
}

/* Now, as a (TSC, ns) pair, and ns per tick (32.32) over the longest span known (the counters'
 * conversion when they are written). */
void ct_clock_now(uint64_t *tsc, uint64_t *ns, uint64_t *mult) {
    ct_anchor(tsc, ns);
    if (!ct_use_tsc) { *tsc = *ns = ct_realtime_ns(); *mult = 1ull << 32; return; }
    uint64_t m = ns_per_tick_32(*ns - an0_ns, *tsc - an0_tsc);
    if (!m && ap_ns) m = ns_per_tick_32(*ns - ap_ns, *tsc - ap_tsc);
    *mult = m ? m : (uint64_t)(4294967296.0 / 2.5);
}
