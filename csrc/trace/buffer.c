/* climio tracer core: configuration, the event buffer, string table, aux writer, flushes and
 * done.json, the timer, and process lifecycle (exit, _exit, MPI_Finalize, signals, fork, exec).
 *
 * Buffering choice: ONE bounded buffer per process, not per-thread buffers.
 *  - the aux records name their event by its index in the .events file; with one buffer the
 *    index is known when the event is appended (per-thread buffers would only know it at flush);
 *  - CLIMIO_TRACE_MAX_EVENTS is an exact cap (one counter under the same lock);
 *  - signal handlers, exit and MPI_Finalize flush one buffer, whatever threads exist, and the
 *    memory does not grow with the number of threads (Dask, OpenMP).
 * While the process has never started a thread, appends take no lock (the fast paths in
 * buffer.h); afterwards they take a spinlock (one uncontended atomic exchange, a few ns; threads
 * that do I/O at the same instant contend for one cache line). The lock is held for a 64-byte
 * store, the conversion of 128 events' timestamps, and the write of a full buffer (every
 * CLIMIO_TRACE_BUFFER bytes), when waiters yield the CPU.
 * Full buffers are written with O_DIRECT through io_uring while the process is single-threaded
 * (see dio_write: no copy into the page cache, and the next buffer fills meanwhile; then there
 * are two buffers of CLIMIO_TRACE_BUFFER bytes), else with pwrite(2) through the page cache.
 *
 * Timer: on x86 with an invariant TSC that the kernel also uses as its clocksource, events hold
 * raw TSC ticks (rdtsc, cheaper than the vDSO clock_gettime in VMs) until they are converted to
 * CLOCK_REALTIME ns, every 128 events (while they are still in the cache) and at each flush, by
 * the line through a (TSC, CLOCK_REALTIME) anchor taken then and the previous one (see
 * ct_convert). Elsewhere, or with CLIMIO_TRACE_CLOCK=realtime, clock_gettime(CLOCK_REALTIME).
 *
 * Files are opened for each flush and closed again, never held open: a program that closes
 * "all" descriptors cannot break the trace, and a fork()ed child inherits nothing to share. */
#include "buffer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if CT_HAVE_TSC
#include <cpuid.h>
#endif

__thread ct_thread ct_tls __attribute__((tls_model("initial-exec")));
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
#include <sys/single_threaded.h>
#define CT_SINGLE_FLAG ((const char *)&__libc_single_threaded)
#else
#define CT_SINGLE_FLAG (&ct_zero)   /* no way to know: every append takes the lock */
#endif
static const char ct_zero;
ct_state ct_g = {.cap = 65536, .rank = -1, .single = &ct_zero};

/* The tracer's own I/O goes to the real libc functions (never to our wrappers). */
static ssize_t (*r_write)(int, const void *, size_t);
static ssize_t (*r_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*r_read)(int, void *, size_t);
static int (*r_open)(const char *, int, ...);
static int (*r_close)(int);
static int (*r_fstat)(int, struct stat *);
static int (*r_ftruncate)(int, off_t);
static int (*r_sigaction)(int, const struct sigaction *, struct sigaction *);

/* ---- configuration ---------------------------------------------------------------------- */
static char ct_dir[PATH_MAX];
static char ct_stem[PATH_MAX + 300];   /* DIR/<host>-<pid> */
static char ct_host[256];
static pid_t ct_pid;
static uint64_t ct_t0_ns;
static char **ct_excl;                 /* exclude prefixes, no trailing '/' */
static size_t *ct_excl_len, ct_nexcl;

static const char *const layer_names[] = {"", "posix", "stdio", "mpiio", "netcdf", "hdf5"};

void *ct_dlsym_next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) ct_missing(name);
    return p;
}

void ct_missing(const char *name) {
    char msg[256];
    int n = snprintf(msg, sizeof msg, "climio-trace: no real %s found\n", name);
    if (r_write && n > 0) r_write(2, msg, (size_t)n);
}

/* ---- timer ------------------------------------------------------------------------------ */
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
static void ct_convert(ct_event *ev, size_t n) {
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
    int fd = r_open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = r_read(fd, cs, sizeof cs - 1);
    r_close(fd);
    return n >= 3 && strncmp(cs, "tsc", 3) == 0;   /* the kernel trusts it across CPUs */
#else
    return 0;
#endif
}

/* ---- locks ------------------------------------------------------------------------------ */
static pthread_mutex_t ct_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int ev_spin;

void ct_lock(void) { pthread_mutex_lock(&ct_mu); }
void ct_unlock(void) { pthread_mutex_unlock(&ct_mu); }

static inline void spin_lock(void) {
    unsigned k = 0;
    while (__atomic_exchange_n(&ev_spin, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&ev_spin, __ATOMIC_RELAXED)) {
            if (++k < 64) __builtin_ia32_pause();
            else sched_yield();   /* the holder may be writing a full buffer */
        }
    }
}
static inline void spin_unlock(void) { __atomic_store_n(&ev_spin, 0, __ATOMIC_RELEASE); }

/* From a signal handler: the interrupted code may hold a lock; go on without it after a while
 * (the buffer and string table are consistent at every instant: data first, then the count). */
static int spin_trylock_for_signal(void) {
    for (int i = 0; i < 100000; i++) {
        if (!__atomic_exchange_n(&ev_spin, 1, __ATOMIC_ACQUIRE)) return 1;
        __builtin_ia32_pause();
    }
    return 0;
}

/* ---- output files ----------------------------------------------------------------------- */
static size_t cat(char *dst, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) dst[at++] = *s++;
    dst[at] = 0;
    return at;
}
/* Two digits per division (the netCDF layer's aux writes ~10 numbers per call). */
static size_t cat_u64(char *dst, size_t at, size_t cap, uint64_t v) {
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char t[24];
    int i = 24;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        t[--i] = pairs[2 * r + 1];
        t[--i] = pairs[2 * r];
    }
    if (v >= 10) {
        t[--i] = pairs[2 * v + 1];
        t[--i] = pairs[2 * v];
    } else {
        t[--i] = (char)('0' + v);
    }
    size_t n = (size_t)(24 - i);
    if (at + n + 1 > cap) n = cap > at + 1 ? cap - at - 1 : 0;
    memcpy(dst + at, t + i, n);
    at += n;
    dst[at] = 0;
    return at;
}
static size_t cat_i64(char *dst, size_t at, size_t cap, int64_t v) {
    if (v < 0) { at = cat(dst, at, cap, "-"); return cat_u64(dst, at, cap, (uint64_t)0 - (uint64_t)v); }
    return cat_u64(dst, at, cap, (uint64_t)v);
}

