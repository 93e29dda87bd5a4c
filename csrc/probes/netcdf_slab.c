/* climio-probe-netcdf-slab: the chunking study (thesis ch. 4) through netCDF-C. Reads a list
 * of hyperslabs of one N-D numeric variable with nc_get_vara in the variable's own type and
 * prints one record per repetition. The repetition loop, records and options are in
 * csrc/common (series_run); this file inspects the variable, reads the hyperslab list and
 * supplies open / next hyperslab / close / params. Protocol: csrc/README.md. */
#include <errno.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "fail.h"
#include "jsonl.h"
#include "ncprobe.h"
#include "series.h"

#define PROGRAM "climio-probe-netcdf-slab"
#define STUDY "chunking"
#define MAX_RANK 8

/* numpy's name (dtype.str without the byte order) and size of each numeric netCDF type. */
static const struct {
    nc_type type;
    const char *dtype;
    size_t itemsize;
} numeric_types[] = {
    {NC_BYTE, "i1", 1},  {NC_UBYTE, "u1", 1},  {NC_SHORT, "i2", 2}, {NC_USHORT, "u2", 2},
    {NC_INT, "i4", 4},   {NC_UINT, "u4", 4},   {NC_INT64, "i8", 8}, {NC_UINT64, "u8", 8},
    {NC_FLOAT, "f4", 4}, {NC_DOUBLE, "f8", 8},
};

/* params members the probe writes itself: a --label may not reuse them. */
static const char *const own_params[] = {
    "layer", "file", "variable", "var_shape", "dtype", "slices_total", "library",
    "chunk_cache", "chunking", "deflate", "shuffle",
};

struct slab_probe {
    const struct probe_args *a;
    const char *path;             /* absolute */

    /* The variable, as inspected before the first repetition. */
    int rank;
    size_t shape[MAX_RANK];
    const char *dtype;
    size_t itemsize;
    int storage;                  /* NC_CHUNKED, NC_CONTIGUOUS, NC_COMPACT */
    size_t chunks[MAX_RANK];
    int deflate_level;            /* 0: no deflate */
    int shuffle;

    /* The hyperslabs, in file order: starts then counts, 2 * rank values each. */
    size_t nslices;
    size_t *slices;
    uint64_t *slice_bytes;
    uint64_t planned_bytes, largest_bytes;

    /* One repetition. */
    int ncid, varid;
    size_t next;
    int have_cache;               /* chunk cache read back (not for netCDF-3 files) */
    size_t cache_size, cache_nelems;
    float cache_preemption;
};

/* Set the chunk cache as asked (--chunk-cache; "default" leaves the library's) and read back
 * the values in effect. 0, or -1 with the nc_strerror text in err. */
static int apply_chunk_cache(struct slab_probe *s, int ncid, int varid, char *err, size_t errlen)
{
    const struct probe_args *a = s->a;
    s->have_cache = 0;
    if (a->chunk_cache_set) {
        int status = nc_set_var_chunk_cache(ncid, varid, (size_t)a->chunk_cache_bytes,
                                            (size_t)a->chunk_cache_nelems,
                                            (float)a->chunk_cache_preemption);
        if (status != NC_NOERR)
            return ncprobe_error(status, err, errlen);
    }
    /* A netCDF-3 file has no chunk cache: params.chunk_cache is then null. */
    s->have_cache = nc_get_var_chunk_cache(ncid, varid, &s->cache_size, &s->cache_nelems,
                                           &s->cache_preemption) == NC_NOERR;
    return 0;
}

/* A variable whose HDF5 filters the library cannot load (e.g. zstd without its plugin) cannot
 * be measured: say so before any record. */
