/* The one record emitter of climio-pario (README.md, "Record"). A driver hands it one row of
 * numbers per rank (doubles and integers); it gathers the rows to rank 0 and there writes the
 * record's envelope (study and schema through jsonl_record; rep, status, time, platform_id)
 * around the driver's params, metrics and cache members, built from the gathered rows. */
#ifndef CLIMIO_PARIO_RECORD_H
#define CLIMIO_PARIO_RECORD_H

#include <mpi.h>
#include <stdint.h>

#include "jsonl.h"

/* Every rank's row, on rank 0: value k of rank r is d[r * nd + k] (doubles), u[r * nu + k]. */
struct record_rows {
    int n;
    int nd, nu;
    const double *d;
    const uint64_t *u;
};
static inline double record_d(const struct record_rows *t, int r, int k) { return t->d[(size_t)r * t->nd + k]; }
static inline uint64_t record_u(const struct record_rows *t, int r, int k) { return t->u[(size_t)r * t->nu + k]; }

/* What a driver writes into its record (rank 0; ctx is the driver's own). */
struct record_writer {
    const char *study;
    void (*params)(struct jsonl *j, const struct record_rows *t, const void *ctx);
    void (*metrics)(struct jsonl *j, const struct record_rows *t, const void *ctx);
    void (*cache)(struct jsonl *j, const struct record_rows *t, const void *ctx);
};

/* Collective over comm: gathers this rank's row (d: nd doubles, u: nu integers); rank 0 prints
 * one record on stdout (flushed). */
void record_emit(MPI_Comm comm, const struct record_writer *w, const void *ctx, const double *d, int nd,
                 const uint64_t *u, int nu, uint64_t rep, const char *platform_id);

/* Members built from the rows, for the writer's callbacks: value k of every rank as an array;
 * {"min","mean","max"} of it; the sum, minimum and maximum of it. */
void record_column(struct jsonl *j, const char *key, const struct record_rows *t, int k);
void record_column_u(struct jsonl *j, const char *key, const struct record_rows *t, int k);
void record_stats(struct jsonl *j, const char *key, const struct record_rows *t, int k);
uint64_t record_sum_u(const struct record_rows *t, int k);
double record_min(const struct record_rows *t, int k);
double record_max(const struct record_rows *t, int k);
/* An epoch time in seconds as <integer>.<microseconds> (%.9g would keep 10-second resolution);
 * null when not finite. */
void record_epoch(struct jsonl *j, const char *key, double t);

#endif
