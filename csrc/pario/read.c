/* The read driver of climio-pario (--op read): the parallel-read study (thesis chapter 5).
 *
 * Two modes, one record shape (README.md of src/climio/bench/parallel_read):
 *
 *   --mode mpiio  (experiment B) one shared file through a pario.h backend (mpiio, hdf5,
 *                 netcdf4, pnetcdf). The program writes the file itself first (untimed; the
 *                 raw MPI-IO backend can only re-open files its own process wrote), then for
 *                 every pattern x access x repetition reads it back:
 *                   sequential  rank r reads the contiguous elements [r*E/N, (r+1)*E/N) in gets
 *                               of --buffer bytes;
 *                   striding    buffer k of the file is read by rank k % N ("read one, skip
 *                               N-1", each rank offset by one buffer), so the ranks together
 *                               read the whole file.
 *                 independent: the backend's independent get; collective: every rank makes
 *                 the same number of collective gets (count zero when it has nothing left).
 *   --mode tasks  (experiment A) independent tasks, no communication during the read: each
 *                 rank opens its own file (--files with %d = rank) or its contiguous piece of
 *                 one shared file (--split), with C POSIX pread or serial netCDF-C
 *                 (nc_get_vara_double), sequentially in --buffer reads.
 *
 * Values are the parallel-write generator for a 1-D variable: element i holds (double)i (the
 * global C-order index, as benchio), and every value read is compared with it.
 *
 * Cold cache, before every repetition: the lowest rank of each file evicts the whole file
 * (header pages too), then every rank evicts its own byte ranges (posix_fadvise DONTNEED) and
 * measures with mincore how much of them is still resident. The record carries the state per
 * rank; the repetition counts as cold only when every rank's ranges are (<= 1% resident).
 *
 * Timing per rank after a common barrier: open, read (all gets), close; the task time is their
 * sum. The bytes each rank fetched from storage over the same span (/proc/self/io) are summed
 * into metrics.storage_read_bytes, for the storage-share check of cold records (issue 17).
 * Rank 0 gathers everything and prints one record per repetition (record.c).
 * Errors: one line "climio-pario: error: ..." from rank 0, exit status 2, no MPI_Abort.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netcdf.h>

#include "cache.h"
#include "checksum.h"
#include "fail.h"
#include "jsonl.h"
#include "options.h"
#include "pario.h"
#include "record.h"
#include "support.h"
#include "timer.h"

#define WRITE_SLAB_ELEMS ((uint64_t)2 << 20)    /* 16 MiB of doubles per put while writing */
#define SCAN_BYTES ((size_t)64 << 20)          /* where the data offset is looked for */
#define SIG_ELEMS 64                           /* elements matched to find the data offset */
#define ERRLEN PARIO_ERR_LEN

/* ------------------------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------------------------ */
/* Read plans: the element ranges [first, first+count) of a rank's gets, in order. */

struct plan1 {
    int pattern;
    uint64_t elems, belems, rank, nranks;
    uint64_t lo, hi;     /* sequential: the rank's piece */
    uint64_t ops;        /* this rank's gets */
};

static void plan_make(struct plan1 *p, int pattern, uint64_t elems, uint64_t belems, int rank, int nranks)
{
    p->pattern = pattern;
    p->elems = elems;
    p->belems = belems;
    p->rank = (uint64_t)rank;
    p->nranks = (uint64_t)nranks;
    if (pattern == PAT_SEQUENTIAL) {
        p->lo = elems * p->rank / p->nranks;
        p->hi = elems * (p->rank + 1) / p->nranks;
        p->ops = (p->hi - p->lo + belems - 1) / belems;
    } else {
        uint64_t nbuf = (elems + belems - 1) / belems;
        p->ops = nbuf > p->rank ? (nbuf - p->rank + p->nranks - 1) / p->nranks : 0;
        p->lo = p->hi = 0;
    }
}

