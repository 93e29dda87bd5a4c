/* climio tracer: what the layers (posix.c, mpiio.c, netcdf.c, hdf5.c) use of the core.
 *
 * The core (core.h lists its files: config, clock, output, events, counters, core) holds the
 * configuration, the event buffer and its fast paths (inline here), the string table, the aux
 * writer, flushes, done.json, and the process lifecycle (exit, signals, fork, exec). A layer
 * calls it through this header and registers its own callbacks in the module table (CT_MODULE);
 * the core never calls a layer by name.
 * resolve.c  finding the real function behind an interposed symbol (RTLD_NEXT, or the caller's
 *            own scope for libraries loaded RTLD_LOCAL such as the netCDF4-python/h5py wheels)
 *
 * The file format is csrc/trace/FORMAT.md. */
#ifndef CLIMIO_TRACE_BUFFER_H
#define CLIMIO_TRACE_BUFFER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CT_HAVE_TSC 1
#else
#define CT_HAVE_TSC 0
#endif

#define CT_EXPORT __attribute__((visibility("default")))
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum { CT_POSIX = 1, CT_STDIO = 2, CT_MPIIO = 3, CT_NETCDF = 4, CT_HDF5 = 5 };
enum { CT_F_AUX = 1, CT_F_FAILED = 2 };

/* One event, 64 bytes, the on-disk record (little-endian hosts only). While buffered, t_start
 * and t_end hold raw timer ticks (TSC or ns); they become CLOCK_REALTIME ns in batches of 128
 * and at flush (events.c). */
typedef struct __attribute__((packed)) {
    uint64_t t_start, t_end;
    int64_t offset, size, ret;
    uint32_t file_id, func_id, var_id;
    int32_t rank;
    uint32_t tid;
    uint16_t depth;
    uint8_t layer, flags;
} ct_event;
_Static_assert(sizeof(ct_event) == 64, "event record must be 64 bytes");

/* Per-thread state. initial-exec TLS: one %fs-relative load, no __tls_get_addr call; fine for
 * a library that is preloaded (it is part of the static TLS block). */
typedef struct {
    uint32_t tid;    /* kernel tid, 0 until first needed */
    uint16_t depth;  /* traced calls in progress on this thread */
    uint8_t inside;  /* 1 while the tracer's own code runs: nothing it calls is traced */
} ct_thread;
extern __thread ct_thread ct_tls __attribute__((tls_model("initial-exec")));

/* The state every traced call reads, in one cache line: a system call evicts the tracer's data
 * from L1, and each line read again after it is a miss. */
typedef struct {
    ct_event *buf;        /* the event buffer being filled */
    size_t n;             /* events in it */
    size_t lim;           /* the fast paths append while n + 1 < lim (<= cap; see events.c) */
    uint64_t kept;        /* events kept by this image: the next one's index is base + kept */
    void *fdtab;          /* posix.c's descriptor table */
    const char *single;   /* &__libc_single_threaded (no thread was ever started), or a 0 */
    int active;           /* tracing configured and not finished */
    unsigned layers;      /* bit L set: layer L traced */
    int rank;             /* MPI rank, -1 before MPI_Init / without MPI */
    int use_tsc;          /* timer: 1 raw TSC (converted to ns in clock.c), 0 clock_gettime */
    /* second line, not read by the fast paths */
    size_t cap;           /* capacity of the buffer */
    uint64_t base;        /* events in the .events file before this image (exec) */
    uint64_t max;         /* CLIMIO_TRACE_MAX_EVENTS, 0 = no cap (then lim is 0) */
} __attribute__((aligned(64))) ct_state;
extern ct_state ct_g __attribute__((visibility("hidden")));   /* config.c; not exported: no GOT load */
#define ct_active ct_g.active
#define ct_layers ct_g.layers
#define ct_rank ct_g.rank
#define ct_use_tsc ct_g.use_tsc

/* Is `layer` traced for a call made now on this thread? */
static inline int ct_on(int layer) {
    return CT_LIKELY(ct_active) && (ct_layers >> layer & 1u) && !ct_tls.inside;
}

uint64_t ct_realtime_ns(void);
static inline uint64_t ct_now(void) {
#if CT_HAVE_TSC
    if (CT_LIKELY(ct_use_tsc)) return __rdtsc();
#endif
    return ct_realtime_ns();
}

/* Append an event (tid and rank are filled in). Returns its index in this process's .events
 * file, or -1 when it was dropped (CLIMIO_TRACE_MAX_EVENTS reached, or tracing finished).
 * Fast path, inlined: while the process has never started a thread (glibc's
 * __libc_single_threaded) no other thread can append, so no lock is taken (an atomic exchange
 * is a fifth of the tracer's cost per call); not for the event that reaches ct_g.lim (the end
 * of the buffer, or of a batch of 128 whose timestamps are then converted), nor with a cap. */
