/* POSIX (layer 1) and stdio (layer 2) wrappers.
 *
 * The fd table: one 16-byte entry per descriptor (up to 2^20, a MAP_NORESERVE mapping: only the
 * pages of descriptors in use are touched). open/openat/creat/fopen fill it, deciding there once
 * whether the path is excluded; close/fclose/close_range clear it; dup* copy it. The hot path of
 * read/pread/write is then: is the entry TRACED, two timestamps, one 64-byte append.
 * A descriptor whose open we did not see (inherited, or made by mkstemp, socket, pipe, opendir,
 * fcntl(F_DUPFD), ...) is resolved on first use by readlink(/proc/self/fd/N): a path that is not
 * absolute (pipe:[..], socket:[..], anon_inode:...) or is excluded is never traced.
 *
 * Offsets: exact for the positional calls (pread*, pwrite*, preadv*, pwritev*). For read, write,
 * readv, writev the tracer follows the file position itself (open: 0, += bytes moved, lseek
 * result), so no extra system call; it records -1 where it cannot know: after O_APPEND opens,
 * for descriptors duplicated by dup*, or used through stdio. stdio offsets come from ftello.
 * glibc's stdio reads and writes through internal calls, so an fread shows no nested read(2).
 *
 * ret: bytes moved / the call's result; -errno when it failed (flag bit1). */
#include "buffer.h"
#include "wire.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc entry points without a public prototype (fortified calls, pre-2.33 stat ABI used by
 * manylinux wheels' bundled libraries) */
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off64_t, size_t);
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstat(int, int, struct stat *);
int __fxstat64(int, int, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);

typedef struct {
    uint32_t file_id;
    uint8_t state;   /* FD_* */
    uint8_t shared;  /* position shared with another fd or a FILE: offsets of read/write unknown */
    uint8_t wire;    /* CT_WIRE_*: a socket not yet classified, or an HTTP client socket (http.c) */
    uint8_t pad;
    int64_t pos;     /* file position, -1 unknown */
} fdent;
enum { FD_UNKNOWN = 0, FD_TRACED, FD_IGNORED };
#define MAX_FDS (1 << 20)
#define fds ((fdent *)ct_g.fdtab)   /* in ct_g: the line every call reads anyway */
static int max_fd_seen = -1;

