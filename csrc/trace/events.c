/* climio tracer core: the event buffer and its writes.
 *
 * Buffering choice: ONE bounded buffer per process, not per-thread buffers.
 *  - the aux records name their event by its index in the .events file; with one buffer the
 *    index is known when the event is appended (per-thread buffers would only know it at flush);
 *  - CLIMIO_TRACE_MAX_EVENTS is an exact cap (one counter under the same lock);
 *  - signal handlers, exit and MPI_Finalize flush one buffer, whatever threads exist, and the
 *    memory does not grow with the number of threads (Dask, OpenMP).
 * While the process has never started a thread, appends take no lock (the fast paths in
 * buffer.h); afterwards they take a spinlock (one uncontended atomic exchange, a few ns; threads
 * that do I/O at the same instant contend for one cache line). The lock is held for a 64-byte
 * store, the conversion of 128 events' timestamps, and the write of a full buffer (every
 * CLIMIO_TRACE_BUFFER bytes), when waiters yield the CPU.
 * Full buffers are written with O_DIRECT through io_uring while the process is single-threaded
 * (see dio_write: no copy into the page cache, and the next buffer fills meanwhile; then there
 * are two buffers of CLIMIO_TRACE_BUFFER bytes), else with pwrite(2) through the page cache. */
#include "core.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the event lock ---------------------------------------------------------------------- */
static int ev_spin;

static inline void spin_lock(void) {
    unsigned k = 0;
    while (__atomic_exchange_n(&ev_spin, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&ev_spin, __ATOMIC_RELAXED)) {
            if (++k < 64) __builtin_ia32_pause();
            else sched_yield();   /* the holder may be writing a full buffer */
        }
    }
}
static inline void spin_unlock(void) { __atomic_store_n(&ev_spin, 0, __ATOMIC_RELEASE); }

/* From a signal handler: the interrupted code may hold a lock; go on without it after a while
 * (the buffer and string table are consistent at every instant: data first, then the count). */
static int spin_trylock_for_signal(void) {
    for (int i = 0; i < 100000; i++) {
        if (!__atomic_exchange_n(&ev_spin, 1, __ATOMIC_ACQUIRE)) return 1;
        __builtin_ia32_pause();
    }
    return 0;
}

void ct_events_lock(void) { spin_lock(); }
void ct_events_unlock(void) { spin_unlock(); }
int ct_events_trylock_for_signal(void) { return spin_trylock_for_signal(); }

/* ---- the buffer -------------------------------------------------------------------------- */
static uint64_t ev_dropped;
#define ev_buf ct_ev_buf
#define ev_cap ct_ev_cap
#define ev_n ct_ev_n
#define ev_base ct_ev_base
#define ev_kept ct_ev_kept
#define ev_max ct_ev_max

static size_t ev_conv;                 /* events of ev_buf already converted to ns */

/* The TSC values are converted every CT_CONV_CHUNK events (8 KiB), while they are still in the
 * cache, rather than all at the flush (a pass over a cold 4 MiB buffer: ~8 ns per event). The
 * fast paths append up to ct_g.lim; the event that reaches it goes through ct_emit_slow. */
