/* Wire requests as object-store trace records (wire.h): the requests curl.c and http.c saw, one
 * JSON line each, in the format climio.trace.inject.objects writes (climio.trace.objects_reader),
 * so `climio trace report` shows them in its object-storage section with level "wire".
 *
 * An output module like counters.c (it includes core.h for the trace's file names): records go to
 * a 64 KiB buffer under a spinlock and are appended to DIR/objects-<host>-<pid>.wire.jsonl when it
 * fills and at every flush of the trace (exit, signals, exec, MPI_Finalize); the first write of a
 * process creates the file with its header line (an exec'd image appends to its predecessor's).
 * A request costs tens of microseconds at least, so a line of JSON per request is cheap; nothing
 * here is on the path of a call that is not an HTTP request.
 * Counters mode (CLIMIO_TRACE_MODE=counters): totals per (method, key) in a table of
 * WIRE_KEYS entries (then one "(other)" key), the whole file rewritten at every flush. */
#include "core.h"
#include "wire.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WIRE_BUF (1 << 16)
#define WIRE_LINE 2048
#define WIRE_KEYS 1024

static char wbuf[WIRE_BUF];
static size_t wn;
static int wspin;          /* the buffer's lock: appends spin, a signal handler's flush tries once */
static int wfile_made;     /* this process has written its file's header */
static int any;            /* a record was ever made: no file otherwise */

typedef struct {
    char method[12];
    char key[512];
    uint64_t count, bytes, time_ns, failed;
} wire_total;
static wire_total *totals;   /* counters mode */
static size_t ntotals;

uint64_t ct_wire_now(void) { return ct_realtime_ns(); }

