/* An HTTP/1.1 parser on plain-text client sockets (wire.h): the requests of clients that no other
 * hook records, such as obstore (Rust: reqwest/hyper over tokio; it coalesces nearby ranges and
 * retries by itself) talking to an http:// endpoint.
 *
 * posix.c marks a descriptor CT_WIRE_CANDIDATE when it finds it is a socket, and hands the first
 * bytes sent on it to ct_http_classify: an HTTP/1.x request line makes it CT_WIRE_HTTP, anything
 * else (a TLS handshake: https is never parsed, a server's response, another protocol) clears
 * the mark for the descriptor's lifetime. Sockets written by libcurl (curl.c records those) or by
 * Python's socket module (the Python tracer's botocore/aiohttp hooks record those) are left alone.
 *
 * Per HTTP descriptor, both directions are followed through their messages: on the way out the
 * request head (method, target, Host, Range; the body skipped by Content-Length or chunks), queued;
 * on the way in the response head (status; 1xx skipped), matched to the oldest queued request,
 * then its body (none for HEAD, 204, 304; Content-Length; chunked; or until the connection
 * closes). A record is made when the body is complete: t0 when the request head was sent, t1 when
 * the response head arrived, t_done at the body's last byte, bytes = body bytes received.
 * A connection closed with requests unanswered records them as failed. */
#include "buffer.h"
#include "wire.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#define HEAD_MAX 8192
#define QUEUE 16
#define CONN_MAX 65536

enum { B_HEAD = 0, B_LEN, B_CHUNK_SIZE, B_CHUNK_DATA, B_CHUNK_CRLF, B_TRAILER, B_EOF, B_BROKEN };

typedef struct {     /* one direction's message framing */
    int st;
    int64_t left;    /* B_LEN / B_CHUNK_DATA / B_CHUNK_CRLF: bytes still to skip */
    int64_t total;   /* body bytes seen */
    char line[32];   /* a chunk-size line (its start) */
    int ln;          /* bytes of the current line */
    size_t hn;       /* head bytes buffered */
    char head[HEAD_MAX];
} flow;

typedef struct {
    char method[16];
    char key[768];
    int has_range;
    int64_t r0, r1;
    uint64_t t0;
} request;

typedef struct {
    int spin;
    flow out, in;
    request q[QUEUE];
    int qh, qn;
    request cur;     /* the request whose response is being received */
    int status;
    uint64_t t1;
} conn;

static conn *conns[CONN_MAX];

static void lock_conn(conn *c) {
    while (__atomic_exchange_n(&c->spin, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
}
static void unlock_conn(conn *c) { __atomic_store_n(&c->spin, 0, __ATOMIC_RELEASE); }

/* ---- classification ---- */
static int skipped_caller(const void *caller) {
    Dl_info di;
    if (!dladdr(caller, &di) || !di.dli_fname) return 0;
    const char *b = strrchr(di.dli_fname, '/');
    b = b ? b + 1 : di.dli_fname;
    return strstr(b, "libcurl") || !strncmp(b, "_socket", 7) || strstr(b, "libpython") || !strncmp(b, "python", 6);
}

/* An HTTP/1.x request line, or the start of one (a client may send its head in pieces: the parser
 * checks the whole line when it has it, request_head). */
static int is_request_line(const char *p, size_t n) {
    size_t i = 0;
    while (i < n && i < 12 && p[i] >= 'A' && p[i] <= 'Z') i++;
    if (i == 0 || i >= n || p[i] != ' ') return 0;
    for (size_t j = i; j < n && j < 4096; j++) {
        if (j + 8 <= n && !memcmp(p + j, " HTTP/1.", 8)) return 1;
        if (p[j] == '\r' || p[j] == '\n' || (unsigned char)p[j] < 0x20) return 0;
    }
    return 1;   /* no line end yet */
}

int ct_http_classify(int fd, const void *buf, size_t n, const void *caller) {
    if ((unsigned)fd >= CONN_MAX || !is_request_line(buf, n)) return CT_WIRE_NONE;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    int skip = skipped_caller(caller);
    conn *c = skip ? NULL : calloc(1, sizeof *c);
    if (c) {
        conn *old = __atomic_exchange_n(&conns[fd], c, __ATOMIC_ACQ_REL);
        free(old);
    }
    ct_tls.inside = inside;
    return c ? CT_WIRE_HTTP : CT_WIRE_NONE;
}

/* ---- heads ---- */
/* Buffer head bytes until the blank line; returns bytes taken, *done when complete. */
static size_t head_feed(flow *f, const char *p, size_t n, int *done) {
    size_t i = 0;
    *done = 0;
    while (i < n) {
        if (f->hn + 1 >= HEAD_MAX) { f->st = B_BROKEN; return n; }
        f->head[f->hn++] = p[i++];
        if (f->hn >= 4 && !memcmp(f->head + f->hn - 4, "\r\n\r\n", 4)) {
            f->head[f->hn] = 0;
            *done = 1;
            return i;
        }
    }
    return i;
}

/* the value of header `name` in a head, or NULL; *len its length */
static const char *header(const char *head, const char *name, size_t *len) {
    size_t k = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        const char *s = l + 2;
        if (!strncasecmp(s, name, k) && s[k] == ':') {
            s += k + 1;
            while (*s == ' ' || *s == '\t') s++;
            const char *e = strstr(s, "\r\n");
            *len = (size_t)(e - s);
            while (*len && (s[*len - 1] == ' ' || s[*len - 1] == '\t')) (*len)--;
            return s;
        }
    }
    return NULL;
}

static int64_t header_num(const char *head, const char *name) {
    size_t n;
    const char *v = header(head, name, &n);
    if (!v || !n) return -1;
    int64_t x = 0;
    for (size_t i = 0; i < n && v[i] >= '0' && v[i] <= '9'; i++) x = x * 10 + (v[i] - '0');
    return x;
}

static int chunked(const char *head) {
    size_t n;
    const char *v = header(head, "transfer-encoding", &n);
    for (size_t i = 0; v && i + 7 <= n; i++)
        if (!strncasecmp(v + i, "chunked", 7)) return 1;
    return 0;
}

/* ---- bodies ---- */
static int64_t hexval(const char *s, int n) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) break;
        v = v * 16 + d;
    }
    return v;
}

