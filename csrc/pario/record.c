#include "record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support.h"

/* Per rank, gathered to rank 0: total, the phases, writer flag. */
enum { G_TOTAL = 0, G_PHASE = 1, G_WRITER = G_PHASE + PHASE_COUNT, G_COUNT };

/* jsonl_double's %.9g keeps 9 digits: a 10-second resolution for an epoch time. Write it
 * as <integer>.<microseconds> instead, appended to the (public) jsonl buffer. */
static void epoch(struct jsonl *j, const char *key, double t)
{
    if (!isfinite(t) || t < 0) {
        jsonl_null(j, key);
        return;
    }
    double whole = floor(t);
    long us = lround((t - whole) * 1e6);
    if (us >= 1000000) {
        whole += 1;
        us -= 1000000;
    }
    jsonl_u64(j, key, (uint64_t)whole);
    char frac[16];
    int n = snprintf(frac, sizeof frac, ".%06ld", us);
    if (j->len + (size_t)n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 1024;
        char *p = realloc(j->buf, cap);
        if (!p)
            return;   /* the integer part alone is still valid JSON */
        j->buf = p;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, frac, (size_t)n + 1);
    j->len += (size_t)n;
}

static void array(struct jsonl *j, const char *key, const double *v, int n)
{
    jsonl_begin_array(j, key);
    for (int i = 0; i < n; i++)
        jsonl_double(j, NULL, v[i]);
    jsonl_end(j);
}

/* The hints of the lowest rank that has some (rank 0 in every shared-file job; the first
 * writer when rank 0 writes nothing). Collective; the result is valid on rank 0 only and
 * must be freed there when not MPI_INFO_NULL. */
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

