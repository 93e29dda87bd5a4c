/* libcurl's easy interface (wire.h): the HTTP requests of netCDF-C's byte-range mode
 * (nc_open("http://.../f.nc#mode=bytes")) and of any other libcurl user, as wire records.
 *
 * curl_easy_setopt    remembers per handle the URL (cleaned: no credentials, no query), the range
 *                     and the method (NOBODY: HEAD, CUSTOMREQUEST, UPLOAD/PUT, POST, HTTPGET);
 *                     the variadic argument is read by the option's type, as curl.h numbers them
 *                     (long below 10000, object pointer, function pointer, curl_off_t from 30000,
 *                     blob from 40000) and passed on unchanged
 * curl_easy_perform   start and end; then the real curl_easy_getinfo of the same library for the
 *                     status, the bytes downloaded and the time to the first byte (the record's
 *                     t1, when the response headers arrived, as the Python tracer's wire records)
 * curl_easy_reset / cleanup / duphandle keep the table right.
 * No curl header is needed: the option and info numbers are libcurl's stable ABI.
 *
 * The netCDF4 wheel bundles its own libcurl (netcdf4.libs/libcurl-<hash>.so.4), loaded RTLD_LOCAL
 * with the extension module; its curl_easy_* are plain, unversioned exports, so our definitions
 * (LD_PRELOAD, the global scope) are what libnetcdf binds to. The real functions are found in the
 * caller's own scope first (CT_LIB_LOCAL): a handle of one libcurl copy means nothing to another. */
#include "buffer.h"
#include "wire.h"

#include <stdarg.h>
#include <string.h>

typedef void CURL;
typedef int CURLcode;
typedef int64_t curl_off_t;
CURLcode curl_easy_setopt(CURL *h, int opt, ...);
CURLcode curl_easy_perform(CURL *h);
CURLcode curl_easy_getinfo(CURL *h, int info, ...);
void curl_easy_reset(CURL *h);
void curl_easy_cleanup(CURL *h);
CURL *curl_easy_duphandle(CURL *h);

enum { OPT_LONG = 0, OPT_OBJECT = 10000, OPT_FUNCTION = 20000, OPT_OFF_T = 30000, OPT_BLOB = 40000 };
enum { CURLOPT_URL = 10002, CURLOPT_RANGE = 10007, CURLOPT_CUSTOMREQUEST = 10036, CURLOPT_NOBODY = 44,
       CURLOPT_UPLOAD = 46, CURLOPT_POST = 47, CURLOPT_PUT = 54, CURLOPT_HTTPGET = 80 };
enum { CURLINFO_LONG = 0x200000, CURLINFO_OFF_T = 0x600000 };
enum { CURLINFO_RESPONSE_CODE = CURLINFO_LONG + 2, CURLINFO_SIZE_DOWNLOAD_T = CURLINFO_OFF_T + 8,
       CURLINFO_STARTTRANSFER_TIME_T = CURLINFO_OFF_T + 54 };
#define CURLE_FAILED_INIT 2

typedef struct {
    CURL *h;
    char url[1024];
    char range[64];
    char method[16];   /* CUSTOMREQUEST; "" = from the flags */
    int nobody, upload, post;
} handle;
#define MAX_HANDLES 64
static handle hs[MAX_HANDLES];

/* the handle's entry, made when `make` (table lock held) */
static handle *find(CURL *h, int make) {
    handle *free_ = NULL;
    for (int i = 0; i < MAX_HANDLES; i++) {
        if (hs[i].h == h) return &hs[i];
        if (!hs[i].h && !free_) free_ = &hs[i];
    }
    if (!make || !free_) return NULL;
    memset(free_, 0, sizeof *free_);
    free_->h = h;
    return free_;
}

static void remember(CURL *h, int opt, long lv, const char *s) {
    if (!ct_active) return;
    ct_lock();
    handle *e = find(h, 1);
    if (e) switch (opt) {
        case CURLOPT_URL:
            if (s) ct_wire_clean_url(s, strlen(s), e->url, sizeof e->url);
            else e->url[0] = 0;
            break;
        case CURLOPT_RANGE:
            e->range[0] = 0;
            if (s) strncat(e->range, s, sizeof e->range - 1);
            break;
        case CURLOPT_CUSTOMREQUEST:
            e->method[0] = 0;
            if (s) strncat(e->method, s, sizeof e->method - 1);
            break;
        case CURLOPT_NOBODY: e->nobody = lv != 0; break;
        case CURLOPT_UPLOAD: case CURLOPT_PUT: e->upload = lv != 0; break;
        case CURLOPT_POST: e->post = lv != 0; break;
        case CURLOPT_HTTPGET: if (lv) e->nobody = e->upload = e->post = 0; break;
        default: break;
    }
    ct_unlock();
}

