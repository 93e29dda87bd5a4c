/* Wall time (CLOCK_MONOTONIC), CPU time (getrusage RUSAGE_SELF) and bytes fetched from storage
 * (/proc/self/io read_bytes: page-cache hits do not count) of a region. */
#ifndef CLIMIO_TIMER_H
#define CLIMIO_TIMER_H

#include <sys/time.h>
#include <time.h>

struct timer {
    struct timespec wall0;
    struct timeval user0, sys0;
    long long storage0;
};

struct timer_result {
    double wall_s, user_s, sys_s;
    long long storage_read_bytes; /* -1 when the kernel does not account task I/O */
};

/* read_bytes of /proc/self/io, or -1. */
long long storage_read_bytes(void);

void timer_start(struct timer *t);
/* Wall seconds since timer_start (cheap enough to call after every read). */
double timer_elapsed(const struct timer *t);
void timer_stop(const struct timer *t, struct timer_result *out);

#endif
