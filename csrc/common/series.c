#include "series.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "checksum.h"
#include "fail.h"
#include "jsonl.h"
#include "marker.h"
#include "pattern.h"
#include "timer.h"

#define STUDY "read-stack"
#define DIRECT_ALIGN 4096u
#define VALUE_ALIGN 8u

uint64_t series_align(const struct reader *r)
{
    return r->odirect ? DIRECT_ALIGN : VALUE_ALIGN;
}

static uint64_t round_up(uint64_t x, uint64_t to)
{
    return (x + to - 1) / to * to;
}

/* ---- the repetition loop of any study ---- */

void series_io_open(struct series_io *io)
{
    if (marker_open(&io->mk) != 0)
        fail("cannot open /dev/null for markers: %s", strerror(errno));
    jsonl_init(&io->j);
}

void series_io_close(struct series_io *io)
{
    jsonl_free(&io->j);
    marker_close(&io->mk);
}

char *series_abspath(const char *file)
{
    char *path = realpath(file, NULL);
    if (!path)
        fail("cannot resolve %s: %s", file, strerror(errno));
    return path;
}

static void iso_now(char out[32])
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
}

/* cache.effective (and cache.storage_share) of a verified record: a cold one whose process
 * fetched less than SERIES_EFFECTIVELY_WARM_SHARE of the needed bytes from storage was served
 * from a cache after all (the twin of climio.measure.series.storage_check). */
static void storage_check(struct jsonl *j, const struct series_outcome *o, uint64_t needed)
{
    if (strcmp(o->cache.state, "cold") != 0) {
        jsonl_str(j, "effective", o->cache.state);
        return;
    }
    if (needed == 0) {
        jsonl_str(j, "effective", "cold");
        return;
    }
    if (o->t.storage_read_bytes < 0) {
        jsonl_str(j, "effective", "unverified");
        return;
    }
    double share = (double)o->t.storage_read_bytes / (double)needed;
    jsonl_double(j, "storage_share", round(share * 1e4) / 1e4);
    jsonl_str(j, "effective", share >= SERIES_EFFECTIVELY_WARM_SHARE ? "cold" : "effectively-warm");
}

static void emit_record(struct jsonl *j, const struct series_config *c, const struct probe_args *a,
                        uint64_t rep, const struct series_outcome *o)
{
    char when[32];
    int is_error = strcmp(o->status, "error") == 0;
    int have_needed = !is_error && c->needed_bytes != NULL;
    uint64_t needed = have_needed ? c->needed_bytes(c->ctx, o->ops) : 0;
    iso_now(when);

    jsonl_record(j, c->study);
    jsonl_str(j, "status", o->status);
    jsonl_u64(j, "rep", rep);
    jsonl_str(j, "time", when);
    jsonl_str(j, "platform_id", a->platform_id);

    jsonl_begin(j, "params");
    c->params(c->ctx, j);
    jsonl_end(j);

    jsonl_begin(j, "metrics");
    if (is_error) {
        jsonl_str(j, "error", o->error);
    } else {
        jsonl_u64(j, "bytes", o->bytes);
        jsonl_u64(j, "ops", o->ops);
        jsonl_double(j, "wall_s", o->t.wall_s);
        jsonl_double(j, "user_s", o->t.user_s);
        jsonl_double(j, "sys_s", o->t.sys_s);
        jsonl_double(j, "cpu_s", o->t.user_s + o->t.sys_s);
        if (o->t.storage_read_bytes >= 0)
            jsonl_u64(j, "storage_read_bytes", (uint64_t)o->t.storage_read_bytes);
        if (have_needed)
            jsonl_u64(j, "storage_needed_bytes", needed);
        jsonl_double(j, "open_s", o->open_s);
        if (o->t.wall_s > 0)
            jsonl_double(j, "rate_MBps", (double)o->bytes / o->t.wall_s / 1e6);
        if (o->have_checksum) {
            char hex[17];
            checksum_hex(o->checksum, hex);
            jsonl_str(j, "checksum", hex);
        }
        if (c->metrics)
            c->metrics(c->ctx, j, o);
        if (c->budget == SERIES_BUDGET_SAMPLE)
            jsonl_bool(j, "sampled", o->ops < c->planned_ops);
        if (strcmp(o->status, "dnf") == 0) {
            uint64_t bound = c->budget == SERIES_BUDGET_SAMPLE ? o->bytes : c->planned_bytes;
            jsonl_u64(j, "planned_bytes", c->planned_bytes);
            jsonl_double(j, "budget_s", a->budget_s);
            jsonl_double(j, "rate_bound_MBps", (double)bound / a->budget_s / 1e6);
        }
    }
    jsonl_end(j);

    jsonl_begin(j, "cache");
    if (o->cache_known) {
        jsonl_str(j, "state", o->cache.state);
        jsonl_str(j, "requested", o->cache.requested);
        jsonl_str(j, "method", o->cache.method);
        jsonl_double(j, "resident_fraction", round(o->cache.resident_fraction * 1e6) / 1e6);
        jsonl_str(j, "verified_by", "mincore");
        if (have_needed)
            storage_check(j, o, needed);
    } else {
        /* Not verified: never claim a cold cache. */
        jsonl_str(j, "state", "warm");
        jsonl_str(j, "requested", a->cache_warm ? "warm" : "cold");
        jsonl_str(j, "method", c->odirect ? "O_DIRECT" : a->cache_warm ? "pre-read" : "posix_fadvise(DONTNEED)");
        jsonl_double(j, "resident_fraction", NAN);
        jsonl_str(j, "verified_by", "none");
    }
    jsonl_end(j);

    jsonl_end(j);
    jsonl_emit(j, stdout);
}

