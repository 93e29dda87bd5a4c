/* The repetition loop every probe shares, and the read-stack study built on it.
 *
 * series_run() runs the repetitions of one configuration of any study: mark "open", open
 * (untimed), THEN prepare and verify the page cache (so the open's header reads and the kernel's
 * readahead with them are evicted too: issue 17), mark the configuration, time the requests
 * (checksum, budget), close, print one JSON record. A cold record whose process fetched far less
 * from storage than the requests need (/proc/self/io against needed_bytes) says
 * cache.effective "effectively-warm". A probe supplies a series_config: how to
 * open, issue the next request and close, and what the record's params say.
 *
 * series_main() is the read-stack study: one series_run() per pattern and buffer over a
 * `reader` (open / read bytes [off, off+len) / close). See csrc/README.md for the protocol. */
#ifndef CLIMIO_SERIES_H
#define CLIMIO_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "cache.h"
#include "jsonl.h"
#include "marker.h"
#include "timer.h"

#define SERIES_ERRLEN 512

/* What a repetition that the budget cut with requests left becomes. */
enum series_budget {
    /* read-stack: status "dnf", rate_bound_MBps = planned_bytes / budget_s / 1e6. */
    SERIES_BUDGET_DNF,
    /* chunking: a sample, status "ok" with metrics.sampled true, unless fewer than
     * SERIES_MIN_SAMPLE requests and under SERIES_MIN_SHARE of the planned ones were done:
     * then "dnf" with rate_bound_MBps = bytes / budget_s / 1e6. */
    SERIES_BUDGET_SAMPLE,
};
#define SERIES_MIN_SAMPLE 3
#define SERIES_MIN_SHARE 0.01

/* What one repetition measured. */
struct series_outcome {
    const char *status;      /* "ok" | "dnf" | "error" */
    char error[SERIES_ERRLEN];
    uint64_t bytes, ops;     /* delivered */
    struct timer_result t;
    int have_checksum;
    uint64_t checksum;
    struct cache_state cache;
    int cache_known;
    double open_s;           /* wall seconds of the (untimed) open */
};

/* A cold repetition that fetched less than this share of its needed bytes from storage was
 * served from a cache: cache.effective "effectively-warm" (climio.measure.series). */
#define SERIES_EFFECTIVELY_WARM_SHARE 0.5

/* One configuration of a study. */
struct series_config {
    const char *study;        /* record "study" */
    const char *path;         /* absolute path of the data file */
    const char *mark;         /* marker before the timed requests: climio-mark MARK VALUE REP */
    uint64_t mark_value;
    uint64_t planned_ops, planned_bytes;
    uint64_t buffer_bytes;    /* capacity the requests need (allocated 4096-aligned, rounded up) */
    int odirect;              /* the reads bypass the page cache */
    enum series_budget budget;
    void *ctx;                /* the probe's state, passed to the callbacks */

    /* Open the data for one repetition and go back to its first request (untimed).
     * 0, or -1 with a message (strerror / nc_strerror text) in err. */
    int (*open)(void *ctx, const char *path, char *err, size_t errlen);
    /* Issue the next request into buf (cap bytes): 1 with *got bytes delivered, 0 when no
     * request is left, -1 with a message in err. */
    int (*next)(void *ctx, void *buf, uint64_t cap, uint64_t *got, char *err, size_t errlen);
    void (*close)(void *ctx);
    /* The members of the record's params (also of error records). */
    void (*params)(void *ctx, struct jsonl *j);
    /* Extra members of metrics (not in error records), or NULL. */
    void (*metrics)(void *ctx, struct jsonl *j, const struct series_outcome *o);
    /* Bytes a cold read of the first `ops` requests must fetch from storage (the distinct bytes
     * they want), or NULL when the probe cannot tell (then the record has no storage check). */
    uint64_t (*needed_bytes)(void *ctx, uint64_t ops);
};

/* Where records and markers go. series_io_open fail()s if /dev/null cannot be opened. */
struct series_io {
    struct marker mk;
    struct jsonl j;
};
void series_io_open(struct series_io *io);
void series_io_close(struct series_io *io);

/* Absolute path of `file` (malloc'ed); fail()s if it cannot be resolved. */
char *series_abspath(const char *file);

/* All repetitions of one configuration (a->reps, a->cache_warm, a->budget_s, a->verify,
 * a->platform_id); a "dnf" or "error" record ends them. */
void series_run(const struct series_config *c, const struct probe_args *a, struct series_io *io);

/* ---- the read-stack study ---- */

struct reader {
    /* Fixed by the probe before series_main. */
    const char *layer;      /* params.layer: "c-posix", "c-netcdf" */
    const char *api;        /* params.api */
    const char *library;    /* params.library, or NULL to leave it out */
    const char *variable;   /* params.variable, or NULL to leave it out */
    int odirect;            /* params.odirect; reads bypass the page cache */
    uint64_t file_bytes;    /* F: bytes the patterns range over */
    uint64_t unit;          /* buffer sizes must be multiples of this (1: any) */
    void *impl;             /* the probe's own state */

    /* 0, or -1 with a message (strerror / nc_strerror text) in err. */
    int (*open)(struct reader *r, const char *path, char *err, size_t errlen);
    /* Read bytes [off, off+len) into buf (capacity `cap` >= len bytes, 4096-aligned);
     * *got = bytes delivered (less than len only at end of file). */
    int (*read_at)(struct reader *r, uint64_t off, uint64_t len, void *buf, uint64_t cap,
                   uint64_t *got, char *err, size_t errlen);
    void (*close)(struct reader *r);
};

/* Random offsets are multiples of this (4096 for O_DIRECT, else 8). */
uint64_t series_align(const struct reader *r);

/* Run the whole read-stack series (or, with --print-offsets, print the plans); returns the
 * exit status. */
int series_main(struct reader *r, const struct probe_args *a);

#endif
