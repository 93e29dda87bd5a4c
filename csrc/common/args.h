/* Command-line options shared by the probes (getopt_long). Bad input ends the program
 * through fail(): one "PROGRAM: error: ..." line on stderr and exit status 2. */
#ifndef CLIMIO_ARGS_H
#define CLIMIO_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "pattern.h"

/* Probe-specific options a probe accepts in addition to the common ones. */
#define ARGS_POSIX_OPTIONS  1u  /* --api read|fread, --odirect */
#define ARGS_NETCDF_OPTIONS 2u  /* --var NAME */

struct probe_args {
    const char *file;
    const char *var;              /* --var (netCDF), default "data" */
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
    const char *platform_id;
    int use_fread;                /* --api fread (POSIX) */
    int odirect;                  /* --odirect (POSIX) */
};

/* Parse argv into *a (defaults first). With --version, --file and --buffers are optional. */
void args_parse(int argc, char **argv, unsigned extra_options, struct probe_args *a);
void args_free(struct probe_args *a);

/* Strict number parsers; on bad input they fail() naming `what`. */
uint64_t args_u64(const char *text, const char *what);
double args_seconds(const char *text, const char *what);

#endif
