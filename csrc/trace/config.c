/* climio tracer core: configuration. The environment (CLIMIO_TRACE_*), the real libc functions
 * the tracer's own I/O goes to, paths and the exclusions, and the module table the layers
 * register with. Nothing here calls another file of the tracer. */
#include "core.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The state every traced call reads (buffer.h). */
__thread ct_thread ct_tls __attribute__((tls_model("initial-exec")));
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
#include <sys/single_threaded.h>
#define CT_SINGLE_FLAG ((const char *)&__libc_single_threaded)
#else
#define CT_SINGLE_FLAG (&ct_zero)   /* no way to know: every append takes the lock */
#endif
static const char ct_zero;
const char *const ct_single_flag = CT_SINGLE_FLAG;
ct_state ct_g = {.cap = 65536, .rank = -1, .single = &ct_zero};

ssize_t (*ct_r_write)(int, const void *, size_t);
ssize_t (*ct_r_pwrite)(int, const void *, size_t, off_t);
ssize_t (*ct_r_read)(int, void *, size_t);
int (*ct_r_open)(const char *, int, ...);
int (*ct_r_close)(int);
int (*ct_r_fstat)(int, struct stat *);
int (*ct_r_ftruncate)(int, off_t);
int (*ct_r_sigaction)(int, const struct sigaction *, struct sigaction *);

const char *const ct_layer_names[] = {"", "posix", "stdio", "mpiio", "netcdf", "hdf5"};

static char **ct_excl;                 /* exclude prefixes, no trailing '/' */
static size_t *ct_excl_len, ct_nexcl;

void *ct_dlsym_next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) ct_missing(name);
    return p;
}

void ct_missing(const char *name) {
    char msg[256];
    int n = snprintf(msg, sizeof msg, "climio-trace: no real %s found\n", name);
    if (ct_r_write && n > 0) ct_r_write(2, msg, (size_t)n);
}

void ct_real_init(void) {
    ct_r_write = ct_dlsym_next("write");
    ct_r_pwrite = ct_dlsym_next("pwrite");
    ct_r_read = ct_dlsym_next("read");
    ct_r_open = ct_dlsym_next("open");
    ct_r_close = ct_dlsym_next("close");
    ct_r_fstat = ct_dlsym_next("fstat");
    ct_r_ftruncate = ct_dlsym_next("ftruncate");
    if (!ct_r_sigaction) ct_r_sigaction = ct_dlsym_next("sigaction");
}

/* ---- the module table ------------------------------------------------------------------- */
static const ct_module *modules[CT_MAX_MODULES];
static int nmodules;

void ct_register(const ct_module *m) {
    if (nmodules < CT_MAX_MODULES) modules[nmodules++] = m;
}
void ct_modules_init(void) {
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->init) modules[i]->init();
}
void ct_modules_flush(void) {
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->flush) modules[i]->flush();
}
void ct_modules_fork_child(void) {
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->fork_child) modules[i]->fork_child();
}

/* ---- paths and exclusion ---------------------------------------------------------------- */
int ct_abspath(const char *path, int dirfd, char *out, size_t n) {
    char tmp[2 * PATH_MAX + 2];
    size_t at = 0;
    if (!path || !*path || n < 2) return -1;
    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            if (!getcwd(tmp, PATH_MAX)) return -1;
        } else {
            char link[64];
            ct_cat_i64(link, ct_cat(link, 0, sizeof link, "/proc/self/fd/"), sizeof link, dirfd);
            ssize_t k = readlink(link, tmp, PATH_MAX - 1);
            if (k <= 0) return -1;
            tmp[k] = 0;
        }
        at = strlen(tmp);
        tmp[at++] = '/';
    }
    size_t len = strlen(path);
    if (at + len >= sizeof tmp) return -1;
    memcpy(tmp + at, path, len + 1);
    /* lexical normalisation: components, dropping "" and ".", ".." pops one */
    size_t o = 0;
    const char *s = tmp;
    while (*s) {
        while (*s == '/') s++;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t cl = (size_t)(e - s);
        if (cl == 0 || (cl == 1 && s[0] == '.')) {
        } else if (cl == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + cl + 2 > n) return -1;
            out[o++] = '/';
            memcpy(out + o, s, cl);
            o += cl;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return 0;
}

