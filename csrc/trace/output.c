/* climio tracer core: the trace's files. Each process writes DIR/<host>-<pid>.* (FORMAT.md):
 * the string table (.strings: dense ids from 1, "<id>\t<text>\n" lines) and the aux records
 * (.aux.jsonl) are kept here and written at each flush; the events (events.c), the counters
 * (counters.c) and done.json (core.c) open their files through ct_open_out.
 * Files are opened for each flush and closed again, never held open: a program that closes
 * "all" descriptors cannot break the trace, and a fork()ed child inherits nothing to share. */
#include "core.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char ct_stem[PATH_MAX + 300];
char ct_host[256];
pid_t ct_pid;
static char ct_dir[PATH_MAX];

/* The table lock: the string table, the aux buffer and the layers' own tables (recursive;
 * taken around fork). */
static pthread_mutex_t ct_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void ct_lock(void) { pthread_mutex_lock(&ct_mu); }
void ct_unlock(void) { pthread_mutex_unlock(&ct_mu); }
int ct_trylock(void) { return pthread_mutex_trylock(&ct_mu); }
void ct_lock_reinit(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ct_mu, &a);
}

static void set_stem(void) {
    size_t a = ct_cat(ct_stem, 0, sizeof ct_stem, ct_dir);
    a = ct_cat(ct_stem, a, sizeof ct_stem, "/");
    a = ct_cat(ct_stem, a, sizeof ct_stem, ct_host);
    a = ct_cat(ct_stem, a, sizeof ct_stem, "-");
    ct_cat_i64(ct_stem, a, sizeof ct_stem, ct_pid);
}

static char *aux_buf;
static size_t aux_n, aux_cap = 1 << 16;

void ct_output_start(const char *dir) {
    ct_cat(ct_dir, 0, sizeof ct_dir, dir);
    aux_buf = malloc(aux_cap);
    if (gethostname(ct_host, sizeof ct_host - 1) != 0) ct_cat(ct_host, 0, sizeof ct_host, "localhost");
    for (char *c = ct_host; *c; c++)
        if (*c == '/') *c = '_';
    ct_pid = getpid();
    set_stem();
}

int ct_output_ready(void) { return aux_buf != NULL; }
int ct_aux_pending(void) { return aux_n != 0; }

int ct_open_out(const char *suffix, int flags) {
    char p[sizeof ct_stem + 32];
    ct_cat(p, ct_cat(p, 0, sizeof p, ct_stem), sizeof p, suffix);
    return ct_r_open(p, flags | O_WRONLY | O_CLOEXEC, 0644);
}

int ct_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = ct_r_write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

#define STR_CHUNK 1024
#define STR_CHUNKS 4096
static char **str_chunk[STR_CHUNKS];   /* chunks never move: readable from a signal handler */
static uint32_t str_count;             /* published with release after the entry is stored */
static uint32_t str_written;           /* ids <= str_written are in the .strings file (ev_spin) */
static uint32_t *str_hash;             /* open addressing: id, 0 = empty */
static size_t str_hash_cap;

static inline const char *str_text(uint32_t id) { return str_chunk[(id - 1) / STR_CHUNK][(id - 1) % STR_CHUNK]; }

static uint32_t fnv(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void str_hash_insert(uint32_t id) {
    size_t m = str_hash_cap - 1, i = fnv(str_text(id)) & m;
    while (str_hash[i]) i = (i + 1) & m;
    str_hash[i] = id;
}

/* Store `s` as the next id (ct_mu held). 0 when the table is full or memory ran out. */
static uint32_t str_add(const char *s) {
    uint32_t id = str_count + 1;
    if (id > (uint32_t)STR_CHUNK * STR_CHUNKS) return 0;
    if ((size_t)id * 2 > str_hash_cap) {
        size_t cap = str_hash_cap ? str_hash_cap * 2 : 4096;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h) return 0;
        free(str_hash);
        str_hash = h;
        str_hash_cap = cap;
        for (uint32_t k = 1; k < id; k++) str_hash_insert(k);
    }
    char **chunk = str_chunk[(id - 1) / STR_CHUNK];
    if (!chunk && !(chunk = str_chunk[(id - 1) / STR_CHUNK] = calloc(STR_CHUNK, sizeof *chunk))) return 0;
    char *copy = strdup(s);
    if (!copy) return 0;
    for (char *c = copy; *c; c++)
        if (*c == '\n') *c = '?';   /* one line per string in the .strings file */
    chunk[(id - 1) % STR_CHUNK] = copy;
    __atomic_store_n(&str_count, id, __ATOMIC_RELEASE);
    str_hash_insert(id);
    return id;
}

