/* Configuration markers: "climio-mark PATTERN BUFFER REP\n" written with write(2) to a
 * descriptor on /dev/null. Free outside the timed region; under `strace -y` they tell the
 * orchestrator which configuration each traced read belongs to (climio/syscalls.py). */
#ifndef CLIMIO_MARKER_H
#define CLIMIO_MARKER_H

#include <stdint.h>

#define MARKER_PREFIX "climio-mark"

struct marker {
    int fd;
};

/* 0, or -1 with errno set. */
int marker_open(struct marker *m);
void marker_mark(struct marker *m, const char *pattern, uint64_t buffer, uint64_t rep);
void marker_close(struct marker *m);

#endif
