#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define WARM_BLOCK (16u << 20)

static int sys_error(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return -1;
}

int cache_evict(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sys_error(err, errlen, "cannot open", path);
    /* Dirty pages cannot be dropped: flush first so a just-written file is evictable.
     * Failures are not fatal here; mincore tells whether eviction worked. */
    (void)fsync(fd);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return 0;
}

int cache_warm(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sys_error(err, errlen, "cannot open", path);
    char *buf = malloc(WARM_BLOCK);
    if (!buf) {
        close(fd);
        snprintf(err, errlen, "%s", strerror(ENOMEM));
        return -1;
    }
    ssize_t n;
    while ((n = read(fd, buf, WARM_BLOCK)) != 0) {
        if (n < 0 && errno != EINTR) {
            int saved = errno;
            free(buf);
            close(fd);
            errno = saved;
            return sys_error(err, errlen, "cannot read", path);
        }
    }
    free(buf);
    close(fd);
    return 0;
}

int cache_resident_fraction(const char *path, double *fraction, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sys_error(err, errlen, "cannot open", path);
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return sys_error(err, errlen, "cannot stat", path);
    }
    if (st.st_size == 0) {
        close(fd);
        *fraction = 0.0;
        return 0;
    }
    size_t size = (size_t)st.st_size;
    long page = sysconf(_SC_PAGESIZE);
    size_t npages = (size + (size_t)page - 1) / (size_t)page;
    void *addr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    int saved = errno;
    close(fd);
    if (addr == MAP_FAILED) {
        errno = saved;
        return sys_error(err, errlen, "cannot mmap", path);
    }
    unsigned char *vec = malloc(npages);
    if (!vec) {
        munmap(addr, size);
        snprintf(err, errlen, "%s", strerror(ENOMEM));
        return -1;
    }
    if (mincore(addr, size, vec) != 0) {
        saved = errno;
        free(vec);
        munmap(addr, size);
        errno = saved;
        return sys_error(err, errlen, "mincore failed on", path);
    }
    size_t resident = 0;
    for (size_t i = 0; i < npages; i++)
        resident += vec[i] & 1;
    free(vec);
    munmap(addr, size);
    *fraction = (double)resident / (double)npages;
    return 0;
}

int cache_prepare(const char *path, int want_warm, int pre_read, int odirect,
                  struct cache_state *out, char *err, size_t errlen)
{
    double frac;
    out->requested = want_warm ? "warm" : "cold";
    if (odirect) {
        out->method = "O_DIRECT";
        if (cache_evict(path, err, errlen) != 0)
            return -1;
    } else if (want_warm) {
        out->method = "pre-read";
        if (pre_read && cache_warm(path, err, errlen) != 0)
            return -1;
    } else {
        out->method = "posix_fadvise(DONTNEED)";
        if (cache_evict(path, err, errlen) != 0)
            return -1;
    }
    if (cache_resident_fraction(path, &frac, err, errlen) != 0)
        return -1;
    out->resident_fraction = frac;
    out->state = frac > CACHE_COLD_THRESHOLD ? "warm" : "cold";
    return 0;
}
