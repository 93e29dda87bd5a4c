/* Counters: Darshan-style aggregates in bounded memory (CLIMIO_TRACE_MODE=counters, and the
 * continuation of a full trace past CLIMIO_TRACE_MAX_EVENTS).
 *
 * One record per (file, function, layer, rank) of this process: calls, failures, bytes requested
 * (data calls), bytes moved (positive results of data calls), Darshan's request-size histogram,
 * the four most common request sizes, cumulative / outermost (depth 0) / maximum time, first
 * start and last end. And one *stream* record (func_id 0) per (file, layer, kind, rank) for the
 * data calls with a known offset, classifying each access against the previous one of the same
 * stream as analysis.py does from events: transitions, consecutive (offset == previous end),
 * sequential (offset >= previous end), and the most common strides (offset - previous offset).
 * The whole table is rewritten to <stem>.counters (<stem>.exec<k>.counters for the k-th exec'd
 * image) at every flush of the event buffer, about once a second while counting, at exit, at
 * signals, exec and MPI_Finalize: a killed run keeps what it had at the last write.
 *
 * The table lives in memory that never moves while a signal handler may read it (grown tables
 * are not freed), holds at most CT_CNT_MAX records (beyond, calls are counted under file 0), and
 * is updated under the event lock (none while the process is single-threaded). Times are kept in
 * timer ticks and converted to ns when written. File format: FORMAT.md ("Counters"). */
#include "core.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CT_CNT_MAX 65536
#define CT_CNT_SLOTS 8   /* runtime common-value slots; the four largest are kept */

typedef struct {
    uint32_t file_id, func_id;   /* func_id 0: a stream record */
    int32_t rank;
    uint8_t layer, kind, pad0, pad1;   /* kind: 0 other, 1 read, 2 write */
    uint64_t count, failed, bytes, moved;
    uint64_t hist[10];
    uint64_t time, time_top, time_max, first, last;
    uint64_t transitions, consec, seq, unknown;
    int64_t last_off, last_end;
    int64_t stride[4];
    uint64_t stride_n[4];
    int64_t sz[4];
    uint64_t sz_n[4];
    uint32_t stream;   /* on disk 0; in memory: index + 1 of the function record's stream record */
    uint32_t pad2;
} ct_cnt_rec;
_Static_assert(sizeof(ct_cnt_rec) == 352, "counters record must be 352 bytes");

typedef struct {   /* runtime common-value slots of a record (sizes, or strides of a stream) */
    int64_t v[CT_CNT_SLOTS];
    uint64_t n[CT_CNT_SLOTS];
} ct_common;

typedef struct {
    char magic[8];      /* "CLIMIOCT" */
    uint32_t version;   /* 1 */
    uint32_t rec_size;  /* 352 */
    uint64_t n_records;
    uint64_t t0_ns;     /* the image's start */
    uint64_t counted;   /* calls counted (all of them in counters mode; those past the cap otherwise) */
    uint64_t capped_at_ns;   /* full trace: start of the first call past the cap; 0 */
    uint64_t written_ns;
    uint32_t sample;    /* counters mode: every sample-th call also kept as an event (0 none) */
    uint32_t mode;      /* 0 full trace past its cap, 1 counters mode */
} ct_cnt_head;
_Static_assert(sizeof(ct_cnt_head) == 64, "counters header must be 64 bytes");

static ct_cnt_rec *recs;         /* never freed while in use (see above) */
static ct_common *commons;       /* one per record, parallel to recs */
static uint32_t n_recs, cap_recs;
static uint32_t *hash;           /* index + 1; 0 empty */
static size_t hash_cap;
/* The records used last (index + 1), so that nested layers (nc_get_vara -> H5Dread -> pread)
 * each find theirs without a hash lookup: one "last hit" missed every time they alternated. */
#define CT_HITS 4
static uint32_t hits[CT_HITS];
static unsigned hit_next;
static uint64_t counted, capped_at, last_write;
static uint64_t write_every = 1000000000ull;   /* ticks between periodic writes (set at start) */
static int cnt_exec_k = -1;      /* file name suffix of this image (exec) */

int ct_cnt_mode;                 /* 1: CLIMIO_TRACE_MODE=counters (set by core.c from config.c) */
uint32_t ct_cnt_sample;          /* CLIMIO_TRACE_SAMPLE */

