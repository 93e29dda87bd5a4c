#include "record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void record_emit(MPI_Comm comm, const struct record_writer *w, const void *ctx, const double *d, int nd,
                 const uint64_t *u, int nu, uint64_t rep, const char *platform_id)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    double *D = rank == 0 ? malloc(sizeof(double) * (size_t)nd * (size_t)size) : NULL;
    uint64_t *U = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)nu * (size_t)size) : NULL;
    MPI_Gather(d, nd, MPI_DOUBLE, D, nd, MPI_DOUBLE, 0, comm);
    MPI_Gather(u, nu, MPI_UINT64_T, U, nu, MPI_UINT64_T, 0, comm);
    if (rank != 0)
        return;

    const struct record_rows t = {size, nd, nu, D, U};
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);

    struct jsonl j;
    jsonl_init(&j);
    jsonl_record(&j, w->study);
    jsonl_begin(&j, "params");
    w->params(&j, &t, ctx);
    jsonl_end(&j);
    jsonl_begin(&j, "metrics");
    w->metrics(&j, &t, ctx);
    jsonl_end(&j);
    jsonl_begin(&j, "cache");
    w->cache(&j, &t, ctx);
    jsonl_end(&j);
    jsonl_u64(&j, "rep", rep);
    jsonl_str(&j, "status", "ok");
    jsonl_str(&j, "time", when);
    jsonl_str(&j, "platform_id", platform_id ? platform_id : "");
    jsonl_emit(&j, stdout);
    jsonl_free(&j);
    free(D);
    free(U);
}

void record_column(struct jsonl *j, const char *key, const struct record_rows *t, int k)
{
    jsonl_begin_array(j, key);
    for (int r = 0; r < t->n; r++)
        jsonl_double(j, NULL, record_d(t, r, k));
    jsonl_end(j);
}

void record_column_u(struct jsonl *j, const char *key, const struct record_rows *t, int k)
{
    jsonl_begin_array(j, key);
    for (int r = 0; r < t->n; r++)
        jsonl_u64(j, NULL, record_u(t, r, k));
    jsonl_end(j);
}

void record_stats(struct jsonl *j, const char *key, const struct record_rows *t, int k)
{
    double sum = 0;
    for (int r = 0; r < t->n; r++)
        sum += record_d(t, r, k);
    jsonl_begin(j, key);
    jsonl_double(j, "min", record_min(t, k));
    jsonl_double(j, "mean", sum / t->n);
    jsonl_double(j, "max", record_max(t, k));
    jsonl_end(j);
}

uint64_t record_sum_u(const struct record_rows *t, int k)
{
    uint64_t sum = 0;
    for (int r = 0; r < t->n; r++)
        sum += record_u(t, r, k);
    return sum;
}

double record_min(const struct record_rows *t, int k)
{
    double v = INFINITY;
    for (int r = 0; r < t->n; r++)
        v = record_d(t, r, k) < v ? record_d(t, r, k) : v;
    return v;
}

double record_max(const struct record_rows *t, int k)
{
    double v = -INFINITY;
    for (int r = 0; r < t->n; r++)
        v = record_d(t, r, k) > v ? record_d(t, r, k) : v;
    return v;
}

void record_epoch(struct jsonl *j, const char *key, double t)
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
    /* the fraction appended to the integer just written (the buffer is public: jsonl.h) */
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