/* Skip body bytes; returns bytes taken. f->st becomes B_HEAD when the body is complete. */
static size_t body_feed(flow *f, const char *p, size_t n) {
    size_t i = 0;
    while (i < n && f->st != B_HEAD) {
        switch (f->st) {
        case B_LEN: case B_CHUNK_DATA: case B_CHUNK_CRLF: {
            size_t k = (size_t)f->left < n - i ? (size_t)f->left : n - i;
            if (f->st != B_CHUNK_CRLF) f->total += (int64_t)k;
            f->left -= (int64_t)k;
            i += k;
            if (!f->left) {
                if (f->st == B_LEN) f->st = B_HEAD;
                else if (f->st == B_CHUNK_DATA) { f->st = B_CHUNK_CRLF; f->left = 2; }
                else { f->st = B_CHUNK_SIZE; f->ln = 0; }
            }
            break;
        }
        case B_CHUNK_SIZE: case B_TRAILER: {
            char c = p[i++];
            if (c != '\n') {
                if (c != '\r' && f->ln < (int)sizeof f->line) f->line[f->ln] = c;
                if (c != '\r') f->ln++;
                break;
            }
            if (f->st == B_CHUNK_SIZE) {
                int64_t size = hexval(f->line, f->ln < (int)sizeof f->line ? f->ln : (int)sizeof f->line);
                if (size > 0) { f->st = B_CHUNK_DATA; f->left = size; }
                else f->st = B_TRAILER;
            } else if (f->ln == 0) {
                f->st = B_HEAD;   /* the blank line after the trailers */
            }
            f->ln = 0;
            break;
        }
        case B_EOF:
            f->total += (int64_t)(n - i);
            i = n;
            break;
        default:   /* B_BROKEN */
            return n;
        }
    }
    return i;
}

/* ---- out: requests ---- */
static void request_head(conn *c, uint64_t t0) {
    const char *h = c->out.head, *eol = strstr(h, "\r\n");
    if (c->qn == QUEUE || eol - h < 10 || memcmp(eol - 9, " HTTP/1.", 8)) { c->out.st = B_BROKEN; return; }
    request *r = &c->q[(c->qh + c->qn++) % QUEUE];
    memset(r, 0, sizeof *r);
    r->t0 = t0;
    const char *sp = strchr(h, ' ');
    size_t m = (size_t)(sp - h);
    memcpy(r->method, h, m < sizeof r->method - 1 ? m : sizeof r->method - 1);
    const char *tgt = sp + 1, *te = strchr(tgt, ' ');
    char url[2048];
    size_t a = 0;
    if (*tgt == '/') {   /* origin form: the Host header names the server */
        size_t hl = 0;
        const char *host = header(h, "host", &hl);
        a = (size_t)(stpcpy(url, "http://") - url);
        if (host && hl < 512) { memcpy(url + a, host, hl); a += hl; }
    }
    size_t tl = (size_t)(te - tgt);
    if (a + tl >= sizeof url) tl = sizeof url - a - 1;
    memcpy(url + a, tgt, tl);
    a += tl;
    ct_wire_clean_url(url, a, r->key, sizeof r->key);
    size_t rl = 0;
    const char *rg = header(h, "range", &rl);
    r->has_range = ct_wire_range(rg, rl, &r->r0, &r->r1);
    int64_t cl = header_num(h, "content-length");
    c->out.total = 0;
    c->out.hn = 0;
    if (chunked(h)) { c->out.st = B_CHUNK_SIZE; c->out.ln = 0; }
    else if (cl > 0) { c->out.st = B_LEN; c->out.left = cl; }
    else c->out.st = B_HEAD;
}

