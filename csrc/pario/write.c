/* --op write: the loop of the two write drivers (benchio.c, model.c). Every backend x strategy
 * x repetition runs through the driver's `run`; between repetitions, outside the timed region,
 * the ranks agree on failures, the outcomes become one record (record.c, with the driver's
 * own params and metrics), and the files are evicted and removed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "driver.h"
#include "record.h"
#include "support.h"

/* Each rank's row of a write record: seconds (D_*) and counts (U_*). */
enum { D_TOTAL = 0, D_PHASE = 1, D_LO = D_PHASE + PHASE_COUNT, D_HI, D_LO_RT, D_HI_RT, D_COUNT };
enum { U_BYTES = 0, U_FILE_BYTES, U_FILES, U_WRITER, U_MISMATCHES, U_CHECKED, U_WRONG, U_NOT_EVICTED, U_COLLECTIVE,
       U_COUNT };

struct write_record {
    const struct pario_job *job;
    MPI_Info hints_requested;        /* the hints main built (MPI_INFO_NULL if none) */
    MPI_Info hints_used;             /* rank 0: the lowest rank's that has some */
    int max_node_ranks;              /* largest MPI_COMM_TYPE_SHARED communicator */
};

/* The hints of the lowest rank that has some (rank 0 in every shared-file job; the first
 * writer when rank 0 writes nothing). Collective; the result is valid on rank 0 only and
 * must be freed there when *owned. */
static MPI_Info hints_used_at_root(MPI_Comm comm, MPI_Info mine, int *owned)
{
    int rank, size, have, first;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    have = mine != MPI_INFO_NULL ? rank : size;
    MPI_Allreduce(&have, &first, 1, MPI_INT, MPI_MIN, comm);
    *owned = 0;
    if (first == size || first == 0)
        return rank == 0 ? mine : MPI_INFO_NULL;
    if (rank == first) {
        int len = 0;
        char *buf = hints_pack(mine, &len);
        if (!buf)
            len = 0;
        MPI_Send(&len, 1, MPI_INT, 0, 71, comm);
        MPI_Send(buf ? buf : "", len, MPI_CHAR, 0, 72, comm);
        free(buf);
    } else if (rank == 0) {
        int len = 0;
        MPI_Recv(&len, 1, MPI_INT, first, 71, comm, MPI_STATUS_IGNORE);
        char *buf = malloc((size_t)len + 1);
        MPI_Recv(buf, len, MPI_CHAR, first, 72, comm, MPI_STATUS_IGNORE);
        MPI_Info info = hints_unpack(buf, len);
        free(buf);
        *owned = 1;
        return info;
    }
    return MPI_INFO_NULL;
}

static void write_params(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    const struct write_record *w = ctx;
    const struct pario_job *job = w->job;
    const struct pario_options *opt = job->opt;
    int coll = (int)record_u(t, 0, U_COLLECTIVE) - 1;   /* the largest: -1 when no driver said */
    for (int r = 1; r < t->n; r++)
        coll = (int)record_u(t, r, U_COLLECTIVE) - 1 > coll ? (int)record_u(t, r, U_COLLECTIVE) - 1 : coll;
    if (coll < 0) {
        int over = job->strategy == STRATEGY_SHARED ? t->n > 1
                 : job->strategy == STRATEGY_FILE_PER_NODE ? w->max_node_ranks > 1 : 0;
        coll = !opt->independent && over;
    }
    jsonl_str(j, "mode", mode_names[opt->mode]);
    jsonl_str(j, "backend", job->backend->name);
    jsonl_str(j, "strategy", strategy_names[job->strategy]);
    jsonl_u64(j, "ranks", (uint64_t)t->n);
    jsonl_u64(j, "nodes", (uint64_t)job->nodes);
    jsonl_u64(j, "writers", record_sum_u(t, U_WRITER));
    jsonl_u64(j, "files", record_sum_u(t, U_FILES));
    jsonl_bool(j, "collective", coll > 0);
    jsonl_bool(j, "fsync", opt->fsync);
    jsonl_str(j, "library", job->backend->version());
    jsonl_str(j, "mpi_library", pario_mpi_library());
    hints_json(j, "hints_requested", w->hints_requested);
    hints_json(j, "hints", w->hints_used);
    job->driver->params(j, job);
}