static void check_filters(int ncid, int varid, const char *file, const char *var)
{
    static const struct {
        unsigned id;
        const char *name;
    } known[] = {
        {H5Z_FILTER_DEFLATE, "deflate"}, {H5Z_FILTER_SHUFFLE, "shuffle"},
        {H5Z_FILTER_FLETCHER32, "fletcher32"}, {H5Z_FILTER_SZIP, "szip"}, {5, "nbit"},
        {6, "scaleoffset"}, {H5Z_FILTER_BZIP2, "bzip2"}, {H5Z_FILTER_BLOSC, "blosc"},
        {32004, "lz4"}, {H5Z_FILTER_ZSTD, "zstd"},
    };
    size_t n = 0;
    /* A netCDF-3 file has no filters. */
    if (nc_inq_var_filter_ids(ncid, varid, &n, NULL) != NC_NOERR || n == 0)
        return;
    unsigned *ids = calloc(n, sizeof *ids);
    if (!ids)
        fail("out of memory");
    int status = nc_inq_var_filter_ids(ncid, varid, &n, ids);
    if (status != NC_NOERR)
        fail("cannot inspect the filters of '%s' in %s: %s", var, file, nc_strerror(status));
    for (size_t i = 0; i < n; i++) {
        if (nc_inq_filter_avail(ncid, ids[i]) == NC_NOERR)
            continue;
        const char *name = "unknown";
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            if (known[k].id == ids[i])
                name = known[k].name;
        fail("variable '%s' in %s needs HDF5 filter %u (%s), which this netCDF-C cannot load "
             "(plugin missing from HDF5_PLUGIN_PATH?)", var, file, ids[i], name);
    }
    free(ids);
}

/* Shape, type, storage and filters of the variable; any problem ends the program (status 2). */
static void inspect(struct slab_probe *s, const char *file, const char *var)
{
    int ncid, varid, ndims, dimids[MAX_RANK], status;
    nc_type type;
    char type_name[NC_MAX_NAME + 1], err[SERIES_ERRLEN];

    ncprobe_open_or_fail(file, var, &ncid, &varid);
    status = nc_inq_varndims(ncid, varid, &ndims);
    if (status == NC_NOERR)
        status = nc_inq_vartype(ncid, varid, &type);
    if (status != NC_NOERR)
        fail("cannot inspect variable '%s' in %s: %s", var, file, nc_strerror(status));
    ncprobe_type_name(ncid, type, type_name);
    if (ndims < 1 || ndims > MAX_RANK)
        fail("variable '%s' in %s has %d dimensions: 1 to %d are read", var, file, ndims, MAX_RANK);
    s->dtype = NULL;
    for (size_t i = 0; i < sizeof numeric_types / sizeof numeric_types[0]; i++) {
        if (numeric_types[i].type == type) {
            s->dtype = numeric_types[i].dtype;
            s->itemsize = numeric_types[i].itemsize;
        }
    }
    if (!s->dtype)
        fail("variable '%s' in %s has type %s: only numeric types are read", var, file, type_name);
    s->rank = ndims;
    status = nc_inq_vardimid(ncid, varid, dimids);
    for (int d = 0; d < ndims && status == NC_NOERR; d++)
        status = nc_inq_dimlen(ncid, dimids[d], &s->shape[d]);
    if (status == NC_NOERR)
        status = nc_inq_var_chunking(ncid, varid, &s->storage, s->chunks);
    if (status != NC_NOERR)
        fail("cannot inspect variable '%s' in %s: %s", var, file, nc_strerror(status));

    check_filters(ncid, varid, file, var);

    int shuffle = 0, deflate = 0, level = 0;
    /* A netCDF-3 file has no filters. */
    if (nc_inq_var_deflate(ncid, varid, &shuffle, &deflate, &level) != NC_NOERR)
        shuffle = deflate = 0;
    s->shuffle = shuffle != 0;
    s->deflate_level = deflate ? level : 0;

    /* The cache spec is checked here, so a repetition does not fail on it. */
    if (apply_chunk_cache(s, ncid, varid, err, sizeof err) != 0) {
        nc_close(ncid);
        fail("cannot set the chunk cache of '%s' in %s: %s", var, file, err);
    }
    nc_close(ncid);
}