#define CT_CONV_CHUNK 128
static size_t ev_flush_at;             /* flush when ev_n reaches it: ev_cap (see set_flush_at) */
static void set_lim(void) {
    size_t l = ct_use_tsc ? ev_conv + CT_CONV_CHUNK : ev_flush_at;
    /* a cap is counted in ct_emit_slow, and so is every call in counters mode */
    ct_g.lim = ev_max || ct_cnt_mode ? 0 : l < ev_flush_at ? l : ev_flush_at;
}
static uint64_t ev_file_off;           /* bytes of .events written or being written */
static uint64_t ev_direct;             /* buffers submitted as direct writes (done.json "direct_writes") */

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
    const char *p = buf;
    while (n) {
        ssize_t w = ct_r_pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Through the page cache (the kernel copies the bytes): partial buffers, small buffers, and
 * wherever direct writes are not possible. Explicit offsets, so it may run while a direct write
 * of the previous buffer is still in flight (from a signal handler). */
static int write_buffered(const void *buf, size_t len, uint64_t off) {
    int fd = ct_open_out(".events", O_CREAT);
    if (fd < 0) return -1;
    int r = pwrite_all(fd, buf, len, off);
    ct_r_close(fd);
    return r;
}

/* Full buffers go to the file with O_DIRECT, asynchronously (io_uring): no copy into the page
 * cache, which was the largest cost of a flush (~16-20 ns of CPU per 64-byte event, plus the
 * cache and memory bandwidth the traced program's own I/O needs), and the program goes on
 * filling the second buffer meanwhile.
 *  - Only while the process is single-threaded (the thread that set the ring up is then the
 *    only one that flushes; the ring is registered to it), for buffers of whole pages at a
 *    page-aligned file offset, and never from a signal handler. Everything else, and any
 *    failure (CLIMIO_TRACE_DIRECT=0; a kernel before 6.3, io_uring disabled or refused by
 *    seccomp; a file system without O_DIRECT; a write that fails, comes short or has to wait
 *    for the device), takes the buffered write, as before.
 *  - No descriptor is held: the ring's is closed once registered (the index of a registered
 *    ring is used instead) and the file's once it is in the ring's fixed-file slot, so a
 *    program closing "all" descriptors cannot break the trace. The ring's memory is not
 *    inherited by fork() children (MADV_DONTFORK): a child starts its own.
 *  - The blocks are allocated first (fallocate): ext4 cannot start a direct write that extends
 *    the file or fills a hole without blocking, and io_uring then hands it to a kernel worker
 *    thread ("iou-wrk"), which shares the process's descriptor table: every system call on a
 *    descriptor (each traced pread) then takes a reference on its file (fdget/fput, ~20 ns).
 *    After each write the process is checked for such a worker; if there is one (a file system
 *    that blocks anyway), direct writes stop (the worker exits after 5 s idle).
 *  - Not Linux AIO: destroying an AIO context waits for an RCU grace period, ~30-40 ms added to
 *    every process exit; an io_uring is torn down asynchronously. */
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#include <time.h>
#ifndef IORING_FEAT_REG_REG_RING
#define IORING_FEAT_REG_REG_RING (1U << 13)              /* Linux 6.3 */
#endif
#ifndef IORING_REGISTER_USE_REGISTERED_RING
#define IORING_REGISTER_USE_REGISTERED_RING (1U << 31)   /* Linux 6.3 */
#endif
#define CT_HAVE_DIO 1
static struct {
    int state;             /* -1 not tried yet, 0 off, 1 on */
    unsigned ring;         /* index of the registered ring */
    uint32_t owner;        /* tid of the thread it is registered to */
    char *mem;             /* SQ and CQ rings (one mapping) */
    size_t mem_sz;
    struct io_uring_sqe *sqes;
    size_t sqes_sz;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    int busy;              /* a write in flight: */
    const void *w_buf;
    size_t w_len;
    uint64_t w_off;
    ct_event *buf[2];      /* the two buffers (buf[0] is ev_buf at start) */
} dio;

static long uring_register(unsigned fd, unsigned op, void *arg, unsigned n) {
    return syscall(SYS_io_uring_register, fd, op, arg, n);
}
static long uring_enter(unsigned submit, unsigned wait, unsigned flags) {
    long r;
    do r = syscall(SYS_io_uring_enter, dio.ring, submit, wait, flags | IORING_ENTER_REGISTERED_RING, NULL, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

static void uring_unmap(void) {
    if (dio.mem && dio.mem != MAP_FAILED) munmap(dio.mem, dio.mem_sz);
    if (dio.sqes && (void *)dio.sqes != MAP_FAILED) munmap(dio.sqes, dio.sqes_sz);
    dio.mem = NULL;
    dio.sqes = NULL;
}

/* 0: the ring is set up and registered to this thread */
static int uring_init(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = (int)syscall(SYS_io_uring_setup, 2u, &p);
    if (fd < 0) return -1;
    int ok = (p.features & IORING_FEAT_SINGLE_MMAP) && (p.features & IORING_FEAT_REG_REG_RING);
    if (ok) {
        size_t sq = p.sq_off.array + p.sq_entries * sizeof(unsigned);
        size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
        dio.mem_sz = sq > cq ? sq : cq;
        dio.sqes_sz = p.sq_entries * sizeof(struct io_uring_sqe);
        dio.mem = mmap(NULL, dio.mem_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
        dio.sqes = mmap(NULL, dio.sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
        ok = dio.mem != MAP_FAILED && (void *)dio.sqes != MAP_FAILED;
    }
    struct io_uring_rsrc_update up;
    memset(&up, 0, sizeof up);
    up.offset = ~0u;   /* any free index */
    up.data = (uint64_t)fd;
    int none = -1;     /* one empty fixed-file slot */
    ok = ok && uring_register((unsigned)fd, IORING_REGISTER_RING_FDS, &up, 1) == 1 &&
         uring_register((unsigned)fd, IORING_REGISTER_FILES, &none, 1) == 0;
    ct_r_close(fd);
    if (!ok) {
        uring_unmap();
        return -1;
    }
    madvise(dio.mem, dio.mem_sz, MADV_DONTFORK);
    madvise(dio.sqes, dio.sqes_sz, MADV_DONTFORK);
    dio.ring = up.offset;
    dio.owner = ct_tls.tid;
    dio.sq_tail = (unsigned *)(void *)(dio.mem + p.sq_off.tail);
    dio.sq_mask = (unsigned *)(void *)(dio.mem + p.sq_off.ring_mask);
    dio.sq_array = (unsigned *)(void *)(dio.mem + p.sq_off.array);
    dio.cq_head = (unsigned *)(void *)(dio.mem + p.cq_off.head);
    dio.cq_tail = (unsigned *)(void *)(dio.mem + p.cq_off.tail);
    dio.cq_mask = (unsigned *)(void *)(dio.mem + p.cq_off.ring_mask);
    dio.cqes = (struct io_uring_cqe *)(void *)(dio.mem + p.cq_off.cqes);
    return 0;
}

/* Threads of this process (1 while single-threaded, unless io_uring started a worker) */
static int tasks(void) {
    int fd = ct_r_open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 1;
    char b[2048];
    int n = 0;
    long k;
    while ((k = syscall(SYS_getdents64, fd, b, sizeof b)) > 0)
        for (long at = 0; at < k;) {
            const char *name = b + at + 19;   /* struct linux_dirent64: d_name after 19 bytes */
            if (name[0] != '.') n++;
            at += *(const unsigned short *)(const void *)(b + at + 16);   /* d_reclen */
        }
    ct_r_close(fd);
    return n ? n : 1;
}

/* Wait for the write in flight (if any); if it failed or came short, write its buffer again
 * through the page cache (the buffer is not reused before this). 0 on success. */
static int dio_reap(void) {
    if (!dio.busy) return 0;
    uint64_t t0 = ct_realtime_ns();
    unsigned head = *dio.cq_head;
    int res = -1;
    int enter = ct_tls.tid == dio.owner;   /* only the owner can wait in the kernel */
    for (int spins = 0; head == __atomic_load_n(dio.cq_tail, __ATOMIC_ACQUIRE); spins++) {
        if (enter) {
            if (uring_enter(0, 1, IORING_ENTER_GETEVENTS) < 0) enter = 0;
        } else if (spins > 500000) {   /* ~10 s: the completion is not coming */
            goto failed;
        } else {   /* another thread: the owner posts the completion (woken by the kernel) */
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    res = dio.cqes[head & *dio.cq_mask].res;
    __atomic_store_n(dio.cq_head, head + 1, __ATOMIC_RELEASE);
    if (CT_SINGLE_THREADED() && tasks() > 1) dio.state = 0;   /* an io_uring worker: see above */
failed:
    dio.busy = 0;
    /* the device is slower than the program fills a buffer: the page cache absorbs that better */
    if (ct_realtime_ns() - t0 > 5000000) dio.state = 0;
    if (res == (int)dio.w_len) return 0;
    dio.state = 0;
    return write_buffered(dio.w_buf, dio.w_len, dio.w_off);
}

/* Submit ev_buf[0..len) at ev_file_off and switch to the other buffer. 0: submitted (or written
 * through the page cache), -1: failed. */
static int dio_write(size_t len) {
    if (dio_reap() != 0) return -1;
    if (dio.state < 0) dio.state = uring_init() == 0;   /* first full buffer: the ring */
    int fd = dio.state > 0 ? ct_open_out(".events", O_CREAT | O_DIRECT) : -1;
    struct io_uring_files_update fu;
    memset(&fu, 0, sizeof fu);
    fu.fds = (uint64_t)(uintptr_t)&fd;
    int ok = fd >= 0 && fallocate(fd, 0, (off_t)ev_file_off, (off_t)len) == 0 &&
             uring_register(dio.ring, IORING_REGISTER_FILES_UPDATE | IORING_REGISTER_USE_REGISTERED_RING, &fu, 1) == 1;
    if (fd >= 0) ct_r_close(fd);   /* the fixed-file slot holds the file */
    if (ok) {
        unsigned tail = *dio.sq_tail, k = tail & *dio.sq_mask;
        struct io_uring_sqe *s = &dio.sqes[k];
        memset(s, 0, sizeof *s);
        s->opcode = IORING_OP_WRITE;
        s->flags = IOSQE_FIXED_FILE;
        s->fd = 0;
        s->addr = (uint64_t)(uintptr_t)ev_buf;
        s->len = (uint32_t)len;
        s->off = ev_file_off;
        dio.sq_array[k] = k;
        __atomic_store_n(dio.sq_tail, tail + 1, __ATOMIC_RELEASE);
        ok = uring_enter(1, 0, 0) == 1;
    }
    if (!ok) {
        dio.state = 0;
        return write_buffered(ev_buf, len, ev_file_off);
    }
    dio.busy = 1;
    ev_direct++;
    dio.w_buf = ev_buf;
    dio.w_len = len;
    dio.w_off = ev_file_off;
    ev_buf = dio.buf[ev_buf == dio.buf[0]];
    return 0;
}
#else
#define CT_HAVE_DIO 0
#endif

/* Direct writes need a page-aligned file offset. When the file does not end at a page boundary
 * (an exec'd image continuing it, a flush of a partial buffer at MPI_Finalize), the next flush
 * comes early, after the events that fill that page (at most 63), so that later full buffers
 * can be written directly again. */
static void set_flush_at(void) {
    ev_flush_at = ev_cap;
#if CT_HAVE_DIO
    size_t head = (size_t)((4096 - ev_file_off % 4096) % 4096) / sizeof(ct_event);
    if (dio.state && head && head < ev_cap) ev_flush_at = head;
#endif
}

/* Write the buffered events (and the strings they name first). in_signal: do not wait for a
 * direct write in flight (the interrupted code may be waiting for it). */
void ct_flush_events(int create, int in_signal) {
    int e = errno;   /* the wrappers do not save it */
    ct_flush_strings();   /* ids before the events that name them */
    if (ev_n || create) {
        if (ev_conv < ev_n) ct_convert(ev_buf + ev_conv, ev_n - ev_conv);
        ev_conv = ev_n;   /* a signal handler flushing again does not convert twice */
        size_t len = ev_n * sizeof(ct_event);
        int bad;
#if CT_HAVE_DIO
        if (dio.state && ev_n == ev_cap && len % 4096 == 0 && ev_file_off % 4096 == 0 && !in_signal &&
            CT_SINGLE_THREADED() && (dio.state < 0 || ct_tls.tid == dio.owner))
            bad = dio_write(len) != 0;
        else
            bad = (!in_signal && dio_reap() != 0) || write_buffered(ev_buf, len, ev_file_off) != 0;
#else
        (void)in_signal;
        bad = write_buffered(ev_buf, len, ev_file_off) != 0;
#endif
        ev_file_off += len;
        ev_n = ev_conv = 0;
        set_flush_at();
        set_lim();
        /* the trace directory went away or filled up: stop, and leave no done.json (= partial) */
        if (bad) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);
    }
    ct_modules_flush();   /* the counters: a killed run keeps its counts so far */
    errno = e;
}

void ct_io_slow(const ct_io *c, uint64_t t1, int64_t off, int64_t size, int64_t ret, uint64_t w7) {
    ct_event e = {.t_start = c->t0, .t_end = t1, .offset = off, .size = size, .ret = ret,
                  .file_id = (uint32_t)c->w5, .func_id = (uint32_t)(c->w5 >> 32), .depth = c->depth,
                  .layer = (uint8_t)(w7 >> 48), .flags = (uint8_t)(w7 >> 56)};
    ct_emit_slow(&e);
}

static uint64_t cnt_seen;   /* counters mode: calls seen, for the sampled events */

int64_t ct_emit_slow(ct_event *e) {
    if (CT_UNLIKELY(!ct_tls.tid)) ct_tls.tid = (uint32_t)syscall(SYS_gettid);
    int64_t idx = -1;
    if (ct_cnt_mode) {
        /* counters mode: every call is counted; every ct_cnt_sample-th is also kept as an event.
         * No lock while single-threaded (nothing else counts; a signal handler's write reads a
         * table that is consistent but for the call in progress). */
        int sample = ct_cnt_sample && ++cnt_seen % ct_cnt_sample == 0;
        int locked = sample || !CT_SINGLE_THREADED();
        if (locked) spin_lock();
        if (CT_LIKELY(ct_active)) {
            e->rank = ct_rank;
            ct_count(e);
        }
        if (!sample || !ct_active) {
            if (locked) spin_unlock();
            return -1;
        }
    } else {
        spin_lock();
    }
    if (CT_UNLIKELY(!ct_active)) {
        /* finished: nothing more is written */
    } else if (CT_UNLIKELY(ev_max && ev_kept >= ev_max)) {
        /* past the cap: not kept as an event ("dropped", the event trace is partial) but counted
         * (done.json "counted"; the report says from when) */
        ev_dropped++;
        ct_cnt_capped(e->t_start);
        ct_count(e);
    } else {
        idx = (int64_t)(ev_base + ev_kept++);
        /* tid, rank and t_end >= t_start (thread moved CPU / clock step) are ct_fill's */
        ct_fill(&ev_buf[ev_n], e->t_start, e->t_end, e->offset, e->size, e->ret, e->file_id, e->func_id,
                e->var_id, e->depth, e->layer, e->flags);
        __atomic_signal_fence(__ATOMIC_RELEASE);   /* the event before the count (signal handlers) */
        ev_n++;
        if (CT_UNLIKELY(ev_n >= ev_flush_at)) {
            ct_flush_events(0, 0);
        } else if (ev_n - ev_conv >= CT_CONV_CHUNK && ct_use_tsc) {
            ct_convert(ev_buf + ev_conv, ev_n - ev_conv);
            ev_conv = ev_n;
        }
        set_lim();
    }
    spin_unlock();
    return idx;
}

/* ---- start, exec, fork ------------------------------------------------------------------- */
int ct_events_setup(const ct_config *c) {
    ev_cap = c->buffer_bytes / sizeof(ct_event);
    if (ev_cap < 1) ev_cap = 1;
    size_t ev_bytes = ev_cap * sizeof(ct_event);
#if CT_HAVE_DIO
    /* two buffers for direct writes (one filled while the other is written), 2 MiB-aligned so
     * that they can be huge pages; pages are only touched when used */
    if (ev_bytes % 4096 == 0 && ev_bytes >= (256u << 10) && c->direct) {
        size_t huge = 2u << 20;
        char *m = mmap(NULL, 2 * ev_bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            char *a = (char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
            /* huge pages from the start: a fault zeroes 2 MiB (~0.1 ms here) where small pages
             * take one fault per 64 events (~3 % of a run of cached 4 KiB preads); they also
             * make the pinning of a direct write cheaper */
            madvise(a, 2 * ev_bytes, MADV_HUGEPAGE);
            dio.buf[0] = (ct_event *)(void *)a;
            dio.buf[1] = (ct_event *)(void *)(a + ev_bytes);
            dio.state = -1;
            ev_buf = dio.buf[0];
        }
    }
    if (!dio.state)
#endif
    ev_buf = mmap(NULL, ev_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ev_buf == MAP_FAILED) return -1;
    ct_g.single = ct_single_flag;
    return 0;
}

/* A .events file of this pid exists: continue it, event indices after its events (a torn last
 * record dropped). 0, or -1 when there is none. */
int ct_events_adopt(void) {
    char p[sizeof ct_stem + 32];
    struct stat st;
    ct_cat(p, ct_cat(p, 0, sizeof p, ct_stem), sizeof p, ".events");
    int fd = ct_r_open(p, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    if (ct_r_fstat(fd, &st) == 0) {
        off_t whole = st.st_size / (off_t)sizeof(ct_event) * (off_t)sizeof(ct_event);
        if (whole != st.st_size) ct_r_ftruncate(fd, whole);   /* drop a torn record */
        ev_base = (uint64_t)whole / sizeof(ct_event);
        ev_file_off = (uint64_t)whole;
    }
    ct_r_close(fd);
    return 0;
}

void ct_events_ready(void) {
    set_flush_at();
    set_lim();
}

void ct_events_fork_child(void) {
    ev_spin = 0;
    ev_n = ev_conv = 0;
    ev_base = ev_kept = ev_dropped = 0;
    ev_file_off = 0;
    ev_direct = 0;
#if CT_HAVE_DIO
    /* the parent's ring (not mapped in the child) and its write in flight are not the child's */
    dio.mem = NULL;
    dio.sqes = NULL;
    dio.busy = 0;
    if (dio.state > 0) dio.state = -1;
#endif
    cnt_seen = 0;
}

int ct_events_drain(void) {
#if CT_HAVE_DIO
    return dio_reap();
#else
    return 0;
#endif
}

uint64_t ct_events_dropped(void) { return ev_dropped; }
uint64_t ct_events_direct(void) { return ev_direct; }
