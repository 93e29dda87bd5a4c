/* The backends of climio-pario, listed once (an X-macro). Everything in C that
 * enumerates backends is generated from this list: the declarations and the registry
 * (pario.h, common.c), the name lookup, the default and the check of --backends, --help,
 * --list (which the Python side reads instead of keeping its own copy), --version's library
 * members and the file extensions. Adding a backend is one .c file defining
 * `const struct pario_backend pario_<name>` (CMakeLists.txt compiles every *.c here) and
 * one line below.
 *
 *   X(name, extension, version_key, description)
 *     name         its --backends name and the symbol pario_<name>; must equal the .name
 *                  member of the backend (records carry that one)
 *     extension    of the files it writes
 *     version_key  the member of --version's JSON that holds its library's version, or NULL
 *                  (mpiio's library is MPI itself: the "mpi" member)
 *     description  one line for --list and --help (no tab, no newline)
 *
 * The order is the default order of --backends. */
#ifndef CLIMIO_PARIO_BACKENDS_H
#define CLIMIO_PARIO_BACKENDS_H

#define PARIO_BACKENDS(X) \
    X(mpiio,   "dat", NULL,       "raw MPI-IO: no header, netCDF-3's record layout") \
    X(hdf5,    "h5",  "hdf5",     "parallel HDF5 (H5Pset_fapl_mpio), one dataset per variable") \
    X(netcdf4, "nc",  "netcdf_c", "netCDF-4 through netCDF-C's parallel API (nc_create_par)") \
    X(pnetcdf, "nc",  "pnetcdf",  "PnetCDF, CDF-5 files (ncmpi_create, NC_64BIT_DATA)")

/* PARIO_BACKEND_<name>: its index in the list; PARIO_NBACKENDS: how many there are. */
#define PARIO_BACKEND_INDEX(name, ext, key, desc) PARIO_BACKEND_##name,
enum { PARIO_BACKENDS(PARIO_BACKEND_INDEX) PARIO_NBACKENDS };

/* "mpiio,hdf5,netcdf4,pnetcdf" and "mpiio, hdf5, netcdf4, pnetcdf": string constants (usable
 * in static initializers), built by skipping the separator in front of the first name. */
#define PARIO_BACKEND_COMMA_NAME(name, ext, key, desc) "," #name
#define PARIO_BACKEND_SPACED_NAME(name, ext, key, desc) ", " #name
#define PARIO_BACKEND_LIST (PARIO_BACKENDS(PARIO_BACKEND_COMMA_NAME) + 1)
#define PARIO_BACKEND_CHOICES (PARIO_BACKENDS(PARIO_BACKEND_SPACED_NAME) + 2)

#endif