/* The descriptor table, once tracing is configured (the core calls it through the module table). */
static void posix_init(void) {
    void *p = mmap(NULL, (size_t)MAX_FDS * sizeof(fdent), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ct_g.fdtab = p == MAP_FAILED ? NULL : p;
}
CT_MODULE(.name = "posix", .init = posix_init)

static inline void note_fd(int fd) {
    if (fd > max_fd_seen) max_fd_seen = fd;
}

static fdent *fd_resolve(int fd) {
    char link[40], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int e = errno;
    ssize_t k = readlink(link, path, sizeof path - 1);
    fdent *f = &fds[fd];
    if (k <= 0) { errno = e; return NULL; }   /* not open: decide when it is */
    path[k] = 0;
    note_fd(fd);
    if (path[0] != '/' || ct_excluded(path)) {
        f->state = FD_IGNORED;
        f->wire = strncmp(path, "socket:", 7) ? CT_WIRE_NONE : CT_WIRE_CANDIDATE;
        errno = e;
        return NULL;
    }
    f->file_id = ct_intern(path);
    f->shared = 0;
    f->wire = CT_WIRE_NONE;
    f->pos = CT_REAL(lseek)(fd, 0, SEEK_CUR);
    f->state = f->file_id ? FD_TRACED : FD_IGNORED;
    errno = e;
    return f->state == FD_TRACED ? f : NULL;
}

static inline fdent *fd_get(int fd) {
    if (CT_UNLIKELY((unsigned)fd >= MAX_FDS || !fds)) return NULL;
    fdent *f = &fds[fd];
    if (CT_LIKELY(f->state == FD_TRACED)) return f;
    return f->state == FD_UNKNOWN ? fd_resolve(fd) : NULL;
}
static inline fdent *fd_peek(int fd) {   /* no lazy resolution */
    if ((unsigned)fd >= MAX_FDS || !fds) return NULL;
    return fds[fd].state == FD_TRACED ? &fds[fd] : NULL;
}
static inline void fd_forget(int fd) {
    if ((unsigned)fd < MAX_FDS && fds) {
        fds[fd].state = FD_UNKNOWN;
        if (CT_UNLIKELY(fds[fd].wire)) {
            if (fds[fd].wire == CT_WIRE_HTTP) ct_http_closed(fd);
            fds[fd].wire = CT_WIRE_NONE;
        }
    }
}
/* untraced calls (tracer inside, layer off) still move the position */
static inline void pos_moved(int fd, int64_t r) {
    fdent *f = fd_peek(fd);
    if (f && !f->shared && f->pos >= 0 && r > 0) f->pos += r;
}
static inline void pos_set(int fd, int64_t r) {
    fdent *f = fd_peek(fd);
    if (f && !f->shared && r >= 0) f->pos = r;
}

/* After an open: fill the table; the path id, 0 when excluded. */
static uint32_t opened(int fd, const char *path, int dirfd, int append, int shared) {
    uint32_t id = ct_path_id(path, dirfd);
    if (fd >= 0 && (unsigned)fd < MAX_FDS && fds) {
        fdent *f = &fds[fd];
        f->file_id = id;
        f->shared = (uint8_t)shared;
        f->wire = CT_WIRE_NONE;
        f->pos = append ? -1 : 0;
        f->state = id ? FD_TRACED : FD_IGNORED;
        note_fd(fd);
    }
    return id;
}

/* err: the call's errno, or -1 to read it now (nothing has touched it since the call) */
static inline void io_event(uint32_t func, uint8_t layer, uint32_t file, uint64_t t0, uint64_t t1,
                            uint16_t d, int64_t off, int64_t size, int64_t r, int err) {
    if (CT_UNLIKELY(r < 0) && err < 0) err = errno;
    int64_t ret = r < 0 ? -(int64_t)err : r;
    uint8_t flags = r < 0 ? CT_F_FAILED : 0;
    ct_event *s = ct_slot();
    if (CT_LIKELY(s)) {
        ct_fill(s, t0, t1, off, size, ret, file, func, 0, d, layer, flags);
        ct_commit();
        return;
    }
    ct_event e = {.t_start = t0, .t_end = t1, .offset = off, .size = size, .ret = ret, .file_id = file,
                  .func_id = func, .depth = d, .layer = layer, .flags = flags};
    ct_emit_slow(&e);
}

/* ---- open --------------------------------------------------------------------------------- */
#define MODE_ARG(flags) \
    mode_t mode = 0; \
    if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) { \
        va_list ap; va_start(ap, flags); mode = (mode_t)va_arg(ap, int); va_end(ap); }

/* read-only: what `climio trace try` may redirect to a converted copy (try.c) */
#define RDONLY_FLAGS(flags) (((flags) & O_ACCMODE) == O_RDONLY && !((flags) & (O_CREAT | O_TRUNC)))
#define OPEN_BODY(fn, name, dirfd, path, flags, call) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); \
    path = ct_try_path(path, dirfd, RDONLY_FLAGS(flags)); \
    if (!ct_on(CT_POSIX)) { int fd_ = real_ call; fd_forget(fd_); return fd_; } \
    CT_BEGIN(); \
    int fd_ = real_ call; \
    CT_END(); \
    uint32_t id_ = opened(fd_, path, dirfd, (flags) & O_APPEND, 0); \
    if (id_) io_event(CT_FUNC_ID(name), CT_POSIX, id_, ct_t0_, ct_t1_, ct_d_, -1, -1, fd_, ct_errno_); \
    CT_RETURN(fd_); } while (0)

