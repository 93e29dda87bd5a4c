/* climio-probe-posix: the read-stack study through read(2) or unbuffered stdio on a plain
 * binary file (in the spirit of the thesis's appendix C). Only the reader lives here; the
 * series loop, records and options are in csrc/common. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fail.h"
#include "series.h"

#define PROGRAM "climio-probe-posix"

struct posix_reader {
    int use_fread;
    int fd;
    FILE *fp;
};

static int posix_error(char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", strerror(errno));
    return -1;
}

static int posix_open(struct reader *r, const char *path, char *err, size_t errlen)
{
    struct posix_reader *p = r->impl;
    p->fd = -1;
    p->fp = NULL;
    if (p->use_fread && !r->odirect) {
        p->fp = fopen(path, "rb");
        if (!p->fp)
            return posix_error(err, errlen);
    } else {
        p->fd = open(path, O_RDONLY | (r->odirect ? O_DIRECT : 0));
        if (p->fd < 0)
            return posix_error(err, errlen);
        /* fopen cannot ask for O_DIRECT: open(2) it and wrap the descriptor. */
        if (p->use_fread && !(p->fp = fdopen(p->fd, "rb"))) {
            int saved = errno;
            close(p->fd);
            errno = saved;
            return posix_error(err, errlen);
        }
    }
    if (p->fp && setvbuf(p->fp, NULL, _IONBF, 0) != 0) {
        fclose(p->fp);
        p->fp = NULL;
        return posix_error(err, errlen);
    }
    return 0;
}

/* O_DIRECT needs block-sized requests: ask for the whole buffer and let the kernel stop
 * at end of file (the planned length is shorter than the buffer only there). */
static uint64_t request_size(const struct reader *r, uint64_t len, uint64_t cap)
{
    return r->odirect ? cap : len;
}

static int posix_read_at(struct reader *r, uint64_t off, uint64_t len, void *buf, uint64_t cap,
                         uint64_t *got, char *err, size_t errlen)
{
    struct posix_reader *p = r->impl;
    uint64_t want = request_size(r, len, cap), done = 0;
    char *dst = buf;

    if (p->fp) {
        if (fseeko(p->fp, (off_t)off, SEEK_SET) != 0)
            return posix_error(err, errlen);
        done = fread(dst, 1, want, p->fp);
        if (done < want && ferror(p->fp)) {
            int saved = errno;
            clearerr(p->fp);
            errno = saved;
            return posix_error(err, errlen);
        }
    } else {
        if (lseek(p->fd, (off_t)off, SEEK_SET) == (off_t)-1)
            return posix_error(err, errlen);
        while (done < len) {
            ssize_t n = read(p->fd, dst + done, want - done);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return posix_error(err, errlen);
            }
            if (n == 0)
                break;  /* end of file */
            done += (uint64_t)n;
        }
    }
    *got = done < len ? done : len;
    return 0;
}

static void posix_close(struct reader *r)
{
    struct posix_reader *p = r->impl;
    if (p->fp)
        fclose(p->fp);
    else if (p->fd >= 0)
        close(p->fd);
    p->fp = NULL;
    p->fd = -1;
}

int main(int argc, char **argv)
{
    struct probe_args a;
    struct stat st;

    fail_set_program(PROGRAM);
    args_parse(argc, argv, ARGS_PLAN_OPTIONS | ARGS_POSIX_OPTIONS, &a);
    if (a.version) {
        printf("{\"probe\":\"posix\"}\n");
        return 0;
    }
    if (stat(a.file, &st) != 0)
        fail("cannot open %s: %s", a.file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        fail("%s is not a regular file", a.file);
    if (access(a.file, R_OK) != 0)
        fail("cannot open %s: %s", a.file, strerror(errno));

    struct posix_reader impl = {.use_fread = a.use_fread, .fd = -1, .fp = NULL};
    struct reader r = {
        .layer = "c-posix",
        .api = a.use_fread ? "fread" : "read",
        .odirect = a.odirect,
        .file_bytes = (uint64_t)st.st_size,
        .unit = 1,
        .impl = &impl,
        .open = posix_open,
        .read_at = posix_read_at,
        .close = posix_close,
    };
    int status = series_main(&r, &a);
    args_free(&a);
    return status;
}
