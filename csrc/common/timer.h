/* Wall time (CLOCK_MONOTONIC) and CPU time (getrusage RUSAGE_SELF) of a region. */
#ifndef CLIMIO_TIMER_H
#define CLIMIO_TIMER_H

#include <sys/time.h>
#include <time.h>

struct timer {
    struct timespec wall0;
    struct timeval user0, sys0;
};

struct timer_result {
    double wall_s, user_s, sys_s;
};

void timer_start(struct timer *t);
/* Wall seconds since timer_start (cheap enough to call after every read). */
double timer_elapsed(const struct timer *t);
void timer_stop(const struct timer *t, struct timer_result *out);

#endif