CT_EXPORT int open(const char *path, int flags, ...) {
    MODE_ARG(flags);
    OPEN_BODY(open, "open", AT_FDCWD, path, flags, (path, flags, mode));
}
CT_EXPORT int open64(const char *path, int flags, ...) {
    MODE_ARG(flags);
    OPEN_BODY(open64, "open64", AT_FDCWD, path, flags, (path, flags, mode));
}
CT_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    OPEN_BODY(openat, "openat", dirfd, path, flags, (dirfd, path, flags, mode));
}
CT_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARG(flags);
    OPEN_BODY(openat64, "openat64", dirfd, path, flags, (dirfd, path, flags, mode));
}
CT_EXPORT int __open_2(const char *path, int flags) {
    OPEN_BODY(__open_2, "open", AT_FDCWD, path, flags, (path, flags));
}
CT_EXPORT int __open64_2(const char *path, int flags) {
    OPEN_BODY(__open64_2, "open64", AT_FDCWD, path, flags, (path, flags));
}
CT_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    OPEN_BODY(__openat_2, "openat", dirfd, path, flags, (dirfd, path, flags));
}
CT_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    OPEN_BODY(__openat64_2, "openat64", dirfd, path, flags, (dirfd, path, flags));
}
CT_EXPORT int creat(const char *path, mode_t mode) {
    OPEN_BODY(creat, "creat", AT_FDCWD, path, 0, (path, mode));
}
CT_EXPORT int creat64(const char *path, mode_t mode) {
    OPEN_BODY(creat64, "creat64", AT_FDCWD, path, 0, (path, mode));
}

/* ---- close, dup --------------------------------------------------------------------------- */
CT_EXPORT int close(int fd) {
    __typeof__(&close) real = CT_REAL(close);
    fdent *f = ct_on(CT_POSIX) ? fd_peek(fd) : NULL;
    uint32_t id = f ? f->file_id : 0;
    fd_forget(fd);   /* before: a concurrent open may reuse the number once it is closed */
    if (!f) return real(fd);
    CT_BEGIN();
    int r = real(fd);
    CT_END();
    io_event(CT_FUNC_ID("close"), CT_POSIX, id, ct_t0_, ct_t1_, ct_d_, -1, -1, r, ct_errno_);
    CT_RETURN(r);
}

CT_EXPORT int close_range(unsigned first, unsigned last, int flags) {
    int r = CT_REAL(close_range)(first, last, flags);
    if (r == 0 && fds && !(flags & CLOSE_RANGE_CLOEXEC) && max_fd_seen >= 0) {
        unsigned hi = last < (unsigned)max_fd_seen ? last : (unsigned)max_fd_seen;
        for (unsigned fd = first; fd <= hi; fd++) fd_forget((int)fd);
    }
    return r;
}

static void dup_done(int old, int nfd) {
    if (nfd < 0 || (unsigned)nfd >= MAX_FDS || !fds || nfd == old) return;
    /* in a vfork() child the table is the parent's: only ever forget (always safe) there */
    if ((unsigned)old < MAX_FDS && fds[old].state == FD_TRACED && ct_own_process()) {
        fds[nfd] = fds[old];   /* one open file description, one position: unknown to us */
        fds[nfd].shared = fds[old].shared = 1;
    } else {
        fd_forget(nfd);
    }
    note_fd(nfd);
}
CT_EXPORT int dup(int old) {
    int r = CT_REAL(dup)(old);
    dup_done(old, r);
    return r;
}
CT_EXPORT int dup2(int old, int nfd) {
    int r = CT_REAL(dup2)(old, nfd);
    dup_done(old, r);
    return r;
}
CT_EXPORT int dup3(int old, int nfd, int flags) {
    int r = CT_REAL(dup3)(old, nfd, flags);
    dup_done(old, r);
    return r;
}

/* ---- data transfer ------------------------------------------------------------------------ */
/* positional: offset is an argument, the position does not move */
#define POS_IO(fn, name, fd, size, off, call) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); fdent *f_; \
    if (!ct_on(CT_POSIX) || !(f_ = fd_get(fd))) return real_ call; \
    ct_io c_; \
    ct_io_begin(&c_, f_->file_id, CT_FUNC_ID(name), CT_POSIX); \
    ssize_t r_ = real_ call; \
    ct_io_end(&c_, (off), (int64_t)(size), r_); \
    return r_; } while (0)

/* Sockets (wire.h): a byte of the descriptor's entry, read only on the path of untraced
 * descriptors, says whether its data goes to the HTTP parser (http.c). */