static int kind_of(uint32_t func) {
    const char *s = ct_text(func);
    if (!strncmp(s, "nc_get_var", 10) || !strncmp(s, "ncmpi_get_var", 13)) return 1;
    if (!strncmp(s, "nc_put_var", 10) || !strncmp(s, "ncmpi_put_var", 13)) return 2;
    for (const char *p = s; *p; p++) {
        if (strncasecmp(p, "read", 4) == 0 && strncasecmp(p + 4, "dir", 3) && strncasecmp(p + 4, "link", 4) &&
            strncasecmp(p + 4, "ahead", 5))
            return 1;
    }
    for (const char *p = s; *p; p++)
        if (strncasecmp(p, "write", 5) == 0) return 2;
    return 0;
}

/* kind_of per function id, remembered (direct-mapped): it scans the name. */
static int kind_cached(uint32_t func) {
    static uint32_t kc_func[256];
    static uint8_t kc_kind[256];
    if (!func) return 0;
    unsigned slot = (func * 2654435761u) >> 24;
    if (kc_func[slot] == func) return kc_kind[slot];
    int k = kind_of(func);
    kc_kind[slot] = (uint8_t)k;
    kc_func[slot] = func;
    return k;
}

static inline uint64_t key_hash(uint32_t file, uint32_t func, uint32_t lk, int32_t rank) {
    uint64_t h = ((uint64_t)file << 32 | func) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)lk << 32 | (uint32_t)rank) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

static int grow(void) {
    uint32_t cap = cap_recs ? cap_recs * 2 : 256;
    if (cap > CT_CNT_MAX) cap = CT_CNT_MAX;
    if (cap <= cap_recs) return -1;
    ct_cnt_rec *r = calloc(cap, sizeof *r);
    ct_common *c = calloc(cap, sizeof *c);
    size_t hc = (size_t)cap * 2;
    uint32_t *h = calloc(hc, sizeof *h);
    if (!r || !c || !h) { free(r); free(c); free(h); return -1; }
    if (n_recs) { memcpy(r, recs, n_recs * sizeof *r); memcpy(c, commons, n_recs * sizeof *c); }
    for (uint32_t i = 0; i < n_recs; i++) {
        ct_cnt_rec *x = &r[i];
        size_t k = key_hash(x->file_id, x->func_id, x->layer | (uint32_t)x->kind << 8, x->rank) & (hc - 1);
        while (h[k]) k = (k + 1) & (hc - 1);
        h[k] = i + 1;
    }
    /* publish the new table before the old one is dropped (a signal handler may be reading it);
     * the old one is kept (not freed): a handler that started on it can finish */
    __atomic_store_n(&commons, c, __ATOMIC_RELEASE);
    __atomic_store_n(&recs, r, __ATOMIC_RELEASE);
    hash = h;   /* only the counting thread (under the lock) reads it */
    hash_cap = hc;
    cap_recs = cap;
    return 0;
}

/* The record of the key, created if new; NULL when the table is full (then file 0 is used). */
static ct_cnt_rec *lookup(uint32_t file, uint32_t func, uint8_t layer, uint8_t kind, int32_t rank) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (hash_cap) {
            uint32_t lk = layer | (uint32_t)kind << 8;
            size_t m = hash_cap - 1, k = key_hash(file, func, lk, rank) & m;
            for (uint32_t i; (i = hash[k]); k = (k + 1) & m) {
                ct_cnt_rec *x = &recs[i - 1];
                if (x->file_id == file && x->func_id == func && x->layer == layer && x->kind == kind && x->rank == rank)
                    return x;
            }
            if (n_recs < cap_recs && (size_t)(n_recs + 1) * 2 <= hash_cap) {
                ct_cnt_rec *x = &recs[n_recs];
                memset(x, 0, sizeof *x);
                x->file_id = file;
                x->func_id = func;
                x->rank = rank;
                x->layer = layer;
                x->kind = kind;
                x->last_off = -1;
                x->last_end = -1;
                hash[k] = n_recs + 1;
                __atomic_store_n(&n_recs, n_recs + 1, __ATOMIC_RELEASE);
                return x;
            }
        }
        if (grow() != 0) break;
    }
    if (file != 0) return lookup(0, func, layer, kind, rank);   /* full: under "no file" */
    return NULL;
}

static inline void common_inc(ct_common *c, int64_t v) {
    int lo = 0;
    for (int i = 0; i < CT_CNT_SLOTS; i++) {
        if (c->n[i] && c->v[i] == v) { c->n[i]++; return; }
        if (c->n[i] < c->n[lo]) lo = i;
    }
    c->v[lo] = v;   /* an empty slot, or the least common value's (Darshan does the same) */
    c->n[lo] = 1;
}

