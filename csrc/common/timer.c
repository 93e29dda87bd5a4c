#include "timer.h"

#include <stdio.h>
#include <sys/resource.h>

long long storage_read_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "read_bytes: %lld", &v) == 1)
            break;
    fclose(f);
    return v;
}

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static double tv_diff(const struct timeval *a, const struct timeval *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_usec - a->tv_usec) * 1e-6;
}

void timer_start(struct timer *t)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    t->user0 = ru.ru_utime;
    t->sys0 = ru.ru_stime;
    t->storage0 = storage_read_bytes();
    clock_gettime(CLOCK_MONOTONIC, &t->wall0);
}

double timer_elapsed(const struct timer *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return ts_diff(&t->wall0, &now);
}

void timer_stop(const struct timer *t, struct timer_result *out)
{
    struct rusage ru;
    out->wall_s = timer_elapsed(t);
    getrusage(RUSAGE_SELF, &ru);
    out->user_s = tv_diff(&t->user0, &ru.ru_utime);
    out->sys_s = tv_diff(&t->sys0, &ru.ru_stime);
    long long now = storage_read_bytes();
    out->storage_read_bytes = (now >= 0 && t->storage0 >= 0) ? now - t->storage0 : -1;
}
