/* What `climio trace try` injects into a job (climio/trace/trying), read from the environment at
 * load, whether or not the job is also traced (CLIMIO_TRACE_DIR):
 *
 *   CLIMIO_TRY_REDIRECT=DEV:INO:/copy[;DEV:INO:/copy...]
 *       read-only opens of the file with that device and inode (open/openat/creat/fopen, the
 *       stat family, nc_open, H5Fopen) go to /copy instead: a converted layout is tried without
 *       touching the job's script or file. Matched by (device, inode), not by path, so every
 *       spelling of the path (relative, through a symbolic link, another mount point) is caught.
 *   CLIMIO_TRY_WRITES=/abs/out=/scratch/out[;...]
 *       every open (any mode) and stat of that absolute path goes to the scratch path instead:
 *       the files a job writes land in a scratch directory per run (matched by the path, made
 *       absolute and normalised lexically: the file may not exist yet).
 *   CLIMIO_TRY_NC_CACHE=BYTES:NELEMS:PREEMPTION
 *       nc_set_chunk_cache(...) in the caller's libnetcdf just before each nc_open (the default
 *       cache a variable gets when its file is opened).
 *   CLIMIO_TRY_H5_CACHE=BYTES:NSLOTS:W0
 *       H5Fopen opens with a copy of its file access list given that raw-data chunk cache
 *       (H5Pset_cache): what h5py's rdcc_nbytes/rdcc_nslots/rdcc_w0 set.
 *
 * The stat a match needs goes straight to the system call (never through our own wrappers). */
#include "buffer.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CT_TRY_MAX 16
typedef struct { dev_t dev; ino_t ino; char *copy; } redirect;
static redirect table[CT_TRY_MAX];
static int nread;                 /* entries of table */
typedef struct { char *from, *to; } moved;
static moved writes[CT_TRY_MAX];
static int nwrites;
int ct_try_n;                     /* redirects configured (0: the open paths skip this file) */
ct_try_cache ct_try_nc, ct_try_h5;

static int parse_cache(const char *s, ct_try_cache *c) {
    if (!s || !*s) return 0;
    unsigned long long a, b;
    double w;
    if (sscanf(s, "%llu:%llu:%lf", &a, &b, &w) != 3) return 0;
    c->bytes = (size_t)a;
    c->slots = (size_t)b;
    c->w0 = w;
    c->on = 1;
    return 1;
}

static void parse_redirects(const char *s) {
    while (s && *s && nread < CT_TRY_MAX) {
        const char *end = strchr(s, ';');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char item[PATH_MAX + 64];
        if (len < sizeof item) {
            memcpy(item, s, len);
            item[len] = 0;
            unsigned long long dev, ino;
            int at = 0;
            if (sscanf(item, "%llu:%llu:%n", &dev, &ino, &at) == 2 && at > 0 && item[at] == '/') {
                table[nread].dev = (dev_t)dev;
                table[nread].ino = (ino_t)ino;
                table[nread].copy = strdup(item + at);
                if (table[nread].copy) nread++;
            }
        }
        s = end ? end + 1 : NULL;
    }
}

static void parse_writes(const char *s) {
    while (s && *s && nwrites < CT_TRY_MAX) {
        const char *end = strchr(s, ';');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        char *item = strndup(s, len), *eq = item ? strchr(item, '=') : NULL;
        if (eq && item[0] == '/' && eq[1] == '/') {
            *eq = 0;
            writes[nwrites].from = item;
            writes[nwrites++].to = eq + 1;
        } else {
            free(item);
        }
        s = end ? end + 1 : NULL;
    }
}

/* Before the core's constructor (101 registers modules): libc is initialised (we depend on it). */
__attribute__((constructor(102))) static void try_init(void) {
    parse_redirects(getenv("CLIMIO_TRY_REDIRECT"));
    parse_writes(getenv("CLIMIO_TRY_WRITES"));
    ct_try_n = nread + nwrites;
    parse_cache(getenv("CLIMIO_TRY_NC_CACHE"), &ct_try_nc);
    parse_cache(getenv("CLIMIO_TRY_H5_CACHE"), &ct_try_h5);
}

const char *ct_try_path_slow(const char *path, int dirfd, int readonly) {
    if (!path || !*path) return path;
    if (nwrites) {
        char abs[PATH_MAX];
        if (ct_abspath(path, dirfd, abs, sizeof abs) == 0)
            for (int i = 0; i < nwrites; i++)
                if (strcmp(abs, writes[i].from) == 0) return writes[i].to;
    }
    if (!readonly || !nread) return path;
    struct stat st;
    int e = errno;
    long r = syscall(SYS_newfstatat, dirfd, path, &st, 0);
    errno = e;
    if (r != 0) return path;
    for (int i = 0; i < nread; i++)
        if (table[i].dev == st.st_dev && table[i].ino == st.st_ino) return table[i].copy;
    return path;
}