static inline int wire_fd(int fd) {
    return (unsigned)fd < MAX_FDS && fds && fds[fd].wire;
}
static uint8_t sock_wire(int fd) {   /* a send/recv: the socket resolved on first use */
    if (!ct_on(CT_POSIX) || (unsigned)fd >= MAX_FDS || !fds) return 0;
    if (CT_UNLIKELY(fds[fd].state == FD_UNKNOWN)) fd_resolve(fd);
    return fds[fd].wire;
}
/* bytes sent on a marked socket: classify it on its first bytes, then parse */
static void wire_out(int fd, const void *buf, const struct iovec *v, int cnt, size_t n, const void *caller) {
    if (!ct_on(CT_POSIX)) return;
    int e = errno;
    uint64_t t0 = ct_wire_now();
    if (fds[fd].wire == CT_WIRE_CANDIDATE) {
        char first[512];
        size_t k = 0;
        if (buf) k = n < sizeof first ? n : sizeof first, memcpy(first, buf, k);
        for (int i = 0; v && i < cnt && k < sizeof first && k < n; i++) {
            size_t m = v[i].iov_len < sizeof first - k ? v[i].iov_len : sizeof first - k;
            memcpy(first + k, v[i].iov_base, m);
            k += m;
        }
        fds[fd].wire = (uint8_t)ct_http_classify(fd, first, k < n ? k : n, caller);
    }
    if (fds[fd].wire == CT_WIRE_HTTP) {
        if (buf) ct_http_out(fd, buf, n, t0);
        else ct_http_outv(fd, v, cnt, n, t0);
    }
    errno = e;
}
static void wire_in(int fd, const void *buf, const struct iovec *v, int cnt, size_t n) {
    if (fds[fd].wire != CT_WIRE_HTTP || !ct_on(CT_POSIX)) return;
    int e = errno;
    if (buf) ct_http_in(fd, buf, n);
    else ct_http_inv(fd, v, cnt, n);
    errno = e;
}
#define WIRE_OUT(fd, b, v, c) if (CT_UNLIKELY(r_ > 0) && CT_UNLIKELY(wire_fd(fd))) \
    wire_out(fd, b, v, c, (size_t)r_, __builtin_return_address(0))
#define WIRE_IN(fd, b, v, c) if (CT_UNLIKELY(r_ > 0) && CT_UNLIKELY(wire_fd(fd))) wire_in(fd, b, v, c, (size_t)r_)

/* at the file position, which moves; `hook` runs after the call on an untraced descriptor */
#define SEQ_IO_W(fn, name, fd, size, call, hook) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); fdent *f_; \
    if (!ct_on(CT_POSIX) || !(f_ = fd_get(fd))) { ssize_t r_ = real_ call; pos_moved(fd, r_); hook; return r_; } \
    int64_t off_ = f_->shared ? -1 : f_->pos; \
    ct_io c_; \
    ct_io_begin(&c_, f_->file_id, CT_FUNC_ID(name), CT_POSIX); \
    ssize_t r_ = real_ call; \
    ct_io_end(&c_, off_, (int64_t)(size), r_); \
    if (r_ > 0 && off_ >= 0) f_->pos = off_ + r_; \
    return r_; } while (0)
#define SEQ_IO(fn, name, fd, size, call) SEQ_IO_W(fn, name, fd, size, call, (void)0)

static inline int64_t iov_bytes(const struct iovec *v, int n) {
    int64_t s = 0;
    for (int i = 0; i < n; i++) s += (int64_t)v[i].iov_len;
    return s;
}

CT_EXPORT ssize_t read(int fd, void *buf, size_t n) {
    SEQ_IO_W(read, "read", fd, n, (fd, buf, n), WIRE_IN(fd, buf, NULL, 0));
}
CT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
    SEQ_IO(__read_chk, "read", fd, n, (fd, buf, n, buflen));
}
CT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    SEQ_IO_W(write, "write", fd, n, (fd, buf, n), WIRE_OUT(fd, buf, NULL, 0));
}
CT_EXPORT ssize_t readv(int fd, const struct iovec *v, int n) {
    SEQ_IO_W(readv, "readv", fd, iov_bytes(v, n), (fd, v, n), WIRE_IN(fd, NULL, v, n));
}
CT_EXPORT ssize_t writev(int fd, const struct iovec *v, int n) {
    SEQ_IO_W(writev, "writev", fd, iov_bytes(v, n), (fd, v, n), WIRE_OUT(fd, NULL, v, n));
}