static int open_out(const char *suffix, int flags) {
    char p[sizeof ct_stem + 32];
    cat(p, cat(p, 0, sizeof p, ct_stem), sizeof p, suffix);
    return r_open(p, flags | O_WRONLY | O_CLOEXEC, 0644);
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = r_write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- string table ----------------------------------------------------------------------- */
#define STR_CHUNK 1024
#define STR_CHUNKS 4096
static char **str_chunk[STR_CHUNKS];   /* chunks never move: readable from a signal handler */
static uint32_t str_count;             /* published with release after the entry is stored */
static uint32_t str_written;           /* ids <= str_written are in the .strings file (ev_spin) */
static uint32_t *str_hash;             /* open addressing: id, 0 = empty */
static size_t str_hash_cap;

static inline const char *str_text(uint32_t id) { return str_chunk[(id - 1) / STR_CHUNK][(id - 1) % STR_CHUNK]; }

static uint32_t fnv(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void str_hash_insert(uint32_t id) {
    size_t m = str_hash_cap - 1, i = fnv(str_text(id)) & m;
    while (str_hash[i]) i = (i + 1) & m;
    str_hash[i] = id;
}

/* Store `s` as the next id (ct_mu held). 0 when the table is full or memory ran out. */
static uint32_t str_add(const char *s) {
    uint32_t id = str_count + 1;
    if (id > (uint32_t)STR_CHUNK * STR_CHUNKS) return 0;
    if ((size_t)id * 2 > str_hash_cap) {
        size_t cap = str_hash_cap ? str_hash_cap * 2 : 4096;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h) return 0;
        free(str_hash);
        str_hash = h;
        str_hash_cap = cap;
        for (uint32_t k = 1; k < id; k++) str_hash_insert(k);
    }
    char **chunk = str_chunk[(id - 1) / STR_CHUNK];
    if (!chunk && !(chunk = str_chunk[(id - 1) / STR_CHUNK] = calloc(STR_CHUNK, sizeof *chunk))) return 0;
    char *copy = strdup(s);
    if (!copy) return 0;
    for (char *c = copy; *c; c++)
        if (*c == '\n') *c = '?';   /* one line per string in the .strings file */
    chunk[(id - 1) % STR_CHUNK] = copy;
    __atomic_store_n(&str_count, id, __ATOMIC_RELEASE);
    str_hash_insert(id);
    return id;
}

uint32_t ct_intern(const char *s) {
    if (!s) return 0;
    char *clean = NULL;
    if (strchr(s, '\n')) {   /* stored with '?' for '\n': look up the same text */
        if (!(clean = strdup(s))) return 0;
        for (char *c = clean; *c; c++)
            if (*c == '\n') *c = '?';
        s = clean;
    }
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    pthread_mutex_lock(&ct_mu);
    uint32_t id = 0;
    if (str_hash_cap) {
        size_t m = str_hash_cap - 1, i = fnv(s) & m;
        for (; str_hash[i]; i = (i + 1) & m)
            if (strcmp(str_text(str_hash[i]), s) == 0) { id = str_hash[i]; break; }
    }
    if (!id) id = str_add(s);
    pthread_mutex_unlock(&ct_mu);
    ct_tls.inside = inside;
    free(clean);
    return id;
}

const char *ct_text(uint32_t id) {
    return id && id <= __atomic_load_n(&str_count, __ATOMIC_ACQUIRE) ? str_text(id) : "";
}

/* Write ids str_written+1 .. str_count (ev_spin held or in a signal handler). */
static void flush_strings(void) {
    uint32_t n = __atomic_load_n(&str_count, __ATOMIC_ACQUIRE);
    if (n <= str_written) return;
    int fd = open_out(".strings", O_CREAT | O_APPEND);
    if (fd < 0) return;
    char b[8192];
    size_t at = 0;
    for (uint32_t id = str_written + 1; id <= n; id++) {
        const char *t = str_text(id);
        size_t len = strlen(t);
        if (at + len + 16 > sizeof b) { write_all(fd, b, at); at = 0; }
        at = cat_u64(b, at, sizeof b, id);
        b[at++] = '\t';
        if (len + 2 > sizeof b - at) { write_all(fd, b, at); write_all(fd, t, len); at = 0; }
        else { memcpy(b + at, t, len); at += len; }
        b[at++] = '\n';
    }
    write_all(fd, b, at);
    r_close(fd);
    str_written = n;
}

/* ---- event buffer ----------------------------------------------------------------------- */
static uint64_t ev_dropped;
#define ev_buf ct_ev_buf
#define ev_cap ct_ev_cap
#define ev_n ct_ev_n
#define ev_base ct_ev_base
#define ev_kept ct_ev_kept
#define ev_max ct_ev_max

static size_t ev_conv;                 /* events of ev_buf already converted to ns */

/* The TSC values are converted every CT_CONV_CHUNK events (8 KiB), while they are still in the
 * cache, rather than all at the flush (a pass over a cold 4 MiB buffer: ~8 ns per event). The
 * fast paths append up to ct_g.lim; the event that reaches it goes through ct_emit_slow. */
#define CT_CONV_CHUNK 128
static size_t ev_flush_at;             /* flush when ev_n reaches it: ev_cap (see set_flush_at) */
static void set_lim(void) {
    size_t l = ct_use_tsc ? ev_conv + CT_CONV_CHUNK : ev_flush_at;
    /* a cap is counted in ct_emit_slow, and so is every call in counters mode */
    ct_g.lim = ev_max || ct_cnt_mode ? 0 : l < ev_flush_at ? l : ev_flush_at;
}
static uint64_t ev_file_off;           /* bytes of .events written or being written */
static uint64_t ev_direct;             /* buffers submitted as direct writes (done.json "direct_writes") */

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
    const char *p = buf;
    while (n) {
        ssize_t w = r_pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Through the page cache (the kernel copies the bytes): partial buffers, small buffers, and
 * wherever direct writes are not possible. Explicit offsets, so it may run while a direct write
 * of the previous buffer is still in flight (from a signal handler). */
static int write_buffered(const void *buf, size_t len, uint64_t off) {
    int fd = open_out(".events", O_CREAT);
    if (fd < 0) return -1;
    int r = pwrite_all(fd, buf, len, off);
    r_close(fd);
    return r;
}

/* Full buffers go to the file with O_DIRECT, asynchronously (io_uring): no copy into the page
 * cache, which was the largest cost of a flush (~16-20 ns of CPU per 64-byte event, plus the
 * cache and memory bandwidth the traced program's own I/O needs), and the program goes on
 * filling the second buffer meanwhile.
 *  - Only while the process is single-threaded (the thread that set the ring up is then the
 *    only one that flushes; the ring is registered to it), for buffers of whole pages at a
 *    page-aligned file offset, and never from a signal handler. Everything else, and any
 *    failure (CLIMIO_TRACE_DIRECT=0; a kernel before 6.3, io_uring disabled or refused by
 *    seccomp; a file system without O_DIRECT; a write that fails, comes short or has to wait
 *    for the device), takes the buffered write, as before.
 *  - No descriptor is held: the ring's is closed once registered (the index of a registered
 *    ring is used instead) and the file's once it is in the ring's fixed-file slot, so a
 *    program closing "all" descriptors cannot break the trace. The ring's memory is not
 *    inherited by fork() children (MADV_DONTFORK): a child starts its own.
 *  - The blocks are allocated first (fallocate): ext4 cannot start a direct write that extends
 *    the file or fills a hole without blocking, and io_uring then hands it to a kernel worker
 *    thread ("iou-wrk"), which shares the process's descriptor table: every system call on a
 *    descriptor (each traced pread) then takes a reference on its file (fdget/fput, ~20 ns).
 *    After each write the process is checked for such a worker; if there is one (a file system
 *    that blocks anyway), direct writes stop (the worker exits after 5 s idle).
 *  - Not Linux AIO: destroying an AIO context waits for an RCU grace period, ~30-40 ms added to
 *    every process exit; an io_uring is torn down asynchronously. */
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#include <time.h>
#ifndef IORING_FEAT_REG_REG_RING
#define IORING_FEAT_REG_REG_RING (1U << 13)              /* Linux 6.3 */
#endif
#ifndef IORING_REGISTER_USE_REGISTERED_RING
#define IORING_REGISTER_USE_REGISTERED_RING (1U << 31)   /* Linux 6.3 */
#endif
#define CT_HAVE_DIO 1
static struct {
    int state;             /* -1 not tried yet, 0 off, 1 on */
    unsigned ring;         /* index of the registered ring */
    uint32_t owner;        /* tid of the thread it is registered to */
    char *mem;             /* SQ and CQ rings (one mapping) */
    size_t mem_sz;
    struct io_uring_sqe *sqes;
    size_t sqes_sz;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    int busy;              /* a write in flight: */
    const void *w_buf;
    size_t w_len;
    uint64_t w_off;
    ct_event *buf[2];      /* the two buffers (buf[0] is ev_buf at start) */
} dio;

static long uring_register(unsigned fd, unsigned op, void *arg, unsigned n) {
    return syscall(SYS_io_uring_register, fd, op, arg, n);
}
static long uring_enter(unsigned submit, unsigned wait, unsigned flags) {
    long r;
    do r = syscall(SYS_io_uring_enter, dio.ring, submit, wait, flags | IORING_ENTER_REGISTERED_RING, NULL, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

static void uring_unmap(void) {
    if (dio.mem && dio.mem != MAP_FAILED) munmap(dio.mem, dio.mem_sz);
    if (dio.sqes && (void *)dio.sqes != MAP_FAILED) munmap(dio.sqes, dio.sqes_sz);
    dio.mem = NULL;
    dio.sqes = NULL;
}

/* 0: the ring is set up and registered to this thread */
static int uring_init(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = (int)syscall(SYS_io_uring_setup, 2u, &p);
    if (fd < 0) return -1;
    int ok = (p.features & IORING_FEAT_SINGLE_MMAP) && (p.features & IORING_FEAT_REG_REG_RING);
    if (ok) {
        size_t sq = p.sq_off.array + p.sq_entries * sizeof(unsigned);
        size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        dio.mem_sz = sq > cq ? sq : cq;
        dio.sqes_sz = p.sq_entries * sizeof(struct io_uring_sqe);
        dio.mem = mmap(NULL, dio.mem_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
        dio.sqes = mmap(NULL, dio.sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
        ok = dio.mem != MAP_FAILED && (void *)dio.sqes != MAP_FAILED;
    }
    struct io_uring_rsrc_update up;
    memset(&up, 0, sizeof up);
    up.offset = ~0u;   /* any free index */
    up.data = (uint64_t)fd;
    int none = -1;     /* one empty fixed-file slot */
    ok = ok && uring_register((unsigned)fd, IORING_REGISTER_RING_FDS, &up, 1) == 1 &&
         uring_register((unsigned)fd, IORING_REGISTER_FILES, &none, 1) == 0;
    r_close(fd);
    if (!ok) {
        uring_unmap();
        return -1;
    }
    madvise(dio.mem, dio.mem_sz, MADV_DONTFORK);
    madvise(dio.sqes, dio.sqes_sz, MADV_DONTFORK);
    dio.ring = up.offset;
    dio.owner = ct_tls.tid;
    dio.sq_tail = (unsigned *)(void *)(dio.mem + p.sq_off.tail);
    dio.sq_mask = (unsigned *)(void *)(dio.mem + p.sq_off.ring_mask);
    dio.sq_array = (unsigned *)(void *)(dio.mem + p.sq_off.array);
    dio.cq_head = (unsigned *)(void *)(dio.mem + p.cq_off.head);
    dio.cq_tail = (unsigned *)(void *)(dio.mem + p.cq_off.tail);
    dio.cq_mask = (unsigned *)(void *)(dio.mem + p.cq_off.ring_mask);
    dio.cqes = (struct io_uring_cqe *)(void *)(dio.mem + p.cq_off.cqes);
    return 0;
}

/* Threads of this process (1 while single-threaded, unless io_uring started a worker) */
static int tasks(void) {
    int fd = r_open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 1;
    char b[2048];
    int n = 0;
    long k;
    while ((k = syscall(SYS_getdents64, fd, b, sizeof b)) > 0)
        for (long at = 0; at < k;) {
            const char *name = b + at + 19;   /* struct linux_dirent64: d_name after 19 bytes */
            if (name[0] != '.') n++;
            at += *(const unsigned short *)(const void *)(b + at + 16);   /* d_reclen */
        }
    r_close(fd);
    return n ? n : 1;
}

/* Wait for the write in flight (if any); if it failed or came short, write its buffer again
 * through the page cache (the buffer is not reused before this). 0 on success. */
static int dio_reap(void) {
    if (!dio.busy) return 0;
    uint64_t t0 = ct_realtime_ns();
    unsigned head = *dio.cq_head;
    int res = -1;
    int enter = ct_tls.tid == dio.owner;   /* only the owner can wait in the kernel */
    for (int spins = 0; head == __atomic_load_n(dio.cq_tail, __ATOMIC_ACQUIRE); spins++) {
        if (enter) {
            if (uring_enter(0, 1, IORING_ENTER_GETEVENTS) < 0) enter = 0;
        } else if (spins > 500000) {   /* ~10 s: the completion is not coming */
            goto failed;
        } else {   /* another thread: the owner posts the completion (woken by the kernel) */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    res = dio.cqes[head & *dio.cq_mask].res;
    __atomic_store_n(dio.cq_head, head + 1, __ATOMIC_RELEASE);
    if (CT_SINGLE_THREADED() && tasks() > 1) dio.state = 0;   /* an io_uring worker: see above */
failed:
    dio.busy = 0;
    /* the device is slower than the program fills a buffer: the page cache absorbs that better */
    if (ct_realtime_ns() - t0 > 5000000) dio.state = 0;
    if (res == (int)dio.w_len) return 0;
    dio.state = 0;
    return write_buffered(dio.w_buf, dio.w_len, dio.w_off);
}

/* Submit ev_buf[0..len) at ev_file_off and switch to the other buffer. 0: submitted (or written
 * through the page cache), -1: failed. */
static int dio_write(size_t len) {
    if (dio_reap() != 0) return -1;
    if (dio.state < 0) dio.state = uring_init() == 0;   /* first full buffer: the ring */
    int fd = dio.state > 0 ? open_out(".events", O_CREAT | O_DIRECT) : -1;
    struct io_uring_files_update fu;
    memset(&fu, 0, sizeof fu);
    fu.fds = (uint64_t)(uintptr_t)&fd;
    int ok = fd >= 0 && fallocate(fd, 0, (off_t)ev_file_off, (off_t)len) == 0 &&
             uring_register(dio.ring, IORING_REGISTER_FILES_UPDATE | IORING_REGISTER_USE_REGISTERED_RING, &fu, 1) == 1;
    if (fd >= 0) r_close(fd);   /* the fixed-file slot holds the file */
    if (ok) {
        unsigned tail = *dio.sq_tail, k = tail & *dio.sq_mask;
        struct io_uring_sqe *s = &dio.sqes[k];
        memset(s, 0, sizeof *s);
        s->opcode = IORING_OP_WRITE;
        s->flags = IOSQE_FIXED_FILE;
        s->fd = 0;
        s->addr = (uint64_t)(uintptr_t)ev_buf;
        s->len = (uint32_t)len;
        s->off = ev_file_off;
        dio.sq_array[k] = k;
        __atomic_store_n(dio.sq_tail, tail + 1, __ATOMIC_RELEASE);
        ok = uring_enter(1, 0, 0) == 1;
    }
    if (!ok) {
        dio.state = 0;
        return write_buffered(ev_buf, len, ev_file_off);
    }
    dio.busy = 1;
    ev_direct++;
    dio.w_buf = ev_buf;
    dio.w_len = len;
    dio.w_off = ev_file_off;
    ev_buf = dio.buf[ev_buf == dio.buf[0]];
    return 0;
}
#else
#define CT_HAVE_DIO 0
#endif

/* Direct writes need a page-aligned file offset. When the file does not end at a page boundary
 * (an exec'd image continuing it, a flush of a partial buffer at MPI_Finalize), the next flush
 * comes early, after the events that fill that page (at most 63), so that later full buffers
 * can be written directly again. */
static void set_flush_at(void) {
    ev_flush_at = ev_cap;
#if CT_HAVE_DIO
    size_t head = (size_t)((4096 - ev_file_off % 4096) % 4096) / sizeof(ct_event);
    if (dio.state && head && head < ev_cap) ev_flush_at = head;
#endif
}

/* Write the buffered events (and the strings they name first). in_signal: do not wait for a
 * direct write in flight (the interrupted code may be waiting for it). */
static void flush_events(int create, int in_signal) {
    int e = errno;   /* the wrappers do not save it */
    flush_strings();   /* ids before the events that name them */
    if (ev_n || create) {
        if (ev_conv < ev_n) ct_convert(ev_buf + ev_conv, ev_n - ev_conv);
        ev_conv = ev_n;   /* a signal handler flushing again does not convert twice */
        size_t len = ev_n * sizeof(ct_event);
        int bad;
#if CT_HAVE_DIO
        if (dio.state && ev_n == ev_cap && len % 4096 == 0 && ev_file_off % 4096 == 0 && !in_signal &&
            CT_SINGLE_THREADED() && (dio.state < 0 || ct_tls.tid == dio.owner))
            bad = dio_write(len) != 0;
        else
            bad = (!in_signal && dio_reap() != 0) || write_buffered(ev_buf, len, ev_file_off) != 0;
#else
        (void)in_signal;
        bad = write_buffered(ev_buf, len, ev_file_off) != 0;
#endif
        ev_file_off += len;
        ev_n = ev_conv = 0;
        set_flush_at();
        set_lim();
        /* the trace directory went away or filled up: stop, and leave no done.json (= partial) */
        if (bad) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);
    }
    if (ct_cnt_mode || ct_cnt_counted()) ct_cnt_write();   /* a killed run keeps its counts so far */
    errno = e;
}

void ct_io_slow(const ct_io *c, uint64_t t1, int64_t off, int64_t size, int64_t ret, uint64_t w7) {
    ct_event e = {.t_start = c->t0, .t_end = t1, .offset = off, .size = size, .ret = ret,
                  .file_id = (uint32_t)c->w5, .func_id = (uint32_t)(c->w5 >> 32), .depth = c->depth,
                  .layer = (uint8_t)(w7 >> 48), .flags = (uint8_t)(w7 >> 56)};
    ct_emit_slow(&e);
}

static uint64_t cnt_seen;   /* counters mode: calls seen, for the sampled events */

int64_t ct_emit_slow(ct_event *e) {
    if (CT_UNLIKELY(!ct_tls.tid)) ct_tls.tid = (uint32_t)syscall(SYS_gettid);
    int64_t idx = -1;
    if (ct_cnt_mode) {
        /* counters mode: every call is counted; every ct_cnt_sample-th is also kept as an event.
         * No lock while single-threaded (nothing else counts; a signal handler's write reads a
         * table that is consistent but for the call in progress). */
        int sample = ct_cnt_sample && ++cnt_seen % ct_cnt_sample == 0;
        int locked = sample || !CT_SINGLE_THREADED();
        if (locked) spin_lock();
        if (CT_LIKELY(ct_active)) {
            e->rank = ct_rank;
            ct_count(e);
        }
        if (!sample || !ct_active) {
            if (locked) spin_unlock();
            return -1;
        }
    } else {
        spin_lock();
    }
    if (CT_UNLIKELY(!ct_active)) {
        /* finished: nothing more is written */
    } else if (CT_UNLIKELY(ev_max && ev_kept >= ev_max)) {
        /* past the cap: not kept as an event ("dropped", the event trace is partial) but counted
         * (done.json "counted"; the report says from when) */
        ev_dropped++;
        ct_cnt_capped(e->t_start);
        ct_count(e);
    } else {
        idx = (int64_t)(ev_base + ev_kept++);
        /* tid, rank and t_end >= t_start (thread moved CPU / clock step) are ct_fill's */
        ct_fill(&ev_buf[ev_n], e->t_start, e->t_end, e->offset, e->size, e->ret, e->file_id, e->func_id,
                e->var_id, e->depth, e->layer, e->flags);
        __atomic_signal_fence(__ATOMIC_RELEASE);   /* the event before the count (signal handlers) */
        ev_n++;
        if (CT_UNLIKELY(ev_n >= ev_flush_at)) {
            flush_events(0, 0);
        } else if (ev_n - ev_conv >= CT_CONV_CHUNK && ct_use_tsc) {
            ct_convert(ev_buf + ev_conv, ev_n - ev_conv);
            ev_conv = ev_n;
        }
        set_lim();
    }
    spin_unlock();
    return idx;
}

/* ---- aux records ------------------------------------------------------------------------ */
static char *aux_buf;
static size_t aux_n, aux_cap = 1 << 16;

static void flush_aux(void) {
    if (!aux_n) return;
    int fd = open_out(".aux.jsonl", O_CREAT | O_APPEND);
    if (fd >= 0) { write_all(fd, aux_buf, aux_n); r_close(fd); }
    aux_n = 0;
}

static int sb_room(ct_sb *b, size_t need) {
    if (b->n + need < b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap <= b->n + need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

void ct_sb_printf(ct_sb *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < room) { b->n += (size_t)k; return; }
        if (!sb_room(b, (size_t)k)) return;
    }
}

/* A builder per thread, emptied, for an aux record built and written at once (no allocation per
 * call; never held across a call that could build another). */
ct_sb *ct_sb_scratch(void) {
    static __thread ct_sb b;
    b.n = 0;
    return &b;
}

void ct_sb_cat(ct_sb *b, const char *s, size_t n) {
    if (!n || !sb_room(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void ct_sb_str(ct_sb *b, const char *s) { ct_sb_cat(b, s, strlen(s)); }

void ct_sb_i64(ct_sb *b, int64_t v) {
    if (!sb_room(b, 24)) return;
    b->n = cat_i64(b->p, b->n, b->cap, v);
}

void ct_sb_json(ct_sb *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (!sb_room(b, 6 * n + 2)) return;   /* the worst case: every byte \\u00XX */
    char *d = b->p + b->n;
    *d++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *d++ = '\\';
            *d++ = (char)c;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(d, "\\u00", 4);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 15];
            d += 6;
        } else {
            *d++ = (char)c;
        }
    }
    *d++ = '"';
    *d = 0;
    b->n = (size_t)(d - b->p);
}

void ct_sb_sizes(ct_sb *b, const size_t *v, int n) {
    if (!sb_room(b, 2 + (size_t)(n > 0 ? n : 0) * 21)) return;
    size_t at = b->n;
    b->p[at++] = '[';
    for (int i = 0; i < n; i++) {
        if (i) b->p[at++] = ',';
        at = cat_u64(b->p, at, b->cap, v[i]);
    }
    b->p[at++] = ']';
    b->p[at] = 0;
    b->n = at;
}

void ct_sb_free(ct_sb *b) { free(b->p); b->p = NULL; b->n = b->cap = 0; }

void ct_aux(int64_t ev, const ct_sb *body) {
    if (ev < 0 || !aux_buf) return;
    char head[48];
    size_t h = cat(head, 0, sizeof head, "{\"ev\":");
    h = cat_i64(head, h, sizeof head, ev);
    size_t len = h + (body ? body->n : 0) + 2;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    pthread_mutex_lock(&ct_mu);
    if (aux_n + len > aux_cap) flush_aux();
    if (len > aux_cap) {   /* a huge record: straight to the file */
        int fd = open_out(".aux.jsonl", O_CREAT | O_APPEND);
        if (fd >= 0) {
            write_all(fd, head, h);
            if (body && body->n) write_all(fd, body->p, body->n);
            write_all(fd, "}\n", 2);
            r_close(fd);
        }
    } else {
        memcpy(aux_buf + aux_n, head, h);
        if (body && body->n) memcpy(aux_buf + aux_n + h, body->p, body->n);
        memcpy(aux_buf + aux_n + len - 2, "}\n", 2);
        aux_n += len;
    }
    pthread_mutex_unlock(&ct_mu);
    ct_tls.inside = inside;
}

/* ---- paths and exclusion ---------------------------------------------------------------- */
int ct_abspath(const char *path, int dirfd, char *out, size_t n) {
    char tmp[2 * PATH_MAX + 2];
    size_t at = 0;
    if (!path || !*path || n < 2) return -1;
    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            if (!getcwd(tmp, PATH_MAX)) return -1;
        } else {
            char link[64];
            cat_i64(link, cat(link, 0, sizeof link, "/proc/self/fd/"), sizeof link, dirfd);
            ssize_t k = readlink(link, tmp, PATH_MAX - 1);
            if (k <= 0) return -1;
            tmp[k] = 0;
        }
        at = strlen(tmp);
        tmp[at++] = '/';
    }
    size_t len = strlen(path);
    if (at + len >= sizeof tmp) return -1;
    memcpy(tmp + at, path, len + 1);
    /* lexical normalisation: components, dropping "" and ".", ".." pops one */
    size_t o = 0;
    const char *s = tmp;
    while (*s) {
        while (*s == '/') s++;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t cl = (size_t)(e - s);
        if (cl == 0 || (cl == 1 && s[0] == '.')) {
        } else if (cl == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + cl + 2 > n) return -1;
            out[o++] = '/';
            memcpy(out + o, s, cl);
            o += cl;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return 0;
}

int ct_excluded(const char *abs) {
    for (size_t i = 0; i < ct_nexcl; i++) {
        size_t l = ct_excl_len[i];
        if (strncmp(abs, ct_excl[i], l) == 0 && (abs[l] == '/' || abs[l] == 0 || l == 0)) return 1;
    }
    return 0;
}

uint32_t ct_path_id(const char *path, int dirfd) {
    char abs[PATH_MAX];
    if (!path || !*path) return 0;
    if (strstr(path, "://")) return ct_intern(path);   /* a URL (netCDF DAP, HDF5 ROS3) */
    if (ct_abspath(path, dirfd, abs, sizeof abs) != 0) return ct_intern(path);
    return ct_excluded(abs) ? 0 : ct_intern(abs);
}

static void add_exclude(const char *p, size_t len) {
    char raw[PATH_MAX], abs[PATH_MAX];
    if (!len || len >= sizeof raw) return;
    memcpy(raw, p, len);
    raw[len] = 0;
    if (ct_abspath(raw, AT_FDCWD, abs, sizeof abs) != 0) return;
    char **e = realloc(ct_excl, (ct_nexcl + 1) * sizeof *e);
    size_t *l = realloc(ct_excl_len, (ct_nexcl + 1) * sizeof *l);
    if (e) ct_excl = e;
    if (l) ct_excl_len = l;
    if (!e || !l) return;
    size_t al = strlen(abs);
    if (al == 1) al = 0;   /* "/" excludes everything */
    ct_excl[ct_nexcl] = strdup(abs);
    ct_excl_len[ct_nexcl++] = al;
}

/* ---- what counters.c needs --------------------------------------------------------------- */
const char *ct_cnt_stem(void) { return ct_stem; }
uint64_t ct_cnt_t0(void) { return ct_t0_ns; }
int ct_cnt_open(const char *path, int flags) { return r_open(path, flags, 0644); }
int ct_cnt_write_all(int fd, const void *buf, size_t n) { return write_all(fd, buf, n); }
int ct_cnt_close(int fd) { return r_close(fd); }
void ct_cnt_flush_strings(void) { flush_strings(); }
void ct_cnt_clock(uint64_t *tsc, uint64_t *ns, uint64_t *mult) {
    ct_anchor(tsc, ns);
    if (!ct_use_tsc) { *tsc = *ns = ct_realtime_ns(); *mult = 1ull << 32; return; }
    uint64_t m = ns_per_tick_32(*ns - an0_ns, *tsc - an0_tsc);
    if (!m && ap_ns) m = ns_per_tick_32(*ns - ap_ns, *tsc - ap_tsc);
    *mult = m ? m : (uint64_t)(4294967296.0 / 2.5);
}

/* ---- done.json and the end of a trace ---------------------------------------------------- */
static int ct_finished;

static void write_done(const char *end) {
    char b[4096];
    size_t a = cat(b, 0, sizeof b, "{\"pid\":");
    a = cat_i64(b, a, sizeof b, ct_pid);
    a = cat(b, a, sizeof b, ",\"rank\":");
    a = cat_i64(b, a, sizeof b, ct_rank);
    a = cat(b, a, sizeof b, ",\"host\":\"");
    a = cat(b, a, sizeof b, ct_host);
    a = cat(b, a, sizeof b, "\",\"events\":");
    a = cat_u64(b, a, sizeof b, ev_base + ev_kept);
    a = cat(b, a, sizeof b, ",\"dropped\":");
    a = cat_u64(b, a, sizeof b, ev_dropped);
    a = cat(b, a, sizeof b, ev_dropped ? ",\"partial\":true" : ",\"partial\":false");
    a = cat(b, a, sizeof b, ",\"mode\":\"");
    a = cat(b, a, sizeof b, ct_cnt_mode ? "counters" : "full");
    a = cat(b, a, sizeof b, "\",\"counted\":");
    a = cat_u64(b, a, sizeof b, ct_cnt_counted());
    a = cat(b, a, sizeof b, ",\"sample\":");
    a = cat_u64(b, a, sizeof b, ct_cnt_mode ? ct_cnt_sample : 0);
    a = cat(b, a, sizeof b, ",\"direct_writes\":");
    a = cat_u64(b, a, sizeof b, ev_direct);
    a = cat(b, a, sizeof b, ",\"end\":\"");
    a = cat(b, a, sizeof b, end);
    a = cat(b, a, sizeof b, "\",\"clock\":\"CLOCK_REALTIME\",\"timer\":\"");
    a = cat(b, a, sizeof b, ct_use_tsc ? "tsc" : "clock_gettime");
    a = cat(b, a, sizeof b, "\",\"t0_ns\":");
    a = cat_u64(b, a, sizeof b, ct_t0_ns);
    a = cat(b, a, sizeof b, ",\"layers\":[");
    int first = 1;
    for (int l = CT_POSIX; l <= CT_HDF5; l++) {
        if (!(ct_layers >> l & 1u)) continue;
        a = cat(b, a, sizeof b, first ? "\"" : ",\"");
        a = cat(b, a, sizeof b, layer_names[l]);
        a = cat(b, a, sizeof b, "\"");
        first = 0;
    }
    a = cat(b, a, sizeof b, "]}\n");
    char tmp[sizeof ct_stem + 32], fin[sizeof ct_stem + 32];
    cat(tmp, cat(tmp, 0, sizeof tmp, ct_stem), sizeof tmp, ".done.json.tmp");
    cat(fin, cat(fin, 0, sizeof fin, ct_stem), sizeof fin, ".done.json");
    int fd = r_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    write_all(fd, b, a);
    r_close(fd);
    rename(tmp, fin);   /* a reader never sees half a done.json */
}

/* Write everything buffered; with `end`, also done.json; `final` stops tracing.
 * in_signal: do not wait for locks the interrupted code may hold. */
static void ct_flush_all(const char *end, int final, int in_signal) {
    if (!ct_active) return;
    if (final && __atomic_exchange_n(&ct_finished, 1, __ATOMIC_ACQ_REL)) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    int mu = 1;
    if (!in_signal) pthread_mutex_lock(&ct_mu);
    else for (int i = 0; (mu = pthread_mutex_trylock(&ct_mu) == 0) == 0 && i < 1000; i++) sched_yield();
    int sp = in_signal ? spin_trylock_for_signal() : (spin_lock(), 1);
    flush_events(end != NULL, in_signal);
#if CT_HAVE_DIO
    if (!in_signal && dio_reap() != 0) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);   /* all on disk */
#endif
    if (mu) flush_aux();   /* without the lock another thread may be appending to it */
    if (end && ct_active) write_done(end);
    if (final) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);
    if (sp) spin_unlock();
    if (mu) pthread_mutex_unlock(&ct_mu);
    ct_tls.inside = inside;
}

/* MPI_Finalize: a safe point, the rank is known; tracing goes on until exit. */
void ct_mpi_finalize_hook(void) { ct_flush_all("finalize", 0, 0); }

int ct_own_process(void) { return getpid() == ct_pid; }
static int ct_same_process(void) { return ct_active && ct_own_process(); }   /* not a vfork child */

__attribute__((destructor)) static void ct_fini(void) {
    if (ct_same_process()) ct_flush_all("exit", 1, 0);
}

CT_EXPORT void _exit(int status) {
    static void (*real)(int);
    if (!real) real = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    if (ct_same_process()) ct_flush_all("exit", 1, 0);
    if (real) real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
CT_EXPORT void _Exit(int status) { _exit(status); }

/* exec keeps the pid, so the new image continues this file set (see ct_adopt); make sure what
 * this image buffered is in it first. (execl* are not intercepted: glibc calls execve from
 * inside libc, so their buffered events are lost and the new image finds no done.json.) */
static void ct_before_exec(void) {
    /* nothing recorded (the usual fork+exec child): leave no files behind */
    if (ct_same_process() && (ev_kept || ev_dropped || aux_n || ct_cnt_counted())) ct_flush_all(NULL, 0, 0);
}
CT_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    ct_before_exec();
    return CT_REAL(execve)(path, argv, envp);
}
CT_EXPORT int execv(const char *path, char *const argv[]) {
    ct_before_exec();
    return CT_REAL(execv)(path, argv);
}
CT_EXPORT int execvp(const char *file, char *const argv[]) {
    ct_before_exec();
    return CT_REAL(execvp)(file, argv);
}
CT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    ct_before_exec();
    return CT_REAL(execvpe)(file, argv, envp);
}

/* ---- signals ----------------------------------------------------------------------------
 * SIGTERM, SIGINT, SIGABRT get our handler at start (unless inherited as ignored). The program's
 * own later sigaction()/signal() for them are intercepted: we remember its handler (that is what
 * it reads back), keep ours installed with its mask and flags, and chain to its handler. Only when
 * the program's disposition is the default (termination) do we flush, write done.json with
 * end "signal:<n>" ("abort" for SIGABRT), restore SIG_DFL and re-raise. */
static const int ct_sigs[] = {SIGTERM, SIGINT, SIGABRT};
static struct sigaction prog_act[NSIG];   /* what the program believes is installed */
static unsigned char sig_state[NSIG];     /* 0 not managed, 1 ours installed, 2 program ignores it */

static void ct_on_signal(int sig, siginfo_t *si, void *uc) {
    int e = errno;
    struct sigaction pa = prog_act[sig];
    if (pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN) {
        if (pa.sa_flags & SA_RESETHAND) { prog_act[sig].sa_handler = SIG_DFL; prog_act[sig].sa_flags = 0; }
        if (pa.sa_flags & SA_SIGINFO) pa.sa_sigaction(sig, si, uc);
        else pa.sa_handler(sig);
        errno = e;
        return;
    }
    if (pa.sa_handler == SIG_IGN) { errno = e; return; }
    if (ct_same_process()) {
        char end[32];
        if (sig == SIGABRT) cat(end, 0, sizeof end, "abort");
        else cat_i64(end, cat(end, 0, sizeof end, "signal:"), sizeof end, sig);
        ct_flush_all(end, 1, 1);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    r_sigaction(sig, &dfl, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    errno = e;
}

static int managed(int sig) { return sig > 0 && sig < NSIG && sig_state[sig] != 0; }

/* Install ours on behalf of the program's `act` (ct_mu held). */
static int install(int sig, const struct sigaction *act) {
    if (act->sa_handler == SIG_IGN) {
        int r = r_sigaction(sig, act, NULL);
        if (r == 0) { prog_act[sig] = *act; sig_state[sig] = 2; }
        return r;
    }
    struct sigaction ours = *act;
    ours.sa_sigaction = ct_on_signal;
    ours.sa_flags = (act->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;   /* reset is emulated */
    if (act->sa_handler == SIG_DFL) { sigemptyset(&ours.sa_mask); ours.sa_flags = SA_SIGINFO | SA_RESTART; }
    int r = r_sigaction(sig, &ours, NULL);
    if (r == 0) { prog_act[sig] = *act; sig_state[sig] = 1; }
    return r;
}

CT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!r_sigaction) r_sigaction = ct_dlsym_next("sigaction");
    if (!managed(sig)) return r_sigaction(sig, act, old);
    pthread_mutex_lock(&ct_mu);
    struct sigaction prev = prog_act[sig];
    int r = act ? install(sig, act) : 0;
    pthread_mutex_unlock(&ct_mu);
    if (r == 0 && old) *old = prev;
    return r;
}

CT_EXPORT sighandler_t signal(int sig, sighandler_t h) {
    if (!managed(sig)) return CT_REAL(signal)(sig, h);
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;   /* glibc's BSD semantics */
    if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

static void install_signal_handlers(void) {
    for (size_t i = 0; i < sizeof ct_sigs / sizeof *ct_sigs; i++) {
        int sig = ct_sigs[i];
        struct sigaction cur;
        if (r_sigaction(sig, NULL, &cur) != 0) continue;
        if (cur.sa_handler == SIG_IGN) { prog_act[sig] = cur; sig_state[sig] = 2; continue; }
        install(sig, &cur);
    }
}

/* ---- start, fork ------------------------------------------------------------------------ */
static void set_stem(void) {
    size_t a = cat(ct_stem, 0, sizeof ct_stem, ct_dir);
    a = cat(ct_stem, a, sizeof ct_stem, "/");
    a = cat(ct_stem, a, sizeof ct_stem, ct_host);
    a = cat(ct_stem, a, sizeof ct_stem, "-");
    cat_i64(ct_stem, a, sizeof ct_stem, ct_pid);
}

/* A file set of this pid already exists: an earlier image of this process exec()ed us (or the
 * pid was reused). Continue it: same string ids, event indices after its events. */
static void ct_adopt(void) {
    char p[sizeof ct_stem + 32];
    struct stat st;
    cat(p, cat(p, 0, sizeof p, ct_stem), sizeof p, ".events");
    int fd = r_open(p, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    if (r_fstat(fd, &st) == 0) {
        off_t whole = st.st_size / (off_t)sizeof(ct_event) * (off_t)sizeof(ct_event);
        if (whole != st.st_size) r_ftruncate(fd, whole);   /* drop a torn record */
        ev_base = (uint64_t)whole / sizeof(ct_event);
        ev_file_off = (uint64_t)whole;
    }
    r_close(fd);
    cat(p, cat(p, 0, sizeof p, ct_stem), sizeof p, ".strings");
    if ((fd = r_open(p, O_RDONLY | O_CLOEXEC)) < 0) return;
    char *text = NULL;
    size_t n = 0;
    if (r_fstat(fd, &st) == 0 && (text = malloc((size_t)st.st_size + 1))) {
        ssize_t k;
        while (n < (size_t)st.st_size && (k = r_read(fd, text + n, (size_t)st.st_size - n)) > 0) n += (size_t)k;
        text[n] = 0;
    }
    r_close(fd);
    if (!text) return;
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        char *tab = strchr(line, '\t');
        if (!tab || strtoul(line, NULL, 10) != str_count + 1) break;   /* ids must stay dense */
        str_add(tab + 1);
    }
    free(text);
    str_written = str_count;
}

static void fork_prepare(void) { pthread_mutex_lock(&ct_mu); spin_lock(); }
static void fork_parent(void) { spin_unlock(); pthread_mutex_unlock(&ct_mu); }
static void fork_child(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ct_mu, &a);
    ev_spin = 0;
    if (!ct_active) return;
    /* a new file set under the child's pid; the parent's buffered events are the parent's */
    ct_tls.tid = 0;
    ct_pid = getpid();
    set_stem();
    ev_n = ev_conv = 0;
    ev_base = ev_kept = ev_dropped = 0;
    ev_file_off = 0;
    ev_direct = 0;
#if CT_HAVE_DIO
    /* the parent's ring (not mapped in the child) and its write in flight are not the child's */
    dio.mem = NULL;
    dio.sqes = NULL;
    dio.busy = 0;
    if (dio.state > 0) dio.state = -1;
#endif
    aux_n = 0;
    cnt_seen = 0;
    ct_cnt_fork_child();
    str_written = 0;   /* the child's .strings gets every id again */
    ct_t0_ns = ct_realtime_ns();
    ct_anchor(&an0_tsc, &an0_ns);
    ap_tsc = ar_tsc = arc_tsc = an0_tsc;
    ap_ns = ar_ns = arc_ns = an0_ns;
    char p[sizeof ct_stem + 32];
    cat(p, cat(p, 0, sizeof p, ct_stem), sizeof p, ".events");
    if (access(p, F_OK) == 0) ct_adopt();   /* pid reuse; strings are then re-read */
    set_flush_at();
    set_lim();
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *end ? dflt : (uint64_t)v;
}

__attribute__((constructor)) static void ct_init(void) {
    r_write = ct_dlsym_next("write");
    r_pwrite = ct_dlsym_next("pwrite");
    r_read = ct_dlsym_next("read");
    r_open = ct_dlsym_next("open");
    r_close = ct_dlsym_next("close");
    r_fstat = ct_dlsym_next("fstat");
    r_ftruncate = ct_dlsym_next("ftruncate");
    if (!r_sigaction) r_sigaction = ct_dlsym_next("sigaction");
    const char *dir = getenv("CLIMIO_TRACE_DIR");
    if (!dir || !*dir || !r_write || !r_pwrite || !r_open || !r_close || !r_sigaction) return;
    if (ct_abspath(dir, AT_FDCWD, ct_dir, sizeof ct_dir) != 0) return;
    mkdir(ct_dir, 0777);   /* `climio trace run` makes it; by hand it may not exist yet */
    if (access(ct_dir, W_OK | X_OK) != 0) {
        char msg[PATH_MAX + 80];
        size_t a = cat(msg, 0, sizeof msg, "climio-trace: cannot write to CLIMIO_TRACE_DIR ");
        a = cat(msg, cat(msg, a, sizeof msg, ct_dir), sizeof msg, "; not tracing\n");
        r_write(2, msg, a);
        return;
    }

    const char *layers = getenv("CLIMIO_TRACE_LAYERS");
    if (!layers) layers = "posix,mpiio,netcdf,hdf5";
    for (const char *s = layers; *s;) {
        size_t l = strcspn(s, ",");
        for (int k = CT_POSIX; k <= CT_HDF5; k++)
            if (l == strlen(layer_names[k]) && strncmp(s, layer_names[k], l) == 0)
                ct_layers |= 1u << k | (k == CT_POSIX ? 1u << CT_STDIO : 0);   /* stdio is posix */
        s += l + (s[l] == ',');
    }
    const char *excl = getenv("CLIMIO_TRACE_EXCLUDE");
    if (!excl) excl = "/proc:/sys:/dev";
    for (const char *s = excl; *s;) {
        size_t l = strcspn(s, ":");
        add_exclude(s, l);
        s += l + (s[l] == ':');
    }
    add_exclude(ct_dir, strlen(ct_dir));   /* never trace the trace */
    ev_max = env_u64("CLIMIO_TRACE_MAX_EVENTS", 0);
    const char *mode = getenv("CLIMIO_TRACE_MODE");
    ct_cnt_mode = mode && strcmp(mode, "counters") == 0;
    ct_cnt_sample = (uint32_t)env_u64("CLIMIO_TRACE_SAMPLE", 0);
    uint64_t bytes = env_u64("CLIMIO_TRACE_BUFFER", 4u << 20);
    ev_cap = bytes / sizeof(ct_event);
    if (ev_cap < 1) ev_cap = 1;
    size_t ev_bytes = ev_cap * sizeof(ct_event);
#if CT_HAVE_DIO
    /* two buffers for direct writes (one filled while the other is written), 2 MiB-aligned so
     * that they can be huge pages; pages are only touched when used */
    const char *direct = getenv("CLIMIO_TRACE_DIRECT");
    if (ev_bytes % 4096 == 0 && ev_bytes >= (256u << 10) && !(direct && strcmp(direct, "0") == 0)) {
        size_t huge = 2u << 20;
        char *m = mmap(NULL, 2 * ev_bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            char *a = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
            /* huge pages from the start: a fault zeroes 2 MiB (~0.1 ms here) where small pages
             * take one fault per 64 events (~3 % of a run of cached 4 KiB preads); they also
             * make the pinning of a direct write cheaper */
            madvise(a, 2 * ev_bytes, MADV_HUGEPAGE);
            dio.buf[0] = (ct_event *)(void *)a;
            dio.buf[1] = (ct_event *)(void *)(a + ev_bytes);
            dio.state = -1;
            ev_buf = dio.buf[0];
        }
    }
    if (!dio.state)
#endif
    ev_buf = mmap(NULL, ev_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    aux_buf = malloc(aux_cap);
    if (ev_buf == MAP_FAILED || !aux_buf) return;

    if (gethostname(ct_host, sizeof ct_host - 1) != 0) cat(ct_host, 0, sizeof ct_host, "localhost");
    for (char *c = ct_host; *c; c++)
        if (*c == '/') *c = '_';
    ct_pid = getpid();
    set_stem();
    const char *clk = getenv("CLIMIO_TRACE_CLOCK");
    ct_use_tsc = !(clk && strcmp(clk, "realtime") == 0) && ct_tsc_usable();
    ct_t0_ns = ct_realtime_ns();
    ct_anchor(&an0_tsc, &an0_ns);
    ap_tsc = ar_tsc = arc_tsc = an0_tsc;
    ap_ns = ar_ns = arc_ns = an0_ns;
    ct_adopt();
    set_flush_at();
    set_lim();
    ct_cnt_init(ct_use_tsc ? 2500000000ull : 1000000000ull);   /* counters written about once a second */
    ct_g.single = CT_SINGLE_FLAG;
    ct_posix_init();
    install_signal_handlers();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    __atomic_store_n(&ct_active, 1, __ATOMIC_RELEASE);
}
