/* What the netCDF probes share (static library climio_netcdf, linked with netCDF-C):
 * error texts, the library string and --version, and opening a variable. */
#ifndef CLIMIO_NCPROBE_H
#define CLIMIO_NCPROBE_H

#include <netcdf.h>
#include <stddef.h>

/* nc_strerror(status) into err; returns -1. */
int ncprobe_error(int status, char *err, size_t errlen);

/* "netCDF-C <nc_inq_libvers()>" for params.library (a static buffer). */
const char *ncprobe_library(void);

/* --version: {"netcdf_c": nc_inq_libvers()} on stdout. */
void ncprobe_print_version(void);

/* The name of `type` ("double", "int", a user type's name) or its number. */
void ncprobe_type_name(int ncid, nc_type type, char out[NC_MAX_NAME + 1]);

/* nc_open(NC_NOWRITE) + nc_inq_varid, for one repetition: 0, or -1 with the nc_strerror
 * text in err (nothing left open). */
int ncprobe_open(const char *path, const char *var, int *ncid, int *varid, char *err, size_t errlen);

/* The same before any record: on failure fail()s (exit status 2) naming the file or variable. */
void ncprobe_open_or_fail(const char *path, const char *var, int *ncid, int *varid);

#endif
