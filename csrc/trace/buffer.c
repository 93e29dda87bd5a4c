/* climio tracer core: configuration, the event buffer, string table, aux writer, flushes and
 * done.json, the timer, and process lifecycle (exit, _exit, MPI_Finalize, signals, fork, exec).
 *
 * Buffering choice: ONE bounded buffer per process behind a spinlock, not per-thread buffers.
 *  - the aux records name their event by its index in the .events file; with one buffer the
 *    index is known when the event is appended (per-thread buffers would only know it at flush);
 *  - CLIMIO_TRACE_MAX_EVENTS is an exact cap (one counter under the same lock);
 *  - signal handlers, exit and MPI_Finalize flush one buffer, whatever threads exist, and the
 *    memory does not grow with the number of threads (Dask, OpenMP).
 * The price is one uncontended atomic exchange per event (a few ns); threads that do I/O at the
 * same instant contend for one cache line. The lock is held for a 64-byte copy, and for the
 * write(2) of a full buffer (every CLIMIO_TRACE_BUFFER bytes), when waiters yield the CPU.
 *
 * Timer: on x86 with an invariant TSC that the kernel also uses as its clocksource, events hold
 * raw TSC ticks (one rdtsc, cheaper than the vDSO clock_gettime in VMs) and are converted to
 * CLOCK_REALTIME ns at each flush, by the line through (TSC, CLOCK_REALTIME) anchors taken at
 * that flush and at the previous one (or process start). Elsewhere, or with
 * CLIMIO_TRACE_CLOCK=realtime, clock_gettime(CLOCK_REALTIME).
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
int ct_active;
unsigned ct_layers;
int ct_rank = -1;
int ct_use_tsc;

/* The tracer's own I/O goes to the real libc functions (never to our wrappers). */
static ssize_t (*r_write)(int, const void *, size_t);
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
static uint64_t an_tsc, an_ns;     /* anchor at the previous flush */

static void ct_anchor(uint64_t *tsc, uint64_t *ns) {
#if CT_HAVE_TSC
    uint64_t a = __rdtsc();
    *ns = ct_realtime_ns();
    uint64_t b = __rdtsc();
    *tsc = a + (b - a) / 2;
#else
    *ns = ct_realtime_ns();
    *tsc = *ns;
#endif
}