static inline int bucket(int64_t s) {
    static const int64_t edges[9] = {100, 1 << 10, 10 << 10, 100 << 10, 1 << 20, 4 << 20, 10 << 20, 100 << 20,
                                     1 << 30};
    int b = 0;
    while (b < 9 && s > edges[b]) b++;
    return b;
}

static void ct_cnt_write(void);

/* Count one call (the event lock held, or the process single-threaded). */
void ct_count(const ct_event *e) {
    ct_cnt_rec *r = NULL;
    int32_t rank = ct_rank;
    for (int i = 0; i < CT_HITS; i++) {
        uint32_t li = hits[i];
        if (li && recs[li - 1].file_id == e->file_id && recs[li - 1].func_id == e->func_id &&
            recs[li - 1].layer == e->layer && recs[li - 1].rank == rank) {
            r = &recs[li - 1];
            break;
        }
    }
    if (!r) {
        r = lookup(e->file_id, e->func_id, e->layer, (uint8_t)kind_cached(e->func_id), rank);
        if (!r) return;
        hits[hit_next++ % CT_HITS] = (uint32_t)(r - recs) + 1;
    }
    uint64_t t0 = e->t_start, t1 = e->t_end, d = t1 - t0;
    if (!r->count || t0 < r->first) r->first = t0;
    if (t1 > r->last) r->last = t1;
    r->count++;
    r->time += d;
    if (!e->depth) r->time_top += d;
    if (d > r->time_max) r->time_max = d;
    if (e->flags & CT_F_FAILED) r->failed++;
    counted++;
    if (r->kind) {
        int64_t sz = e->size > 0 ? e->size : 0;
        r->bytes += (uint64_t)sz;
        if (e->ret > 0 && !(e->flags & CT_F_FAILED)) r->moved += (uint64_t)e->ret;
        r->hist[bucket(sz)]++;
        common_inc(&commons[r - recs], sz);
        if (e->file_id && e->offset >= 0 && (e->layer == CT_POSIX || e->layer == CT_STDIO || e->layer == CT_MPIIO)) {
            ct_cnt_rec *s = r->stream ? &recs[r->stream - 1] : NULL;
            if (!s) {
                uint32_t ri = (uint32_t)(r - recs);
                s = lookup(e->file_id, 0, e->layer, r->kind, rank);
                if (!s) return;
                r = &recs[ri];   /* the table may have grown */
                r->stream = (uint32_t)(s - recs) + 1;
            }
            if (!s->count || t0 < s->first) s->first = t0;
            s->count++;
            if (t1 > s->last) s->last = t1;
            s->bytes += (uint64_t)sz;
            if (s->last_end >= 0) {
                s->transitions++;
                if (e->offset == s->last_end) s->consec++;
                if (e->offset >= s->last_end) s->seq++;
                common_inc(&commons[s - recs], e->offset - s->last_off);
            }
            s->last_off = e->offset;
            s->last_end = e->offset + sz;
        } else if (e->offset < 0 && e->file_id && (e->layer == CT_POSIX || e->layer == CT_STDIO || e->layer == CT_MPIIO)) {
            r->unknown++;
        }
    }
    if (CT_UNLIKELY(t1 - last_write > write_every)) ct_cnt_write();
}

void ct_cnt_capped(uint64_t t) {
    if (!capped_at) capped_at = t;
}

/* ---- writing ----------------------------------------------------------------------------- */

static uint64_t tns(uint64_t t, uint64_t c_tsc, uint64_t c_ns, uint64_t m) {
    if (!ct_use_tsc) return t;
    return c_ns - (uint64_t)(int64_t)(((__int128)(int64_t)(c_tsc - t) * (__int128)m) >> 32);
}
static uint64_t dns(uint64_t d, uint64_t m) {
    return ct_use_tsc ? (uint64_t)(((unsigned __int128)d * m) >> 32) : d;
}

static size_t name_at(char *p, size_t cap) {
    const char *stem = ct_stem;
    size_t a = 0;
    while (*stem && a + 1 < cap) p[a++] = *stem++;
    if (cnt_exec_k > 0) {
        const char *x = ".exec";
        while (*x && a + 1 < cap) p[a++] = *x++;
        char t[12];
        int i = 0, k = cnt_exec_k;
        do t[i++] = (char)('0' + k % 10); while ((k /= 10));
        while (i && a + 1 < cap) p[a++] = t[--i];
    }
    const char *s = ".counters";
    while (*s && a + 1 < cap) p[a++] = *s++;
    p[a] = 0;
    return a;
}