/* Get i of the plan: 1 and the range, or 0 when the rank has no get i. */
static int plan_get(const struct plan1 *p, uint64_t i, uint64_t *first, uint64_t *count)
{
    if (i >= p->ops)
        return 0;
    if (p->pattern == PAT_SEQUENTIAL) {
        *first = p->lo + i * p->belems;
        *count = (*first + p->belems > p->hi) ? p->hi - *first : p->belems;
    } else {
        uint64_t k = p->rank + i * p->nranks;
        *first = k * p->belems;
        *count = (*first + p->belems > p->elems) ? p->elems - *first : p->belems;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Page cache of byte ranges. */

/* The byte offset of element 0 in the file: the first SIG_ELEMS values (0, 1, 2, ...) are looked
 * for in the first SCAN_BYTES (netCDF-4/HDF5 and CDF-5 put a header first); -1 if not found. */
static long long find_data_offset(const char *path, uint64_t elems, char *err)
{
    size_t nsig = elems < SIG_ELEMS ? (size_t)elems : SIG_ELEMS;
    double sig[SIG_ELEMS];
    for (size_t i = 0; i < nsig; i++)
        sig[i] = (double)i;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, ERRLEN, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = malloc(SCAN_BYTES);
    ssize_t n = buf ? pread(fd, buf, SCAN_BYTES, 0) : -1;
    close(fd);
    long long off = -1;
    for (int swap = 0; swap < 2 && off < 0 && n > 0; swap++) {   /* native, then big-endian (CDF-5) */
        if (swap)
            for (size_t i = 0; i < nsig; i++) {
                uint64_t u;
                memcpy(&u, &sig[i], 8);
                u = __builtin_bswap64(u);
                memcpy(&sig[i], &u, 8);
            }
        char *hit = memmem(buf, (size_t)n, sig, nsig * sizeof(double));
        if (hit)
            off = hit - buf;
    }
    free(buf);
    if (off < 0)
        snprintf(err, ERRLEN, "cannot find the data of %s in its first %zu MiB (not written by the generator?)",
                 path, SCAN_BYTES >> 20);
    return off;
}

/* Evict the byte ranges, then the fraction of their pages still resident (mincore). */
struct ranges {
    uint64_t *off, *len;
    size_t n, cap;
};

static void ranges_add(struct ranges *r, uint64_t off, uint64_t len)
{
    if (r->n && r->off[r->n - 1] + r->len[r->n - 1] == off) {   /* merge adjacent */
        r->len[r->n - 1] += len;
        return;
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->off = realloc(r->off, r->cap * sizeof *r->off);
        r->len = realloc(r->len, r->cap * sizeof *r->len);
    }
    r->off[r->n] = off;
    r->len[r->n] = len;
    r->n++;
}

static int evict_ranges(const char *path, const struct ranges *r, double *resident, char *err)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return opt_error(err, ERRLEN, "cannot open %s: %s", path, strerror(errno));
    for (size_t i = 0; i < r->n; i++)
        (void)posix_fadvise(fd, (off_t)r->off[i], (off_t)r->len[i], POSIX_FADV_DONTNEED);
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) {
        close(fd);
        *resident = 0.0;
        return 0;
    }
    size_t size = (size_t)st.st_size;
    void *addr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (addr == MAP_FAILED)
        return opt_error(err, ERRLEN, "cannot mmap %s: %s", path, strerror(errno));
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pages = 0, in = 0;
    unsigned char *vec = NULL;
    size_t veccap = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint64_t a = r->off[i] / (uint64_t)page * (uint64_t)page;
        uint64_t b = r->off[i] + r->len[i];
        if (b > size)
            b = size;
        if (b <= a)
            continue;
        size_t np = (size_t)((b - a + (uint64_t)page - 1) / (uint64_t)page);
        if (np > veccap) {
            veccap = np;
            vec = realloc(vec, veccap);
        }
        if (mincore((char *)addr + a, (size_t)(b - a), vec) != 0) {
            int e = errno;
            free(vec);
            munmap(addr, size);
            return opt_error(err, ERRLEN, "mincore failed on %s: %s", path, strerror(e));
        }
        for (size_t k = 0; k < np; k++)
            in += vec[k] & 1;
        pages += np;
    }
    free(vec);
    munmap(addr, size);
    *resident = pages ? (double)in / (double)pages : 0.0;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* One rank's outcome of one repetition. */

enum { T_OPEN = 0, T_READ, T_CLOSE, T_TOTAL, T_START, T_END, T_RESIDENT, T_N };
enum { U_BYTES = 0, U_CHECKSUM, U_MISMATCHES, U_OPS, U_STORAGE, U_N };
#define STORAGE_UNKNOWN UINT64_MAX

/* Bytes this rank fetched from storage since /proc/self/io said io0 (page-cache hits do not count;
 * a collective read's aggregators fetch for the others, so only the sum over ranks means much). */
static uint64_t storage_since(long long io0)
{
    long long io1 = storage_read_bytes();
    return io0 < 0 || io1 < io0 ? STORAGE_UNKNOWN : (uint64_t)(io1 - io0);
}

struct rank_out {
    double t[T_N];
    uint64_t u[U_N];
    char err[ERRLEN];
};

struct world {
    int rank, size, nhosts, max_per_host;
    char *hosts;              /* rank 0: size * MPI_MAX_PROCESSOR_NAME */
    int *host_of;             /* rank 0: index of each rank's host */
    double rt_offset;
};

