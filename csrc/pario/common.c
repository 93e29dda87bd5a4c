/* The driver.h helpers (phase clock, agreed errors, outcome bookkeeping, names), the backend
 * registry generated from backends.h, and the small support.h helpers that do not belong to
 * the hints. */
#include <math.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "fail.h"
#include "support.h"

const char *const mode_names[MODE_COUNT] = {"benchio", "model", "mpiio", "tasks"};
const char *const pattern_names[PAT_COUNT] = {"sequential", "striding"};
const char *const access_names[ACC_COUNT] = {"independent", "collective"};
const char *const stack_names[2] = {"c-posix", "c-netcdf"};
const char *const strategy_names[STRATEGY_COUNT] = {"shared", "file-per-process", "file-per-node", "serial"};
const char *const phase_names[PHASE_COUNT] = {"open", "define", "gather", "write", "fsync", "close"};

/* One outcome is timed at a time per rank, so the begin times can live here rather than in
 * struct pario_outcome (whose layout the drivers share). */
static double phase_t0[PHASE_COUNT];
static double straggle_s;

void phase_set_straggler(double seconds) { straggle_s = seconds; }

/* main starts every outcome with start = +inf, end = -inf; a zeroed outcome (start == end == 0)
 * is treated the same so a driver that memsets its outcome still gets a correct span. */
static int span_unset(const struct pario_outcome *out)
{
    return !(out->start <= out->end) || (out->start == 0.0 && out->end == 0.0);
}

void phase_begin(struct pario_outcome *out, enum pario_phase p)
{
    double t = MPI_Wtime();
    phase_t0[p] = t;
    if (span_unset(out)) {
        out->start = t;
        out->end = t;
    } else if (t < out->start) {
        out->start = t;
    }
}

void phase_end(struct pario_outcome *out, enum pario_phase p)
{
    if (p == PHASE_WRITE && straggle_s > 0) {
        struct timespec ts = {(time_t)straggle_s, (long)((straggle_s - (double)(time_t)straggle_s) * 1e9)};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    double t = MPI_Wtime();
    out->phase[p] += t - phase_t0[p];
    if (span_unset(out))
        out->start = phase_t0[p];
    if (t > out->end)
        out->end = t;
}

void pario_print_versions(FILE *fp)
{
    struct jsonl j;
    jsonl_init(&j);
    jsonl_begin(&j, NULL);
    jsonl_str(&j, "mpi", pario_mpi_library());
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        if (pario_registry[i].version_key)
            jsonl_str(&j, pario_registry[i].version_key, pario_registry[i].backend->version());
    jsonl_emit(&j, fp);
    jsonl_free(&j);
}

int pario_finish_error(const char *program, const char *msg)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        fflush(stdout);
        fprintf(stderr, "%s: error: %s\n", program, msg);
        fflush(stderr);
    }
    MPI_Finalize();
    return CLIMIO_EXIT_USAGE;
}

double pario_realtime_offset(void)
{
    struct timespec ts;
    double w = MPI_Wtime();
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((double)ts.tv_sec + ts.tv_nsec * 1e-9) - w;
}

int agree_failed(MPI_Comm comm, char *err)
{
    int rank, size, mine, first;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    mine = err[0] ? rank : size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size)
        return 0;
    /* The lowest failing rank speaks for all: its message is the one rank 0 prints. */
    MPI_Bcast(err, PARIO_ERR_LEN, MPI_CHAR, first, comm);
    err[PARIO_ERR_LEN - 1] = '\0';
    return 1;
}

void outcome_fail(struct pario_outcome *out, const char *fmt, ...)
{
    va_list ap;
    if (out->err[0])
        return;
    va_start(ap, fmt);
    vsnprintf(out->err, PARIO_ERR_LEN, fmt, ap);
    va_end(ap);
    if (!out->err[0])
        snprintf(out->err, PARIO_ERR_LEN, "unspecified failure");
}

