/* The probes' command line: their option table over the common parser (options.h), the
 * values it fills in, and the checks that span options. Bad input ends the program
 * through fail(): one "PROGRAM: error: ..." line on stderr and exit status 2. */
#ifndef CLIMIO_ARGS_H
#define CLIMIO_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "pattern.h"

/* Option groups a probe accepts in addition to the common ones (--file, --reps, --cache,
 * --budget, --verify, --platform-id, --version, --help). */
#define ARGS_POSIX_OPTIONS  1u  /* --api read|fread, --odirect */
#define ARGS_NETCDF_OPTIONS 2u  /* --var NAME (default "data") */
#define ARGS_PLAN_OPTIONS   4u  /* the read plans: --patterns, --buffers (required), --random-count,
                                   --seed, --max-ops, --print-offsets */
#define ARGS_SLAB_OPTIONS   8u  /* hyperslabs: --var NAME and --slices FILE (both required),
                                   --chunk-cache, --label */

/* One --label KEY=VALUE. */
struct args_label {
    char *key;                    /* owns the copy; value points into it */
    const char *value;
};

struct probe_args {
    const char *file;
    const char *var;              /* --var (netCDF: default "data"; slab: required) */
    enum pattern *patterns;
    size_t npatterns;
    uint64_t *buffers;
    size_t nbuffers;
    uint64_t reps;
    int cache_warm;
    uint64_t random_count;
    uint64_t seed;
    double budget_s;              /* 0: no budget */
    uint64_t max_ops;             /* 0: no limit */
    int verify;
    int print_offsets;
    int version;
    int help;                     /* --help: args_parse prints the usage and exits 0 */
    const char *platform_id;
    int use_fread;                /* --api fread (POSIX) */
    int odirect;                  /* --odirect (POSIX) */
    const char *slices;           /* --slices FILE (slab) */
    int chunk_cache_set;          /* --chunk-cache BYTES,NELEMS,PREEMPTION given (not "default") */
    uint64_t chunk_cache_bytes, chunk_cache_nelems;
    double chunk_cache_preemption;
    struct args_label *labels;    /* --label KEY=VALUE, in command-line order, keys distinct */
    size_t nlabels;
};

/* Parse argv into *a (defaults first). With --version the required options are optional;
 * --help prints the generated usage and exits 0. */
void args_parse(int argc, char **argv, unsigned extra_options, struct probe_args *a);
void args_free(struct probe_args *a);

/* A non-negative decimal integer; on bad input fail() naming `what`. */
uint64_t args_u64(const char *text, const char *what);

#endif
