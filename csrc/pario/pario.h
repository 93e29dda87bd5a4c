/* The parallel-write study's one small interface: a backend writes a netCDF-like file
 * (dimensions, variables, hyperslab puts) over an MPI communicator. Both drivers, benchio
 * mode (benchio.c) and model-output mode (model.c), speak only this interface, so every
 * backend serves both modes:
 *
 *   mpiio.c    raw MPI-IO: no header; fixed-size variables one after another in definition
 *              order, then the records, each record holding every record variable's slab
 *              (netCDF-3's record layout). Puts go through a subarray file view and
 *              MPI_File_write_all (collective) or MPI_File_write (independent).
 *   hdf5.c     parallel HDF5 (H5Pset_fapl_mpio); record variables are chunked extendible
 *              datasets; collective or independent transfer (H5Pset_dxpl_mpio).
 *   netcdf4.c  netCDF-C's parallel API (nc_create_par, NC_NETCDF4, nc_var_par_access).
 *   pnetcdf.c  PnetCDF (ncmpi_create, CDF-5), the _all calls or independent data mode.
 *
 * Every function returns 0 on success or -1 with a one-line message in f->err.
 * All ranks of the file's communicator call create, def_dim, def_var, enddef, close, open,
 * and put and get when collective != 0 (a rank with nothing to move passes count all zero).
 * The backends are listed once, in backends.h.
 */
#ifndef CLIMIO_PARIO_H
#define CLIMIO_PARIO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "backends.h"

#define PARIO_MAX_DIMS 8
#define PARIO_MAX_VARS 128
#define PARIO_UNLIMITED 0            /* def_dim length of the (single, first) record dimension */
#define PARIO_ERR_LEN 512

enum pario_type { PARIO_FLOAT = 0, PARIO_DOUBLE = 1, PARIO_INT = 2 };

/* Chunk layout a def_var asks for (netCDF-4 and HDF5; the others ignore it). */
enum pario_chunking {
    PARIO_CHUNK_DEFAULT = 0,         /* the library's default (netCDF-4: its own rule) */
    PARIO_CHUNK_CONTIGUOUS = 1,      /* contiguous where the library allows it (not for record variables) */
    PARIO_CHUNK_GIVEN = 2            /* chunk[] below */
};

struct pario_var_layout {
    enum pario_chunking kind;
    uint64_t chunk[PARIO_MAX_DIMS];  /* kind == PARIO_CHUNK_GIVEN: one length per dimension */
};

/* Where a put's data sits in memory: a C-order array of mem_shape whose block [mem_start,
 * mem_start + count) is the data (benchio's halo is never written). NULL mem_shape: the
 * buffer is exactly count, contiguous. */
struct pario_memory {
    const void *buf;
    const uint64_t *mem_shape;
    const uint64_t *mem_start;
};

struct pario_file {
    const struct pario_backend *backend;
    MPI_Comm comm;                   /* the ranks that share this file */
    MPI_Info info;                   /* hints handed to the MPI-IO layer (may be MPI_INFO_NULL) */
    int fill;                        /* 0: fill off (the default of this study) */
    void *impl;                      /* backend state */
    char err[PARIO_ERR_LEN];
};

struct pario_backend {
    const char *name;                /* its name in backends.h: "mpiio", "hdf5", ... */
    /* Library name and version for params.library, e.g. "HDF5 1.10.8"; static storage. */
    const char *(*version)(void);
    /* Create (clobber) `path` for writing in define mode. */
    int (*create)(struct pario_file *f, const char *path);
    int (*def_dim)(struct pario_file *f, const char *name, uint64_t len, int *dimid);
    int (*def_var)(struct pario_file *f, const char *name, enum pario_type type, int ndims,
                   const int *dimids, const struct pario_var_layout *layout, int *varid);
    /* Leave define mode (HDF5/mpiio: allocate nothing yet, just freeze the definitions). */
    int (*enddef)(struct pario_file *f);
    /* Write block [start, start+count) of variable varid (record variables: start[0] is the record). */
    int (*put)(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count,
               const struct pario_memory *mem, int collective);
    /* Flush everything to storage (the optional fsync phase). */
    int (*sync)(struct pario_file *f);
    /* The hints in effect (MPI_File_get_info or the library's equivalent), duplicated into
     * *used (caller frees); MPI_INFO_NULL when the backend cannot say. Call before close. */
    int (*hints)(struct pario_file *f, MPI_Info *used);
    int (*close)(struct pario_file *f);
    /* Re-open an existing file read-only (verification, outside the timed region); the
     * variables keep the varids of the write. */
    int (*open)(struct pario_file *f, const char *path);
    /* Read block [start, start+count) of varid into a contiguous buffer of count's shape
     * (record variables: start[0] is the first record). Like put: collective != 0 is a
     * collective read, which every rank of f->comm makes (count all zero when it wants
     * nothing); 0 is an independent read by this rank alone. Each rank may ask for its own
     * hyperslab. pnetcdf: switching between the two is collective (see pnetcdf.c). */
    int (*get)(struct pario_file *f, int varid, const uint64_t *start, const uint64_t *count, void *buf,
               int collective);
    /* Added after the first version of this interface (model.c, netcdf4.c): 1 if an
     * independent put cannot extend a record variable (netCDF-4 returns NC_ECANTEXTEND:
     * extending an HDF5 dataset is collective). A driver that writes record t of a record
     * variable with independent puts first extends it with a collective put of one element
     * by the file's rank 0 (count zero elsewhere). 0 (the default of a backend that does
     * not set it): independent puts may extend. */
    int collective_extend;
};

/* pario_mpiio, pario_hdf5, ...: one per line of backends.h. */
#define PARIO_BACKEND_DECLARE(name, ext, key, desc) extern const struct pario_backend pario_##name;
PARIO_BACKENDS(PARIO_BACKEND_DECLARE)

/* The lines of backends.h, in their order (common.c). */
struct pario_backend_entry {
    const struct pario_backend *backend;
    const char *name, *extension, *version_key, *description;
};
extern const struct pario_backend_entry pario_registry[PARIO_NBACKENDS];

/* The backend called `name`, or NULL. */
const struct pario_backend *pario_backend_named(const char *name);

/* Bytes of one element, and its MPI datatype. */
size_t pario_type_size(enum pario_type t);
MPI_Datatype pario_mpi_type(enum pario_type t);

#endif