static void spin_lock(void) {
    while (__atomic_exchange_n(&wspin, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
}
static void spin_unlock(void) { __atomic_store_n(&wspin, 0, __ATOMIC_RELEASE); }

static void path_of(char *p, size_t cap, const char *suffix) {
    const char *slash = strrchr(ct_stem, '/');
    size_t d = slash ? (size_t)(slash - ct_stem) + 1 : 0;
    if (d >= cap) d = cap - 1;
    memcpy(p, ct_stem, d);
    p[d] = 0;
    size_t a = ct_cat(p, d, cap, "objects-");
    a = ct_cat(p, a, cap, slash ? slash + 1 : ct_stem);
    ct_cat(p, a, cap, suffix);
}

static size_t header(char *h, size_t cap, const char *mode) {
    size_t a = ct_cat(h, 0, cap, "{\"schema\":\"climio-objects/1\",\"source\":\"preload\",\"pid\":");
    a = ct_cat_i64(h, a, cap, ct_pid);
    a = ct_cat(h, a, cap, ",\"host\":\"");
    a = ct_cat(h, a, cap, ct_host);
    a = ct_cat(h, a, cap, "\",\"mode\":\"");
    a = ct_cat(h, a, cap, mode);
    a = ct_cat(h, a, cap, "\",\"t0_ns\":");
    a = ct_cat_u64(h, a, cap, ct_t0_ns);
    a = ct_cat(h, a, cap, ",\"t1_ns\":");
    a = ct_cat_u64(h, a, cap, ct_realtime_ns());
    return ct_cat(h, a, cap, ",\"settings\":{}}\n");
}

/* Append the buffer to the file (creating it with its header). Spinlock held. */
static void write_out(void) {
    if (!wn) return;
    char p[sizeof ct_stem + 64], h[600];
    path_of(p, sizeof p, ".wire.jsonl");
    int fd = -1;
    if (!wfile_made) {
        fd = ct_r_open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) ct_write_all(fd, h, header(h, sizeof h, "full"));
        wfile_made = 1;
    }
    if (fd < 0) fd = ct_r_open(p, O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ct_write_all(fd, wbuf, wn);
        ct_r_close(fd);
    }
    wn = 0;
}

/* ---- JSON without printf ---- */
static size_t jstr(char *d, size_t a, size_t cap, const char *s) {
    if (a + 1 < cap) d[a++] = '"';
    for (; s && *s && a + 8 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { d[a++] = '\\'; d[a++] = (char)c; }
        else if (c < 0x20 || c >= 0x7f) { a = ct_cat(d, a, cap, "%"); d[a++] = "0123456789ABCDEF"[c >> 4]; d[a++] = "0123456789ABCDEF"[c & 15]; }
        else d[a++] = (char)c;
    }
    d[a] = 0;
    return ct_cat(d, a, cap, "\"");
}
static size_t jkv_i(char *d, size_t a, size_t cap, const char *k, int64_t v) {
    a = ct_cat(d, a, cap, k);
    return ct_cat_i64(d, a, cap, v);
}

static size_t line_of(char *d, size_t cap, const ct_wire_rec *r) {
    size_t a = ct_cat(d, 0, cap, "{\"level\":\"wire\",\"lib\":");
    a = jstr(d, a, cap, r->lib);
    a = ct_cat(d, a, cap, ",\"method\":");
    a = jstr(d, a, cap, r->method);
    a = ct_cat(d, a, cap, ",\"op\":");
    a = jstr(d, a, cap, r->method);
    a = ct_cat(d, a, cap, ",\"key\":");
    a = jstr(d, a, cap, r->key);
    if (r->has_range) {
        a = jkv_i(d, a, cap, ",\"range\":[", r->range0);
        a = r->range1 >= 0 ? jkv_i(d, a, cap, ",", r->range1) : ct_cat(d, a, cap, ",null");
        a = ct_cat(d, a, cap, "]");
    } else {
        a = ct_cat(d, a, cap, ",\"range\":null");
    }
    a = r->status ? jkv_i(d, a, cap, ",\"status\":", r->status) : ct_cat(d, a, cap, ",\"status\":null");
    a = jkv_i(d, a, cap, ",\"bytes\":", r->bytes);
    a = jkv_i(d, a, cap, ",\"t0\":", (int64_t)r->t0);
    a = jkv_i(d, a, cap, ",\"t1\":", (int64_t)(r->t1 >= r->t0 ? r->t1 : r->t0));
    a = jkv_i(d, a, cap, ",\"t_done\":", (int64_t)(r->t_done >= r->t0 ? r->t_done : r->t0));
    a = jkv_i(d, a, cap, ",\"tid\":", (int64_t)syscall(SYS_gettid));
    a = ct_cat(d, a, cap, ",\"attempt\":1,\"retries\":0");
    if (r->error) {
        a = ct_cat(d, a, cap, ",\"error\":");
        a = jstr(d, a, cap, r->error);
    }
    return ct_cat(d, a, cap, "}\n");
}

static void total_add(const ct_wire_rec *r) {
    if (!totals && !(totals = calloc(WIRE_KEYS, sizeof *totals))) return;
    wire_total *t = NULL;
    for (size_t i = 0; i < ntotals && !t; i++)   /* few distinct keys per job; a scan is enough */
        if (!strcmp(totals[i].key, r->key) && !strcmp(totals[i].method, r->method)) t = &totals[i];
    if (!t) {
        t = &totals[ntotals < WIRE_KEYS ? ntotals++ : WIRE_KEYS - 1];
        if (!t->count) {
            ct_cat(t->method, 0, sizeof t->method, r->method);
            ct_cat(t->key, 0, sizeof t->key, ntotals < WIRE_KEYS ? r->key : "(other)");
        }
    }
    t->count++;
    t->bytes += (uint64_t)(r->bytes > 0 ? r->bytes : 0);
    t->time_ns += r->t1 > r->t0 ? r->t1 - r->t0 : 0;
    t->failed += r->error != NULL;
}

/* Counters mode: the whole file again, under a temporary name. Spinlock held. */
static void write_totals(void) {
    char p[sizeof ct_stem + 64], tmp[sizeof p + 8], line[WIRE_LINE];
    path_of(p, sizeof p, ".wire.jsonl");
    ct_cat(tmp, ct_cat(tmp, 0, sizeof tmp, p), sizeof tmp, ".tmp");
    int fd = ct_r_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ct_write_all(fd, line, header(line, sizeof line, "counters"));
    for (size_t i = 0; i < ntotals; i++) {
        const wire_total *t = &totals[i];
        size_t a = ct_cat(line, 0, sizeof line, "{\"level\":\"wire\",\"op\":");
        a = jstr(line, a, sizeof line, t->method);
        a = ct_cat(line, a, sizeof line, ",\"key\":");
        a = jstr(line, a, sizeof line, t->key);
        a = jkv_i(line, a, sizeof line, ",\"count\":", (int64_t)t->count);
        a = jkv_i(line, a, sizeof line, ",\"bytes\":", (int64_t)t->bytes);
        a = jkv_i(line, a, sizeof line, ",\"time_ns\":", (int64_t)t->time_ns);
        a = jkv_i(line, a, sizeof line, ",\"failed\":", (int64_t)t->failed);
        a = ct_cat(line, a, sizeof line, ",\"retries\":0}\n");
        ct_write_all(fd, line, a);
    }
    ct_r_close(fd);
    rename(tmp, p);
}

void ct_wire_emit(const ct_wire_rec *r) {
    if (!ct_active || !ct_own_process()) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;   /* our own file I/O is not traced */
    char line[WIRE_LINE];
    size_t n = ct_cnt_mode ? 0 : line_of(line, sizeof line, r);
    spin_lock();
    any = 1;
    if (ct_cnt_mode) {
        total_add(r);
    } else {
        if (wn + n > sizeof wbuf) write_out();
        memcpy(wbuf + wn, line, n);
        wn += n;
    }
    spin_unlock();
    ct_tls.inside = inside;
}

/* at every flush of the trace (async-signal-safe: a flush that finds the buffer busy leaves it) */
static void wire_flush(void) {
    if (!any || __atomic_exchange_n(&wspin, 1, __ATOMIC_ACQUIRE)) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    if (ct_cnt_mode) write_totals();
    else write_out();
    ct_tls.inside = inside;
    spin_unlock();
}

static void wire_fork_child(void) {   /* the child's own file */
    wn = ntotals = 0;
    wfile_made = any = 0;
    wspin = 0;
}

CT_MODULE(.name = "wire", .flush = wire_flush, .fork_child = wire_fork_child)

/* ---- URLs and ranges ---- */
static int kept_param(const char *s, size_t n) {
    static const char *const keep[] = {"prefix", "delimiter", "list-type", "max-keys"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        size_t k = strlen(keep[i]);
        if (n >= k && !memcmp(s, keep[i], k) && (n == k || s[k] == '=')) return 1;
    }
    return 0;
}

void ct_wire_clean_url(const char *url, size_t n, char *out, size_t cap) {
    size_t a = 0, i = 0;
    const char *sch = memmem(url, n, "://", 3);
    if (sch) {   /* the scheme, then the authority without user info */
        size_t s = (size_t)(sch - url) + 3;
        for (; i < s && a + 1 < cap; i++) out[a++] = url[i];
        size_t end = s;
        while (end < n && url[end] != '/' && url[end] != '?' && url[end] != '#') end++;
        const char *at = memchr(url + s, '@', end - s);
        i = at ? (size_t)(at - url) + 1 : s;
    }
    for (; i < n && url[i] != '?' && url[i] != '#' && a + 1 < cap; i++) out[a++] = url[i];
    if (i < n && url[i] == '?') {
        char sep = '?';
        size_t q = i + 1;
        while (q < n && url[q] != '#') {
            size_t e = q;
            while (e < n && url[e] != '&' && url[e] != '#') e++;
            if (kept_param(url + q, e - q) && a + (e - q) + 2 < cap) {
                out[a++] = sep;
                memcpy(out + a, url + q, e - q);
                a += e - q;
                sep = '&';
            }
            q = e < n && url[e] == '&' ? e + 1 : e;
        }
    }
    out[a < cap ? a : cap - 1] = 0;
}

static int64_t num(const char **p, const char *end) {
    int64_t v = -1;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) v = (v < 0 ? 0 : v * 10) + (**p - '0');
    return v;
}

int ct_wire_range(const char *s, size_t n, int64_t *a, int64_t *b) {
    *a = *b = -1;
    if (!s) return 0;
    const char *p = s, *end = s + n;
    while (p < end && *p == ' ') p++;
    if (end - p >= 6 && !strncasecmp(p, "bytes=", 6)) p += 6;
    int64_t x = num(&p, end);
    if (p >= end || *p != '-') return 0;
    p++;
    int64_t y = num(&p, end);
    if (x < 0) {   /* a suffix range bytes=-N: the last N bytes, [-N, null] as the Python tracer writes it */
        if (y < 0) return 0;
        *a = -y;
        return 1;
    }
    *a = x;
    *b = y >= 0 ? y + 1 : -1;
    return 1;
}
