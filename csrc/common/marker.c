#include "marker.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int marker_open(struct marker *m)
{
    m->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    return m->fd < 0 ? -1 : 0;
}

void marker_mark(struct marker *m, const char *pattern, uint64_t buffer, uint64_t rep)
{
    char line[128];
    int n = snprintf(line, sizeof line, MARKER_PREFIX " %s %llu %llu\n", pattern,
                     (unsigned long long)buffer, (unsigned long long)rep);
    if (m->fd >= 0 && n > 0)
        (void)!write(m->fd, line, (size_t)n);
}

void marker_close(struct marker *m)
{
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
}