static void format_shape(const struct slab_probe *s, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (int d = 0; d < s->rank && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%zu", d ? "," : "[", s->shape[d]);
    if (len < n)
        snprintf(out + len, n - len, "]");
}

/* One hyperslab: its 2 * rank integers are in v; check it against the shape and keep it. */
static void add_slice(struct slab_probe *s, const size_t *v, const char *file, size_t lineno)
{
    const size_t *start = v, *count = v + s->rank;
    uint64_t elems = 1, bytes;
    for (int d = 0; d < s->rank; d++) {
        if (start[d] > s->shape[d] || count[d] > s->shape[d] - start[d]) {
            char shape[MAX_RANK * 24 + 4];
            format_shape(s, shape, sizeof shape);
            fail("hyperslab on line %zu of %s lies outside variable '%s' of shape %s "
                 "(dimension %d: start %zu + count %zu > %zu)",
                 lineno, file, s->a->var, shape, d, start[d], count[d], s->shape[d]);
        }
        if (__builtin_mul_overflow(elems, (uint64_t)count[d], &elems))
            fail("hyperslab on line %zu of %s is too large", lineno, file);
    }
    if (__builtin_mul_overflow(elems, (uint64_t)s->itemsize, &bytes) ||
        __builtin_add_overflow(s->planned_bytes, bytes, &s->planned_bytes))
        fail("hyperslab on line %zu of %s is too large", lineno, file);

    size_t k = s->nslices++, w = 2 * (size_t)s->rank;
    size_t *slices = realloc(s->slices, s->nslices * w * sizeof *slices);
    uint64_t *sizes = realloc(s->slice_bytes, s->nslices * sizeof *sizes);
    if (slices)
        s->slices = slices;
    if (sizes)
        s->slice_bytes = sizes;
    if (!slices || !sizes)
        fail("out of memory");
    memcpy(s->slices + k * w, v, w * sizeof *v);
    s->slice_bytes[k] = bytes;
    if (bytes > s->largest_bytes)
        s->largest_bytes = bytes;
}

/* The slices file: one hyperslab a line, n starts then n counts; '#' starts a comment line. */
static void read_slices(struct slab_probe *s, const char *file)
{
    FILE *fp = fopen(file, "r");
    if (!fp)
        fail("cannot read slices file %s: %s", file, strerror(errno));
    char *line = NULL;
    size_t cap = 0, lineno = 0, want = 2 * (size_t)s->rank;
    size_t v[2 * MAX_RANK];
    while (getline(&line, &cap, fp) != -1) {
        lineno++;
        if (line[0] == '#')
            continue;
        size_t n = 0;
        char *save = NULL, what[512];
        for (char *tok = strtok_r(line, " \t\r\n\v\f", &save); tok;
             tok = strtok_r(NULL, " \t\r\n\v\f", &save)) {
            if (n < want) {
                snprintf(what, sizeof what, "value %zu on line %zu of %s", n + 1, lineno, file);
                v[n] = (size_t)args_u64(tok, what);
            }
            n++;
        }
        if (n == 0)
            continue;  /* blank line */
        if (n != want)
            fail("line %zu of %s has %zu integers: a hyperslab of the %d-D variable '%s' "
                 "needs %zu (%d starts, then %d counts)",
                 lineno, file, n, s->rank, s->a->var, want, s->rank, s->rank);
        add_slice(s, v, file, lineno);
    }
    int read_error = ferror(fp);
    free(line);
    fclose(fp);
    if (read_error)
        fail("cannot read slices file %s", file);
    if (s->nslices == 0)
        fail("no hyperslabs in %s", file);
}

static void check_labels(const struct probe_args *a)
{
    for (size_t i = 0; i < a->nlabels; i++)
        for (size_t k = 0; k < sizeof own_params / sizeof own_params[0]; k++)
            if (strcmp(a->labels[i].key, own_params[k]) == 0)
                fail("--label %s: the probe writes params.%s itself", a->labels[i].key, own_params[k]);
}

/* ---- the series callbacks ---- */

static int slab_open(void *ctx, const char *path, char *err, size_t errlen)
{
    struct slab_probe *s = ctx;
    s->next = 0;
    s->have_cache = 0;
    if (ncprobe_open(path, s->a->var, &s->ncid, &s->varid, err, errlen) != 0)
        return -1;
    if (apply_chunk_cache(s, s->ncid, s->varid, err, errlen) != 0) {
        nc_close(s->ncid);
        return -1;
    }
    return 0;
}

static int slab_next(void *ctx, void *buf, uint64_t cap, uint64_t *got, char *err, size_t errlen)
{
    struct slab_probe *s = ctx;
    if (s->next >= s->nslices)
        return 0;
    const size_t *start = s->slices + s->next * 2 * (size_t)s->rank;
    (void)cap;  /* the buffer holds the largest hyperslab */
    int status = nc_get_vara(s->ncid, s->varid, start, start + s->rank, buf);
    if (status != NC_NOERR)
        return ncprobe_error(status, err, errlen);
    *got = s->slice_bytes[s->next++];
    return 1;
}

static void slab_close(void *ctx)
{
    struct slab_probe *s = ctx;
    nc_close(s->ncid);
}

static void slab_params(void *ctx, struct jsonl *j)
{
    const struct slab_probe *s = ctx;
    const struct probe_args *a = s->a;
    jsonl_str(j, "layer", "c-netcdf");
    jsonl_str(j, "file", s->path);
    jsonl_str(j, "variable", a->var);
    jsonl_begin_array(j, "var_shape");
    for (int d = 0; d < s->rank; d++)
        jsonl_u64(j, NULL, s->shape[d]);
    jsonl_end(j);
    jsonl_str(j, "dtype", s->dtype);
    jsonl_u64(j, "slices_total", s->nslices);
    jsonl_str(j, "library", ncprobe_library());
    if (s->have_cache) {
        jsonl_begin(j, "chunk_cache");
        jsonl_u64(j, "size", s->cache_size);
        jsonl_u64(j, "nelems", s->cache_nelems);
        jsonl_double(j, "preemption", s->cache_preemption);
        jsonl_end(j);
    } else {
        jsonl_null(j, "chunk_cache");
    }
    if (s->storage == NC_CHUNKED) {
        jsonl_begin_array(j, "chunking");
        for (int d = 0; d < s->rank; d++)
            jsonl_u64(j, NULL, s->chunks[d]);
        jsonl_end(j);
    } else {
        jsonl_str(j, "chunking", s->storage == NC_COMPACT ? "compact" : "contiguous");
    }
    jsonl_u64(j, "deflate", (uint64_t)s->deflate_level);
    jsonl_u64(j, "shuffle", (uint64_t)s->shuffle);
    for (size_t i = 0; i < a->nlabels; i++)
        jsonl_str(j, a->labels[i].key, a->labels[i].value);
}

static void slab_metrics(void *ctx, struct jsonl *j, const struct series_outcome *o)
{
    (void)ctx;
    jsonl_u64(j, "slices_read", o->ops);
}

int main(int argc, char **argv)
{
    struct probe_args a;

    fail_set_program(PROGRAM);
    args_parse(argc, argv, ARGS_SLAB_OPTIONS, &a);
    if (a.version) {
        ncprobe_print_version();
        return 0;
    }
    check_labels(&a);

    struct slab_probe s;
    memset(&s, 0, sizeof s);
    s.a = &a;
    s.ncid = s.varid = -1;
    inspect(&s, a.file, a.var);
    read_slices(&s, a.slices);
    s.path = series_abspath(a.file);

    struct series_config c = {
        .study = STUDY, .path = s.path, .mark = "slab", .mark_value = 0,
        .planned_ops = s.nslices, .planned_bytes = s.planned_bytes,
        .buffer_bytes = s.largest_bytes, .odirect = 0, .budget = SERIES_BUDGET_SAMPLE, .ctx = &s,
        .open = slab_open, .next = slab_next, .close = slab_close, .params = slab_params,
        .metrics = slab_metrics,
    };
    struct series_io io;
    series_io_open(&io);
    series_run(&c, &a, &io);
    series_io_close(&io);

    free((char *)s.path);
    free(s.slices);
    free(s.slice_bytes);
    args_free(&a);
    return 0;
}