static void world_init(struct world *w)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0, sizeof name);
    int len;
    MPI_Get_processor_name(name, &len);
    w->hosts = w->rank == 0 ? calloc((size_t)w->size, MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, w->hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (w->rank == 0) {
        w->host_of = calloc((size_t)w->size, sizeof(int));
        int *count = calloc((size_t)w->size, sizeof(int));
        w->nhosts = 0;
        for (int r = 0; r < w->size; r++) {
            int k = -1;
            for (int q = 0; q < r && k < 0; q++)
                if (strcmp(w->hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME,
                           w->hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME) == 0)
                    k = w->host_of[q];
            if (k < 0)
                k = w->nhosts++;
            w->host_of[r] = k;
            count[k]++;
        }
        w->max_per_host = 0;
        for (int k = 0; k < w->nhosts; k++)
            if (count[k] > w->max_per_host)
                w->max_per_host = count[k];
        free(count);
    }
    w->rt_offset = pario_realtime_offset();
}

/* Agree on failure: the lowest failing rank's message everywhere. */
static int agree(char *err)
{
    return agree_failed(MPI_COMM_WORLD, err);
}

/* What the record says about the configuration (params members other than the common ones). */
struct config {
    const char *experiment;     /* "mpiio" | "tasks" */
    const char *stack;          /* backend or stack name */
    const char *library;
    const char *pattern;
    const char *access;         /* "independent" | "collective" | "none" */
    int collective;
    const char *file_set;
    uint64_t files, file_bytes, elems, buffer;
    MPI_Info hints_requested, hints_used;
};

/* The record writer's context: the run's ranks and hosts, the configuration, --settle. */
struct read_record {
    const struct world *w;
    const struct config *cf;
    double settle_s;
};

static void read_params(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    const struct read_record *x = ctx;
    const struct config *cf = x->cf;
    jsonl_str(j, "experiment", cf->experiment);
    jsonl_str(j, "stack", cf->stack);
    jsonl_str(j, "pattern", cf->pattern);
    jsonl_str(j, "access", cf->access);
    jsonl_bool(j, "collective", cf->collective);
    jsonl_str(j, "file_set", cf->file_set);
    jsonl_u64(j, "files", cf->files);
    jsonl_u64(j, "ranks", (uint64_t)t->n);
    jsonl_u64(j, "nodes", (uint64_t)x->w->nhosts);
    jsonl_u64(j, "tasks_per_node", (uint64_t)x->w->max_per_host);
    jsonl_begin_array(j, "hosts");
    for (int i = 0; i < t->n; i++)
        jsonl_str(j, NULL, x->w->hosts + (size_t)i * MPI_MAX_PROCESSOR_NAME);
    jsonl_end(j);
    jsonl_u64(j, "buffer_bytes", cf->buffer);
    jsonl_u64(j, "file_bytes", cf->file_bytes);
    jsonl_u64(j, "elements", cf->elems);
    jsonl_str(j, "dtype", "float64");
    jsonl_str(j, "library", cf->library);
    jsonl_str(j, "mpi_library", pario_mpi_library());
    jsonl_double(j, "settle_s", x->settle_s);
    hints_json(j, "hints_requested", cf->hints_requested);
    hints_json(j, "hints", cf->hints_used);
}

