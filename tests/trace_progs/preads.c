/* preads FILE N SIZE STRIDE [--proc] [--loop]
 * N preads of SIZE bytes at offsets 0, STRIDE, 2*STRIDE, ... of FILE (traced by test_trace_lib.py).
 * --proc: also read /proc/self/status (an excluded path).
 * --loop: repeat the preads forever, printing "ready" once the first pass is done (to be killed).
 * --fread: also read the first 10 x SIZE bytes with fopen/fread/fclose. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: preads FILE N SIZE STRIDE [--proc] [--loop]\n"); return 2; }
    long n = atol(argv[2]), size = atol(argv[3]), stride = atol(argv[4]);
    int proc = 0, loop = 0, stdio = 0;
    for (int i = 5; i < argc; i++) {
        proc |= strcmp(argv[i], "--proc") == 0;
        loop |= strcmp(argv[i], "--loop") == 0;
        stdio |= strcmp(argv[i], "--fread") == 0;
    }
    char *buf = malloc((size_t)size);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || !buf) { perror(argv[1]); return 1; }
    if (proc) {
        int p = open("/proc/self/status", O_RDONLY);
        char tmp[256];
        while (p >= 0 && read(p, tmp, sizeof tmp) > 0) {}
        if (p >= 0) close(p);
    }
    if (stdio) {
        FILE *fp = fopen(argv[1], "rb");
        for (int i = 0; fp && i < 10; i++)
            if (fread(buf, (size_t)size, 1, fp) != 1) { perror("fread"); return 1; }
        if (!fp || fclose(fp) != 0) { perror("fopen"); return 1; }
    }
    do {
        for (long i = 0; i < n; i++)
            if (pread(fd, buf, (size_t)size, i * stride) != size) { perror("pread"); return 1; }
        if (loop) {
            static int said;
            if (!said++) { printf("ready\n"); fflush(stdout); }
        }
    } while (loop);
    close(fd);
    free(buf);
    return 0;
}
