#include "ncprobe.h"

#include <stdio.h>

#include "fail.h"
#include "jsonl.h"

int ncprobe_error(int status, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", nc_strerror(status));
    return -1;
}

const char *ncprobe_library(void)
{
    static char library[256];
    if (!library[0])
        snprintf(library, sizeof library, "netCDF-C %s", nc_inq_libvers());
    return library;
}

void ncprobe_print_version(void)
{
    struct jsonl j;
    jsonl_init(&j);
    jsonl_begin(&j, NULL);
    jsonl_str(&j, "netcdf_c", nc_inq_libvers());
    jsonl_emit(&j, stdout);
    jsonl_free(&j);
}

void ncprobe_type_name(int ncid, nc_type type, char out[NC_MAX_NAME + 1])
{
    if (nc_inq_type(ncid, type, out, NULL) != NC_NOERR)
        snprintf(out, NC_MAX_NAME + 1, "%d", (int)type);
}

int ncprobe_open(const char *path, const char *var, int *ncid, int *varid, char *err, size_t errlen)
{
    int status = nc_open(path, NC_NOWRITE, ncid);
    if (status != NC_NOERR)
        return ncprobe_error(status, err, errlen);
    status = nc_inq_varid(*ncid, var, varid);
    if (status != NC_NOERR) {
        nc_close(*ncid);
        return ncprobe_error(status, err, errlen);
    }
    return 0;
}

void ncprobe_open_or_fail(const char *path, const char *var, int *ncid, int *varid)
{
    int status = nc_open(path, NC_NOWRITE, ncid);
    if (status != NC_NOERR)
        fail("cannot open %s as netCDF: %s", path, nc_strerror(status));
    if (nc_inq_varid(*ncid, var, varid) != NC_NOERR) {
        nc_close(*ncid);
        fail("no variable '%s' in %s", var, path);
    }
}
