/* Raw MPI-IO backend (pario.h): no header, fixed-size variables one after another in
 * definition order, then the records, each holding every record variable's slab in
 * definition order (netCDF-3's record layout, without its header or padding).
 *
 * Because the file carries no description of itself, close() files the layout under the
 * path in a small registry, and open() (verification) takes it back from there: only files
 * written by this process can be re-opened.
 *
 * Collective puts set a subarray file view on the handle shared by the communicator and call
 * MPI_File_write_all. Independent puts cannot use that handle (MPI_File_set_view is
 * collective, and an independent put may be made by one rank alone), so each rank opens the
 * file once more on MPI_COMM_SELF at its first independent put, as PnetCDF does for its
 * independent data mode, and sets the view there before MPI_File_write. get() reads the same
 * way, at offset 0 of the view: MPI_File_read_at_all on the shared handle (collective), or
 * MPI_File_read_at on the per-rank handle (independent). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pario.h"
#include "support.h"

#define MPIIO_MAX_FILE_DIMS 64
#define MPIIO_PATH_LEN 1024

struct mdim {
    uint64_t len;                    /* 0: the record dimension */
};

struct mvar {
    enum pario_type type;
    int ndims;
    int dimids[PARIO_MAX_DIMS];
    int record;                      /* dimids[0] is the record dimension */
    MPI_Offset offset;               /* fixed: from the start of the file; record: within a record */
};

struct layout {
    int ndims, nvars;
    struct mdim dims[MPIIO_MAX_FILE_DIMS];
    struct mvar vars[PARIO_MAX_VARS];
    MPI_Offset fixed_bytes;          /* where the records begin */
    MPI_Offset record_bytes;         /* one record of every record variable */
};

struct mpiio {
    MPI_File fh;                     /* on f->comm */
    MPI_File self;                   /* on MPI_COMM_SELF, for independent access; MPI_FILE_NULL until needed */
    int fh_bytes_view, self_bytes_view; /* the handle's view is the default byte view (offset reads) */
    int writing, defining;
    char path[MPIIO_PATH_LEN];
    struct layout L;
};

/* The layouts of closed files, by path. */
struct saved {
    char path[MPIIO_PATH_LEN];
    struct layout *L;
    struct saved *next;
};
static struct saved *registry;

static int fail_mpi(struct pario_file *f, int code, const char *what)
{
    char e[MPI_MAX_ERROR_STRING];
    snprintf(f->err, PARIO_ERR_LEN, "mpiio: %.300s: %.180s", what, pario_mpi_error(code, e, sizeof e));
    return -1;
}

static int fail_msg(struct pario_file *f, const char *msg)
{
    snprintf(f->err, PARIO_ERR_LEN, "mpiio: %s", msg);
    return -1;
}

static const char *version(void)
{
    static char v[256];
    if (!v[0]) {
        const char *lib = pario_mpi_library();
        int n = (int)strcspn(lib, ",");
        snprintf(v, sizeof v, "MPI-IO (%.*s)", n, lib);
    }
    return v;
}

static struct mpiio *impl(struct pario_file *f)
{
    return (struct mpiio *)f->impl;
}

