/* PnetCDF backend: CDF-5 files (NC_64BIT_DATA) through PnetCDF's MPI-IO layer.
 *
 * - create: ncmpi_create(comm, path, NC_CLOBBER | NC_64BIT_DATA, info); fill off with
 *   ncmpi_set_fill(NC_NOFILL) when f->fill == 0 (PnetCDF's default anyway).
 * - def_dim: PARIO_UNLIMITED (0) becomes NC_UNLIMITED. def_var ignores the chunk layout
 *   (the classic formats are contiguous; record variables are interleaved per record).
 * - put, collective: the _all calls. Memory with a halo (mem->mem_shape != NULL) goes through
 *   PnetCDF's flexible API with an MPI subarray datatype describing the block inside the
 *   array, so nothing is packed by us (PnetCDF packs internally when it must). A rank with
 *   count zero joins the collective call with an empty request.
 * - put, independent: the file is switched to independent data mode (ncmpi_begin_indep_data)
 *   at the first independent put and back (ncmpi_end_indep_data) before the next collective
 *   put, sync, hints or close. Both switches are collective over f->comm, so every rank of
 *   the file's communicator must make the same sequence of collective/independent puts (a
 *   rank with nothing to write still calls put with count zero); the drivers of this study
 *   do so: independent puts are made by every writer of the file.
 * - hints: ncmpi_inq_file_info: the MPI-IO hints in effect plus PnetCDF's own nc_* hints.
 * - open: ncmpi_open(NC_NOWRITE) collectively over f->comm, then ncmpi_begin_indep_data right
 *   away, so independent gets (ncmpi_get_vara_*) may be made by any subset of the ranks and
 *   any number of times; close ends independent mode collectively.
 * - get, collective: the _all calls, after leaving independent data mode; an independent get
 *   after a collective one enters it again. Both switches are collective over f->comm (as for
 *   puts), so a driver that mixes the two must have every rank of the file make the same
 *   sequence (count zero when it wants nothing).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pnetcdf.h>

#include "pario.h"
#include "support.h"

struct pn_var {
    enum pario_type type;
    int ndims;
};

struct pn_state {
    int ncid;
    int open;
    int indep;                       /* 1 while in independent data mode */
    int nvars;
    struct pn_var var[PARIO_MAX_VARS];
};

static int pn_fail(struct pario_file *f, const char *what, const char *name, int status)
{
    snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: %s%s%s: %s", what, name ? " " : "", name ? name : "",
             ncmpi_strerror(status));
    return -1;
}

static struct pn_state *state(struct pario_file *f)
{
    return (struct pn_state *)f->impl;
}

static const char *pn_version(void)
{
    static char buf[96];
    return pario_version_text(buf, sizeof buf, "PnetCDF", ncmpi_inq_libvers());
}

static int alloc_state(struct pario_file *f)
{
    return pario_new_state(f, sizeof(struct pn_state)) ? 0 : -1;
}

static int pn_create(struct pario_file *f, const char *path)
{
    f->err[0] = '\0';
    if (alloc_state(f))
        return -1;
    struct pn_state *s = state(f);
    int st = ncmpi_create(f->comm, path, NC_CLOBBER | NC_64BIT_DATA, f->info, &s->ncid);
    if (st != NC_NOERR) {
        free(s);
        f->impl = NULL;
        return pn_fail(f, "ncmpi_create", path, st);
    }
    s->open = 1;
    if (f->fill == 0) {
        int old;
        st = ncmpi_set_fill(s->ncid, NC_NOFILL, &old);
        if (st != NC_NOERR)
            return pn_fail(f, "ncmpi_set_fill", NULL, st);
    }
    return 0;
}

static int pn_def_dim(struct pario_file *f, const char *name, uint64_t len, int *dimid)
{
    int st = ncmpi_def_dim(state(f)->ncid, name, len == PARIO_UNLIMITED ? NC_UNLIMITED : (MPI_Offset)len, dimid);
    if (st != NC_NOERR)
        return pn_fail(f, "ncmpi_def_dim", name, st);
    return 0;
}

static nc_type nctype(enum pario_type t)
{
    return t == PARIO_FLOAT ? NC_FLOAT : t == PARIO_DOUBLE ? NC_DOUBLE : NC_INT;
}