static void out_feed(conn *c, const char *p, size_t n, uint64_t t0) {
    while (n && c->out.st != B_BROKEN) {
        size_t k;
        if (c->out.st == B_HEAD) {
            int done;
            k = head_feed(&c->out, p, n, &done);
            if (done) request_head(c, t0);
        } else {
            k = body_feed(&c->out, p, n);
        }
        p += k;
        n -= k;
    }
}

/* ---- in: responses ---- */
static void record(conn *c, uint64_t t_done, const char *error) {
    ct_wire_rec r = {.lib = "socket", .method = c->cur.method, .key = c->cur.key, .has_range = c->cur.has_range,
                     .range0 = c->cur.r0, .range1 = c->cur.r1, .status = c->status, .bytes = c->in.total,
                     .t0 = c->cur.t0, .t1 = c->t1 ? c->t1 : t_done, .t_done = t_done, .error = error};
    ct_wire_emit(&r);
}

static void response_head(conn *c, uint64_t now) {
    const char *h = c->in.head;
    c->in.hn = 0;
    int status = 0;
    if (!strncmp(h, "HTTP/1.", 7) && strlen(h) > 12) status = atoi(h + 9);
    if (status >= 100 && status < 200) return;   /* 100 Continue: the final response follows */
    if (!c->qn) { c->in.st = B_BROKEN; return; }   /* a response to nothing we saw */
    c->cur = c->q[c->qh];
    c->qh = (c->qh + 1) % QUEUE;
    c->qn--;
    c->status = status;
    c->t1 = now;
    c->in.total = 0;
    int64_t cl = header_num(h, "content-length");
    if (!strcmp(c->cur.method, "HEAD") || status == 204 || status == 304 || cl == 0) c->in.st = B_HEAD;
    else if (chunked(h)) { c->in.st = B_CHUNK_SIZE; c->in.ln = 0; }
    else if (cl > 0) { c->in.st = B_LEN; c->in.left = cl; }
    else c->in.st = B_EOF;
    if (c->in.st == B_HEAD) record(c, now, NULL);
}

static void in_feed(conn *c, const char *p, size_t n) {
    while (n && c->in.st != B_BROKEN) {
        size_t k;
        if (c->in.st == B_HEAD) {
            int done;
            k = head_feed(&c->in, p, n, &done);
            if (done) response_head(c, ct_wire_now());
        } else {
            k = body_feed(&c->in, p, n);
            if (c->in.st == B_HEAD) record(c, ct_wire_now(), NULL);
        }
        p += k;
        n -= k;
    }
}

static conn *get(int fd) {
    return (unsigned)fd < CONN_MAX ? __atomic_load_n(&conns[fd], __ATOMIC_ACQUIRE) : NULL;
}

void ct_http_out(int fd, const void *buf, size_t n, uint64_t t0) {
    conn *c = get(fd);
    if (!c) return;
    lock_conn(c);
    out_feed(c, buf, n, t0);
    unlock_conn(c);
}

void ct_http_in(int fd, const void *buf, size_t n) {
    conn *c = get(fd);
    if (!c) return;
    lock_conn(c);
    in_feed(c, buf, n);
    unlock_conn(c);
}

void ct_http_outv(int fd, const struct iovec *v, int cnt, size_t n, uint64_t t0) {
    conn *c = get(fd);
    if (!c) return;
    lock_conn(c);
    for (int i = 0; i < cnt && n; i++) {
        size_t k = v[i].iov_len < n ? v[i].iov_len : n;
        out_feed(c, v[i].iov_base, k, t0);
        n -= k;
    }
    unlock_conn(c);
}

void ct_http_inv(int fd, const struct iovec *v, int cnt, size_t n) {
    conn *c = get(fd);
    if (!c) return;
    lock_conn(c);
    for (int i = 0; i < cnt && n; i++) {
        size_t k = v[i].iov_len < n ? v[i].iov_len : n;
        in_feed(c, v[i].iov_base, k);
        n -= k;
    }
    unlock_conn(c);
}

void ct_http_closed(int fd) {
    if ((unsigned)fd >= CONN_MAX) return;
    conn *c = __atomic_exchange_n(&conns[fd], NULL, __ATOMIC_ACQ_REL);
    if (!c) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    lock_conn(c);
    uint64_t now = ct_wire_now();
    if (c->in.st == B_EOF) record(c, now, NULL);   /* a body delimited by the connection's end */
    else if (c->in.st != B_HEAD && c->in.st != B_BROKEN) record(c, now, "closed");
    while (c->qn) {   /* sent, never answered */
        c->cur = c->q[c->qh];
        c->qh = (c->qh + 1) % QUEUE;
        c->qn--;
        c->status = 0;
        c->t1 = 0;
        c->in.total = 0;
        record(c, now, "no response");
    }
    unlock_conn(c);
    free(c);
    ct_tls.inside = inside;
}