CT_EXPORT CURLcode curl_easy_setopt(CURL *h, int opt, ...) {
    void *caller = __builtin_return_address(0);
    __typeof__(&curl_easy_setopt) real = CT_LIB_LOCAL(curl_easy_setopt, caller);
    if (!real) { ct_missing("curl_easy_setopt"); return CURLE_FAILED_INIT; }
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < OPT_OBJECT) {
        long v = va_arg(ap, long);
        rc = real(h, opt, v);
        if (rc == 0) remember(h, opt, v, NULL);
    } else if (opt >= OPT_OFF_T && opt < OPT_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = real(h, opt, v);
    } else {   /* object, function and blob pointers */
        void *p = va_arg(ap, void *);
        rc = real(h, opt, p);
        if (rc == 0 && opt < OPT_FUNCTION) remember(h, opt, 0, (const char *)p);
    }
    va_end(ap);
    return rc;
}

static const char *method_of(const handle *e) {
    if (e->method[0]) return e->method;
    return e->nobody ? "HEAD" : e->upload ? "PUT" : e->post ? "POST" : "GET";
}

CT_EXPORT CURLcode curl_easy_perform(CURL *h) {
    void *caller = __builtin_return_address(0);
    __typeof__(&curl_easy_perform) real = CT_LIB_LOCAL(curl_easy_perform, caller);
    if (!real) { ct_missing("curl_easy_perform"); return CURLE_FAILED_INIT; }
    if (!ct_active || ct_tls.inside) return real(h);
    handle e = {0};
    ct_lock();
    handle *f = find(h, 0);
    if (f) e = *f;
    ct_unlock();
    uint64_t t0 = ct_wire_now();
    CURLcode rc = real(h);
    uint64_t t_done = ct_wire_now();
    int err = errno;
    long status = 0;
    curl_off_t got = 0, ttfb_us = -1;
    __typeof__(&curl_easy_getinfo) info = CT_LIB_LOCAL(curl_easy_getinfo, caller);
    if (info) {
        info(h, CURLINFO_RESPONSE_CODE, &status);
        info(h, CURLINFO_SIZE_DOWNLOAD_T, &got);
        info(h, CURLINFO_STARTTRANSFER_TIME_T, &ttfb_us);
    }
    char code[24] = "curl:";   /* the CURLcode of a failed perform, e.g. "curl:7" (could not connect) */
    if (rc) {
        char t[12];
        int a = 5, d = rc, k = 0;
        do t[k++] = (char)('0' + d % 10); while ((d /= 10) && k < 11);
        while (k) code[a++] = t[--k];
        code[a] = 0;
    }
    ct_wire_rec r = {.lib = "libcurl", .method = method_of(&e), .key = e.url[0] ? e.url : "(unknown)",
                     .status = (int)status, .bytes = got > 0 ? got : 0, .t0 = t0, .t_done = t_done,
                     .t1 = ttfb_us >= 0 && t0 + (uint64_t)ttfb_us * 1000 <= t_done ? t0 + (uint64_t)ttfb_us * 1000 : t_done,
                     .error = rc ? code : NULL};
    r.has_range = ct_wire_range(e.range[0] ? e.range : NULL, strlen(e.range), &r.range0, &r.range1);
    ct_wire_emit(&r);
    errno = err;
    return rc;
}

CT_EXPORT void curl_easy_reset(CURL *h) {
    void *caller = __builtin_return_address(0);
    __typeof__(&curl_easy_reset) real = CT_LIB_LOCAL(curl_easy_reset, caller);
    if (real) real(h);
    ct_lock();
    handle *e = find(h, 0);
    if (e) { memset(e, 0, sizeof *e); e->h = h; }
    ct_unlock();
}

CT_EXPORT void curl_easy_cleanup(CURL *h) {
    void *caller = __builtin_return_address(0);
    __typeof__(&curl_easy_cleanup) real = CT_LIB_LOCAL(curl_easy_cleanup, caller);
    ct_lock();
    handle *e = find(h, 0);
    if (e) e->h = NULL;
    ct_unlock();
    if (real) real(h);
}

CT_EXPORT CURL *curl_easy_duphandle(CURL *h) {
    void *caller = __builtin_return_address(0);
    __typeof__(&curl_easy_duphandle) real = CT_LIB_LOCAL(curl_easy_duphandle, caller);
    if (!real) { ct_missing("curl_easy_duphandle"); return NULL; }
    CURL *d = real(h);
    if (d) {
        ct_lock();
        handle *s = find(h, 0), *n = s ? find(d, 1) : NULL;
        if (s && n) { *n = *s; n->h = d; }
        ct_unlock();
    }
    return d;
}
