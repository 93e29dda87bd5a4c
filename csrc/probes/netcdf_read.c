/* climio-probe-netcdf: the read-stack study through netCDF-C (nc_get_vara_double on a
 * 1-D double variable). Only the reader lives here; the series loop, records and options
 * are in csrc/common. Runs serially, without mpirun, also with a parallel netCDF-C build. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "fail.h"
#include "ncprobe.h"
#include "series.h"

#define PROGRAM "climio-probe-netcdf"
#define ITEMSIZE 8u  /* sizeof(double): byte offsets and lengths are in whole values */

struct nc_reader {
    const char *var;
    int ncid, varid;
};

static int ncr_open(struct reader *r, const char *path, char *err, size_t errlen)
{
    struct nc_reader *p = r->impl;
    return ncprobe_open(path, p->var, &p->ncid, &p->varid, err, errlen);
}

static int ncr_read_at(struct reader *r, uint64_t off, uint64_t len, void *buf, uint64_t cap,
                       uint64_t *got, char *err, size_t errlen)
{
    struct nc_reader *p = r->impl;
    size_t start = (size_t)(off / ITEMSIZE), count = (size_t)(len / ITEMSIZE);
    (void)cap;
    int status = nc_get_vara_double(p->ncid, p->varid, &start, &count, buf);
    if (status != NC_NOERR)
        return ncprobe_error(status, err, errlen);
    *got = (uint64_t)count * ITEMSIZE;
    return 0;
}

static void ncr_close(struct reader *r)
{
    struct nc_reader *p = r->impl;
    nc_close(p->ncid);
}

/* Bytes of the variable (elements x 8); exits with status 2 unless it is 1-D double. */
static uint64_t variable_bytes(const char *path, const char *var)
{
    int ncid, varid, ndims, dimid;
    nc_type type;
    size_t n;
    char type_name[NC_MAX_NAME + 1] = "?";
    int status;
    ncprobe_open_or_fail(path, var, &ncid, &varid);
    status = nc_inq_varndims(ncid, varid, &ndims);
    if (status == NC_NOERR)
        status = nc_inq_vartype(ncid, varid, &type);
    if (status == NC_NOERR)
        ncprobe_type_name(ncid, type, type_name);
    if (status == NC_NOERR && ndims == 1)
        status = nc_inq_vardimid(ncid, varid, &dimid);
    if (status == NC_NOERR && ndims == 1)
        status = nc_inq_dimlen(ncid, dimid, &n);
    nc_close(ncid);
    if (status != NC_NOERR)
        fail("cannot inspect variable '%s' in %s: %s", var, path, nc_strerror(status));
    if (ndims != 1 || type != NC_DOUBLE)
        fail("variable '%s' in %s must be 1-D double (float64), not %d-D %s",
             var, path, ndims, type_name);
    return (uint64_t)n * ITEMSIZE;
}

int main(int argc, char **argv)
{
    struct probe_args a;

    fail_set_program(PROGRAM);
    args_parse(argc, argv, ARGS_PLAN_OPTIONS | ARGS_NETCDF_OPTIONS, &a);
    if (a.version) {
        ncprobe_print_version();
        return 0;
    }

    struct nc_reader impl = {.var = a.var, .ncid = -1, .varid = -1};
    struct reader r = {
        .layer = "c-netcdf",
        .api = "nc_get_vara_double",
        .library = ncprobe_library(),
        .variable = a.var,
        .odirect = 0,
        .file_bytes = variable_bytes(a.file, a.var),
        .unit = ITEMSIZE,
        .impl = &impl,
        .open = ncr_open,
        .read_at = ncr_read_at,
        .close = ncr_close,
    };
    int status = series_main(&r, &a);
    args_free(&a);
    return status;
}
