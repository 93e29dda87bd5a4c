/* netCDF-4 backend: netCDF-C's parallel API over HDF5 (nc_create_par with NC_NETCDF4).
 *
 * - create: nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, comm, info); NC_MPIIO is implied
 *   (and deprecated) in netCDF-C 4.9. Fill off with nc_set_fill(NC_NOFILL) when f->fill == 0.
 * - def_dim: PARIO_UNLIMITED (0) becomes NC_UNLIMITED.
 * - def_var: chunking per layout. DEFAULT: nc_def_var_chunking is not called (netCDF-C's own
 *   rule). CONTIGUOUS: NC_CONTIGUOUS for fixed-size variables; a record variable (first
 *   dimension unlimited) cannot be contiguous in HDF5 (an extendible dataset must be chunked),
 *   so it keeps the library default (the model driver says so in its params). GIVEN: chunk[],
 *   each length clamped to [1, dimension length] for fixed dimensions.
 * - put: nc_var_par_access(NC_COLLECTIVE | NC_INDEPENDENT), called only when the variable's
 *   mode changes (cached per variable; netCDF-4's initial mode is independent), then
 *   nc_put_vara_{float,double,int}. A collective put with count zero still calls nc_put_vara
 *   (netCDF-C selects nothing on that rank but joins HDF5's collective calls).
 *   Memory with a halo (mem->mem_shape != NULL) is first packed into a contiguous scratch
 *   buffer: netCDF-C's put_vara only accepts a contiguous buffer (nc_put_varm could take
 *   strides but is element-wise slow), and benchio's Fortran netCDF code copies the array
 *   section too (the compiler's copy-in of a non-contiguous actual argument). The packing is
 *   inside put, so it is timed as write.
 *   Independent puts to a record variable that would extend the unlimited dimension fail in
 *   netCDF-C (NC_ECANTEXTEND: extending an HDF5 dataset is collective); the error is reported
 *   as it is, and the backend says so with collective_extend = 1 so that drivers extend the
 *   variable with a collective put first.
 *   Every independent put of a small variable by every rank is one HDF5 H5Dwrite each: the
 *   ROMS pattern (same bytes, same offsets, all ranks) becomes nranks separate writes.
 * - hints: netCDF-C 4.9 has no public call for the MPI_Info in effect on the HDF5 file
 *   (nc_inq_hdf5_id is not exported), so *used is MPI_INFO_NULL: "not reported by the library".
 * - open: nc_open_par(NC_NOWRITE), every variable set to independent access, so any subset
 *   of the file's ranks may read. get: nc_var_par_access(NC_COLLECTIVE | NC_INDEPENDENT) when
 *   the variable's mode changes (as put), then nc_get_vara_*; a collective get with count
 *   zero still calls nc_get_vara, which then joins HDF5's collective read selecting nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>
#include <netcdf_par.h>

#include "pario.h"
#include "support.h"

struct nc4_var {
    enum pario_type type;
    int ndims;
    int access;                      /* NC_INDEPENDENT or NC_COLLECTIVE, as last set */
};

struct nc4_state {
    int ncid;
    int open;                        /* 1 between create/open and close */
    int ndims;
    size_t dimlen[64];               /* first 64 dimensions (enough for this study) */
    int dimunlim[64];
    int nvars;
    struct nc4_var var[PARIO_MAX_VARS];
    void *scratch;                   /* packing buffer for halo memory */
    size_t scratch_bytes;
};

static int nc_fail(struct pario_file *f, const char *what, const char *name, int status)
{
    snprintf(f->err, PARIO_ERR_LEN, "netcdf4: %s%s%s: %s", what, name ? " " : "", name ? name : "",
             nc_strerror(status));
    return -1;
}

static struct nc4_state *state(struct pario_file *f)
{
    return (struct nc4_state *)f->impl;
}

static const char *nc4_version(void)
{
    static char buf[96];
    return pario_version_text(buf, sizeof buf, "netCDF-C", nc_inq_libvers());
}

