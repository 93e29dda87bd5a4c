/* climio tracer: wire requests (HTTP requests actually sent), what wire.c, curl.c, http.c and the
 * socket wrappers of posix.c share.
 *
 * wire.c   the records: one JSON line per request in the object-store trace format that
 *          climio.trace.inject.objects writes (level "wire"), buffered and appended to
 *          DIR/objects-<host>-<pid>.wire.jsonl at every flush of the trace (module "wire")
 * curl.c   libcurl's easy interface: curl_easy_setopt (URL, range, method per handle),
 *          curl_easy_perform (start, end; status, bytes, time to the first byte asked of the
 *          real curl_easy_getinfo after it): netCDF-C's byte-range mode, the wheels' libcurl
 * http.c   an HTTP/1.1 parser on plain-text sockets (obstore over http://): request line and
 *          Range on the way out, status line and Content-Length / chunked bodies on the way in,
 *          matched in order per descriptor. TLS sockets are never parsed. */
#ifndef CLIMIO_TRACE_WIRE_H
#define CLIMIO_TRACE_WIRE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *lib;      /* "libcurl", "socket" */
    const char *method;   /* GET, HEAD, PUT, ... */
    const char *key;      /* URL without credentials or query (but a listing's prefix/delimiter) */
    int has_range;
    int64_t range0, range1;   /* [range0, range1) asked; range1 < 0: open end; range0 < 0: the last -range0 bytes */
    int status;           /* HTTP status, 0 when no response */
    int64_t bytes;        /* body bytes received */
    uint64_t t0, t1, t_done;   /* CLOCK_REALTIME ns: request sent, response headers, body done */
    const char *error;    /* NULL, or what failed */
} ct_wire_rec;

void ct_wire_emit(const ct_wire_rec *r);
uint64_t ct_wire_now(void);   /* CLOCK_REALTIME ns */
/* A URL as a record's key: no user info, no fragment, no query parameter but prefix, delimiter,
 * list-type and max-keys (signatures and credentials never leave the process). */
void ct_wire_clean_url(const char *url, size_t n, char *out, size_t cap);
/* [a, b) of an HTTP range "bytes=a-b" / "a-b" (curl's CURLOPT_RANGE), b = -1 for an open end, a = -N
 * for the last N bytes; 0 when s is none */
int ct_wire_range(const char *s, size_t n, int64_t *a, int64_t *b);

/* http.c, called by posix.c's socket wrappers for descriptors marked CT_WIRE_* in the fd table */
enum { CT_WIRE_NONE = 0, CT_WIRE_CANDIDATE = 1, CT_WIRE_HTTP = 2 };
/* First bytes sent on a candidate socket: CT_WIRE_HTTP when they are an HTTP/1.x request from a
 * client not recorded otherwise (caller: the return address of the sending call), else NONE. */
int ct_http_classify(int fd, const void *buf, size_t n, const void *caller);
void ct_http_out(int fd, const void *buf, size_t n, uint64_t t0);    /* n bytes sent */
void ct_http_in(int fd, const void *buf, size_t n);                  /* n bytes received */
struct iovec;
void ct_http_outv(int fd, const struct iovec *v, int cnt, size_t n, uint64_t t0);
void ct_http_inv(int fd, const struct iovec *v, int cnt, size_t n);
void ct_http_closed(int fd);   /* requests without a complete response are recorded as failed */

#endif