/* Sockets: never traced as file I/O; only their HTTP requests (wire.h), for the marked ones. */
CT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int fl) {
    ssize_t r_ = CT_REAL(send)(fd, buf, n, fl);
    if (CT_UNLIKELY(r_ > 0) && sock_wire(fd)) wire_out(fd, buf, NULL, 0, (size_t)r_, __builtin_return_address(0));
    return r_;
}
CT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int fl, const struct sockaddr *a, socklen_t al) {
    ssize_t r_ = CT_REAL(sendto)(fd, buf, n, fl, a, al);
    if (CT_UNLIKELY(r_ > 0) && sock_wire(fd)) wire_out(fd, buf, NULL, 0, (size_t)r_, __builtin_return_address(0));
    return r_;
}
CT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int fl) {
    ssize_t r_ = CT_REAL(sendmsg)(fd, m, fl);
    if (CT_UNLIKELY(r_ > 0) && sock_wire(fd))
        wire_out(fd, NULL, m->msg_iov, (int)m->msg_iovlen, (size_t)r_, __builtin_return_address(0));
    return r_;
}
CT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int fl) {
    ssize_t r_ = CT_REAL(recv)(fd, buf, n, fl);
    if (CT_UNLIKELY(r_ > 0) && !(fl & MSG_PEEK) && sock_wire(fd)) wire_in(fd, buf, NULL, 0, (size_t)r_);
    return r_;
}
CT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int fl, struct sockaddr *a, socklen_t *al) {
    ssize_t r_ = CT_REAL(recvfrom)(fd, buf, n, fl, a, al);
    if (CT_UNLIKELY(r_ > 0) && !(fl & MSG_PEEK) && sock_wire(fd)) wire_in(fd, buf, NULL, 0, (size_t)r_);
    return r_;
}
CT_EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int fl) {
    ssize_t r_ = CT_REAL(recvmsg)(fd, m, fl);
    if (CT_UNLIKELY(r_ > 0) && !(fl & MSG_PEEK) && sock_wire(fd)) wire_in(fd, NULL, m->msg_iov, (int)m->msg_iovlen, (size_t)r_);
    return r_;
}
CT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    POS_IO(pread, "pread", fd, n, off, (fd, buf, n, off));
}
CT_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
    POS_IO(pread64, "pread64", fd, n, off, (fd, buf, n, off));
}
CT_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    POS_IO(__pread_chk, "pread", fd, n, off, (fd, buf, n, off, buflen));
}
CT_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) {
    POS_IO(__pread64_chk, "pread64", fd, n, off, (fd, buf, n, off, buflen));
}
CT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    POS_IO(pwrite, "pwrite", fd, n, off, (fd, buf, n, off));
}
CT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    POS_IO(pwrite64, "pwrite64", fd, n, off, (fd, buf, n, off));
}
CT_EXPORT ssize_t preadv(int fd, const struct iovec *v, int n, off_t off) {
    POS_IO(preadv, "preadv", fd, iov_bytes(v, n), off, (fd, v, n, off));
}
CT_EXPORT ssize_t preadv64(int fd, const struct iovec *v, int n, off64_t off) {
    POS_IO(preadv64, "preadv64", fd, iov_bytes(v, n), off, (fd, v, n, off));
}
CT_EXPORT ssize_t pwritev(int fd, const struct iovec *v, int n, off_t off) {
    POS_IO(pwritev, "pwritev", fd, iov_bytes(v, n), off, (fd, v, n, off));
}
CT_EXPORT ssize_t pwritev64(int fd, const struct iovec *v, int n, off64_t off) {
    POS_IO(pwritev64, "pwritev64", fd, iov_bytes(v, n), off, (fd, v, n, off));
}

/* ---- position, sync, size ----------------------------------------------------------------- */
#define SEEK_BODY(fn, name, fd, off, whence) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); fdent *f_; \
    if (!ct_on(CT_POSIX) || !(f_ = fd_get(fd))) { int64_t r_ = real_(fd, off, whence); pos_set(fd, r_); return r_; } \
    CT_BEGIN(); \
    int64_t r_ = real_(fd, off, whence); \
    CT_END(); \
    if (r_ >= 0 && !f_->shared) f_->pos = r_; \
    io_event(CT_FUNC_ID(name), CT_POSIX, f_->file_id, ct_t0_, ct_t1_, ct_d_, r_ >= 0 ? r_ : -1, -1, r_, ct_errno_); \
    CT_RETURN(r_); } while (0)