static int pn_def_var(struct pario_file *f, const char *name, enum pario_type type, int ndims,
                      const int *dimids, const struct pario_var_layout *layout, int *varid)
{
    (void)layout;                    /* classic formats have no chunking */
    struct pn_state *s = state(f);
    int st = ncmpi_def_var(s->ncid, name, nctype(type), ndims, dimids, varid);
    if (st != NC_NOERR)
        return pn_fail(f, "ncmpi_def_var", name, st);
    if (*varid < 0 || *varid >= PARIO_MAX_VARS) {
        snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: more than %d variables", PARIO_MAX_VARS);
        return -1;
    }
    s->var[*varid].type = type;
    s->var[*varid].ndims = ndims;
    if (*varid + 1 > s->nvars)
        s->nvars = *varid + 1;
    return 0;
}

static int pn_enddef(struct pario_file *f)
{
    int st = ncmpi_enddef(state(f)->ncid);
    if (st != NC_NOERR)
        return pn_fail(f, "ncmpi_enddef", NULL, st);
    return 0;
}

static int set_indep(struct pario_file *f, int indep)
{
    struct pn_state *s = state(f);
    if (s->indep == indep)
        return 0;
    int st = indep ? ncmpi_begin_indep_data(s->ncid) : ncmpi_end_indep_data(s->ncid);
    if (st != NC_NOERR)
        return pn_fail(f, indep ? "ncmpi_begin_indep_data" : "ncmpi_end_indep_data", NULL, st);
    s->indep = indep;
    return 0;
}

static int pn_put(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
                  const struct pario_memory *mem, int collective)
{
    struct pn_state *s = state(f);
    if (varid < 0 || varid >= s->nvars) {
        snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: put to unknown variable %d", varid);
        return -1;
    }
    struct pn_var *v = &s->var[varid];
    if (set_indep(f, !collective))
        return -1;
    MPI_Offset st_[PARIO_MAX_DIMS + 1] = {0}, ct_[PARIO_MAX_DIMS + 1] = {0};
    uint64_t n = 1;
    for (int d = 0; d < v->ndims; d++) {
        st_[d] = (MPI_Offset)start[d];
        ct_[d] = (MPI_Offset)count[d];
        n *= count[d];
    }
    static double dummy[1];
    const void *buf = (mem && mem->buf && n > 0) ? mem->buf : (const void *)dummy;
    int st;
    if (n > 0 && mem && mem->mem_shape && v->ndims > 0) {
        /* flexible API: the block inside the halo array as an MPI subarray type */
        int sizes[PARIO_MAX_DIMS], subs[PARIO_MAX_DIMS], starts[PARIO_MAX_DIMS];
        for (int d = 0; d < v->ndims; d++) {
            if (mem->mem_shape[d] > INT_MAX) {
                snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: memory dimension %llu too large for an MPI datatype",
                         (unsigned long long)mem->mem_shape[d]);
                return -1;
            }
            sizes[d] = (int)mem->mem_shape[d];
            subs[d] = (int)count[d];
            starts[d] = (int)mem->mem_start[d];
        }
        MPI_Datatype memtype;
        if (MPI_Type_create_subarray(v->ndims, sizes, subs, starts, MPI_ORDER_C, pario_mpi_type(v->type), &memtype) != MPI_SUCCESS ||
            MPI_Type_commit(&memtype) != MPI_SUCCESS) {
            snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: MPI_Type_create_subarray failed");
            return -1;
        }
        if (collective)
            st = ncmpi_put_vara_all(s->ncid, varid, st_, ct_, mem->buf, 1, memtype);
        else
            st = ncmpi_put_vara(s->ncid, varid, st_, ct_, mem->buf, 1, memtype);
        MPI_Type_free(&memtype);
    } else {
        switch (v->type) {
        case PARIO_FLOAT:
            st = collective ? ncmpi_put_vara_float_all(s->ncid, varid, st_, ct_, buf)
                            : ncmpi_put_vara_float(s->ncid, varid, st_, ct_, buf);
            break;
        case PARIO_DOUBLE:
            st = collective ? ncmpi_put_vara_double_all(s->ncid, varid, st_, ct_, buf)
                            : ncmpi_put_vara_double(s->ncid, varid, st_, ct_, buf);
            break;
        default:
            st = collective ? ncmpi_put_vara_int_all(s->ncid, varid, st_, ct_, buf)
                            : ncmpi_put_vara_int(s->ncid, varid, st_, ct_, buf);
            break;
        }
    }
    if (st != NC_NOERR) {
        char name[NC_MAX_NAME + 1] = "?";
        ncmpi_inq_varname(s->ncid, varid, name);
        return pn_fail(f, collective ? "ncmpi_put_vara_all" : "ncmpi_put_vara", name, st);
    }
    return 0;
}

static int pn_sync(struct pario_file *f)
{
    if (set_indep(f, 0))
        return -1;
    int st = ncmpi_sync(state(f)->ncid);
    if (st != NC_NOERR)
        return pn_fail(f, "ncmpi_sync", NULL, st);
    return 0;
}

