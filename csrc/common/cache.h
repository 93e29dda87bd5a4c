/* Page-cache state of a file: evict (posix_fadvise DONTNEED), warm (read it all),
 * and verify (mincore on a shared read-only mapping). C twin of climio/cache.py. */
#ifndef CLIMIO_CACHE_H
#define CLIMIO_CACHE_H

#include <stddef.h>

/* At most this fraction of resident pages counts as a cold file. */
#define CACHE_COLD_THRESHOLD 0.01

/* All return 0, or -1 with a message in err. */
int cache_evict(const char *path, char *err, size_t errlen);
int cache_warm(const char *path, char *err, size_t errlen);
int cache_resident_fraction(const char *path, double *fraction, char *err, size_t errlen);

/* The record's "cache" object. */
struct cache_state {
    const char *state;      /* "cold" | "warm": what mincore found */
    const char *requested;  /* "cold" | "warm": what was asked for */
    const char *method;     /* posix_fadvise(DONTNEED) | O_DIRECT | pre-read */
    double resident_fraction;
};

/* Bring `path` into the requested state before one repetition and verify it.
 * want_warm: read the file (only if pre_read is set, i.e. before a configuration's first
 * repetition); otherwise evict it. odirect: the reads bypass the page cache, so the file
 * is always evicted and the method is "O_DIRECT". */
int cache_prepare(const char *path, int want_warm, int pre_read, int odirect,
                  struct cache_state *out, char *err, size_t errlen);

#endif