int64_t ct_emit_slow(ct_event *e);
#define ct_ev_buf ct_g.buf
#define ct_ev_n ct_g.n
#define ct_ev_cap ct_g.cap
#define ct_ev_base ct_g.base
#define ct_ev_kept ct_g.kept
#define ct_ev_max ct_g.max
#define CT_SINGLE_THREADED() (*ct_g.single)
/* The fast path's slot: the next free one (fill it with ct_fill, then ct_commit), or NULL: then
 * build the event and call ct_emit_slow. */
static inline ct_event *ct_slot(void) {
    if (CT_LIKELY(CT_SINGLE_THREADED() && ct_tls.tid && ct_g.n + 1 < ct_g.lim && ct_active))
        return &ct_ev_buf[ct_ev_n];
    return NULL;
}
static inline int64_t ct_commit(void) {
    __atomic_signal_fence(__ATOMIC_RELEASE);   /* the event before the count (signal handlers) */
    ct_ev_n++;
    return (int64_t)(ct_ev_base + ct_ev_kept++);
}
/* Store a record in place, the small fields as three 8-byte words (little-endian). Building it
 * on the stack and copying it stalls on store forwarding (16-byte loads of 1-8-byte stores):
 * that copy was the largest cost of the fast path after the two timestamps. */
static inline void ct_fill(ct_event *s, uint64_t t0, uint64_t t1, int64_t off, int64_t size, int64_t ret,
                           uint32_t file, uint32_t func, uint32_t var, uint16_t depth, uint8_t layer,
                           uint8_t flags) {
    uint64_t w5 = file | (uint64_t)func << 32, w6 = var | (uint64_t)(uint32_t)ct_rank << 32,
             w7 = ct_tls.tid | (uint64_t)depth << 32 | (uint64_t)layer << 48 | (uint64_t)flags << 56;
    if (CT_UNLIKELY(t1 < t0)) t1 = t0;   /* thread moved CPU / clock step */
    char *d = (char *)s;
    __builtin_memcpy(d, &t0, 8);
    __builtin_memcpy(d + 8, &t1, 8);
    __builtin_memcpy(d + 16, &off, 8);
    __builtin_memcpy(d + 24, &size, 8);
    __builtin_memcpy(d + 32, &ret, 8);
    __builtin_memcpy(d + 40, &w5, 8);
    __builtin_memcpy(d + 48, &w6, 8);
    __builtin_memcpy(d + 56, &w7, 8);
}
static inline int64_t ct_emit(ct_event *e) {
    ct_event *s = ct_slot();
    if (CT_LIKELY(s)) {
        ct_fill(s, e->t_start, e->t_end, e->offset, e->size, e->ret, e->file_id, e->func_id, e->var_id,
                e->depth, e->layer, e->flags);
        return ct_commit();
    }
    return ct_emit_slow(e);
}

/* The wrapper skeleton: depth and both timestamps around the real call, errno preserved. */
#define CT_BEGIN() uint16_t ct_d_ = ct_tls.depth++; uint64_t ct_t0_ = ct_now()
#define CT_END() uint64_t ct_t1_ = ct_now(); ct_tls.depth = ct_d_; int ct_errno_ = errno
#define CT_EVENT(layer_, func_) \
    ct_event ev_ = {.t_start = ct_t0_, .t_end = ct_t1_, .offset = -1, .size = -1, .depth = ct_d_, \
                    .layer = (layer_), .func_id = (func_)}
#define CT_RETURN(v) do { errno = ct_errno_; return (v); } while (0)

/* The fast path of the POSIX data calls (read/write/pread/...): everything the record needs is
 * read before the real call; after it (the system call has evicted the tracer's data from L1)
 * only ct_g is read again, and the record is stored. The slot is reserved before the call and
 * used only if no event was appended meanwhile (a signal handler's I/O, which may also have
 * flushed the buffer): ct_g.kept unchanged. Nothing between the call and the return changes
 * errno (a flush saves it), so it is neither saved nor restored; a failure's is read at once. */