/* The status of a repetition the budget cut with requests left. */
static const char *cut_status(const struct series_config *c, uint64_t ops)
{
    if (c->budget == SERIES_BUDGET_SAMPLE &&
        (ops >= SERIES_MIN_SAMPLE || (double)ops >= SERIES_MIN_SHARE * (double)c->planned_ops))
        return "ok";
    return "dnf";
}

/* One repetition: mark, open, timed requests, close. Returns 0 unless the status is "error". */
static int run_rep(const struct series_config *c, const struct probe_args *a, uint64_t rep,
                   struct marker *mk, unsigned char *buf, struct series_outcome *o)
{
    struct checksum sum;
    struct timer t;
    uint64_t got;
    int rc, failed = 0;

    /* The library's reads when opening (netCDF/HDF5 header) go to an "open" phase of their
     * own, so per-request syscall counts hold only what the requests themselves cost. */
    marker_mark(mk, "open", 0, rep);
    timer_start(&t);
    if (c->open(c->ctx, c->path, o->error, sizeof o->error) != 0) {
        o->status = "error";
        return -1;
    }
    o->open_s = timer_elapsed(&t);
    /* The cache is brought into its state AFTER the open: the open's header reads (and the
     * readahead the kernel does with them) would otherwise serve the first requests of a
     * "cold" repetition from memory (issue 17). */
    if (cache_prepare(c->path, a->cache_warm, rep == 0, c->odirect, &o->cache,
                      o->error, sizeof o->error) != 0) {
        c->close(c->ctx);
        o->status = "error";
        return -1;
    }
    o->cache_known = 1;
    marker_mark(mk, c->mark, c->mark_value, rep);
    checksum_init(&sum);
    o->status = "ok";

    timer_start(&t);
    while ((rc = c->next(c->ctx, buf, c->buffer_bytes, &got, o->error, sizeof o->error)) != 0) {
        if (rc < 0) {
            failed = 1;
            break;
        }
        if (a->verify)
            checksum_update(&sum, buf, (size_t)got);
        o->bytes += got;
        o->ops++;
        if (a->budget_s > 0 && timer_elapsed(&t) > a->budget_s) {
            if (o->ops < c->planned_ops)
                o->status = cut_status(c, o->ops);
            break;
        }
    }
    timer_stop(&t, &o->t);
    c->close(c->ctx);

    if (failed) {
        o->status = "error";
        return -1;
    }
    if (a->verify) {
        o->have_checksum = 1;
        o->checksum = checksum_value(&sum);
    }
    return 0;
}

void series_run(const struct series_config *c, const struct probe_args *a, struct series_io *io)
{
    uint64_t alloc = round_up(c->buffer_bytes ? c->buffer_bytes : 1, DIRECT_ALIGN);
    void *buf = NULL;
    int rc = alloc > SIZE_MAX ? ENOMEM : posix_memalign(&buf, DIRECT_ALIGN, (size_t)alloc);

    for (uint64_t rep = 0; rep < a->reps; rep++) {
        struct series_outcome o;
        memset(&o, 0, sizeof o);
        if (rc != 0) {
            o.status = "error";
            snprintf(o.error, sizeof o.error, "%s", strerror(rc));
            emit_record(&io->j, c, a, rep, &o);
            break;
        }
        run_rep(c, a, rep, &io->mk, buf, &o);
        emit_record(&io->j, c, a, rep, &o);
        if (strcmp(o.status, "ok") != 0)
            break;  /* dnf or error: the configuration's remaining repetitions are skipped */
    }
    free(buf);
}

/* ---- the read-stack study ---- */

/* One configuration: a pattern and a buffer size over the reader. */
struct rs_config {
    struct reader *r;
    const struct probe_args *a;
    const char *path;        /* absolute path of the data file */
    enum pattern pattern;
    uint64_t buffer;
    struct plan plan;
    uint64_t planned_bytes;
};

static int rs_open(void *ctx, const char *path, char *err, size_t errlen)
{
    struct rs_config *c = ctx;
    plan_rewind(&c->plan);
    return c->r->open(c->r, path, err, errlen);
}

static int rs_next(void *ctx, void *buf, uint64_t cap, uint64_t *got, char *err, size_t errlen)
{
    struct rs_config *c = ctx;
    uint64_t off, len;
    if (!plan_next(&c->plan, &off, &len))
        return 0;
    return c->r->read_at(c->r, off, len, buf, cap, got, err, errlen) != 0 ? -1 : 1;
}