/* Which file this image writes: the first <stem>[.exec<k>].counters that does not exist (an
 * exec'd image continues the pid's file set; the reader sums the images). */
static void pick_name(void) {
    char p[4200];
    for (cnt_exec_k = 0; cnt_exec_k < 1000; cnt_exec_k++) {
        name_at(p, sizeof p);
        if (access(p, F_OK) != 0) return;
    }
}

/* Rewrite the counters file (async-signal-safe: no allocation, no locks). */
static void ct_cnt_write(void) {
    uint32_t n = __atomic_load_n(&n_recs, __ATOMIC_ACQUIRE);
    ct_cnt_rec *rs = __atomic_load_n(&recs, __ATOMIC_ACQUIRE);
    if (!n && !counted) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    if (cnt_exec_k < 0) pick_name();
    ct_flush_strings();
    uint64_t c_tsc, c_ns, m;
    ct_clock_now(&c_tsc, &c_ns, &m);
    last_write = ct_now();
    char fin[4200], tmp[4220];
    size_t a = name_at(fin, sizeof fin);
    memcpy(tmp, fin, a);
    memcpy(tmp + a, ".tmp", 5);
    int fd = ct_r_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ct_cnt_head h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, "CLIMIOCT", 8);
        h.version = 1;
        h.rec_size = sizeof(ct_cnt_rec);
        h.n_records = n;
        h.t0_ns = ct_t0_ns;
        h.counted = counted;
        h.capped_at_ns = capped_at ? tns(capped_at, c_tsc, c_ns, m) : 0;
        h.written_ns = c_ns;
        h.sample = ct_cnt_mode ? ct_cnt_sample : 0;
        h.mode = (uint32_t)ct_cnt_mode;
        int ok = ct_write_all(fd, &h, sizeof h) == 0;
        ct_cnt_rec out[16];
        for (uint32_t i = 0; ok && i < n; i += 16) {
            uint32_t k = n - i < 16 ? n - i : 16;
            memcpy(out, rs + i, k * sizeof *out);
            for (uint32_t j = 0; j < k; j++) {
                ct_cnt_rec *x = &out[j];
                ct_common *c = &commons[i + j];
                x->first = x->count ? tns(x->first, c_tsc, c_ns, m) : 0;
                x->last = x->count ? tns(x->last, c_tsc, c_ns, m) : 0;
                x->time = dns(x->time, m);
                x->time_top = dns(x->time_top, m);
                x->time_max = dns(x->time_max, m);
                x->stream = 0;
                /* the four most common values of the slots, largest count first */
                uint64_t used = 0;
                for (int q = 0; q < 4; q++) {
                    int best = -1;
                    for (int s = 0; s < CT_CNT_SLOTS; s++)
                        if (!(used >> s & 1) && c->n[s] && (best < 0 || c->n[s] > c->n[best])) best = s;
                    int64_t v = best >= 0 ? c->v[best] : 0;
                    uint64_t cn = best >= 0 ? c->n[best] : 0;
                    if (best >= 0) used |= 1ull << best;
                    if (x->func_id) { x->sz[q] = v; x->sz_n[q] = cn; x->stride[q] = 0; x->stride_n[q] = 0; }
                    else { x->stride[q] = v; x->stride_n[q] = cn; x->sz[q] = 0; x->sz_n[q] = 0; }
                }
            }
            ok = ct_write_all(fd, out, k * sizeof *out) == 0;
        }
        ct_r_close(fd);
        if (ok) rename(tmp, fin);
    }
    ct_tls.inside = inside;
}

/* At start (after the stem is set and the timer chosen): written about once a second. */
static void cnt_init(void) {
    write_every = ct_use_tsc ? 2500000000ull : 1000000000ull;
    last_write = ct_now();
}

/* At every flush of the trace: a killed run keeps its counts so far. */
static void cnt_flush(void) {
    if (ct_cnt_mode || counted) ct_cnt_write();
}

/* fork child: the parent's counts are the parent's */
static void cnt_fork_child(void) {
    n_recs = 0;
    if (hash) memset(hash, 0, hash_cap * sizeof *hash);
    memset(hits, 0, sizeof hits);
    counted = capped_at = 0;
    cnt_exec_k = -1;
    last_write = ct_now();
}

uint64_t ct_cnt_counted(void) { return counted; }

CT_MODULE(.name = "counters", .init = cnt_init, .flush = cnt_flush, .fork_child = cnt_fork_child)
