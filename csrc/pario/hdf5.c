/* Parallel HDF5 backend (pario.h): one dataset per variable, created in def_var (the define
 * phase); dimensions are only dataset shapes (no dimension scales, unlike netCDF-4).
 *
 * Fixed-size variables are contiguous unless a chunk layout is given; record variables are
 * chunked datasets extendible along dimension 0 (H5S_UNLIMITED), by default one record's slab
 * per chunk, halved along its longest dimension until a chunk is at most 4 MiB.
 *
 * Extending is collective in parallel HDF5 (H5Dset_extent), so a put beyond the current
 * extent works only as a collective put: the ranks agree on the new extent (an Allreduce of
 * the largest record any rank writes, which lets ranks with nothing to write join with count
 * zero) and extend together. Every rank must therefore make every record's collective put, in
 * the same order; an independent put beyond the extent fails (as netCDF-4's does).
 *
 * open() finds the datasets again in creation order (tracked in the file), so the varids of
 * the write hold for the read. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pario.h"

#define H5_MAX_FILE_DIMS 64
#define H5_CHUNK_CAP (4u << 20)

struct hvar {
    hid_t dset;
    enum pario_type type;
    int ndims;
    int record;
    hsize_t extent0;                 /* current length along dimension 0 (record variables) */
    char name[128];
};

struct h5 {
    hid_t file;
    int writing, defining;
    int ndims;
    uint64_t dimlen[H5_MAX_FILE_DIMS];
    int nvars;
    struct hvar vars[PARIO_MAX_VARS];
};

/* The most specific entry of the HDF5 error stack (the last one walked from the API call
 * down), on one line. */
struct first_error {
    char text[256];
};

static herr_t walk(unsigned n, const H5E_error2_t *e, void *data)
{
    struct first_error *fe = data;
    (void)n;
    if (e && e->desc && e->desc[0]) {
        char minor[128] = "";
        H5Eget_msg(e->min_num, NULL, minor, sizeof minor);
        snprintf(fe->text, sizeof fe->text, "%.150s (%.90s)", e->desc, minor);
        for (char *c = fe->text; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
    }
    return 0;
}

static int fail_h5(struct pario_file *f, const char *what)
{
    struct first_error fe = {""};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk, &fe);
    H5Eclear2(H5E_DEFAULT);
    snprintf(f->err, PARIO_ERR_LEN, "hdf5: %.200s failed%s%.256s", what, fe.text[0] ? ": " : "", fe.text);
    return -1;
}

static int fail_msg(struct pario_file *f, const char *msg)
{
    snprintf(f->err, PARIO_ERR_LEN, "hdf5: %s", msg);
    return -1;
}

static const char *version(void)
{
    static char v[64];
    if (!v[0]) {
        unsigned maj = 0, min = 0, rel = 0;
        H5get_libversion(&maj, &min, &rel);
        snprintf(v, sizeof v, "HDF5 %u.%u.%u", maj, min, rel);
    }
    return v;
}

static hid_t mem_type(enum pario_type t)
{
    return t == PARIO_DOUBLE ? H5T_NATIVE_DOUBLE : t == PARIO_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT;
}

/* Little-endian on disk whatever the host, as netCDF does. */
static hid_t file_type(enum pario_type t)
{
    return t == PARIO_DOUBLE ? H5T_IEEE_F64LE : t == PARIO_FLOAT ? H5T_IEEE_F32LE : H5T_STD_I32LE;
}

