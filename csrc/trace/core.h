/* climio tracer: what the core's files share among themselves (the layers include buffer.h only).
 *
 *   config.c   the environment (CLIMIO_TRACE_*), the real libc functions the tracer's own I/O
 *              uses, paths and exclusions, and the module table
 *   clock.c    the timer: TSC ticks to CLOCK_REALTIME ns
 *   output.c   the trace's files: stem, string table, aux records
 *   events.c   the event buffer and its writes (direct through io_uring, or through the page cache)
 *   counters.c the counts of counters mode and past the event cap
 *   core.c     lifecycle: start, flushes and done.json, exit, signals, fork, exec
 *
 * Calls go down that list's dependency order (core > events > counters > output > clock >
 * config), never back up: the core reaches the layers only through the module table. */
#ifndef CLIMIO_TRACE_CORE_H
#define CLIMIO_TRACE_CORE_H

#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "buffer.h"

/* ---- config.c ---- */
extern const char *const ct_single_flag;   /* &__libc_single_threaded, or a 0 where glibc has none */
/* The tracer's own I/O goes to the real libc functions (never to our wrappers). */
extern ssize_t (*ct_r_write)(int, const void *, size_t);
extern ssize_t (*ct_r_pwrite)(int, const void *, size_t, off_t);
extern ssize_t (*ct_r_read)(int, void *, size_t);
extern int (*ct_r_open)(const char *, int, ...);
extern int (*ct_r_close)(int);
extern int (*ct_r_fstat)(int, struct stat *);
extern int (*ct_r_ftruncate)(int, off_t);
extern int (*ct_r_sigaction)(int, const struct sigaction *, struct sigaction *);
void ct_real_init(void);   /* look them up (RTLD_NEXT) */

typedef struct {
    char dir[PATH_MAX];     /* CLIMIO_TRACE_DIR, absolute */
    unsigned layers;        /* CLIMIO_TRACE_LAYERS: bit L set for layer L */
    uint64_t max_events;    /* CLIMIO_TRACE_MAX_EVENTS, 0: no cap */
    uint64_t buffer_bytes;  /* CLIMIO_TRACE_BUFFER */
    int counters;           /* CLIMIO_TRACE_MODE=counters */
    uint32_t sample;        /* CLIMIO_TRACE_SAMPLE */
    int direct;             /* CLIMIO_TRACE_DIRECT not "0" */
    int realtime_clock;     /* CLIMIO_TRACE_CLOCK=realtime */
} ct_config;
/* Read the environment: 0 when tracing is configured (a writable CLIMIO_TRACE_DIR, which is
 * also excluded, as are the CLIMIO_TRACE_EXCLUDE prefixes), -1 when not. */
int ct_config_load(ct_config *c);
extern const char *const ct_layer_names[];   /* by layer id: "", "posix", "stdio", ... */

/* The module table: what the layers and the counters registered (buffer.h, CT_MODULE). */
void ct_modules_init(void);
void ct_modules_flush(void);        /* async-signal-safe */
void ct_modules_fork_child(void);

/* ---- text without printf (async-signal-safe): append to dst[at..cap), return the new end ---- */
static inline size_t ct_cat(char *dst, size_t at, size_t cap, const char *s) {
    while (*s && at + 1 < cap) dst[at++] = *s++;
    dst[at] = 0;
    return at;
}
/* Two digits per division (the netCDF layer's aux writes ~10 numbers per call). */
static inline size_t ct_cat_u64(char *dst, size_t at, size_t cap, uint64_t v) {
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
static inline size_t ct_cat_i64(char *dst, size_t at, size_t cap, int64_t v) {
    if (v < 0) { at = ct_cat(dst, at, cap, "-"); return ct_cat_u64(dst, at, cap, (uint64_t)0 - (uint64_t)v); }
    return ct_cat_u64(dst, at, cap, (uint64_t)v);
}

/* ---- clock.c ---- */
extern uint64_t ct_t0_ns;                   /* CLOCK_REALTIME at the start of this process's trace */
void ct_clock_start(int realtime_clock);    /* choose the timer, take the start's anchor */
void ct_clock_restart(void);                /* fork child: a new start */
void ct_convert(ct_event *ev, size_t n);    /* raw ticks -> ns, in place (async-signal-safe) */
void ct_clock_now(uint64_t *tsc, uint64_t *ns, uint64_t *mult32);   /* now and ns per tick (32.32) */

/* ---- output.c ---- */
extern char ct_stem[PATH_MAX + 300];   /* DIR/<host>-<pid>: every file of this process's trace */
extern char ct_host[256];
extern pid_t ct_pid;
void ct_output_start(const char *dir);   /* host, pid, stem; the aux buffer; 0 */
int ct_output_ready(void);               /* the aux buffer was allocated */
void ct_output_fork_child(void);         /* a new pid, a new file set, every string again */
int ct_open_out(const char *suffix, int flags);
int ct_write_all(int fd, const void *buf, size_t n);
int ct_trylock(void);                    /* 0: ct_lock taken */
void ct_lock_reinit(void);               /* fork child: a fresh (recursive) table lock */
void ct_flush_strings(void);             /* the new ids to .strings (event lock held or in a signal) */
void ct_strings_adopt(void);             /* an earlier image's .strings: the same ids again */
void ct_flush_aux(void);                 /* table lock held */
int ct_aux_pending(void);

/* ---- counters.c ---- */
uint64_t ct_cnt_counted(void);

/* ---- events.c ---- */
int ct_events_setup(const ct_config *c);   /* the buffer(s); 0, or -1 when out of memory */
int ct_events_adopt(void);                 /* continue an earlier image's .events (exec); -1: none */
void ct_events_ready(void);                /* the append limits, once the state is set */
void ct_events_fork_child(void);
void ct_events_lock(void);
void ct_events_unlock(void);
int ct_events_trylock_for_signal(void);   /* 1: taken */
/* Write the buffered events (and the strings they name first); create: also an empty file.
 * in_signal: do not wait for a direct write in flight. Event lock held. */
void ct_flush_events(int create, int in_signal);
int ct_events_drain(void);                 /* wait for a direct write in flight; 0, or -1 failed */
uint64_t ct_events_dropped(void);
uint64_t ct_events_direct(void);

#endif
