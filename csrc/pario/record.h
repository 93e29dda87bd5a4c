/* Reducing every rank's outcome of one job into the study's record (README.md, "Record"). */
#ifndef CLIMIO_PARIO_RECORD_H
#define CLIMIO_PARIO_RECORD_H

#include <stdint.h>

#include "driver.h"

struct record_context {
    MPI_Info hints_requested;        /* the hints main built (MPI_INFO_NULL if none) */
    double realtime_offset;          /* this rank's CLOCK_REALTIME - MPI_Wtime, in seconds */
    int max_node_ranks;              /* largest MPI_COMM_TYPE_SHARED communicator */
};

/* Collective over job->world; rank 0 prints the record on stdout (flushed). file_bytes: the
 * sizes of this rank's files; evicted: this rank's eviction worked. */
void record_emit(const struct pario_job *job, const struct pario_outcome *out, const struct record_context *ctx,
                 uint64_t file_bytes, int evicted);

#endif