CT_EXPORT off_t lseek(int fd, off_t off, int whence) { SEEK_BODY(lseek, "lseek", fd, off, whence); }
CT_EXPORT off64_t lseek64(int fd, off64_t off, int whence) { SEEK_BODY(lseek64, "lseek64", fd, off, whence); }

CT_EXPORT int fsync(int fd) { POS_IO(fsync, "fsync", fd, -1, -1, (fd)); }
CT_EXPORT int fdatasync(int fd) { POS_IO(fdatasync, "fdatasync", fd, -1, -1, (fd)); }
CT_EXPORT int ftruncate(int fd, off_t len) { POS_IO(ftruncate, "ftruncate", fd, len, -1, (fd, len)); }
CT_EXPORT int ftruncate64(int fd, off64_t len) { POS_IO(ftruncate64, "ftruncate64", fd, len, -1, (fd, len)); }

/* ---- stat family -------------------------------------------------------------------------- */
#define FD_STAT(fn, name, fd, call) POS_IO(fn, name, fd, -1, -1, call)
#define PATH_STAT(fn, name, dirfd, path, call) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); uint32_t id_; \
    path = ct_try_path(path, dirfd, 1); \
    if (!ct_on(CT_POSIX) || !(id_ = ct_path_id(path, dirfd))) return real_ call; \
    CT_BEGIN(); \
    int r_ = real_ call; \
    CT_END(); \
    io_event(CT_FUNC_ID(name), CT_POSIX, id_, ct_t0_, ct_t1_, ct_d_, -1, -1, r_, ct_errno_); \
    CT_RETURN(r_); } while (0)
/* *at(): an empty path with AT_EMPTY_PATH means the descriptor itself */
static int empty_path(const char *p) {   /* p may be NULL despite the nonnull prototypes */
    const char *volatile q = p;
    return q && !*q;
}
#define AT_STAT(fn, name, dirfd, path, flags, call) do { \
    if (empty_path(path) && ((flags) & AT_EMPTY_PATH)) FD_STAT(fn, name, dirfd, call); \
    PATH_STAT(fn, name, dirfd, path, call); } while (0)

CT_EXPORT int stat(const char *p, struct stat *b) { PATH_STAT(stat, "stat", AT_FDCWD, p, (p, b)); }
CT_EXPORT int stat64(const char *p, struct stat64 *b) { PATH_STAT(stat64, "stat64", AT_FDCWD, p, (p, b)); }
CT_EXPORT int lstat(const char *p, struct stat *b) { PATH_STAT(lstat, "lstat", AT_FDCWD, p, (p, b)); }
CT_EXPORT int lstat64(const char *p, struct stat64 *b) { PATH_STAT(lstat64, "lstat64", AT_FDCWD, p, (p, b)); }
CT_EXPORT int fstat(int fd, struct stat *b) { FD_STAT(fstat, "fstat", fd, (fd, b)); }
CT_EXPORT int fstat64(int fd, struct stat64 *b) { FD_STAT(fstat64, "fstat64", fd, (fd, b)); }
CT_EXPORT int fstatat(int dfd, const char *p, struct stat *b, int fl) {
    AT_STAT(fstatat, "fstatat", dfd, p, fl, (dfd, p, b, fl));
}
CT_EXPORT int fstatat64(int dfd, const char *p, struct stat64 *b, int fl) {
    AT_STAT(fstatat64, "fstatat64", dfd, p, fl, (dfd, p, b, fl));
}
CT_EXPORT int statx(int dfd, const char *p, int fl, unsigned mask, struct statx *b) {
    AT_STAT(statx, "statx", dfd, p, fl, (dfd, p, fl, mask, b));
}
CT_EXPORT int __xstat(int v, const char *p, struct stat *b) { PATH_STAT(__xstat, "stat", AT_FDCWD, p, (v, p, b)); }
CT_EXPORT int __xstat64(int v, const char *p, struct stat64 *b) {
    PATH_STAT(__xstat64, "stat64", AT_FDCWD, p, (v, p, b));
}
CT_EXPORT int __lxstat(int v, const char *p, struct stat *b) { PATH_STAT(__lxstat, "lstat", AT_FDCWD, p, (v, p, b)); }
CT_EXPORT int __lxstat64(int v, const char *p, struct stat64 *b) {
    PATH_STAT(__lxstat64, "lstat64", AT_FDCWD, p, (v, p, b));
}
CT_EXPORT int __fxstat(int v, int fd, struct stat *b) { FD_STAT(__fxstat, "fstat", fd, (v, fd, b)); }
CT_EXPORT int __fxstat64(int v, int fd, struct stat64 *b) { FD_STAT(__fxstat64, "fstat64", fd, (v, fd, b)); }
CT_EXPORT int __fxstatat(int v, int dfd, const char *p, struct stat *b, int fl) {
    AT_STAT(__fxstatat, "fstatat", dfd, p, fl, (v, dfd, p, b, fl));
}
CT_EXPORT int __fxstatat64(int v, int dfd, const char *p, struct stat64 *b, int fl) {
    AT_STAT(__fxstatat64, "fstatat64", dfd, p, fl, (v, dfd, p, b, fl));
}

