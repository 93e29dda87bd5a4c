/* climio tracer core: the lifecycle. Start (the constructor: configuration, files, timer, buffer,
 * the modules' init, signal handlers, fork handlers), the flushes and done.json, and the ends of
 * a process: exit, _exit, MPI_Finalize (a flush, not an end), signals, fork (the child starts its
 * own file set), exec (the new image continues this one's). The layers are reached only through
 * the module table (config.c). */
#include "core.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- done.json and the end of a trace ---------------------------------------------------- */
static int ct_finished;

static void write_done(const char *end) {
    char b[4096];
    size_t a = ct_cat(b, 0, sizeof b, "{\"pid\":");
    a = ct_cat_i64(b, a, sizeof b, ct_pid);
    a = ct_cat(b, a, sizeof b, ",\"rank\":");
    a = ct_cat_i64(b, a, sizeof b, ct_rank);
    a = ct_cat(b, a, sizeof b, ",\"host\":\"");
    a = ct_cat(b, a, sizeof b, ct_host);
    a = ct_cat(b, a, sizeof b, "\",\"events\":");
    a = ct_cat_u64(b, a, sizeof b, ct_g.base + ct_g.kept);
    a = ct_cat(b, a, sizeof b, ",\"dropped\":");
    a = ct_cat_u64(b, a, sizeof b, ct_events_dropped());
    a = ct_cat(b, a, sizeof b, ct_events_dropped() ? ",\"partial\":true" : ",\"partial\":false");
    a = ct_cat(b, a, sizeof b, ",\"mode\":\"");
    a = ct_cat(b, a, sizeof b, ct_cnt_mode ? "counters" : "full");
    a = ct_cat(b, a, sizeof b, "\",\"counted\":");
    a = ct_cat_u64(b, a, sizeof b, ct_cnt_counted());
    a = ct_cat(b, a, sizeof b, ",\"sample\":");
    a = ct_cat_u64(b, a, sizeof b, ct_cnt_mode ? ct_cnt_sample : 0);
    a = ct_cat(b, a, sizeof b, ",\"direct_writes\":");
    a = ct_cat_u64(b, a, sizeof b, ct_events_direct());
    a = ct_cat(b, a, sizeof b, ",\"end\":\"");
    a = ct_cat(b, a, sizeof b, end);
    a = ct_cat(b, a, sizeof b, "\",\"clock\":\"CLOCK_REALTIME\",\"timer\":\"");
    a = ct_cat(b, a, sizeof b, ct_use_tsc ? "tsc" : "clock_gettime");
    a = ct_cat(b, a, sizeof b, "\",\"t0_ns\":");
    a = ct_cat_u64(b, a, sizeof b, ct_t0_ns);
    a = ct_cat(b, a, sizeof b, ",\"layers\":[");
    int first = 1;
    for (int l = CT_POSIX; l <= CT_HDF5; l++) {
        if (!(ct_layers >> l & 1u)) continue;
        a = ct_cat(b, a, sizeof b, first ? "\"" : ",\"");
        a = ct_cat(b, a, sizeof b, ct_layer_names[l]);
        a = ct_cat(b, a, sizeof b, "\"");
        first = 0;
    }
    a = ct_cat(b, a, sizeof b, "]}\n");
    char tmp[sizeof ct_stem + 32], fin[sizeof ct_stem + 32];
    ct_cat(tmp, ct_cat(tmp, 0, sizeof tmp, ct_stem), sizeof tmp, ".done.json.tmp");
    ct_cat(fin, ct_cat(fin, 0, sizeof fin, ct_stem), sizeof fin, ".done.json");
    int fd = ct_r_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ct_write_all(fd, b, a);
    ct_r_close(fd);
    rename(tmp, fin);   /* a reader never sees half a done.json */
}

/* Write everything buffered; with `end`, also done.json; `final` stops tracing.
 * in_signal: do not wait for locks the interrupted code may hold. */