typedef struct {
    ct_event *slot;        /* reserved slot; NULL: the slow path */
    uint64_t kept;         /* ct_g.kept when reserved */
    uint64_t w5, w6, w7;   /* file|func, var|rank, tid|depth|layer|flags: bytes 40-63 */
    uint64_t t0;
    ct_thread *tls;
    uint16_t depth;
} ct_io;
void ct_io_slow(const ct_io *c, uint64_t t1, int64_t off, int64_t size, int64_t ret, uint64_t w7);
static inline void ct_io_begin(ct_io *c, uint32_t file, uint32_t func, uint8_t layer) {
    ct_thread *t = &ct_tls;
    uint16_t d = t->depth;
    t->depth = (uint16_t)(d + 1);
    c->tls = t;
    c->depth = d;
    c->slot = NULL;
    if (CT_LIKELY(CT_SINGLE_THREADED() && t->tid && ct_g.n + 1 < ct_g.lim)) {
        c->slot = ct_g.buf + ct_g.n;
        c->kept = ct_g.kept;
    }
    c->w5 = file | (uint64_t)func << 32;
    c->w6 = (uint64_t)(uint32_t)ct_g.rank << 32;
    c->w7 = t->tid | (uint64_t)d << 32 | (uint64_t)layer << 48;
    c->t0 = ct_now();
}
/* r: the call's result; < 0: failed, with errno as the call left it */
static inline void ct_io_end(ct_io *c, int64_t off, int64_t size, int64_t r) {
    uint64_t t1 = ct_now();
    c->tls->depth = c->depth;
    uint64_t w7 = c->w7;
    int64_t ret = r;
    if (CT_UNLIKELY(r < 0)) {
        ret = -(int64_t)errno;
        w7 |= (uint64_t)CT_F_FAILED << 56;
    }
    if (CT_LIKELY(c->slot != NULL && ct_g.kept == c->kept && ct_g.active)) {
        if (CT_UNLIKELY(t1 < c->t0)) t1 = c->t0;   /* thread moved CPU / clock step */
        char *d = (char *)c->slot;
        __builtin_memcpy(d, &c->t0, 8);
        __builtin_memcpy(d + 8, &t1, 8);
        __builtin_memcpy(d + 16, &off, 8);
        __builtin_memcpy(d + 24, &size, 8);
        __builtin_memcpy(d + 32, &ret, 8);
        __builtin_memcpy(d + 40, &c->w5, 8);
        __builtin_memcpy(d + 48, &c->w6, 8);
        __builtin_memcpy(d + 56, &w7, 8);
        __atomic_signal_fence(__ATOMIC_RELEASE);   /* the event before the count (signal handlers) */
        ct_g.n++;
        ct_g.kept = c->kept + 1;
        return;
    }
    ct_io_slow(c, t1, off, size, ret, w7);
}

/* String table: dense ids from 1, "<id>\t<text>\n" lines (a newline in a text becomes '?'). */
uint32_t ct_intern(const char *s);
const char *ct_text(uint32_t id);   /* the text of an id (valid for the process lifetime) */
#define CT_FUNC_ID(name) ({ \
    static uint32_t id_; \
    uint32_t v_ = __atomic_load_n(&id_, __ATOMIC_RELAXED); \
    if (CT_UNLIKELY(!v_)) { v_ = ct_intern(name); __atomic_store_n(&id_, v_, __ATOMIC_RELAXED); } \
    v_; })

/* Paths: absolute and lexically normalised (".", "..", "//"); relative ones against dirfd
 * (AT_FDCWD: the cwd). Returns 0 on success. */
int ct_abspath(const char *path, int dirfd, char *out, size_t n);
int ct_excluded(const char *abs);     /* under a CLIMIO_TRACE_EXCLUDE prefix (or the trace dir) */
uint32_t ct_path_id(const char *path, int dirfd);   /* 0 when excluded or empty */