int ct_excluded(const char *abs) {
    for (size_t i = 0; i < ct_nexcl; i++) {
        size_t l = ct_excl_len[i];
        if (strncmp(abs, ct_excl[i], l) == 0 && (abs[l] == '/' || abs[l] == 0 || l == 0)) return 1;
    }
    return 0;
}

static void add_exclude(const char *p, size_t len) {
    char raw[PATH_MAX], abs[PATH_MAX];
    if (!len || len >= sizeof raw) return;
    memcpy(raw, p, len);
    raw[len] = 0;
    if (ct_abspath(raw, AT_FDCWD, abs, sizeof abs) != 0) return;
    char **e = realloc(ct_excl, (ct_nexcl + 1) * sizeof *e);
    size_t *l = realloc(ct_excl_len, (ct_nexcl + 1) * sizeof *l);
    if (e) ct_excl = e;
    if (l) ct_excl_len = l;
    if (!e || !l) return;
    size_t al = strlen(abs);
    if (al == 1) al = 0;   /* "/" excludes everything */
    ct_excl[ct_nexcl] = strdup(abs);
    ct_excl_len[ct_nexcl++] = al;
}

/* ---- the environment -------------------------------------------------------------------- */
static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *end ? dflt : (uint64_t)v;
}

int ct_config_load(ct_config *c) {
    memset(c, 0, sizeof *c);
    const char *dir = getenv("CLIMIO_TRACE_DIR");
    if (!dir || !*dir || !ct_r_write || !ct_r_pwrite || !ct_r_open || !ct_r_close || !ct_r_sigaction) return -1;
    if (ct_abspath(dir, AT_FDCWD, c->dir, sizeof c->dir) != 0) return -1;
    mkdir(c->dir, 0777);   /* `climio trace run` makes it; by hand it may not exist yet */
    if (access(c->dir, W_OK | X_OK) != 0) {
        char msg[PATH_MAX + 80];
        size_t a = ct_cat(msg, 0, sizeof msg, "climio-trace: cannot write to CLIMIO_TRACE_DIR ");
        a = ct_cat(msg, ct_cat(msg, a, sizeof msg, c->dir), sizeof msg, "; not tracing\n");
        ct_r_write(2, msg, a);
        return -1;
    }

    const char *layers = getenv("CLIMIO_TRACE_LAYERS");
    if (!layers) layers = "posix,mpiio,netcdf,hdf5";
    for (const char *s = layers; *s;) {
        size_t l = strcspn(s, ",");
        for (int k = CT_POSIX; k <= CT_HDF5; k++)
            if (l == strlen(ct_layer_names[k]) && strncmp(s, ct_layer_names[k], l) == 0)
                c->layers |= 1u << k | (k == CT_POSIX ? 1u << CT_STDIO : 0);   /* stdio is posix */
        s += l + (s[l] == ',');
    }
    const char *excl = getenv("CLIMIO_TRACE_EXCLUDE");
    if (!excl) excl = "/proc:/sys:/dev";
    for (const char *s = excl; *s;) {
        size_t l = strcspn(s, ":");
        add_exclude(s, l);
        s += l + (s[l] == ':');
    }
    add_exclude(c->dir, strlen(c->dir));   /* never trace the trace */
    c->max_events = env_u64("CLIMIO_TRACE_MAX_EVENTS", 0);
    const char *mode = getenv("CLIMIO_TRACE_MODE");
    c->counters = mode && strcmp(mode, "counters") == 0;
    c->sample = (uint32_t)env_u64("CLIMIO_TRACE_SAMPLE", 0);
    c->buffer_bytes = env_u64("CLIMIO_TRACE_BUFFER", 4u << 20);
    const char *direct = getenv("CLIMIO_TRACE_DIRECT");
    c->direct = !(direct && strcmp(direct, "0") == 0);
    const char *clk = getenv("CLIMIO_TRACE_CLOCK");
    c->realtime_clock = clk && strcmp(clk, "realtime") == 0;
    return 0;
}