static int alloc_state(struct pario_file *f)
{
    return pario_new_state(f, sizeof(struct nc4_state)) ? 0 : -1;
}

static void free_state(struct pario_file *f)
{
    struct nc4_state *s = state(f);
    if (s) {
        free(s->scratch);
        free(s);
    }
    f->impl = NULL;
}

static int nc4_create(struct pario_file *f, const char *path)
{
    int st;
    f->err[0] = '\0';
    if (alloc_state(f))
        return -1;
    struct nc4_state *s = state(f);
    st = nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, f->comm, f->info, &s->ncid);
    if (st != NC_NOERR) {
        free_state(f);
        return nc_fail(f, "nc_create_par", path, st);
    }
    s->open = 1;
    if (f->fill == 0) {
        int old;
        st = nc_set_fill(s->ncid, NC_NOFILL, &old);
        if (st != NC_NOERR)
            return nc_fail(f, "nc_set_fill", NULL, st);
    }
    return 0;
}

static int nc4_def_dim(struct pario_file *f, const char *name, uint64_t len, int *dimid)
{
    struct nc4_state *s = state(f);
    int st = nc_def_dim(s->ncid, name, len == PARIO_UNLIMITED ? NC_UNLIMITED : (size_t)len, dimid);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_def_dim", name, st);
    if (*dimid >= 0 && *dimid < 64) {
        s->dimlen[*dimid] = (size_t)len;
        s->dimunlim[*dimid] = len == PARIO_UNLIMITED;
        if (*dimid + 1 > s->ndims)
            s->ndims = *dimid + 1;
    }
    return 0;
}

static nc_type nctype(enum pario_type t)
{
    return t == PARIO_FLOAT ? NC_FLOAT : t == PARIO_DOUBLE ? NC_DOUBLE : NC_INT;
}

static int nc4_def_var(struct pario_file *f, const char *name, enum pario_type type, int ndims,
                       const int *dimids, const struct pario_var_layout *layout, int *varid)
{
    struct nc4_state *s = state(f);
    int st = nc_def_var(s->ncid, name, nctype(type), ndims, dimids, varid);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_def_var", name, st);
    if (*varid < 0 || *varid >= PARIO_MAX_VARS) {
        snprintf(f->err, PARIO_ERR_LEN, "netcdf4: more than %d variables", PARIO_MAX_VARS);
        return -1;
    }
    struct nc4_var *v = &s->var[*varid];
    v->type = type;
    v->ndims = ndims;
    v->access = NC_INDEPENDENT;
    if (*varid + 1 > s->nvars)
        s->nvars = *varid + 1;

    int record = ndims > 0 && dimids[0] >= 0 && dimids[0] < 64 && s->dimunlim[dimids[0]];
    if (layout && ndims > 0) {
        if (layout->kind == PARIO_CHUNK_CONTIGUOUS && !record) {
            st = nc_def_var_chunking(s->ncid, *varid, NC_CONTIGUOUS, NULL);
            if (st != NC_NOERR)
                return nc_fail(f, "nc_def_var_chunking(contiguous)", name, st);
        } else if (layout->kind == PARIO_CHUNK_GIVEN) {
            size_t chunks[PARIO_MAX_DIMS];
            for (int d = 0; d < ndims && d < PARIO_MAX_DIMS; d++) {
                uint64_t c = layout->chunk[d] ? layout->chunk[d] : 1;
                int id = dimids[d];
                if (id >= 0 && id < 64 && !s->dimunlim[id] && s->dimlen[id] > 0 && c > s->dimlen[id])
                    c = s->dimlen[id];
                chunks[d] = (size_t)c;
            }
            st = nc_def_var_chunking(s->ncid, *varid, NC_CHUNKED, chunks);
            if (st != NC_NOERR)
                return nc_fail(f, "nc_def_var_chunking", name, st);
        }
        /* DEFAULT, or CONTIGUOUS for a record variable: netCDF-C's default chunking. */
    }
    return 0;
}

static int nc4_enddef(struct pario_file *f)
{
    int st = nc_enddef(state(f)->ncid);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_enddef", NULL, st);
    return 0;
}