/* Growing string builder for aux records (never used from a signal handler). */
typedef struct { char *p; size_t n, cap; } ct_sb;
void ct_sb_printf(ct_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ct_sb_json(ct_sb *b, const char *s);                /* quoted and escaped */
void ct_sb_sizes(ct_sb *b, const size_t *v, int n);      /* [v0,v1,...] */
/* Without printf (the per-call aux of the netCDF layer is built from these: vsnprintf per
 * number cost ~2 us per call there). */
void ct_sb_cat(ct_sb *b, const char *s, size_t n);       /* n bytes as they are */
void ct_sb_str(ct_sb *b, const char *s);                 /* a C string as it is */
void ct_sb_i64(ct_sb *b, int64_t v);                     /* decimal */
void ct_sb_free(ct_sb *b);
ct_sb *ct_sb_scratch(void);                              /* this thread's, emptied */
/* Write {"ev":ev<body>}\n where body is ',"key":value,...' (or empty). */
void ct_aux(int64_t ev, const ct_sb *body);

/* Slow-path lock of the layers' own tables (recursive; taken around fork). */
void ct_lock(void);
void ct_unlock(void);

/* Real functions. POSIX/libc: the next definition after us (RTLD_NEXT). */
void *ct_dlsym_next(const char *name);
#define CT_REAL(fn) ({ \
    static __typeof__(&fn) r_; \
    CT_LIKELY(r_) ? r_ : (r_ = (__typeof__(&fn))ct_dlsym_next(#fn)); })

/* Library functions (MPI, netCDF, HDF5): see resolve.c. `caller` is the return address of the
 * interposed call, so a library loaded RTLD_LOCAL gets its own copy of the callee. */
typedef struct {
    uintptr_t lo, hi;   /* address range of the calling object */
    void *fn;
} ct_by_caller;
typedef struct {
    const char *name;
    void *global;       /* definition visible after us in the global scope */
    int state;          /* 0 untried, 1 global found, 2 none global: per caller */
    int local_first;    /* the caller's own scope before the global one (libcurl: handles of one copy) */
    int n;              /* entries of by_caller published */
    ct_by_caller by_caller[8];
} ct_resolver;
void *ct_resolve_slow(ct_resolver *r, const void *caller);
static inline void *ct_resolve(ct_resolver *r, const void *caller) {
    int s = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (CT_LIKELY(s == 1)) return r->global;
    if (s == 2) {   /* published entries are immutable: no lock to read them */
        int n = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE);
        for (int i = 0; i < n; i++)
            if ((uintptr_t)caller >= r->by_caller[i].lo && (uintptr_t)caller < r->by_caller[i].hi)
                return r->by_caller[i].fn;
    }
    return ct_resolve_slow(r, caller);
}
/* A resolver per (function, call site file), e.g. CT_LIB(nc_inq_varname, caller) */
#define CT_LIB(fn, caller) ({ \
    static ct_resolver R_ = {.name = #fn}; (__typeof__(&fn))ct_resolve(&R_, (caller)); })
/* The same, the caller's own scope first: for libraries of which a process may hold several copies
 * whose handles mean nothing to each other (the netCDF4 wheel's libcurl beside a system one). */
#define CT_LIB_LOCAL(fn, caller) ({ \
    static ct_resolver R_ = {.name = #fn, .local_first = 1}; (__typeof__(&fn))ct_resolve(&R_, (caller)); })
int ct_in_self(const void *addr);    /* address inside libclimio-trace.so */
void ct_missing(const char *name);   /* report an unresolvable real function (once) */

int ct_own_process(void);   /* not a vfork() child sharing our memory (one getpid call) */

/* Counters (counters.c): CLIMIO_TRACE_MODE=counters, and a full trace past its event cap */
extern int ct_cnt_mode;          /* 1: counters mode (events only every ct_cnt_sample-th call) */
extern uint32_t ct_cnt_sample;   /* CLIMIO_TRACE_SAMPLE (0: no events) */
void ct_count(const ct_event *e);          /* count one call (event lock held or single-threaded) */
void ct_cnt_capped(uint64_t t_start);      /* the first call past the cap started at t_start */

/* MPI_Finalize: a safe point, the rank is known: everything so far on disk, done.json says
 * "finalize"; tracing goes on until exit (core.c). */
void ct_mpi_finalize_hook(void);

/* What `climio trace try` injects (try.c, CLIMIO_TRY_*): redirected read-only opens, chunk caches. */
extern int ct_try_n;   /* redirects configured */
const char *ct_try_path_slow(const char *path, int dirfd, int readonly);
/* `path`, or the converted copy it is redirected to when it names a redirected file (device and
 * inode) and the open is read-only; one branch when nothing is redirected. */
static inline const char *ct_try_path(const char *path, int dirfd, int readonly) {
    return CT_UNLIKELY(ct_try_n) ? ct_try_path_slow(path, dirfd, readonly) : path;
}
typedef struct { int on; size_t bytes, slots; double w0; } ct_try_cache;
extern ct_try_cache ct_try_nc, ct_try_h5;   /* CLIMIO_TRY_NC_CACHE, CLIMIO_TRY_H5_CACHE */

/* The module table. A module (a layer, or the counters) registers what the core calls at its
 * points of the lifecycle, each optional:
 *   init        once tracing is configured, before the first traced call
 *   flush       at every flush of the event buffer, at exit, signals, exec and MPI_Finalize
 *               (async-signal-safe: no allocation, no locks)
 *   fork_child  in a fork()ed child, before it traces (its own file set, its own state)
 * CT_MODULE(.name = "posix", .init = fn) in a layer's file registers it before the core starts
 * (a constructor of higher priority than the core's). At most CT_MAX_MODULES. */
typedef struct {
    const char *name;
    void (*init)(void);
    void (*flush)(void);
    void (*fork_child)(void);
} ct_module;
#define CT_MAX_MODULES 8
void ct_register(const ct_module *m);
#define CT_MODULE(...) \
    static const ct_module ct_module_ = {__VA_ARGS__}; \
    __attribute__((constructor(101))) static void ct_module_register_(void) { ct_register(&ct_module_); }

#endif