uint32_t ct_intern(const char *s) {
    if (!s) return 0;
    char *clean = NULL;
    if (strchr(s, '\n')) {   /* stored with '?' for '\n': look up the same text */
        if (!(clean = strdup(s))) return 0;
        for (char *c = clean; *c; c++)
            if (*c == '\n') *c = '?';
        s = clean;
    }
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    ct_lock();
    uint32_t id = 0;
    if (str_hash_cap) {
        size_t m = str_hash_cap - 1, i = fnv(s) & m;
        for (; str_hash[i]; i = (i + 1) & m)
            if (strcmp(str_text(str_hash[i]), s) == 0) { id = str_hash[i]; break; }
    }
    if (!id) id = str_add(s);
    ct_unlock();
    ct_tls.inside = inside;
    free(clean);
    return id;
}

const char *ct_text(uint32_t id) {
    return id && id <= __atomic_load_n(&str_count, __ATOMIC_ACQUIRE) ? str_text(id) : "";
}

/* Write ids str_written+1 .. str_count (ev_spin held or in a signal handler). */
void ct_flush_strings(void) {
    uint32_t n = __atomic_load_n(&str_count, __ATOMIC_ACQUIRE);
    if (n <= str_written) return;
    int fd = ct_open_out(".strings", O_CREAT | O_APPEND);
    if (fd < 0) return;
    char b[8192];
    size_t at = 0;
    for (uint32_t id = str_written + 1; id <= n; id++) {
        const char *t = str_text(id);
        size_t len = strlen(t);
        if (at + len + 16 > sizeof b) { ct_write_all(fd, b, at); at = 0; }
        at = ct_cat_u64(b, at, sizeof b, id);
        b[at++] = '\t';
        if (len + 2 > sizeof b - at) { ct_write_all(fd, b, at); ct_write_all(fd, t, len); at = 0; }
        else { memcpy(b + at, t, len); at += len; }
        b[at++] = '\n';
    }
    ct_write_all(fd, b, at);
    ct_r_close(fd);
    str_written = n;
}

/* An earlier image of this process exec()ed us (or the pid was reused): its string ids again, so
 * its events and ours name the same texts. */
void ct_strings_adopt(void) {
    char p[sizeof ct_stem + 32];
    struct stat st;
    int fd;
    ct_cat(p, ct_cat(p, 0, sizeof p, ct_stem), sizeof p, ".strings");
    if ((fd = ct_r_open(p, O_RDONLY | O_CLOEXEC)) < 0) return;
    char *text = NULL;
    size_t n = 0;
    if (ct_r_fstat(fd, &st) == 0 && (text = malloc((size_t)st.st_size + 1))) {
        ssize_t k;
        while (n < (size_t)st.st_size && (k = ct_r_read(fd, text + n, (size_t)st.st_size - n)) > 0) n += (size_t)k;
        text[n] = 0;
    }
    ct_r_close(fd);
    if (!text) return;
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        char *tab = strchr(line, '\t');
        if (!tab || strtoul(line, NULL, 10) != str_count + 1) break;   /* ids must stay dense */
        str_add(tab + 1);
    }
    free(text);
    str_written = str_count;
}


void ct_output_fork_child(void) {
    ct_pid = getpid();
    set_stem();
    aux_n = 0;
    str_written = 0;   /* the child's .strings gets every id again */
}