/* ---- stdio -------------------------------------------------------------------------------- */
static inline int file_fd(FILE *fp) {   /* fileno without touching errno (EBADF on memstreams) */
    int e = errno, fd = fp ? fileno(fp) : -1;
    errno = e;
    return fd;
}

#define FOPEN_BODY(fn, name) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); \
    path = ct_try_path(path, AT_FDCWD, mode && mode[0] == 'r' && !strchr(mode, '+')); \
    if (!ct_on(CT_STDIO)) { FILE *fp_ = real_(path, mode); if (fp_) fd_forget(file_fd(fp_)); return fp_; } \
    CT_BEGIN(); \
    FILE *fp_ = real_(path, mode); \
    CT_END(); \
    int fd_ = fp_ ? file_fd(fp_) : -1; \
    uint32_t id_ = opened(fd_, path, AT_FDCWD, mode && strchr(mode, 'a'), 1); \
    if (id_) io_event(CT_FUNC_ID(name), CT_STDIO, id_, ct_t0_, ct_t1_, ct_d_, -1, -1, fp_ ? fd_ : -1, ct_errno_); \
    CT_RETURN(fp_); } while (0)

CT_EXPORT FILE *fopen(const char *path, const char *mode) { FOPEN_BODY(fopen, "fopen"); }
CT_EXPORT FILE *fopen64(const char *path, const char *mode) { FOPEN_BODY(fopen64, "fopen64"); }

CT_EXPORT int fclose(FILE *fp) {
    __typeof__(&fclose) real = CT_REAL(fclose);
    int fd = file_fd(fp);
    fdent *f = ct_on(CT_STDIO) ? fd_peek(fd) : NULL;
    uint32_t id = f ? f->file_id : 0;
    fd_forget(fd);   /* glibc closes the descriptor internally, past our close() */
    if (!f) return real(fp);
    CT_BEGIN();
    int r = real(fp);
    CT_END();
    io_event(CT_FUNC_ID("fclose"), CT_STDIO, id, ct_t0_, ct_t1_, ct_d_, -1, -1, r == EOF ? -1 : r, ct_errno_);
    CT_RETURN(r);
}

#define FRW_BODY(fn, name) do { \
    __typeof__(&fn) real_ = CT_REAL(fn); fdent *f_; \
    if (!ct_on(CT_STDIO) || !(f_ = fd_get(file_fd(fp)))) return real_(ptr, size, n, fp); \
    int e_ = errno; int64_t off_ = ftello(fp); errno = e_; \
    CT_BEGIN(); \
    size_t r_ = real_(ptr, size, n, fp); \
    CT_END(); \
    int bad_ = r_ < n && ferror(fp); \
    io_event(CT_FUNC_ID(name), CT_STDIO, f_->file_id, ct_t0_, ct_t1_, ct_d_, off_, (int64_t)(size * n), \
             bad_ ? -1 : (int64_t)(r_ * size), ct_errno_); \
    CT_RETURN(r_); } while (0)

CT_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *fp) { FRW_BODY(fread, "fread"); }
CT_EXPORT size_t fwrite(const void *ptr, size_t size, size_t n, FILE *fp) { FRW_BODY(fwrite, "fwrite"); }