/* Raw ticks -> CLOCK_REALTIME ns, in place (async-signal-safe). */
static void ct_convert(ct_event *ev, size_t n) {
    if (!ct_use_tsc || !n) return;
    uint64_t c_tsc, c_ns;
    do ct_anchor(&c_tsc, &c_ns); while ((int64_t)(c_ns - an0_ns) < 100000 && (int64_t)(c_ns - an0_ns) >= 0);
    double slope = 0;
    if ((int64_t)(c_ns - an_ns) >= 10000000 && c_tsc > an_tsc)      /* >= 10 ms: local rate */
        slope = (double)(c_ns - an_ns) / (double)(c_tsc - an_tsc);
    else if ((int64_t)(c_ns - an0_ns) > 0 && c_tsc > an0_tsc)       /* else since start */
        slope = (double)(c_ns - an0_ns) / (double)(c_tsc - an0_tsc);
    if (!(slope > 0.01 && slope < 100)) slope = 1.0 / 2.5;          /* clock stepped: a guess */
    __int128 mult = (__int128)(slope * 4294967296.0);                /* ns per tick, 32.32 fixed point */
    for (size_t i = 0; i < n; i++) {
        ev[i].t_start = c_ns - (uint64_t)(int64_t)(((__int128)(int64_t)(c_tsc - ev[i].t_start) * mult) >> 32);
        ev[i].t_end = c_ns - (uint64_t)(int64_t)(((__int128)(int64_t)(c_tsc - ev[i].t_end) * mult) >> 32);
    }
    an_tsc = c_tsc;
    an_ns = c_ns;
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
static size_t cat_u64(char *dst, size_t at, size_t cap, uint64_t v) {
    char t[24];
    int i = 0;
    do t[i++] = (char)('0' + v % 10); while ((v /= 10));
    while (i && at + 1 < cap) dst[at++] = t[--i];
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
ct_event *ct_ev_buf;
size_t ct_ev_cap = 65536, ct_ev_n;     /* events per buffer, events buffered */
uint64_t ct_ev_base;                   /* events already in the file before this image (exec) */
uint64_t ct_ev_kept, ct_ev_max;        /* events kept; cap (0 = none) */
static uint64_t ev_dropped;
#define ev_buf ct_ev_buf
#define ev_cap ct_ev_cap
#define ev_n ct_ev_n
#define ev_base ct_ev_base
#define ev_kept ct_ev_kept
#define ev_max ct_ev_max

static void flush_events(int create) {
    int e = errno;   /* the wrappers do not save it */
    flush_strings();   /* ids before the events that name them */
    if (ev_n || create) {
        int fd = open_out(".events", O_CREAT | O_APPEND);
        ct_convert(ev_buf, ev_n);
        int bad = fd < 0 || write_all(fd, ev_buf, ev_n * sizeof(ct_event)) != 0;
        if (fd >= 0) r_close(fd);
        ev_n = 0;
        /* the trace directory went away or filled up: stop, and leave no done.json (= partial) */
        if (bad) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);
    }
    errno = e;
}

int64_t ct_emit_slow(ct_event *e) {
    if (CT_UNLIKELY(!ct_tls.tid)) ct_tls.tid = (uint32_t)syscall(SYS_gettid);
    int64_t idx = -1;
    spin_lock();
    if (CT_UNLIKELY(!ct_active)) {
        /* finished: nothing more is written */
    } else if (CT_UNLIKELY(ev_max && ev_kept >= ev_max)) {
        ev_dropped++;
    } else {
        idx = (int64_t)(ev_base + ev_kept++);
        /* tid, rank and t_end >= t_start (thread moved CPU / clock step) are ct_fill's */
        ct_fill(&ev_buf[ev_n], e->t_start, e->t_end, e->offset, e->size, e->ret, e->file_id, e->func_id,
                e->var_id, e->depth, e->layer, e->flags);
        __atomic_signal_fence(__ATOMIC_RELEASE);   /* the event before the count (signal handlers) */
        ev_n++;
        if (CT_UNLIKELY(ev_n == ev_cap)) flush_events(0);
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

void ct_sb_printf(ct_sb *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < room) { b->n += (size_t)k; return; }
        size_t cap = b->cap ? b->cap : 256;
        while (cap <= b->n + (size_t)k) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p;
        b->cap = cap;
    }
}

void ct_sb_json(ct_sb *b, const char *s) {
    ct_sb_printf(b, "\"");
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') ct_sb_printf(b, "\\%c", c);
        else if (c < 0x20) ct_sb_printf(b, "\\u%04x", c);
        else ct_sb_printf(b, "%c", c);
    }
    ct_sb_printf(b, "\"");
}

void ct_sb_sizes(ct_sb *b, const size_t *v, int n) {
    ct_sb_printf(b, "[");
    for (int i = 0; i < n; i++) ct_sb_printf(b, i ? ",%zu" : "%zu", v[i]);
    ct_sb_printf(b, "]");
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
    flush_events(end != NULL);
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
    if (ct_same_process() && (ev_kept || ev_dropped || aux_n)) ct_flush_all(NULL, 0, 0);
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
    ev_n = 0;
    ev_base = ev_kept = ev_dropped = 0;
    aux_n = 0;
    str_written = 0;   /* the child's .strings gets every id again */
    ct_t0_ns = ct_realtime_ns();
    ct_anchor(&an0_tsc, &an0_ns);
    an_tsc = an0_tsc;
    an_ns = an0_ns;
    char p[sizeof ct_stem + 32];
    cat(p, cat(p, 0, sizeof p, ct_stem), sizeof p, ".events");
    if (access(p, F_OK) == 0) ct_adopt();   /* pid reuse; strings are then re-read */
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
    r_read = ct_dlsym_next("read");
    r_open = ct_dlsym_next("open");
    r_close = ct_dlsym_next("close");
    r_fstat = ct_dlsym_next("fstat");
    r_ftruncate = ct_dlsym_next("ftruncate");
    if (!r_sigaction) r_sigaction = ct_dlsym_next("sigaction");
    const char *dir = getenv("CLIMIO_TRACE_DIR");
    if (!dir || !*dir || !r_write || !r_open || !r_close || !r_sigaction) return;
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
    uint64_t bytes = env_u64("CLIMIO_TRACE_BUFFER", 4u << 20);
    ev_cap = bytes / sizeof(ct_event);
    if (ev_cap < 1) ev_cap = 1;
    ev_buf = mmap(NULL, ev_cap * sizeof(ct_event), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    an_tsc = an0_tsc;
    an_ns = an0_ns;
    ct_adopt();
    ct_posix_init();
    install_signal_handlers();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    __atomic_store_n(&ct_active, 1, __ATOMIC_RELEASE);
}