static void write_metrics(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    const struct write_record *w = ctx;
    const struct pario_options *opt = w->job->opt;
    uint64_t bytes = record_sum_u(t, U_BYTES);
    double wall = record_max(t, D_HI) - record_min(t, D_LO);
    double sum_total = 0, sum_writer = 0, nwriters = 0, max_total = 0;
    for (int r = 0; r < t->n; r++) {
        double v = record_d(t, r, D_TOTAL);
        sum_total += v;
        max_total = v > max_total ? v : max_total;
        if (record_u(t, r, U_WRITER)) {
            sum_writer += v;
            nwriters += 1;
        }
    }
    double mean_total = sum_total / t->n;
    double mean_writer = nwriters > 0 ? sum_writer / nwriters : NAN;

    jsonl_u64(j, "bytes", bytes);
    jsonl_u64(j, "file_bytes", record_sum_u(t, U_FILE_BYTES));
    jsonl_double(j, "wall_s", wall);
    jsonl_double(j, "rate_MBps", wall > 0 ? (double)bytes / wall / 1e6 : NAN);
    jsonl_double(j, "rate_mean_task_MBps", mean_writer > 0 ? (double)bytes / mean_writer / 1e6 : NAN);
    record_epoch(j, "epoch_start", record_min(t, D_LO_RT));
    record_epoch(j, "epoch_end", record_max(t, D_HI_RT));
    /* a phase no rank spent time in (gather: serial and io_layout; fsync: --fsync) is left out */
    int reported[PHASE_COUNT];
    jsonl_begin(j, "phases");
    for (int p = 0; p < PHASE_COUNT; p++) {
        reported[p] = record_max(t, D_PHASE + p) > 0;
        if (reported[p])
            record_stats(j, phase_names[p], t, D_PHASE + p);
    }
    jsonl_end(j);
    record_stats(j, "rank_total_s", t, D_TOTAL);
    jsonl_begin(j, "per_rank");
    record_column(j, "total", t, D_TOTAL);
    for (int p = 0; p < PHASE_COUNT; p++)
        if (reported[p])
            record_column(j, phase_names[p], t, D_PHASE + p);
    jsonl_end(j);
    jsonl_double(j, "imbalance", mean_total > 0 ? max_total / mean_total : NAN);
    if (!opt->verify || record_sum_u(t, U_CHECKED) == 0)
        jsonl_null(j, "verified");
    else
        jsonl_bool(j, "verified", record_sum_u(t, U_WRONG) == 0);
    jsonl_u64(j, "mismatches", record_sum_u(t, U_MISMATCHES));
    w->job->driver->metrics(j, w->job);
}

static void write_cache(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    const struct write_record *w = ctx;
    jsonl_str(j, "state", "warm");
    jsonl_str(j, "requested", "warm");
    jsonl_str(j, "method", w->job->opt->fsync ? "fsync before close" : "write-back page cache");
    jsonl_bool(j, "evicted_between_reps", record_sum_u(t, U_NOT_EVICTED) == 0);
}

static const struct record_writer writer = {"parallel-write", write_params, write_metrics, write_cache};

/* Collective over job->world: this rank's outcome into the record rank 0 prints. file_bytes:
 * the sizes of this rank's files; evicted: this rank's eviction worked. */
static void emit(const struct pario_job *job, const struct pario_outcome *out, struct write_record *w,
                 uint64_t file_bytes, int evicted, double realtime_offset)
{
    int timed = out->start <= out->end && !(out->start == 0.0 && out->end == 0.0);
    double d[D_COUNT];
    d[D_TOTAL] = timed ? out->end - out->start : 0.0;
    for (int p = 0; p < PHASE_COUNT; p++)
        d[D_PHASE + p] = out->phase[p];
    d[D_LO] = timed ? out->start : INFINITY;
    d[D_HI] = timed ? out->end : -INFINITY;
    d[D_LO_RT] = timed ? out->start + realtime_offset : INFINITY;
    d[D_HI_RT] = timed ? out->end + realtime_offset : -INFINITY;
    uint64_t u[U_COUNT] = {
        [U_BYTES] = out->bytes, [U_FILE_BYTES] = file_bytes, [U_FILES] = (uint64_t)out->nfiles,
        [U_WRITER] = out->writer ? 1u : 0u, [U_MISMATCHES] = out->mismatches,
        [U_CHECKED] = out->verified >= 0, [U_WRONG] = out->verified == 0, [U_NOT_EVICTED] = !evicted,
        [U_COLLECTIVE] = (uint64_t)(out->collective < 0 ? 0 : out->collective + 1),
    };
    int owned = 0;
    w->job = job;
    w->hints_used = hints_used_at_root(job->world, out->hints_used, &owned);
    record_emit(job->world, &writer, w, d, D_COUNT, u, U_COUNT, job->rep, job->opt->platform_id);
    if (owned)
        MPI_Info_free(&w->hints_used);
}