void ct_flush_aux(void) {
    if (!aux_n) return;
    int fd = ct_open_out(".aux.jsonl", O_CREAT | O_APPEND);
    if (fd >= 0) { ct_write_all(fd, aux_buf, aux_n); ct_r_close(fd); }
    aux_n = 0;
}

static int sb_room(ct_sb *b, size_t need) {
    if (b->n + need < b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap <= b->n + need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

void ct_sb_printf(ct_sb *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < room) { b->n += (size_t)k; return; }
        if (!sb_room(b, (size_t)k)) return;
    }
}

/* A builder per thread, emptied, for an aux record built and written at once (no allocation per
 * call; never held across a call that could build another). */
ct_sb *ct_sb_scratch(void) {
    static __thread ct_sb b;
    b.n = 0;
    return &b;
}

void ct_sb_cat(ct_sb *b, const char *s, size_t n) {
    if (!n || !sb_room(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void ct_sb_str(ct_sb *b, const char *s) { ct_sb_cat(b, s, strlen(s)); }

void ct_sb_i64(ct_sb *b, int64_t v) {
    if (!sb_room(b, 24)) return;
    b->n = ct_cat_i64(b->p, b->n, b->cap, v);
}

void ct_sb_json(ct_sb *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (!sb_room(b, 6 * n + 2)) return;   /* the worst case: every byte \\u00XX */
    char *d = b->p + b->n;
    *d++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *d++ = '\\';
            *d++ = (char)c;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(d, "\\u00", 4);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 15];
            d += 6;
        } else {
            *d++ = (char)c;
        }
    }
    *d++ = '"';
    *d = 0;
    b->n = (size_t)(d - b->p);
}

void ct_sb_sizes(ct_sb *b, const size_t *v, int n) {
    if (!sb_room(b, 2 + (size_t)(n > 0 ? n : 0) * 21)) return;
    size_t at = b->n;
    b->p[at++] = '[';
    for (int i = 0; i < n; i++) {
        if (i) b->p[at++] = ',';
        at = ct_cat_u64(b->p, at, b->cap, v[i]);
    }
    b->p[at++] = ']';
    b->p[at] = 0;
    b->n = at;
}

void ct_sb_free(ct_sb *b) { free(b->p); b->p = NULL; b->n = b->cap = 0; }

void ct_aux(int64_t ev, const ct_sb *body) {
    if (ev < 0 || !aux_buf) return;
    char head[48];
    size_t h = ct_cat(head, 0, sizeof head, "{\"ev\":");
    h = ct_cat_i64(head, h, sizeof head, ev);
    size_t len = h + (body ? body->n : 0) + 2;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    ct_lock();
    if (aux_n + len > aux_cap) ct_flush_aux();
    if (len > aux_cap) {   /* a huge record: straight to the file */
        int fd = ct_open_out(".aux.jsonl", O_CREAT | O_APPEND);
        if (fd >= 0) {
            ct_write_all(fd, head, h);
            if (body && body->n) ct_write_all(fd, body->p, body->n);
            ct_write_all(fd, "}\n", 2);
            ct_r_close(fd);
        }
    } else {
        memcpy(aux_buf + aux_n, head, h);
        if (body && body->n) memcpy(aux_buf + aux_n + h, body->p, body->n);
        memcpy(aux_buf + aux_n + len - 2, "}\n", 2);
        aux_n += len;
    }
    ct_unlock();
    ct_tls.inside = inside;
}

uint32_t ct_path_id(const char *path, int dirfd) {
    char abs[PATH_MAX];
    if (!path || !*path) return 0;
    if (strstr(path, "://")) return ct_intern(path);   /* a URL (netCDF DAP, HDF5 ROS3) */
    if (ct_abspath(path, dirfd, abs, sizeof abs) != 0) return ct_intern(path);
    return ct_excluded(abs) ? 0 : ct_intern(abs);
}