static int pn_hints(struct pario_file *f, MPI_Info *used)
{
    *used = MPI_INFO_NULL;
    int st = ncmpi_inq_file_info(state(f)->ncid, used);
    if (st != NC_NOERR) {
        *used = MPI_INFO_NULL;
        return pn_fail(f, "ncmpi_inq_file_info", NULL, st);
    }
    return 0;
}

static int pn_close(struct pario_file *f)
{
    struct pn_state *s = state(f);
    if (!s)
        return 0;
    int st = NC_NOERR, st2 = NC_NOERR;
    if (s->open) {
        if (s->indep)
            st2 = ncmpi_end_indep_data(s->ncid);
        st = ncmpi_close(s->ncid);
    }
    free(s);
    f->impl = NULL;
    if (st2 != NC_NOERR)
        return pn_fail(f, "ncmpi_end_indep_data", NULL, st2);
    if (st != NC_NOERR)
        return pn_fail(f, "ncmpi_close", NULL, st);
    return 0;
}

static int pn_open(struct pario_file *f, const char *path)
{
    f->err[0] = '\0';
    if (alloc_state(f))
        return -1;
    struct pn_state *s = state(f);
    int st = ncmpi_open(f->comm, path, NC_NOWRITE, f->info, &s->ncid);
    if (st != NC_NOERR) {
        free(s);
        f->impl = NULL;
        return pn_fail(f, "ncmpi_open", path, st);
    }
    s->open = 1;
    int nvars = 0;
    if ((st = ncmpi_inq_nvars(s->ncid, &nvars)) != NC_NOERR)
        return pn_fail(f, "ncmpi_inq_nvars", NULL, st);
    if (nvars > PARIO_MAX_VARS)
        nvars = PARIO_MAX_VARS;
    s->nvars = nvars;
    for (int v = 0; v < nvars; v++) {
        nc_type t;
        int nd;
        if ((st = ncmpi_inq_vartype(s->ncid, v, &t)) != NC_NOERR || (st = ncmpi_inq_varndims(s->ncid, v, &nd)) != NC_NOERR)
            return pn_fail(f, "ncmpi_inq_var", NULL, st);
        s->var[v].type = t == NC_FLOAT ? PARIO_FLOAT : t == NC_DOUBLE ? PARIO_DOUBLE : PARIO_INT;
        s->var[v].ndims = nd;
    }
    return set_indep(f, 1);
}

static int pn_get(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count, void *buf,
                  int collective)
{
    struct pn_state *s = state(f);
    if (varid < 0 || varid >= s->nvars) {
        snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: get from unknown variable %d", varid);
        return -1;
    }
    if (!s->open) {
        snprintf(f->err, PARIO_ERR_LEN, "pnetcdf: get from a file that is not open");
        return -1;
    }
    if (set_indep(f, !collective))
        return -1;
    struct pn_var *v = &s->var[varid];
    MPI_Offset st_[PARIO_MAX_DIMS + 1] = {0}, ct_[PARIO_MAX_DIMS + 1] = {0};
    for (int d = 0; d < v->ndims; d++) {
        st_[d] = (MPI_Offset)start[d];
        ct_[d] = (MPI_Offset)count[d];
    }
    int st;
    switch (v->type) {
    case PARIO_FLOAT:
        st = collective ? ncmpi_get_vara_float_all(s->ncid, varid, st_, ct_, buf)
                        : ncmpi_get_vara_float(s->ncid, varid, st_, ct_, buf);
        break;
    case PARIO_DOUBLE:
        st = collective ? ncmpi_get_vara_double_all(s->ncid, varid, st_, ct_, buf)
                        : ncmpi_get_vara_double(s->ncid, varid, st_, ct_, buf);
        break;
    default:
        st = collective ? ncmpi_get_vara_int_all(s->ncid, varid, st_, ct_, buf)
                        : ncmpi_get_vara_int(s->ncid, varid, st_, ct_, buf);
        break;
    }
    if (st != NC_NOERR) {
        char name[NC_MAX_NAME + 1] = "?";
        ncmpi_inq_varname(s->ncid, varid, name);
        return pn_fail(f, collective ? "ncmpi_get_vara_all" : "ncmpi_get_vara", name, st);
    }
    return 0;
}

const struct pario_backend pario_pnetcdf = {
    .name = "pnetcdf",
    .version = pn_version,
    .create = pn_create,
    .def_dim = pn_def_dim,
    .def_var = pn_def_var,
    .enddef = pn_enddef,
    .put = pn_put,
    .sync = pn_sync,
    .hints = pn_hints,
    .close = pn_close,
    .open = pn_open,
    .get = pn_get,
};