static void read_metrics(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    const struct read_record *x = ctx;
    int n = t->n;
    uint64_t bytes = record_sum_u(t, U_BYTES), mism = record_sum_u(t, U_MISMATCHES), storage = 0;
    double tsum = 0, tmax = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = record_u(t, i, U_STORAGE);
        storage = storage == STORAGE_UNKNOWN || s == STORAGE_UNKNOWN ? STORAGE_UNKNOWN : storage + s;
        tsum += record_d(t, i, T_TOTAL);
        tmax = record_d(t, i, T_TOTAL) > tmax ? record_d(t, i, T_TOTAL) : tmax;
    }
    double tmean = tsum / n, t0 = record_min(t, T_START), t1 = record_max(t, T_END);
    jsonl_u64(j, "bytes", bytes);
    jsonl_double(j, "wall_s", t1 - t0);
    jsonl_double(j, "task_max_s", tmax);
    jsonl_double(j, "task_mean_s", tmean);
    jsonl_double(j, "rate_MBps", bytes / tmax / 1e6);
    jsonl_double(j, "rate_mean_task_MBps", bytes / tmean / 1e6);
    jsonl_double(j, "rate_slowest_task_MBps", bytes / tmax / 1e6);
    jsonl_u64(j, "epoch_start_us", (uint64_t)llround((t0 + x->w->rt_offset) * 1e6));
    jsonl_u64(j, "epoch_end_us", (uint64_t)llround((t1 + x->w->rt_offset) * 1e6));
    jsonl_begin(j, "phases");
    record_stats(j, "open", t, T_OPEN);
    record_stats(j, "read", t, T_READ);
    record_stats(j, "close", t, T_CLOSE);
    jsonl_end(j);
    jsonl_begin(j, "per_rank");
    record_column(j, "open", t, T_OPEN);
    record_column(j, "read", t, T_READ);
    record_column(j, "close", t, T_CLOSE);
    record_column(j, "total", t, T_TOTAL);
    record_column_u(j, "bytes", t, U_BYTES);
    record_column_u(j, "ops", t, U_OPS);
    jsonl_begin_array(j, "checksum");
    for (int i = 0; i < n; i++) {
        char hex[17];
        checksum_hex(record_u(t, i, U_CHECKSUM), hex);
        jsonl_str(j, NULL, hex);
    }
    jsonl_end(j);
    jsonl_begin_array(j, "rate_MBps");   /* the thesis's per-task rate: all bytes / this task's time */
    for (int i = 0; i < n; i++)
        jsonl_double(j, NULL, bytes / record_d(t, i, T_TOTAL) / 1e6);
    jsonl_end(j);
    jsonl_begin_array(j, "host");
    for (int i = 0; i < n; i++)
        jsonl_u64(j, NULL, (uint64_t)x->w->host_of[i]);
    jsonl_end(j);
    jsonl_end(j);
    jsonl_double(j, "imbalance", tmax / tmean);
    jsonl_bool(j, "verified", mism == 0);
    jsonl_u64(j, "mismatches", mism);
    /* all ranks, open to close; the Python side compares it with the bytes (climio.measure.series) */
    if (storage != STORAGE_UNKNOWN)
        jsonl_u64(j, "storage_read_bytes", storage);
}

static void read_cache(struct jsonl *j, const struct record_rows *t, const void *ctx)
{
    (void)ctx;
    double rmax = record_max(t, T_RESIDENT);
    jsonl_str(j, "state", rmax > CACHE_COLD_THRESHOLD ? "warm" : "cold");
    jsonl_str(j, "requested", "cold");
    jsonl_str(j, "method", "posix_fadvise(DONTNEED) of each rank's byte ranges, checked with mincore");
    jsonl_double(j, "resident_fraction_max", rmax > 0 ? rmax : 0.0);
    jsonl_begin_array(j, "per_rank");
    for (int i = 0; i < t->n; i++)
        jsonl_str(j, NULL, record_d(t, i, T_RESIDENT) > CACHE_COLD_THRESHOLD ? "warm" : "cold");
    jsonl_end(j);
    record_column(j, "resident_fraction", t, T_RESIDENT);
}

static const struct record_writer writer = {"parallel-read", read_params, read_metrics, read_cache};

/* Collective: this rank's outcome into the record rank 0 prints. */
static void emit(const struct world *w, const struct cli *cl, const struct config *cf, const struct rank_out *o,
                 uint64_t rep)
{
    const struct read_record x = {w, cf, cl->rd.settle_s};
    record_emit(MPI_COMM_WORLD, &writer, &x, o->t, T_N, o->u, U_N, rep, cl->opt.platform_id);
}

/* Compare a get's values with the generator and add them to the stream checksum. */
static uint64_t check_values(const double *buf, uint64_t first, uint64_t count, struct checksum *ck)
{
    uint64_t bad_ = 0;
    for (uint64_t i = 0; i < count; i++)
        if (buf[i] != (double)(first + i))
            bad_++;
    checksum_update(ck, buf, (size_t)count * sizeof(double));
    return bad_;
}

/* One pass of a rank's gets. ck NULL: the timed pass, each get's first and last values checked;
 * else every value checked and added to the stream checksum. Returns 0, or -1 with err set. */