static void remove_files(const struct pario_outcome *out)
{
    for (int i = 0; i < out->nfiles; i++)
        (void)unlink(out->paths[i]);
}

int write_main(const struct cli *c, const struct pario_driver *d, MPI_Info hints)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct write_record w = {.hints_requested = hints, .max_node_ranks = 1};
    MPI_Comm node;
    int node_index, nnodes, node_ranks;
    if (pario_node_comm(MPI_COMM_WORLD, &node, &node_index, &nnodes) != 0)
        return pario_finish_error(PARIO_PROGRAM, "cannot split MPI_COMM_WORLD by node (MPI_COMM_TYPE_SHARED)");
    MPI_Comm_size(node, &node_ranks);
    MPI_Allreduce(&node_ranks, &w.max_node_ranks, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    double realtime_offset = pario_realtime_offset();

    for (int bi = 0; bi < c->nbackends; bi++) {
        for (int si = 0; si < c->nstrategies; si++) {
            for (uint64_t rep = 0; rep < c->opt.reps; rep++) {
                struct pario_job job = {
                    .driver = d, .opt = &c->opt, .backend = c->backends[bi], .strategy = c->strategies[si],
                    .rep = rep, .hints = hints, .world = MPI_COMM_WORLD, .nodes = nnodes,
                };
                static struct pario_outcome out;   /* 16 paths of 1 KiB: not on the stack */
                memset(&out, 0, sizeof out);
                out.start = INFINITY;
                out.end = -INFINITY;
                out.hints_used = MPI_INFO_NULL;
                out.verified = -1;
                out.collective = -1;

                phase_set_straggler(rank == c->opt.straggler_rank ? c->opt.straggler_s : 0.0);
                MPI_Barrier(MPI_COMM_WORLD);
                if (d->run(&job, &out) != 0 && !out.err[0])
                    outcome_fail(&out, "the %s driver failed without a message", d->name);

                /* Outside the timed region from here on. */
                uint64_t file_bytes = 0;
                for (int i = 0; i < out.nfiles && !out.err[0]; i++) {
                    struct stat st;
                    if (stat(out.paths[i], &st) != 0)
                        outcome_fail(&out, "cannot stat %s after close: %s", out.paths[i], strerror(errno));
                    else
                        file_bytes += (uint64_t)st.st_size;
                }
                int last = rep + 1 == c->opt.reps;
                if (agree_failed(MPI_COMM_WORLD, out.err)) {
                    if (!c->opt.keep)
                        remove_files(&out);
                    if (out.hints_used != MPI_INFO_NULL)
                        MPI_Info_free(&out.hints_used);
                    char msg[PARIO_ERR_LEN + 64];
                    snprintf(msg, sizeof msg, "%s %s rep %llu: %s", job.backend->name, strategy_names[job.strategy],
                             (unsigned long long)rep, out.err);
                    return pario_finish_error(PARIO_PROGRAM, msg);
                }
                /* Write back and drop this repetition's pages so the next one starts from the same
                 * page-cache state rather than competing with the previous one's write-back. */
                int evicted = 1;
                for (int i = 0; i < out.nfiles; i++) {
                    char e[256];
                    if (cache_evict(out.paths[i], e, sizeof e) != 0)
                        evicted = 0;
                }
                emit(&job, &out, &w, file_bytes, evicted, realtime_offset);
                if (!(c->opt.keep && last))
                    remove_files(&out);
                if (out.hints_used != MPI_INFO_NULL)
                    MPI_Info_free(&out.hints_used);
                /* Removals done everywhere before the next repetition creates the same names. */
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
    }
    return 0;
}