static hid_t mpio_fapl(struct pario_file *f)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return -1;
    if (H5Pset_fapl_mpio(fapl, f->comm, f->info) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

static int create(struct pario_file *f, const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* errors become one line in f->err */
    struct h5 *h = calloc(1, sizeof *h);
    if (!h)
        return fail_msg(f, "out of memory");
    hid_t fapl = mpio_fapl(f), fcpl = H5Pcreate(H5P_FILE_CREATE);
    /* Every HDF5 call clears the error stack: take the reason (fail_h5) before cleaning up. */
    if (fapl < 0 || fcpl < 0 ||
        H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0) {
        fail_h5(f, "file property lists");
        if (fapl >= 0) H5Pclose(fapl);
        if (fcpl >= 0) H5Pclose(fcpl);
        free(h);
        return -1;
    }
    h->file = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    if (h->file < 0) {
        char what[300];
        snprintf(what, sizeof what, "H5Fcreate %.250s", path);
        fail_h5(f, what);
    }
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (h->file < 0) {
        free(h);
        return -1;
    }
    h->writing = h->defining = 1;
    f->impl = h;
    return 0;
}

static int def_dim(struct pario_file *f, const char *name, uint64_t len, int *dimid)
{
    struct h5 *h = f->impl;
    (void)name;
    if (!h || !h->defining)
        return fail_msg(f, "def_dim outside define mode");
    if (h->ndims >= H5_MAX_FILE_DIMS)
        return fail_msg(f, "too many dimensions");
    h->dimlen[h->ndims] = len;
    *dimid = h->ndims++;
    return 0;
}

static int def_var(struct pario_file *f, const char *name, enum pario_type type, int ndims, const int *dimids,
                   const struct pario_var_layout *layout, int *varid)
{
    struct h5 *h = f->impl;
    hsize_t dims[PARIO_MAX_DIMS], maxdims[PARIO_MAX_DIMS], chunk[PARIO_MAX_DIMS];
    if (!h || !h->defining)
        return fail_msg(f, "def_var outside define mode");
    if (h->nvars >= PARIO_MAX_VARS || ndims < 0 || ndims > PARIO_MAX_DIMS)
        return fail_msg(f, "too many variables or dimensions");
    struct hvar *v = &h->vars[h->nvars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->type = type;
    v->ndims = ndims;
    for (int d = 0; d < ndims; d++) {
        if (dimids[d] < 0 || dimids[d] >= h->ndims)
            return fail_msg(f, "bad dimension id");
        uint64_t len = h->dimlen[dimids[d]];
        if (len == PARIO_UNLIMITED && d > 0)
            return fail_msg(f, "the record dimension must come first");
        dims[d] = len;
        maxdims[d] = len == PARIO_UNLIMITED ? H5S_UNLIMITED : len;
    }
    v->record = ndims > 0 && maxdims[0] == H5S_UNLIMITED;

    hid_t space = ndims == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(ndims, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int ok = space >= 0 && dcpl >= 0;
    if (ok && !f->fill)
        ok = H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0;
    int chunked = ndims > 0 && (v->record || (layout && layout->kind == PARIO_CHUNK_GIVEN));
    if (ok && chunked) {
        if (layout && layout->kind == PARIO_CHUNK_GIVEN) {
            for (int d = 0; d < ndims; d++) {
                hsize_t c = layout->chunk[d] ? layout->chunk[d] : (dims[d] ? dims[d] : 1);
                /* a chunk longer than a fixed dimension is refused by HDF5: clamp it */
                chunk[d] = (maxdims[d] != H5S_UNLIMITED && c > dims[d] && dims[d] > 0) ? dims[d] : c;
            }
        } else {
            hsize_t bytes = pario_type_size(type);
            chunk[0] = 1;
            for (int d = 1; d < ndims; d++) {
                chunk[d] = dims[d] ? dims[d] : 1;
                bytes *= chunk[d];
            }
            while (bytes > H5_CHUNK_CAP) {
                int longest = -1;
                for (int d = 1; d < ndims; d++)
                    if (chunk[d] > 1 && (longest < 0 || chunk[d] > chunk[longest]))
                        longest = d;
                if (longest < 0)
                    break;
                bytes = bytes / chunk[longest] * ((chunk[longest] + 1) / 2);
                chunk[longest] = (chunk[longest] + 1) / 2;
            }
        }
        ok = H5Pset_chunk(dcpl, ndims, chunk) >= 0;
    }
    if (ok) {
        v->dset = H5Dcreate2(h->file, name, file_type(type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        ok = v->dset >= 0;
    }
    if (!ok) {
        char what[200];
        snprintf(what, sizeof what, "creating dataset %.100s", name);
        fail_h5(f, what);
    }
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (!ok)
        return -1;
    *varid = h->nvars++;
    return 0;
}

static int enddef(struct pario_file *f)
{
    struct h5 *h = f->impl;
    if (!h || !h->defining)
        return fail_msg(f, "enddef outside define mode");
    h->defining = 0;
    return 0;
}

/* File and memory dataspaces of block [start, start+count) (none selected when empty). */
static int spaces(struct pario_file *f, struct hvar *v, const uint64_t *start, const uint64_t *count,
                  const struct pario_memory *mem, uint64_t total, hid_t *fspace, hid_t *mspace)
{
    hsize_t st[PARIO_MAX_DIMS], cn[PARIO_MAX_DIMS], ms[PARIO_MAX_DIMS], mst[PARIO_MAX_DIMS];
    *mspace = -1;
    *fspace = H5Dget_space(v->dset);
    if (*fspace < 0)
        return fail_h5(f, "H5Dget_space");
    if (total == 0) {
        hsize_t one = 1;
        *mspace = H5Screate_simple(1, &one, NULL);
        if (*mspace < 0 || H5Sselect_none(*fspace) < 0 || H5Sselect_none(*mspace) < 0)
            return fail_h5(f, "selecting nothing");
        return 0;
    }
    if (v->ndims == 0) {
        *mspace = H5Screate(H5S_SCALAR);
        return *mspace < 0 ? fail_h5(f, "H5Screate") : 0;
    }
    for (int d = 0; d < v->ndims; d++) {
        st[d] = start[d];
        cn[d] = count[d];
        ms[d] = mem && mem->mem_shape ? mem->mem_shape[d] : count[d];
        mst[d] = mem && mem->mem_shape && mem->mem_start ? mem->mem_start[d] : 0;
    }
    if (H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, st, NULL, cn, NULL) < 0)
        return fail_h5(f, "selecting the file block");
    *mspace = H5Screate_simple(v->ndims, ms, NULL);
    if (*mspace < 0)
        return fail_h5(f, "H5Screate_simple");
    if (mem && mem->mem_shape && H5Sselect_hyperslab(*mspace, H5S_SELECT_SET, mst, NULL, cn, NULL) < 0)
        return fail_h5(f, "selecting the memory block");
    return 0;
}

static int put(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
               const struct pario_memory *mem, int collective)
{
    struct h5 *h = f->impl;
    if (!h || h->file < 0 || !h->writing)
        return fail_msg(f, "put on a file not open for writing");
    if (h->defining)
        return fail_msg(f, "put in define mode (call enddef first)");
    if (varid < 0 || varid >= h->nvars)
        return fail_msg(f, "bad variable id");
    struct hvar *v = &h->vars[varid];
    uint64_t total = 1;
    for (int d = 0; d < v->ndims; d++)
        total *= count[d];

    if (v->record) {
        unsigned long long need = total ? start[0] + count[0] : 0, agreed = need;
        if (collective)
            MPI_Allreduce(&need, &agreed, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, f->comm);
        if (agreed > v->extent0) {
            if (!collective) {
                snprintf(f->err, PARIO_ERR_LEN, "hdf5: independent put to record %llu of %s, beyond its extent "
                         "%llu (extending is collective: put that record collectively first)",
                         (unsigned long long)start[0], v->name, (unsigned long long)v->extent0);
                return -1;
            }
            hid_t space = H5Dget_space(v->dset);
            hsize_t dims[PARIO_MAX_DIMS];
            if (space < 0 || H5Sget_simple_extent_dims(space, dims, NULL) < 0) {
                fail_h5(f, "H5Sget_simple_extent_dims");
                if (space >= 0) H5Sclose(space);
                return -1;
            }
            H5Sclose(space);
            dims[0] = agreed;
            if (H5Dset_extent(v->dset, dims) < 0)
                return fail_h5(f, "H5Dset_extent");
            v->extent0 = agreed;
        }
    }
    if (total == 0 && !collective)
        return 0;

    hid_t fspace, mspace, dxpl = -1;
    int ok = spaces(f, v, start, count, mem, total, &fspace, &mspace) == 0;
    if (ok) {
        dxpl = H5Pcreate(H5P_DATASET_XFER);
        ok = dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) >= 0;
        if (!ok)
            fail_h5(f, "transfer property list");
    }
    if (ok) {
        static const double dummy = 0;   /* HDF5 wants a buffer even when nothing is selected */
        const void *buf = mem && mem->buf ? mem->buf : &dummy;
        ok = H5Dwrite(v->dset, mem_type(v->type), mspace, fspace, dxpl, buf) >= 0;
        if (!ok) {
            char what[200];
            snprintf(what, sizeof what, "H5Dwrite of %.100s", v->name);
            fail_h5(f, what);
        }
    }
    if (dxpl >= 0) H5Pclose(dxpl);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    return ok ? 0 : -1;
}

static int get(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count, void *buf,
               int collective)
{
    struct h5 *h = f->impl;
    if (!h || h->file < 0)
        return fail_msg(f, "file not open");
    if (varid < 0 || varid >= h->nvars)
        return fail_msg(f, "bad variable id");
    struct hvar *v = &h->vars[varid];
    uint64_t total = 1;
    for (int d = 0; d < v->ndims; d++)
        total *= count[d];
    /* A collective read with nothing to read still joins H5Dread, selecting nothing. */
    if (total == 0 && !collective)
        return 0;
    hid_t fspace, mspace, dxpl = -1;
    int ok = spaces(f, v, start, count, NULL, total, &fspace, &mspace) == 0;
    if (ok) {
        dxpl = H5Pcreate(H5P_DATASET_XFER);
        ok = dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) >= 0;
        if (!ok)
            fail_h5(f, "transfer property list");
    }
    if (ok) {
        static double dummy;   /* HDF5 wants a buffer even when nothing is selected */
        if (H5Dread(v->dset, mem_type(v->type), mspace, fspace, dxpl, total ? buf : &dummy) < 0) {
            char what[200];
            snprintf(what, sizeof what, "H5Dread of %.100s", v->name);
            ok = fail_h5(f, what) == 0;
        }
    }
    if (dxpl >= 0) H5Pclose(dxpl);
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    return ok ? 0 : -1;
}

static int sync_(struct pario_file *f)
{
    struct h5 *h = f->impl;
    if (!h || h->file < 0)
        return fail_msg(f, "file not open");
    /* the MPI-IO driver's flush ends in MPI_File_sync */
    return H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0 ? fail_h5(f, "H5Fflush") : 0;
}

static int hints(struct pario_file *f, MPI_Info *used)
{
    struct h5 *h = f->impl;
    *used = MPI_INFO_NULL;
    if (!h || h->file < 0)
        return fail_msg(f, "file not open");
    hid_t fapl = H5Fget_access_plist(h->file);
    if (fapl < 0)
        return fail_h5(f, "H5Fget_access_plist");
    /* What the MPI-IO layer actually uses: MPI_File_get_info on HDF5's own handle. */
    void *handle = NULL;
    if (H5Fget_vfd_handle(h->file, fapl, &handle) >= 0 && handle) {
        if (MPI_File_get_info(*(MPI_File *)handle, used) == MPI_SUCCESS) {
            H5Pclose(fapl);
            return 0;
        }
        *used = MPI_INFO_NULL;
    }
    H5Eclear2(H5E_DEFAULT);
    /* Otherwise the hints HDF5 was given (a duplicate of the file access list's info). */
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Info info = MPI_INFO_NULL;
    herr_t rc = H5Pget_fapl_mpio(fapl, &comm, &info);
    H5Pclose(fapl);
    if (rc < 0)
        return fail_h5(f, "H5Pget_fapl_mpio");
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    *used = info;
    return 0;
}

static int close_(struct pario_file *f)
{
    struct h5 *h = f->impl;
    int ok = 1;
    if (!h)
        return fail_msg(f, "file not open");
    for (int i = 0; i < h->nvars; i++)
        if (h->vars[i].dset >= 0 && H5Dclose(h->vars[i].dset) < 0 && ok)
            ok = fail_h5(f, "H5Dclose") == 0;
    if (h->file >= 0 && H5Fclose(h->file) < 0 && ok)
        ok = fail_h5(f, "H5Fclose") == 0;
    free(h);
    f->impl = NULL;
    return ok ? 0 : -1;
}

static herr_t open_one(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    struct h5 *h = data;
    (void)info;
    if (h->nvars >= PARIO_MAX_VARS)
        return 1;
    struct hvar *v = &h->vars[h->nvars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dset = H5Dopen2(group, name, H5P_DEFAULT);
    if (v->dset < 0)
        return -1;
    hid_t type = H5Dget_type(v->dset), space = H5Dget_space(v->dset);
    H5T_class_t cls = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    v->type = cls == H5T_INTEGER ? PARIO_INT : size == 8 ? PARIO_DOUBLE : PARIO_FLOAT;
    v->ndims = H5Sget_simple_extent_ndims(space);
    hsize_t dims[PARIO_MAX_DIMS], maxdims[PARIO_MAX_DIMS];
    if (v->ndims > 0 && v->ndims <= PARIO_MAX_DIMS) {
        H5Sget_simple_extent_dims(space, dims, maxdims);
        v->record = maxdims[0] == H5S_UNLIMITED;
        v->extent0 = dims[0];
    }
    H5Tclose(type);
    H5Sclose(space);
    h->nvars++;
    return 0;
}

static int open_(struct pario_file *f, const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct h5 *h = calloc(1, sizeof *h);
    if (!h)
        return fail_msg(f, "out of memory");
    hid_t fapl = mpio_fapl(f);
    if (fapl < 0) {
        free(h);
        return fail_h5(f, "file access property list");
    }
    h->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (h->file < 0) {
        char what[300];
        snprintf(what, sizeof what, "H5Fopen %.250s", path);
        fail_h5(f, what);
    }
    H5Pclose(fapl);
    if (h->file < 0) {
        free(h);
        return -1;
    }
    f->impl = h;
    hsize_t idx = 0;
    if (H5Literate(h->file, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, open_one, h) < 0) {
        fail_h5(f, "listing the datasets in creation order");
        char keep[PARIO_ERR_LEN];
        memcpy(keep, f->err, sizeof keep);
        close_(f);
        memcpy(f->err, keep, sizeof keep);
        return -1;
    }
    return 0;
}

const struct pario_backend pario_hdf5 = {
    .name = "hdf5", .version = version, .create = create, .def_dim = def_dim, .def_var = def_var,
    .enddef = enddef, .put = put, .sync = sync_, .hints = hints, .close = close_, .open = open_, .get = get,
    .collective_extend = 1,   /* H5Dset_extent is collective (see the top of this file) */
};