static int read_pass(const struct pario_backend *b, struct pario_file *f, struct plan1 *p, int coll, uint64_t calls,
                     double *buf, struct checksum *ck, uint64_t *mism, uint64_t *got, char *err)
{
    for (uint64_t i = 0; i < calls; i++) {
        uint64_t first = 0, count = 0;
        int have = plan_get(p, i, &first, &count);
        if (!have)
            first = count = 0;
        if (b->get(f, 0, &first, &count, buf, coll) != 0) {
            snprintf(err, ERRLEN, "%s: %s %s get%s: %s", b->name, pattern_names[p->pattern], access_names[coll],
                     ck ? " (verification pass)" : "", f->err);
            return -1;
        }
        if (!have)
            continue;
        if (ck)
            *mism += check_values(buf, first, count, ck);
        else
            *mism += (buf[0] != (double)first) + (count > 1 && buf[count - 1] != (double)(first + count - 1));
        *got += count * 8;
    }
    return 0;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void stall(const struct pario_read_options *c, int rank)
{
    if (rank == c->stall_rank && c->stall_s > 0)
        sleep_s(c->stall_s);
}

/* ------------------------------------------------------------------------------------------ */
/* Experiment B: the shared file through a backend. */

static int write_file(const struct pario_backend *b, const char *path, uint64_t elems, MPI_Info hints, int rank,
                      int size, char *err)
{
    struct pario_file f = {.backend = b, .comm = MPI_COMM_WORLD, .info = hints, .fill = 0};
    int dimid, varid, rc = 0;
    struct pario_var_layout lay = {.kind = PARIO_CHUNK_CONTIGUOUS};
    if (b->create(&f, path) != 0)
        return opt_error(err, ERRLEN, "%s", f.err);
    if (b->def_dim(&f, "dim1", elems, &dimid) != 0 || b->def_var(&f, "var", PARIO_DOUBLE, 1, &dimid, &lay, &varid) != 0
        || b->enddef(&f) != 0) {
        opt_error(err, ERRLEN, "%s", f.err);
        b->close(&f);
        return -1;
    }
    uint64_t lo = elems * (uint64_t)rank / (uint64_t)size, hi = elems * (uint64_t)(rank + 1) / (uint64_t)size;
    uint64_t mine = (hi - lo + WRITE_SLAB_ELEMS - 1) / WRITE_SLAB_ELEMS, nops;
    MPI_Allreduce(&mine, &nops, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    double *buf = malloc(sizeof(double) * (size_t)(WRITE_SLAB_ELEMS < elems ? WRITE_SLAB_ELEMS : elems));
    for (uint64_t i = 0; i < nops && rc == 0; i++) {
        uint64_t start = lo + i * WRITE_SLAB_ELEMS, count = 0;
        if (i < mine)
            count = start + WRITE_SLAB_ELEMS > hi ? hi - start : WRITE_SLAB_ELEMS;
        else
            start = 0;
        for (uint64_t k = 0; k < count; k++)
            buf[k] = (double)(start + k);
        struct pario_memory mem = {.buf = buf};
        if (b->put(&f, varid, &start, &count, &mem, 1) != 0) {
            opt_error(err, ERRLEN, "%s", f.err);
            rc = -1;
        }
    }
    free(buf);
    if (b->close(&f) != 0 && rc == 0) {
        opt_error(err, ERRLEN, "%s", f.err);
        rc = -1;
    }
    return rc;
}

/* long: the loop (backend x pattern x access x rep) every rank walks in step: write, evict, time open/read/close,
 * verify, emit; each agree() exit (which unlinks the file) must come at the same step on all ranks */
static int run_mpiio(const struct cli *cl, struct world *w, MPI_Info hints)
{
    const struct pario_read_options *c = &cl->rd;
    char err[ERRLEN] = "";
    uint64_t elems = c->size / 8, belems = c->buffer / 8;
    uint64_t nbuf = (elems + belems - 1) / belems;
    for (int pi = 0; pi < c->npatterns; pi++) {
        if (c->patterns[pi] == PAT_SEQUENTIAL && elems < (uint64_t)w->size)
            return opt_error(err, ERRLEN, "more ranks than the file can split: %llu elements over %d ranks",
                       (unsigned long long)elems, w->size), pario_finish_error(PARIO_PROGRAM, err);
        if (c->patterns[pi] == PAT_STRIDING && nbuf < (uint64_t)w->size) {
            snprintf(err, ERRLEN, "more ranks than the file can split: %llu buffers of %llu bytes cannot stride over "
                     "%d ranks (use a smaller --buffer or fewer ranks)", (unsigned long long)nbuf,
                     (unsigned long long)c->buffer, w->size);
            return pario_finish_error(PARIO_PROGRAM, err);
        }
    }
    for (int bi = 0; bi < cl->nbackends; bi++) {
        const struct pario_backend *b = cl->backends[bi];
        char path[PARIO_PATH_LEN];
        snprintf(path, sizeof path, "%s/parallel-read-%s.%s", cl->opt.dir, b->name, pario_extension(b));
        write_file(b, path, elems, hints, w->rank, w->size, err);
        if (agree(err)) {
            char msg[ERRLEN + 64];
            snprintf(msg, sizeof msg, "%s: writing %s: %s", b->name, path, err);
            if (w->rank == 0)
                unlink(path);
            return pario_finish_error(PARIO_PROGRAM, msg);
        }
        long long data_off = 0;
        uint64_t file_bytes = 0;
        if (w->rank == 0) {
            struct stat st;
            cache_evict(path, err, ERRLEN);   /* fsync: dirty pages cannot be dropped */
            if (stat(path, &st) == 0)
                file_bytes = (uint64_t)st.st_size;
            data_off = find_data_offset(path, elems, err);
            if (c->settle_s > 0)   /* the others wait for rank 0 at the broadcast */
                sleep_s(c->settle_s);
        }
        MPI_Bcast(&data_off, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        MPI_Bcast(&file_bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (agree(err)) {
            if (w->rank == 0)
                unlink(path);
            return pario_finish_error(PARIO_PROGRAM, err);
        }
        double *buf = malloc(sizeof(double) * (size_t)(belems < elems ? belems : elems));
        for (int pi = 0; pi < c->npatterns; pi++) {
            struct plan1 p;
            plan_make(&p, c->patterns[pi], elems, belems, w->rank, w->size);
            struct ranges rg = {0};
            for (uint64_t i = 0, first, count; plan_get(&p, i, &first, &count); i++)
                ranges_add(&rg, (uint64_t)data_off + first * 8, count * 8);
            uint64_t nops;
            MPI_Allreduce(&p.ops, &nops, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
            for (int ai = 0; ai < c->naccess; ai++) {
                int coll = c->access[ai] == ACC_COLLECTIVE;
                for (uint64_t rep = 0; rep < cl->opt.reps; rep++) {
                    struct rank_out o;
                    memset(&o, 0, sizeof o);
                    if (w->rank == 0)
                        cache_evict(path, o.err, ERRLEN);
                    MPI_Barrier(MPI_COMM_WORLD);
                    if (!o.err[0])
                        evict_ranges(path, &rg, &o.t[T_RESIDENT], o.err);
                    if (agree(o.err)) {
                        unlink(path);
                        return pario_finish_error(PARIO_PROGRAM, o.err);
                    }
                    struct checksum ck;
                    checksum_init(&ck);
                    struct pario_file f = {.backend = b, .comm = MPI_COMM_WORLD, .info = hints, .fill = 0};
                    MPI_Info used = MPI_INFO_NULL;
                    long long io0 = storage_read_bytes();
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    int rc = b->open(&f, path);
                    double t1 = MPI_Wtime();
                    if (rc != 0)
                        snprintf(o.err, ERRLEN, "%s: open: %s", b->name, f.err);
                    /* Every rank makes nops gets when collective (count zero past its own); its own ops when not. */
                    uint64_t mism = 0, got = 0;
                    uint64_t calls = coll ? nops : p.ops;
                    if (rc == 0)
                        rc = read_pass(b, &f, &p, coll, calls, buf, NULL, &mism, &got, o.err);
                    stall(c, w->rank);
                    double t2 = MPI_Wtime();
                    /* Untimed: the same gets again (now from the page cache), every value checked. In the
                     * timed pass above each get's first and last values were checked (a wrong offset shows);
                     * checking every value there made each collective call wait for both ranks' checks
                     * (measured: -35 % on 1 GiB collective reads, 2 ranks; IOR and fio check nothing). */
                    if (rc == 0) {
                        uint64_t again = 0;
                        rc = read_pass(b, &f, &p, coll, calls, buf, &ck, &mism, &again, o.err);
                    }
                    if (agree(o.err)) {   /* untimed; before the collective queries below */
                        if (rc == 0)
                            b->close(&f);
                        if (w->rank == 0)
                            unlink(path);
                        return pario_finish_error(PARIO_PROGRAM, o.err);
                    }
                    /* Every rank asks (HDF5's query duplicates the communicator: collective); rank 0's is kept. */
                    if (rc == 0 && b->hints(&f, &used) != 0)
                        used = MPI_INFO_NULL;
                    if (w->rank != 0 && used != MPI_INFO_NULL)
                        MPI_Info_free(&used);
                    double t3 = MPI_Wtime();
                    if (rc == 0 && b->close(&f) != 0) {
                        snprintf(o.err, ERRLEN, "%s: close: %s", b->name, f.err);
                        rc = -1;
                    }
                    double t4 = MPI_Wtime();
                    o.u[U_STORAGE] = storage_since(io0);   /* the untimed verification pass reads the page cache */
                    if (agree(o.err)) {
                        unlink(path);
                        return pario_finish_error(PARIO_PROGRAM, o.err);
                    }
                    o.t[T_OPEN] = t1 - t0;
                    o.t[T_READ] = t2 - t1;
                    o.t[T_CLOSE] = t4 - t3;
                    o.t[T_TOTAL] = o.t[T_OPEN] + o.t[T_READ] + o.t[T_CLOSE];
                    o.t[T_START] = t0;
                    o.t[T_END] = t4 - (t3 - t2);
                    o.u[U_BYTES] = got;
                    o.u[U_CHECKSUM] = checksum_value(&ck);
                    o.u[U_MISMATCHES] = mism;
                    o.u[U_OPS] = p.ops;
                    struct config cf = {
                        .experiment = "mpiio", .stack = b->name, .library = b->version(),
                        .pattern = pattern_names[p.pattern], .access = access_names[coll],
                        .collective = coll && w->size > 1, .file_set = "shared", .files = 1,
                        .file_bytes = file_bytes, .elems = elems, .buffer = c->buffer,
                        .hints_requested = hints, .hints_used = used,
                    };
                    emit(w, cl, &cf, &o, rep);
                    if (used != MPI_INFO_NULL)
                        MPI_Info_free(&used);
                }
            }
            free(rg.off);
            free(rg.len);
        }
        free(buf);
        MPI_Barrier(MPI_COMM_WORLD);
        if (w->rank == 0 && !cl->opt.keep)
            unlink(path);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Experiment A: independent tasks, each on its own file or piece; no MPI between the barriers. */

static void task_path(const struct pario_read_options *c, int rank, char *out, size_t len)
{
    const char *pct = strstr(c->files, "%d");
    if (pct && !c->split)
        snprintf(out, len, "%.*s%d%s", (int)(pct - c->files), c->files, rank, pct + 2);
    else
        snprintf(out, len, "%s", c->files);
}

/* Elements of the variable: raw file size / 8, or the netCDF variable's length. */
static int task_elems(const struct pario_read_options *c, const char *path, uint64_t *elems, char *err)
{
    if (c->stack == STACK_POSIX) {
        struct stat st;
        if (stat(path, &st) != 0)
            return opt_error(err, ERRLEN, "cannot stat %s: %s", path, strerror(errno));
        *elems = (uint64_t)st.st_size / 8;
        return 0;
    }
    int nc, v, nd, dim, rc;
    size_t len;
    if ((rc = nc_open(path, NC_NOWRITE, &nc)) != NC_NOERR)
        return opt_error(err, ERRLEN, "cannot open %s: %s", path, nc_strerror(rc));
    rc = nc_inq_varid(nc, c->var, &v);
    if (rc == NC_NOERR)
        rc = nc_inq_varndims(nc, v, &nd);
    if (rc == NC_NOERR && nd != 1)
        rc = NC_EINVAL;
    if (rc == NC_NOERR)
        rc = nc_inq_vardimid(nc, v, &dim);
    if (rc == NC_NOERR)
        rc = nc_inq_dimlen(nc, dim, &len);
    nc_close(nc);
    if (rc != NC_NOERR)
        return opt_error(err, ERRLEN, "%s: variable %s: %s (a 1-D float64 variable is needed)", path, c->var, nc_strerror(rc));
    *elems = len;
    return 0;
}

/* long: one repetition's open/read/close of both stacks timed between two barriers, with agreed exits; the
 * timestamps t0-t3 and the record they fill stay in one place */
static int run_tasks(const struct cli *cl, struct world *w)
{
    const struct pario_read_options *c = &cl->rd;
    char err[ERRLEN] = "", path[PARIO_PATH_LEN];
    task_path(c, w->rank, path, sizeof path);
    uint64_t elems = 0, belems = c->buffer / 8;
    task_elems(c, path, &elems, err);
    if (agree(err))
        return pario_finish_error(PARIO_PROGRAM, err);
    if (c->split && elems < (uint64_t)w->size) {
        snprintf(err, ERRLEN, "more ranks than the file can split: %s has %llu elements for %d ranks", path,
                 (unsigned long long)elems, w->size);
        return pario_finish_error(PARIO_PROGRAM, err);
    }
    struct plan1 p;
    plan_make(&p, PAT_SEQUENTIAL, elems, belems, c->split ? w->rank : 0, c->split ? w->size : 1);
    /* The file's first rank (rank 0 for a shared file; every rank for its own) finds the data. */
    int owner = !c->split || w->rank == 0;
    long long data_off = 0;
    uint64_t file_bytes = 0;
    struct stat st;
    if (owner) {
        if (stat(path, &st) == 0)
            file_bytes = (uint64_t)st.st_size;
        if (c->stack == STACK_NETCDF)
            data_off = find_data_offset(path, elems, err);
    }
    if (c->split) {
        MPI_Bcast(&data_off, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        MPI_Bcast(&file_bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    } else {
        uint64_t mine = file_bytes;
        MPI_Allreduce(&mine, &file_bytes, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    if (agree(err))
        return pario_finish_error(PARIO_PROGRAM, err);
    struct ranges rg = {0};
    for (uint64_t i = 0, first, count; plan_get(&p, i, &first, &count); i++)
        ranges_add(&rg, (uint64_t)data_off + first * 8, count * 8);
    double *buf = malloc(sizeof(double) * (size_t)(belems < elems ? belems : elems ? elems : 1));
    char lib[64];
    snprintf(lib, sizeof lib, c->stack == STACK_POSIX ? "POSIX pread" : "netCDF-C %.40s",
             c->stack == STACK_POSIX ? "" : nc_inq_libvers());
    for (char *s = lib; *s; s++)
        if (*s == ' ' && s > lib + 9 && c->stack == STACK_NETCDF) {
            *s = '\0';
            break;
        }
    for (uint64_t rep = 0; rep < cl->opt.reps; rep++) {
        struct rank_out o;
        memset(&o, 0, sizeof o);
        if (owner)
            cache_evict(path, o.err, ERRLEN);
        MPI_Barrier(MPI_COMM_WORLD);
        if (!o.err[0])
            evict_ranges(path, &rg, &o.t[T_RESIDENT], o.err);
        if (agree(o.err))
            return pario_finish_error(PARIO_PROGRAM, o.err);
        struct checksum ck;
        checksum_init(&ck);
        uint64_t mism = 0, got = 0;
        int fd = -1, nc = -1, v = -1, rc = 0;
        long long io0 = storage_read_bytes();
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (c->stack == STACK_POSIX) {
            fd = open(path, O_RDONLY);
            if (fd < 0)
                rc = opt_error(o.err, ERRLEN, "cannot open %s: %s", path, strerror(errno));
        } else {
            int e = nc_open(path, NC_NOWRITE, &nc);
            if (e == NC_NOERR)
                e = nc_inq_varid(nc, c->var, &v);
            if (e != NC_NOERR)
                rc = opt_error(o.err, ERRLEN, "cannot open %s: %s", path, nc_strerror(e));
        }
        double t1 = MPI_Wtime();
        for (uint64_t i = 0, first, count; rc == 0 && plan_get(&p, i, &first, &count); i++) {
            if (c->stack == STACK_POSIX) {
                size_t want = (size_t)count * 8, done = 0;
                while (done < want) {
                    ssize_t n = pread(fd, (char *)buf + done, want - done, (off_t)(first * 8 + done));
                    if (n < 0 && errno == EINTR)
                        continue;
                    if (n <= 0) {
                        rc = opt_error(o.err, ERRLEN, "read of %s failed: %s", path, n < 0 ? strerror(errno) : "end of file");
                        break;
                    }
                    done += (size_t)n;
                }
            } else {
                size_t s0 = (size_t)first, n0 = (size_t)count;
                int e = nc_get_vara_double(nc, v, &s0, &n0, buf);
                if (e != NC_NOERR)
                    rc = opt_error(o.err, ERRLEN, "nc_get_vara_double of %s failed: %s", path, nc_strerror(e));
            }
            if (rc == 0) {
                mism += check_values(buf, first, count, &ck);
                got += count * 8;
            }
        }
        stall(c, w->rank);
        double t2 = MPI_Wtime();
        if (fd >= 0)
            close(fd);
        if (nc >= 0)
            nc_close(nc);
        double t3 = MPI_Wtime();
        o.u[U_STORAGE] = storage_since(io0);
        if (agree(o.err))
            return pario_finish_error(PARIO_PROGRAM, o.err);
        o.t[T_OPEN] = t1 - t0;
        o.t[T_READ] = t2 - t1;
        o.t[T_CLOSE] = t3 - t2;
        o.t[T_TOTAL] = t3 - t0;
        o.t[T_START] = t0;
        o.t[T_END] = t3;
        o.u[U_BYTES] = got;
        o.u[U_CHECKSUM] = checksum_value(&ck);
        o.u[U_MISMATCHES] = mism;
        o.u[U_OPS] = p.ops;
        struct config cf = {
            .experiment = "tasks", .stack = stack_names[c->stack], .library = lib, .pattern = "sequential",
            .access = "independent", .collective = 0, .file_set = c->file_set,
            .files = c->split ? 1 : (uint64_t)w->size, .file_bytes = file_bytes, .elems = elems,
            .buffer = c->buffer, .hints_requested = MPI_INFO_NULL, .hints_used = MPI_INFO_NULL,
        };
        emit(w, cl, &cf, &o, rep);
    }
    free(buf);
    free(rg.off);
    free(rg.len);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */

int read_main(const struct cli *c, const struct pario_driver *d, MPI_Info hints)
{
    (void)d;
    struct world w = {0};
    world_init(&w);
    int rc = c->opt.mode == MODE_MPIIO ? run_mpiio(c, &w, hints) : run_tasks(c, &w);
    free(w.hosts);
    free(w.host_of);
    return rc;
}