static void ct_flush_all(const char *end, int final, int in_signal) {
    if (!ct_active) return;
    if (final && __atomic_exchange_n(&ct_finished, 1, __ATOMIC_ACQ_REL)) return;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    int mu = 1;
    if (!in_signal) ct_lock();
    else for (int i = 0; (mu = ct_trylock() == 0) == 0 && i < 1000; i++) sched_yield();
    int sp = in_signal ? ct_events_trylock_for_signal() : (ct_events_lock(), 1);
    ct_flush_events(end != NULL, in_signal);
    if (!in_signal && ct_events_drain() != 0) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);   /* all on disk */
    if (mu) ct_flush_aux();   /* without the lock another thread may be appending to it */
    if (end && ct_active) write_done(end);
    if (final) __atomic_store_n(&ct_active, 0, __ATOMIC_RELEASE);
    if (sp) ct_events_unlock();
    if (mu) ct_unlock();
    ct_tls.inside = inside;
}

/* MPI_Finalize (mpiio.c): a safe point, the rank is known; tracing goes on until exit. */
void ct_mpi_finalize_hook(void) { ct_flush_all("finalize", 0, 0); }

int ct_own_process(void) { return getpid() == ct_pid; }
static int ct_same_process(void) { return ct_active && ct_own_process(); }   /* not a vfork child */

__attribute__((destructor)) static void ct_fini(void) {
    if (ct_same_process()) ct_flush_all("exit", 1, 0);
}

CT_EXPORT void _exit(int status) {
    static void (*real)(int);
    if (!real) real = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    if (ct_same_process()) ct_flush_all("exit", 1, 0);
    if (real) real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
CT_EXPORT void _Exit(int status) { _exit(status); }

/* exec keeps the pid, so the new image continues this file set (see ct_adopt); make sure what
 * this image buffered is in it first. (execl* are not intercepted: glibc calls execve from
 * inside libc, so their buffered events are lost and the new image finds no done.json.) */
static void ct_before_exec(void) {
    /* nothing recorded (the usual fork+exec child): leave no files behind */
    if (ct_same_process() && (ct_g.kept || ct_events_dropped() || ct_aux_pending() || ct_cnt_counted()))
        ct_flush_all(NULL, 0, 0);
}
CT_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    ct_before_exec();
    return CT_REAL(execve)(path, argv, envp);
}
CT_EXPORT int execv(const char *path, char *const argv[]) {
    ct_before_exec();
    return CT_REAL(execv)(path, argv);
}
CT_EXPORT int execvp(const char *file, char *const argv[]) {
    ct_before_exec();
    return CT_REAL(execvp)(file, argv);
}
CT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    ct_before_exec();
    return CT_REAL(execvpe)(file, argv, envp);
}

/* ---- signals ----------------------------------------------------------------------------
 * SIGTERM, SIGINT, SIGABRT get our handler at start (unless inherited as ignored). The program's
 * own later sigaction()/signal() for them are intercepted: we remember its handler (that is what
 * it reads back), keep ours installed with its mask and flags, and chain to its handler. Only when
 * the program's disposition is the default (termination) do we flush, write done.json with
 * end "signal:<n>" ("abort" for SIGABRT), restore SIG_DFL and re-raise. */
static const int ct_sigs[] = {SIGTERM, SIGINT, SIGABRT};
static struct sigaction prog_act[NSIG];   /* what the program believes is installed */
static unsigned char sig_state[NSIG];     /* 0 not managed, 1 ours installed, 2 program ignores it */

