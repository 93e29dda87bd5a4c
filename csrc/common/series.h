/* The repetition loop both probes share. A probe only supplies a `reader` (how to open
 * the data, read bytes [off, off+len) into a buffer, close) and main().
 *
 * For each pattern, buffer and repetition: prepare and verify the page cache, write the
 * configuration marker, open (untimed), time the planned reads, close, print one JSON
 * record. See csrc/README.md for the protocol. */
#ifndef CLIMIO_SERIES_H
#define CLIMIO_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"

#define SERIES_ERRLEN 512

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

/* Run the whole series (or, with --print-offsets, print the plans); returns the exit status. */
int series_main(struct reader *r, const struct probe_args *a);

#endif