static void rs_close(void *ctx)
{
    struct rs_config *c = ctx;
    c->r->close(c->r);
}

struct byte_range {
    uint64_t off, len;
};

static int range_cmp(const void *x, const void *y)
{
    const struct byte_range *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* Distinct bytes of the first `ops` reads of the plan: what a cold repetition must fetch from
 * storage (climio.measure.series.distinct_bytes). Sequential and strided reads never overlap;
 * random ones may, so they are sorted and merged. */
static uint64_t rs_needed(void *ctx, uint64_t ops)
{
    const struct rs_config *c = ctx;
    struct plan p = c->plan;
    uint64_t off, len, total = 0, n = 0;
    plan_rewind(&p);
    struct byte_range *r = c->pattern == PATTERN_RANDOM && ops ? malloc(ops * sizeof *r) : NULL;
    while (n < ops && plan_next(&p, &off, &len)) {
        if (r)
            r[n] = (struct byte_range){off, len};
        else
            total += len;  /* no overlaps (or no memory: an upper bound) */
        n++;
    }
    if (!r)
        return total;
    qsort(r, n, sizeof *r, range_cmp);
    uint64_t end = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t lo = r[i].off > end ? r[i].off : end, hi = r[i].off + r[i].len;
        if (hi > lo) {
            total += hi - lo;
            end = hi;
        }
    }
    free(r);
    return total;
}

static void rs_params(void *ctx, struct jsonl *j)
{
    const struct rs_config *c = ctx;
    const struct reader *r = c->r;
    const struct probe_args *a = c->a;
    jsonl_str(j, "layer", r->layer);
    jsonl_str(j, "pattern", pattern_name(c->pattern));
    jsonl_u64(j, "buffer_bytes", c->buffer);
    jsonl_str(j, "file", c->path);
    jsonl_u64(j, "file_bytes", r->file_bytes);
    jsonl_u64(j, "planned_ops", c->plan.ops);
    jsonl_u64(j, "planned_bytes", c->planned_bytes);
    jsonl_u64(j, "random_count", a->random_count);
    jsonl_u64(j, "seed", a->seed);
    jsonl_str(j, "api", r->api);
    jsonl_bool(j, "odirect", r->odirect);
    if (r->variable)
        jsonl_str(j, "variable", r->variable);
    if (r->library)
        jsonl_str(j, "library", r->library);
    jsonl_u64(j, "max_ops", a->max_ops);
}

static void print_offsets(const struct reader *r, const struct probe_args *a)
{
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    for (size_t p = 0; p < a->npatterns; p++) {
        for (size_t b = 0; b < a->nbuffers; b++) {
            struct plan plan;
            uint64_t off, len;
            plan_init(&plan, a->patterns[p], r->file_bytes, a->buffers[b], a->random_count,
                      a->seed, series_align(r), a->max_ops);
            printf("# %s %llu\n", pattern_name(a->patterns[p]), (unsigned long long)a->buffers[b]);
            while (plan_next(&plan, &off, &len))
                printf("%llu %llu\n", (unsigned long long)off, (unsigned long long)len);
        }
    }
    fflush(stdout);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

int series_main(struct reader *r, const struct probe_args *a)
{
    for (size_t b = 0; b < a->nbuffers; b++)
        if (a->buffers[b] % r->unit)
            fail("buffer size %llu is not a multiple of %llu bytes",
                 (unsigned long long)a->buffers[b], (unsigned long long)r->unit);

    if (a->print_offsets) {
        print_offsets(r, a);
        return 0;
    }

    char *path = series_abspath(a->file);
    struct series_io io;
    series_io_open(&io);
    for (size_t p = 0; p < a->npatterns; p++) {
        for (size_t b = 0; b < a->nbuffers; b++) {
            struct rs_config rc = {.r = r, .a = a, .path = path, .pattern = a->patterns[p],
                                   .buffer = a->buffers[b]};
            plan_init(&rc.plan, rc.pattern, r->file_bytes, rc.buffer, a->random_count, a->seed,
                      series_align(r), a->max_ops);
            rc.planned_bytes = plan_bytes(&rc.plan);
            /* A buffer larger than the file reads the file: no need to allocate all of it. */
            uint64_t cap = rc.buffer;
            if (cap > r->file_bytes)
                cap = round_up(r->file_bytes ? r->file_bytes : 1, DIRECT_ALIGN);
            struct series_config c = {
                .study = STUDY, .path = path, .mark = pattern_name(rc.pattern), .mark_value = rc.buffer,
                .planned_ops = rc.plan.ops, .planned_bytes = rc.planned_bytes, .buffer_bytes = cap,
                .odirect = r->odirect, .budget = SERIES_BUDGET_DNF, .ctx = &rc,
                .open = rs_open, .next = rs_next, .close = rs_close, .params = rs_params,
                .metrics = NULL, .needed_bytes = rs_needed,
            };
            series_run(&c, a, &io);
        }
    }
    series_io_close(&io);
    free(path);
    return 0;
}