void record_emit(const struct pario_job *job, const struct pario_outcome *out, const struct record_context *ctx,
                 uint64_t file_bytes, int evicted)
{
    MPI_Comm comm = job->world;
    const struct pario_options *opt = job->opt;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    int timed = out->start <= out->end && !(out->start == 0.0 && out->end == 0.0);
    double mine[G_COUNT];
    mine[G_TOTAL] = timed ? out->end - out->start : 0.0;
    for (int p = 0; p < PHASE_COUNT; p++)
        mine[G_PHASE + p] = out->phase[p];
    mine[G_WRITER] = out->writer ? 1.0 : 0.0;
    double *all = rank == 0 ? malloc(sizeof(double) * G_COUNT * (size_t)size) : NULL;
    MPI_Gather(mine, G_COUNT, MPI_DOUBLE, all, G_COUNT, MPI_DOUBLE, 0, comm);

    double lo[2] = {timed ? out->start : INFINITY, timed ? out->start + ctx->realtime_offset : INFINITY};
    double hi[2] = {timed ? out->end : -INFINITY, timed ? out->end + ctx->realtime_offset : -INFINITY};
    double glo[2], ghi[2];
    MPI_Reduce(lo, glo, 2, MPI_DOUBLE, MPI_MIN, 0, comm);
    MPI_Reduce(hi, ghi, 2, MPI_DOUBLE, MPI_MAX, 0, comm);

    /* bytes, file bytes, files, writers, mismatches, ranks that verified */
    uint64_t sums[6] = {out->bytes, file_bytes, (uint64_t)out->nfiles, out->writer ? 1u : 0u, out->mismatches,
                        out->verified >= 0 ? 1u : 0u};
    uint64_t gsums[6];
    MPI_Reduce(sums, gsums, 6, MPI_UINT64_T, MPI_SUM, 0, comm);
    /* min: verified (unchecked ranks count as 1), eviction; max: collective */
    int mins[2] = {out->verified == 0 ? 0 : 1, evicted ? 1 : 0}, gmins[2];
    MPI_Reduce(mins, gmins, 2, MPI_INT, MPI_MIN, 0, comm);
    int coll = out->collective, gcoll;
    MPI_Reduce(&coll, &gcoll, 1, MPI_INT, MPI_MAX, 0, comm);

    int owned = 0;
    MPI_Info used = hints_used_at_root(comm, out->hints_used, &owned);
    if (rank != 0)
        return;

    if (gcoll < 0) {
        int over = job->strategy == STRATEGY_SHARED ? size > 1
                 : job->strategy == STRATEGY_FILE_PER_NODE ? ctx->max_node_ranks > 1 : 0;
        gcoll = !opt->independent && over;
    }

    char when[32];
    pario_iso_now(when, sizeof when);
    struct jsonl j;
    jsonl_init(&j);
    jsonl_begin(&j, NULL);
    jsonl_str(&j, "study", "parallel-write");

    jsonl_begin(&j, "params");
    jsonl_str(&j, "mode", opt->mode == MODE_BENCHIO ? "benchio" : "model");
    jsonl_str(&j, "backend", job->backend->name);
    jsonl_str(&j, "strategy", strategy_names[job->strategy]);
    jsonl_u64(&j, "ranks", (uint64_t)size);
    jsonl_u64(&j, "nodes", (uint64_t)job->nodes);
    jsonl_u64(&j, "writers", gsums[3]);
    jsonl_u64(&j, "files", gsums[2]);
    jsonl_bool(&j, "collective", gcoll > 0);
    jsonl_bool(&j, "fsync", opt->fsync);
    jsonl_str(&j, "library", job->backend->version());
    jsonl_str(&j, "mpi_library", pario_mpi_library());
    hints_json(&j, "hints_requested", ctx->hints_requested);
    hints_json(&j, "hints", used);
    if (opt->mode == MODE_BENCHIO)
        benchio_params(&j, job);
    else
        model_params(&j, job);
    jsonl_end(&j);

    double wall = ghi[0] - glo[0];
    double *v = malloc(sizeof(double) * (size_t)size);
    double sum_total = 0, sum_writer = 0, nwriters = 0, max_total = 0;
    for (int r = 0; r < size; r++) {
        double t = all[r * G_COUNT + G_TOTAL];
        sum_total += t;
        max_total = t > max_total ? t : max_total;
        if (all[r * G_COUNT + G_WRITER] > 0) {
            sum_writer += t;
            nwriters += 1;
        }
    }
    double mean_total = sum_total / size;
    double mean_writer = nwriters > 0 ? sum_writer / nwriters : NAN;

    jsonl_begin(&j, "metrics");
    jsonl_u64(&j, "bytes", gsums[0]);
    jsonl_u64(&j, "file_bytes", gsums[1]);
    jsonl_double(&j, "wall_s", wall);
    jsonl_double(&j, "rate_MBps", wall > 0 ? (double)gsums[0] / wall / 1e6 : NAN);
    jsonl_double(&j, "rate_mean_task_MBps", mean_writer > 0 ? (double)gsums[0] / mean_writer / 1e6 : NAN);
    epoch(&j, "epoch_start", glo[1]);
    epoch(&j, "epoch_end", ghi[1]);
    int reported[PHASE_COUNT];
    jsonl_begin(&j, "phases");
    for (int p = 0; p < PHASE_COUNT; p++) {
        double mx = 0;
        for (int r = 0; r < size; r++) {
            v[r] = all[r * G_COUNT + G_PHASE + p];
            mx = v[r] > mx ? v[r] : mx;
        }
        reported[p] = mx > 0;
        if (reported[p])
            pario_json_stats(&j, phase_names[p], v, size);
    }
    jsonl_end(&j);
    for (int r = 0; r < size; r++)
        v[r] = all[r * G_COUNT + G_TOTAL];
    pario_json_stats(&j, "rank_total_s", v, size);
    jsonl_begin(&j, "per_rank");
    array(&j, "total", v, size);
    for (int p = 0; p < PHASE_COUNT; p++) {
        if (!reported[p])
            continue;
        for (int r = 0; r < size; r++)
            v[r] = all[r * G_COUNT + G_PHASE + p];
        array(&j, phase_names[p], v, size);
    }
    jsonl_end(&j);
    jsonl_double(&j, "imbalance", mean_total > 0 ? max_total / mean_total : NAN);
    if (!opt->verify || gsums[5] == 0)
        jsonl_null(&j, "verified");
    else
        jsonl_bool(&j, "verified", gmins[0] == 1);
    jsonl_u64(&j, "mismatches", gsums[4]);
    if (opt->mode == MODE_BENCHIO)
        benchio_metrics(&j, job);
    else
        model_metrics(&j, job);
    jsonl_end(&j);

    jsonl_begin(&j, "cache");
    jsonl_str(&j, "state", "warm");
    jsonl_str(&j, "requested", "warm");
    jsonl_str(&j, "method", opt->fsync ? "fsync before close" : "write-back page cache");
    jsonl_bool(&j, "evicted_between_reps", gmins[1] == 1);
    jsonl_end(&j);

    jsonl_u64(&j, "rep", job->rep);
    jsonl_str(&j, "status", "ok");
    jsonl_str(&j, "time", when);
    jsonl_str(&j, "platform_id", opt->platform_id ? opt->platform_id : "");
    jsonl_emit(&j, stdout);
    jsonl_free(&j);

    free(v);
    free(all);
    if (owned)
        MPI_Info_free(&used);
}