/* Copy block [mem_start, mem_start+count) of a C-order array of mem_shape into dst. */
static void pack_block(void *dst, const void *src, int ndims, const uint64_t *shape,
                       const uint64_t *mstart, const uint64_t *count, size_t esize)
{
    if (ndims == 0) {
        memcpy(dst, src, esize);
        return;
    }
    uint64_t rows = 1;
    for (int d = 0; d < ndims - 1; d++)
        rows *= count[d];
    size_t rowbytes = (size_t)count[ndims - 1] * esize;
    if (rows == 0 || rowbytes == 0)
        return;
    uint64_t idx[PARIO_MAX_DIMS] = {0};
    char *out = dst;
    const char *in = src;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t off = 0;
        for (int d = 0; d < ndims; d++)
            off = off * shape[d] + mstart[d] + (d < ndims - 1 ? idx[d] : 0);
        memcpy(out, in + off * esize, rowbytes);
        out += rowbytes;
        for (int d = ndims - 2; d >= 0; d--) {
            if (++idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
}

static int nc4_put(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
                   const struct pario_memory *mem, int collective)
{
    struct nc4_state *s = state(f);
    if (varid < 0 || varid >= s->nvars) {
        snprintf(f->err, PARIO_ERR_LEN, "netcdf4: put to unknown variable %d", varid);
        return -1;
    }
    struct nc4_var *v = &s->var[varid];
    int mode = collective ? NC_COLLECTIVE : NC_INDEPENDENT;
    int st;
    if (v->access != mode) {
        st = nc_var_par_access(s->ncid, varid, mode);
        if (st != NC_NOERR)
            return nc_fail(f, "nc_var_par_access", NULL, st);
        v->access = mode;
    }
    size_t st_[PARIO_MAX_DIMS], ct_[PARIO_MAX_DIMS];
    uint64_t n = 1;
    for (int d = 0; d < v->ndims; d++) {
        st_[d] = (size_t)start[d];
        ct_[d] = (size_t)count[d];
        n *= count[d];
    }
    size_t esize = pario_type_size(v->type);
    const void *buf = mem ? mem->buf : NULL;
    static double dummy[1];
    if (n == 0) {
        buf = dummy;                 /* some netCDF-C paths reject a NULL buffer even for count 0 */
    } else if (mem && mem->mem_shape) {
        size_t need = (size_t)n * esize;
        if (need > s->scratch_bytes) {
            void *p = realloc(s->scratch, need);
            if (!p) {
                snprintf(f->err, PARIO_ERR_LEN, "netcdf4: out of memory packing %zu bytes", need);
                return -1;
            }
            s->scratch = p;
            s->scratch_bytes = need;
        }
        pack_block(s->scratch, mem->buf, v->ndims, mem->mem_shape, mem->mem_start, count, esize);
        buf = s->scratch;
    }
    switch (v->type) {
    case PARIO_FLOAT:
        st = nc_put_vara_float(s->ncid, varid, st_, ct_, buf);
        break;
    case PARIO_DOUBLE:
        st = nc_put_vara_double(s->ncid, varid, st_, ct_, buf);
        break;
    default:
        st = nc_put_vara_int(s->ncid, varid, st_, ct_, buf);
        break;
    }
    if (st != NC_NOERR) {
        char name[NC_MAX_NAME + 1] = "?";
        nc_inq_varname(s->ncid, varid, name);
        return nc_fail(f, collective ? "nc_put_vara (collective)" : "nc_put_vara (independent)", name, st);
    }
    return 0;
}

static int nc4_sync(struct pario_file *f)
{
    int st = nc_sync(state(f)->ncid);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_sync", NULL, st);
    return 0;
}

static int nc4_hints(struct pario_file *f, MPI_Info *used)
{
    (void)f;
    *used = MPI_INFO_NULL;           /* netCDF-C cannot report the hints in effect */
    return 0;
}

static int nc4_close(struct pario_file *f)
{
    struct nc4_state *s = state(f);
    if (!s)
        return 0;
    int st = NC_NOERR;
    if (s->open)
        st = nc_close(s->ncid);
    free_state(f);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_close", NULL, st);
    return 0;
}

static int nc4_open(struct pario_file *f, const char *path)
{
    f->err[0] = '\0';
    if (alloc_state(f))
        return -1;
    struct nc4_state *s = state(f);
    int st = nc_open_par(path, NC_NOWRITE, f->comm, f->info, &s->ncid);
    if (st != NC_NOERR) {
        free_state(f);
        return nc_fail(f, "nc_open_par", path, st);
    }
    s->open = 1;
    int nvars = 0;
    st = nc_inq_nvars(s->ncid, &nvars);
    if (st != NC_NOERR)
        return nc_fail(f, "nc_inq_nvars", NULL, st);
    if (nvars > PARIO_MAX_VARS)
        nvars = PARIO_MAX_VARS;
    s->nvars = nvars;
    for (int v = 0; v < nvars; v++) {
        nc_type t;
        int nd;
        if ((st = nc_inq_vartype(s->ncid, v, &t)) != NC_NOERR || (st = nc_inq_varndims(s->ncid, v, &nd)) != NC_NOERR)
            return nc_fail(f, "nc_inq_var", NULL, st);
        s->var[v].type = t == NC_FLOAT ? PARIO_FLOAT : t == NC_DOUBLE ? PARIO_DOUBLE : PARIO_INT;
        s->var[v].ndims = nd;
        if ((st = nc_var_par_access(s->ncid, v, NC_INDEPENDENT)) != NC_NOERR)
            return nc_fail(f, "nc_var_par_access", NULL, st);
        s->var[v].access = NC_INDEPENDENT;
    }
    return 0;
}

static int nc4_get(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count, void *buf,
                   int collective)
{
    struct nc4_state *s = state(f);
    if (varid < 0 || varid >= s->nvars) {
        snprintf(f->err, PARIO_ERR_LEN, "netcdf4: get from unknown variable %d", varid);
        return -1;
    }
    struct nc4_var *v = &s->var[varid];
    int mode = collective ? NC_COLLECTIVE : NC_INDEPENDENT;
    int st;
    if (v->access != mode) {
        st = nc_var_par_access(s->ncid, varid, mode);
        if (st != NC_NOERR)
            return nc_fail(f, "nc_var_par_access", NULL, st);
        v->access = mode;
    }
    size_t st_[PARIO_MAX_DIMS], ct_[PARIO_MAX_DIMS];
    uint64_t n = 1;
    for (int d = 0; d < v->ndims; d++) {
        st_[d] = (size_t)start[d];
        ct_[d] = (size_t)count[d];
        n *= count[d];
    }
    static double dummy[1];          /* some netCDF-C paths reject a NULL buffer even for count 0 */
    if (n == 0)
        buf = dummy;
    switch (v->type) {
    case PARIO_FLOAT:
        st = nc_get_vara_float(s->ncid, varid, st_, ct_, buf);
        break;
    case PARIO_DOUBLE:
        st = nc_get_vara_double(s->ncid, varid, st_, ct_, buf);
        break;
    default:
        st = nc_get_vara_int(s->ncid, varid, st_, ct_, buf);
        break;
    }
    if (st != NC_NOERR) {
        char name[NC_MAX_NAME + 1] = "?";
        nc_inq_varname(s->ncid, varid, name);
        return nc_fail(f, collective ? "nc_get_vara (collective)" : "nc_get_vara (independent)", name, st);
    }
    return 0;
}

const struct pario_backend pario_netcdf4 = {
    .name = "netcdf4",
    .version = nc4_version,
    .create = nc4_create,
    .def_dim = nc4_def_dim,
    .def_var = nc4_def_var,
    .enddef = nc4_enddef,
    .put = nc4_put,
    .sync = nc4_sync,
    .hints = nc4_hints,
    .close = nc4_close,
    .open = nc4_open,
    .get = nc4_get,
    .collective_extend = 1,
};