static int create(struct pario_file *f, const char *path)
{
    int rank, size, rc;
    struct mpiio *m = calloc(1, sizeof *m);
    if (!m)
        return fail_msg(f, "out of memory");
    if (strlen(path) >= sizeof m->path) {
        free(m);
        return fail_msg(f, "path too long");
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    m->fh = m->self = MPI_FILE_NULL;
    m->writing = m->defining = 1;
    MPI_Comm_rank(f->comm, &rank);
    MPI_Comm_size(f->comm, &size);
    /* MPI_MODE_CREATE does not truncate: a longer file of an earlier run would keep its tail. */
    if (rank == 0)
        (void)MPI_File_delete(path, MPI_INFO_NULL);
    if (size > 1)
        MPI_Barrier(f->comm);   /* nobody opens the old file before it is gone */
    rc = MPI_File_open(f->comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, f->info, &m->fh);
    if (rc != MPI_SUCCESS) {
        free(m);
        char what[MPIIO_PATH_LEN + 32];
        snprintf(what, sizeof what, "cannot create %s", path);
        return fail_mpi(f, rc, what);
    }
    MPI_File_set_errhandler(m->fh, MPI_ERRORS_RETURN);
    f->impl = m;
    return 0;
}

static int def_dim(struct pario_file *f, const char *name, uint64_t len, int *dimid)
{
    struct mpiio *m = impl(f);
    (void)name;
    if (!m || !m->defining)
        return fail_msg(f, "def_dim outside define mode");
    if (m->L.ndims >= MPIIO_MAX_FILE_DIMS)
        return fail_msg(f, "too many dimensions");
    if (len == PARIO_UNLIMITED)
        for (int i = 0; i < m->L.ndims; i++)
            if (m->L.dims[i].len == PARIO_UNLIMITED)
                return fail_msg(f, "a second record dimension");
    m->L.dims[m->L.ndims].len = len;
    *dimid = m->L.ndims++;
    return 0;
}

static int def_var(struct pario_file *f, const char *name, enum pario_type type, int ndims, const int *dimids,
                   const struct pario_var_layout *layout, int *varid)
{
    struct mpiio *m = impl(f);
    (void)layout;   /* no chunking in a raw file */
    if (!m || !m->defining)
        return fail_msg(f, "def_var outside define mode");
    if (m->L.nvars >= PARIO_MAX_VARS || ndims < 0 || ndims > PARIO_MAX_DIMS)
        return fail_msg(f, "too many variables or dimensions");
    struct mvar *v = &m->L.vars[m->L.nvars];
    memset(v, 0, sizeof *v);
    v->type = type;
    v->ndims = ndims;
    for (int i = 0; i < ndims; i++) {
        if (dimids[i] < 0 || dimids[i] >= m->L.ndims) {
            snprintf(f->err, PARIO_ERR_LEN, "mpiio: variable %s: bad dimension id %d", name, dimids[i]);
            return -1;
        }
        if (m->L.dims[dimids[i]].len == PARIO_UNLIMITED && i > 0) {
            snprintf(f->err, PARIO_ERR_LEN, "mpiio: variable %s: the record dimension must come first", name);
            return -1;
        }
        v->dimids[i] = dimids[i];
    }
    v->record = ndims > 0 && m->L.dims[dimids[0]].len == PARIO_UNLIMITED;
    *varid = m->L.nvars++;
    return 0;
}

static int enddef(struct pario_file *f)
{
    struct mpiio *m = impl(f);
    if (!m || !m->defining)
        return fail_msg(f, "enddef outside define mode");
    MPI_Offset fixed = 0, rec = 0;
    for (int i = 0; i < m->L.nvars; i++) {
        struct mvar *v = &m->L.vars[i];
        MPI_Offset n = (MPI_Offset)pario_type_size(v->type);
        for (int d = v->record ? 1 : 0; d < v->ndims; d++)
            n *= (MPI_Offset)m->L.dims[v->dimids[d]].len;
        if (v->record) {
            v->offset = rec;
            rec += n;
        } else {
            v->offset = fixed;
            fixed += n;
        }
    }
    m->L.fixed_bytes = fixed;
    m->L.record_bytes = rec;
    m->defining = 0;
    return 0;
}

/* The file type and displacement of block [start, start+count) of v (count all > 0). */
static int file_type(struct pario_file *f, const struct mvar *v, const uint64_t *start, const uint64_t *count,
                     MPI_Datatype *type, MPI_Offset *disp)
{
    struct mpiio *m = impl(f);
    MPI_Datatype etype = pario_mpi_type(v->type), inner;
    int sizes[PARIO_MAX_DIMS], subs[PARIO_MAX_DIMS], starts[PARIO_MAX_DIMS];
    int first = v->record ? 1 : 0, n = v->ndims - first;
    for (int d = first; d < v->ndims; d++) {
        uint64_t len = m->L.dims[v->dimids[d]].len;
        if (start[d] + count[d] > len)
            return fail_msg(f, "put/get beyond a dimension's length");
        if (len > INT_MAX)
            return fail_msg(f, "a dimension longer than INT_MAX (MPI subarray limit)");
        sizes[d - first] = (int)len;
        subs[d - first] = (int)count[d];
        starts[d - first] = (int)start[d];
    }
    if (n > 0)
        MPI_Type_create_subarray(n, sizes, subs, starts, MPI_ORDER_C, etype, &inner);
    else
        MPI_Type_dup(etype, &inner);
    if (!v->record) {
        *disp = v->offset;
        *type = inner;
    } else {
        if (count[0] > INT_MAX)
            return fail_msg(f, "more than INT_MAX records in one put");
        *disp = m->L.fixed_bytes + (MPI_Offset)start[0] * m->L.record_bytes + v->offset;
        MPI_Type_create_hvector((int)count[0], 1, (MPI_Aint)m->L.record_bytes, inner, type);
        MPI_Type_free(&inner);
    }
    MPI_Type_commit(type);
    return 0;
}

/* The memory type of a put: block [mem_start, mem_start+count) of a C-order mem_shape array. */
static int mem_type(struct pario_file *f, const struct mvar *v, const uint64_t *count, const struct pario_memory *mem,
                    MPI_Datatype *type)
{
    int sizes[PARIO_MAX_DIMS], subs[PARIO_MAX_DIMS], starts[PARIO_MAX_DIMS];
    MPI_Datatype etype = pario_mpi_type(v->type);
    if (v->ndims == 0) {
        MPI_Type_dup(etype, type);
        return 0;
    }
    for (int d = 0; d < v->ndims; d++) {
        uint64_t shape = mem && mem->mem_shape ? mem->mem_shape[d] : count[d];
        uint64_t st = mem && mem->mem_shape && mem->mem_start ? mem->mem_start[d] : 0;
        if (shape > INT_MAX || st + count[d] > shape)
            return fail_msg(f, "memory block outside mem_shape (or longer than INT_MAX)");
        sizes[d] = (int)shape;
        subs[d] = (int)count[d];
        starts[d] = (int)st;
    }
    MPI_Type_create_subarray(v->ndims, sizes, subs, starts, MPI_ORDER_C, etype, type);
    MPI_Type_commit(type);
    return 0;
}

static int open_self(struct pario_file *f)
{
    struct mpiio *m = impl(f);
    if (m->self != MPI_FILE_NULL)
        return 0;
    int rc = MPI_File_open(MPI_COMM_SELF, m->path, m->writing ? MPI_MODE_WRONLY : MPI_MODE_RDONLY, f->info, &m->self);
    if (rc != MPI_SUCCESS) {
        m->self = MPI_FILE_NULL;
        return fail_mpi(f, rc, "cannot open the per-rank handle for independent access");
    }
    MPI_File_set_errhandler(m->self, MPI_ERRORS_RETURN);
    return 0;
}

/* A get of a fixed 1-D variable is one contiguous byte range on every rank: read it at its
 * explicit offset under the default byte view, as IOR does, instead of setting a subarray view
 * for every call (MPI_File_set_view is collective and costs a synchronisation each time; it
 * made collective reads ~20 % slower than IOR's). Every rank of a collective get takes this
 * path together, since the decision depends only on the variable. */
static int get_1d(struct pario_file *f, const struct mvar *v, const uint64_t *start, const uint64_t *count,
                  void *rbuf, int collective)
{
    struct mpiio *m = impl(f);
    MPI_Datatype etype = pario_mpi_type(v->type);
    int esize = 0;
    MPI_Type_size(etype, &esize);
    if (start[0] + count[0] > m->L.dims[v->dimids[0]].len)
        return fail_msg(f, "put/get beyond a dimension's length");
    if (count[0] > INT_MAX)
        return fail_msg(f, "more than INT_MAX elements in one get");
    MPI_File fh = collective ? m->fh : MPI_FILE_NULL;
    int *bytes_view = collective ? &m->fh_bytes_view : &m->self_bytes_view;
    if (!collective) {
        if (count[0] == 0)
            return 0;
        if (open_self(f) != 0)
            return -1;
        fh = m->self;
    }
    int rc;
    if (!*bytes_view) {
        rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        if (rc != MPI_SUCCESS)
            return fail_mpi(f, rc, "MPI_File_set_view");
        *bytes_view = 1;
    }
    MPI_Offset off = v->offset + (MPI_Offset)start[0] * esize;
    MPI_Status st;
    rc = collective ? MPI_File_read_at_all(fh, off, rbuf, (int)count[0], etype, &st)
                    : MPI_File_read_at(fh, off, rbuf, (int)count[0], etype, &st);
    if (rc != MPI_SUCCESS)
        return fail_mpi(f, rc, collective ? "MPI_File_read_at_all" : "MPI_File_read_at");
    MPI_Count done = 0;
    MPI_Get_elements_x(&st, etype, &done);
    if ((uint64_t)done != count[0]) {
        snprintf(f->err, PARIO_ERR_LEN, "mpiio: read moved %lld of %llu elements", (long long)done,
                 (unsigned long long)count[0]);
        return -1;
    }
    return 0;
}

/* One put or get. */
static int access_block(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
                        const struct pario_memory *mem, void *rbuf, int collective)
{
    struct mpiio *m = impl(f);
    if (!m || m->fh == MPI_FILE_NULL)
        return fail_msg(f, "file not open");
    if (m->defining)
        return fail_msg(f, "put in define mode (call enddef first)");
    if (varid < 0 || varid >= m->L.nvars)
        return fail_msg(f, "bad variable id");
    const struct mvar *v = &m->L.vars[varid];
    if (rbuf && !mem && v->ndims == 1 && !v->record)
        return get_1d(f, v, start, count, rbuf, collective);
    MPI_Datatype etype = pario_mpi_type(v->type), ftype = MPI_DATATYPE_NULL, mtype = MPI_DATATYPE_NULL;
    MPI_Offset disp = 0;
    MPI_Status st;
    uint64_t total = 1;
    int rc;
    for (int d = 0; d < v->ndims; d++)
        total *= count[d];

    MPI_File fh = collective ? m->fh : MPI_FILE_NULL;
    if (!collective) {
        if (total == 0)
            return 0;
        if (open_self(f) != 0)
            return -1;
        fh = m->self;
    }
    const char *call = rbuf ? (collective ? "MPI_File_read_at_all" : "MPI_File_read_at")
                            : (collective ? "MPI_File_write_all" : "MPI_File_write");
    if (total == 0) {
        /* This rank has nothing, but set_view and read_at_all/write_all are collective: join with
         * an empty view of the same etype (its extent must agree across ranks). */
        rc = MPI_File_set_view(fh, 0, etype, etype, "native", MPI_INFO_NULL);
        m->fh_bytes_view = 0;
        if (rc != MPI_SUCCESS)
            return fail_mpi(f, rc, "MPI_File_set_view");
        rc = rbuf ? MPI_File_read_at_all(fh, 0, NULL, 0, etype, &st) : MPI_File_write_all(fh, NULL, 0, etype, &st);
        return rc == MPI_SUCCESS ? 0 : fail_mpi(f, rc, call);
    }
    if (file_type(f, v, start, count, &ftype, &disp) != 0)
        return -1;
    if (mem_type(f, v, count, mem, &mtype) != 0) {
        MPI_Type_free(&ftype);
        return -1;
    }
    rc = MPI_File_set_view(fh, disp, etype, ftype, "native", MPI_INFO_NULL);
    if (collective)
        m->fh_bytes_view = 0;
    else
        m->self_bytes_view = 0;
    if (rc == MPI_SUCCESS) {
        if (rbuf && collective)
            rc = MPI_File_read_at_all(fh, 0, rbuf, 1, mtype, &st);
        else if (rbuf)
            rc = MPI_File_read_at(fh, 0, rbuf, 1, mtype, &st);
        else if (collective)
            rc = MPI_File_write_all(fh, mem->buf, 1, mtype, &st);
        else
            rc = MPI_File_write(fh, mem->buf, 1, mtype, &st);
    }
    MPI_Type_free(&ftype);
    MPI_Type_free(&mtype);
    if (rc != MPI_SUCCESS)
        return fail_mpi(f, rc, call);
    MPI_Count done = 0;
    MPI_Get_elements_x(&st, etype, &done);
    if ((uint64_t)done != total) {
        snprintf(f->err, PARIO_ERR_LEN, "mpiio: %s moved %lld of %llu elements", rbuf ? "read" : "write",
                 (long long)done, (unsigned long long)total);
        return -1;
    }
    return 0;
}

static int put(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
               const struct pario_memory *mem, int collective)
{
    struct mpiio *m = impl(f);
    if (m && !m->writing)
        return fail_msg(f, "put on a file opened read-only");
    return access_block(f, varid, start, count, mem, NULL, collective);
}

static int get(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count, void *buf,
               int collective)
{
    struct mpiio *m = impl(f);
    if (m && m->writing)
        return fail_msg(f, "get on a file opened for writing");
    return access_block(f, varid, start, count, NULL, buf, collective);
}

static int sync_(struct pario_file *f)
{
    struct mpiio *m = impl(f);
    int rc;
    if (!m || m->fh == MPI_FILE_NULL)
        return fail_msg(f, "file not open");
    if (m->self != MPI_FILE_NULL && (rc = MPI_File_sync(m->self)) != MPI_SUCCESS)
        return fail_mpi(f, rc, "MPI_File_sync (per-rank handle)");
    rc = MPI_File_sync(m->fh);
    return rc == MPI_SUCCESS ? 0 : fail_mpi(f, rc, "MPI_File_sync");
}

static int hints(struct pario_file *f, MPI_Info *used)
{
    struct mpiio *m = impl(f);
    *used = MPI_INFO_NULL;
    if (!m || m->fh == MPI_FILE_NULL)
        return fail_msg(f, "file not open");
    int rc = MPI_File_get_info(m->fh, used);
    if (rc != MPI_SUCCESS) {
        *used = MPI_INFO_NULL;
        return fail_mpi(f, rc, "MPI_File_get_info");
    }
    return 0;
}

static void save_layout(const struct mpiio *m)
{
    struct saved *s;
    for (s = registry; s; s = s->next)
        if (strcmp(s->path, m->path) == 0)
            break;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return;
        s->L = malloc(sizeof *s->L);
        if (!s->L) {
            free(s);
            return;
        }
        snprintf(s->path, sizeof s->path, "%s", m->path);
        s->next = registry;
        registry = s;
    }
    memcpy(s->L, &m->L, sizeof m->L);
}