void outcome_add_path(struct pario_outcome *out, const char *path)
{
    if (out->nfiles >= PARIO_MAX_FILES) {
        outcome_fail(out, "more than %d files on one rank (%s)", PARIO_MAX_FILES, path);
        return;
    }
    if (strlen(path) >= PARIO_PATH_LEN) {
        outcome_fail(out, "file path too long: %.100s...", path);
        return;
    }
    snprintf(out->paths[out->nfiles++], PARIO_PATH_LEN, "%s", path);
}

#define PARIO_BACKEND_ENTRY(name, ext, key, desc) {&pario_##name, #name, ext, key, desc},
const struct pario_backend_entry pario_registry[PARIO_NBACKENDS] = {PARIO_BACKENDS(PARIO_BACKEND_ENTRY)};

const struct pario_backend *pario_backend_named(const char *name)
{
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        if (strcmp(pario_registry[i].name, name) == 0)
            return pario_registry[i].backend;
    return NULL;
}

MPI_Datatype pario_mpi_type(enum pario_type t)
{
    return t == PARIO_DOUBLE ? MPI_DOUBLE : t == PARIO_FLOAT ? MPI_FLOAT : MPI_INT;
}

const char *pario_version_text(char *buf, size_t len, const char *prefix, const char *libvers)
{
    if (!buf[0])
        snprintf(buf, len, "%s %.*s", prefix, (int)strcspn(libvers, " "), libvers);
    return buf;
}

void *pario_new_state(struct pario_file *f, size_t size)
{
    void *s = calloc(1, size);
    if (!s)
        snprintf(f->err, PARIO_ERR_LEN, "%s: out of memory", f->backend ? f->backend->name : "pario");
    f->impl = s;
    return s;
}

size_t pario_type_size(enum pario_type t)
{
    switch (t) {
    case PARIO_DOUBLE: return 8;
    case PARIO_FLOAT: return 4;
    case PARIO_INT: return 4;
    }
    return 0;
}

const char *pario_extension(const struct pario_backend *b)
{
    for (int i = 0; i < PARIO_NBACKENDS; i++)
        if (pario_registry[i].backend == b)
            return pario_registry[i].extension;
    return "dat";
}

const char *pario_mpi_error(int code, char *buf, size_t len)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS || n <= 0)
        snprintf(s, sizeof s, "MPI error %d", code);
    s[sizeof s - 1] = '\0';
    s[strcspn(s, "\n")] = '\0';
    snprintf(buf, len, "%s", s);
    return buf;
}

const char *pario_mpi_library(void)
{
    static char first[MPI_MAX_LIBRARY_VERSION_STRING];
    if (!first[0]) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int n = 0;
        MPI_Get_library_version(v, &n);
        v[sizeof v - 1] = '\0';
        v[strcspn(v, "\n")] = '\0';
        /* Open MPI ends its first line with ", ident: ..." detail; keep it, it names the build. */
        snprintf(first, sizeof first, "%s", v);
    }
    return first;
}

int pario_node_comm(MPI_Comm world, MPI_Comm *node, int *node_index, int *nnodes)
{
    int wrank, nrank, rc;
    MPI_Comm leaders;
    MPI_Comm_rank(world, &wrank);
    rc = MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, wrank, MPI_INFO_NULL, node);
    if (rc != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(*node, &nrank);
    /* The node leaders, ordered by world rank, number the nodes. */
    rc = MPI_Comm_split(world, nrank == 0 ? 0 : MPI_UNDEFINED, wrank, &leaders);
    if (rc != MPI_SUCCESS)
        return -1;
    int idx = 0, n = 0;
    if (nrank == 0) {
        MPI_Comm_rank(leaders, &idx);
        MPI_Comm_size(leaders, &n);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&idx, 1, MPI_INT, 0, *node);
    MPI_Bcast(&n, 1, MPI_INT, 0, *node);
    *node_index = idx;
    *nnodes = n;
    return 0;
}