static void ct_on_signal(int sig, siginfo_t *si, void *uc) {
    int e = errno;
    struct sigaction pa = prog_act[sig];
    if (pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN) {
        if (pa.sa_flags & SA_RESETHAND) { prog_act[sig].sa_handler = SIG_DFL; prog_act[sig].sa_flags = 0; }
        if (pa.sa_flags & SA_SIGINFO) pa.sa_sigaction(sig, si, uc);
        else pa.sa_handler(sig);
        errno = e;
        return;
    }
    if (pa.sa_handler == SIG_IGN) { errno = e; return; }
    if (ct_same_process()) {
        char end[32];
        if (sig == SIGABRT) ct_cat(end, 0, sizeof end, "abort");
        else ct_cat_i64(end, ct_cat(end, 0, sizeof end, "signal:"), sizeof end, sig);
        ct_flush_all(end, 1, 1);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    ct_r_sigaction(sig, &dfl, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
    errno = e;
}

static int managed(int sig) { return sig > 0 && sig < NSIG && sig_state[sig] != 0; }

/* Install ours on behalf of the program's `act` (table lock held). */
static int install(int sig, const struct sigaction *act) {
    if (act->sa_handler == SIG_IGN) {
        int r = ct_r_sigaction(sig, act, NULL);
        if (r == 0) { prog_act[sig] = *act; sig_state[sig] = 2; }
        return r;
    }
    struct sigaction ours = *act;
    ours.sa_sigaction = ct_on_signal;
    ours.sa_flags = (act->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;   /* reset is emulated */
    if (act->sa_handler == SIG_DFL) { sigemptyset(&ours.sa_mask); ours.sa_flags = SA_SIGINFO | SA_RESTART; }
    int r = ct_r_sigaction(sig, &ours, NULL);
    if (r == 0) { prog_act[sig] = *act; sig_state[sig] = 1; }
    return r;
}

CT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!ct_r_sigaction) ct_r_sigaction = ct_dlsym_next("sigaction");
    if (!managed(sig)) return ct_r_sigaction(sig, act, old);
    ct_lock();
    struct sigaction prev = prog_act[sig];
    int r = act ? install(sig, act) : 0;
    ct_unlock();
    if (r == 0 && old) *old = prev;
    return r;
}

CT_EXPORT sighandler_t signal(int sig, sighandler_t h) {
    if (!managed(sig)) return CT_REAL(signal)(sig, h);
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;   /* glibc's BSD semantics */
    if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

static void install_signal_handlers(void) {
    for (size_t i = 0; i < sizeof ct_sigs / sizeof *ct_sigs; i++) {
        int sig = ct_sigs[i];
        struct sigaction cur;
        if (ct_r_sigaction(sig, NULL, &cur) != 0) continue;
        if (cur.sa_handler == SIG_IGN) { prog_act[sig] = cur; sig_state[sig] = 2; continue; }
        install(sig, &cur);
    }
}

/* ---- start, fork ------------------------------------------------------------------------ */
/* A file set of this pid already exists: an earlier image of this process exec()ed us (or the
 * pid was reused). Continue it: same string ids, event indices after its events. */
static void ct_adopt(void) {
    if (ct_events_adopt() == 0) ct_strings_adopt();
}

static void fork_prepare(void) { ct_lock(); ct_events_lock(); }
static void fork_parent(void) { ct_events_unlock(); ct_unlock(); }
static void fork_child(void) {
    ct_lock_reinit();
    ct_events_fork_child();   /* the event lock is free again */
    if (!ct_active) return;
    /* a new file set under the child's pid; the parent's buffered events are the parent's */
    ct_tls.tid = 0;
    ct_output_fork_child();
    ct_modules_fork_child();
    ct_clock_restart();
    char p[sizeof ct_stem + 32];
    ct_cat(p, ct_cat(p, 0, sizeof p, ct_stem), sizeof p, ".events");
    if (access(p, F_OK) == 0) ct_adopt();   /* pid reuse; strings are then re-read */
    ct_events_ready();
}

__attribute__((constructor)) static void ct_init(void) {
    ct_config c;
    ct_real_init();
    if (ct_config_load(&c) != 0) return;
    ct_layers = c.layers;
    ct_g.max = c.max_events;
    ct_cnt_mode = c.counters;
    ct_cnt_sample = c.sample;
    if (ct_events_setup(&c) != 0) return;
    ct_output_start(c.dir);
    if (!ct_output_ready()) return;
    ct_clock_start(c.realtime_clock);
    ct_adopt();
    ct_events_ready();
    ct_modules_init();   /* the counters' clock, posix.c's descriptor table */
    install_signal_handlers();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    __atomic_store_n(&ct_active, 1, __ATOMIC_RELEASE);
}