static int close_(struct pario_file *f)
{
    struct mpiio *m = impl(f);
    int rc = MPI_SUCCESS, rc2 = MPI_SUCCESS;
    if (!m)
        return fail_msg(f, "file not open");
    if (m->self != MPI_FILE_NULL)
        rc2 = MPI_File_close(&m->self);
    if (m->fh != MPI_FILE_NULL)
        rc = MPI_File_close(&m->fh);
    if (m->writing && !m->defining)
        save_layout(m);
    free(m);
    f->impl = NULL;
    if (rc2 != MPI_SUCCESS)
        return fail_mpi(f, rc2, "MPI_File_close (per-rank handle)");
    return rc == MPI_SUCCESS ? 0 : fail_mpi(f, rc, "MPI_File_close");
}

static int open_(struct pario_file *f, const char *path)
{
    struct saved *s;
    for (s = registry; s; s = s->next)
        if (strcmp(s->path, path) == 0)
            break;
    if (!s) {
        snprintf(f->err, PARIO_ERR_LEN, "mpiio: no layout known for %s (raw files carry none: only files this "
                 "process wrote can be re-opened)", path);
        return -1;
    }
    struct mpiio *m = calloc(1, sizeof *m);
    if (!m)
        return fail_msg(f, "out of memory");
    memcpy(&m->L, s->L, sizeof m->L);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->fh = m->self = MPI_FILE_NULL;
    int rc = MPI_File_open(f->comm, path, MPI_MODE_RDONLY, f->info, &m->fh);
    if (rc != MPI_SUCCESS) {
        free(m);
        char what[MPIIO_PATH_LEN + 32];
        snprintf(what, sizeof what, "cannot open %s", path);
        return fail_mpi(f, rc, what);
    }
    MPI_File_set_errhandler(m->fh, MPI_ERRORS_RETURN);
    f->impl = m;
    return 0;
}

const struct pario_backend pario_mpiio = {
    .name = "mpiio", .version = version, .create = create, .def_dim = def_dim, .def_var = def_var,
    .enddef = enddef, .put = put, .sync = sync_, .hints = hints, .close = close_, .open = open_, .get = get,
};
