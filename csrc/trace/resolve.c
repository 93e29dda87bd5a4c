/* Finding the real function behind an interposed MPI/netCDF/HDF5 symbol.
 *
 * Our definition of, say, nc_get_vara sits in the global scope (LD_PRELOAD), so every caller
 * binds to it, including callers whose library was loaded with RTLD_LOCAL: Python loads the
 * netCDF4-python and h5py extension modules RTLD_LOCAL, and with them the wheels' bundled
 * libnetcdf/libhdf5. dlsym(RTLD_NEXT) only sees the global scope, so it finds nothing there.
 * Worse, netCDF4-python and h5py each bundle their own libhdf5: an H5Dread from netCDF's
 * libnetcdf and one from h5py must each go to *their* copy (hid_t values are per copy).
 *
 * Order, which is what the caller would have bound to without us:
 *  1. RTLD_NEXT: the next definition in the global scope (a C program linked with -lnetcdf,
 *     mpi4py's libmpi). Cached once for all callers.
 *  2. the calling object's own scope: find the object containing the return address
 *     (dl_iterate_phdr), dlopen(its path, RTLD_NOLOAD) and dlsym in it, which searches the object
 *     and its dependencies (the extension module -> its bundled libnetcdf). Cached per calling
 *     object (address range), up to 8 objects per function.
 *  3. any loaded object defining the symbol (e.g. a caller without DT_NEEDED on the library).
 * Our own library is never an answer. A resolver made with CT_LIB_LOCAL (libcurl: curl.c) skips step 1:
 * a process may hold the netCDF4 wheel's libcurl and a system one, and a handle of one copy means
 * nothing to the other, so the caller's own scope comes first. */
#include "buffer.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

struct obj {
    uintptr_t addr, lo, hi;
    int found;
    char path[PATH_MAX];
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct obj *o = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (o->addr < lo || o->addr >= hi) return 0;
    o->lo = lo;
    o->hi = hi;
    o->found = 1;
    strncpy(o->path, info->dlpi_name ? info->dlpi_name : "", sizeof o->path - 1);
    return 1;
}

static uintptr_t self_lo, self_hi;

int ct_in_self(const void *addr) {
    if (!self_hi) {
        struct obj o = {.addr = (uintptr_t)&ct_in_self};
        dl_iterate_phdr(find_cb, &o);
        self_lo = o.lo;
        self_hi = o.hi;
    }
    return (uintptr_t)addr >= self_lo && (uintptr_t)addr < self_hi;
}

static void *sym_in(const char *path, const char *name) {
    if (!path || !*path) return NULL;   /* the main program: its scope is the global one */
    void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return NULL;
    void *fn = dlsym(h, name);
    dlclose(h);   /* balances the reference RTLD_NOLOAD took */
    return fn && !ct_in_self(fn) ? fn : NULL;
}

struct paths { char **v; size_t n, cap; };

static int collect_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct paths *p = data;
    if (!info->dlpi_name || !*info->dlpi_name) return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        char **v = realloc(p->v, cap * sizeof *v);
        if (!v) return 1;
        p->v = v;
        p->cap = cap;
    }
    if ((p->v[p->n] = strdup(info->dlpi_name))) p->n++;
    return 0;
}

static void *sym_anywhere(const char *name) {
    struct paths p = {0};
    dl_iterate_phdr(collect_cb, &p);   /* no dlopen inside the callback: it holds the loader lock */
    void *fn = NULL;
    for (size_t i = 0; i < p.n; i++) {
        if (!fn) fn = sym_in(p.v[i], name);
        free(p.v[i]);
    }
    free(p.v);
    return fn;
}

/* The dynamic loader's own lock is taken by dlsym/dlopen/dl_iterate_phdr: ours (ct_lock) is never
 * held around them, or a thread inside dlopen whose constructors do I/O (-> ct_intern -> ct_lock)
 * could deadlock with us. Two threads may resolve the same symbol at once: same answer. */
void *ct_resolve_slow(ct_resolver *r, const void *caller) {
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    void *fn = NULL;
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == 0) {
        void *g = r->local_first ? NULL : dlsym(RTLD_NEXT, r->name);
        if (g && ct_in_self(g)) g = NULL;
        ct_lock();
        if (r->state == 0) {
            r->global = g;
            __atomic_store_n(&r->state, g ? 1 : 2, __ATOMIC_RELEASE);
        }
        ct_unlock();
    }
    if (r->state == 1) {
        fn = r->global;
        goto out;
    }
    uintptr_t a = (uintptr_t)caller;
    int n = __atomic_load_n(&r->n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (a >= r->by_caller[i].lo && a < r->by_caller[i].hi) { fn = r->by_caller[i].fn; goto out; }
    struct obj o = {.addr = a};
    dl_iterate_phdr(find_cb, &o);
    if (o.found) fn = sym_in(o.path, r->name);
    if (!fn) fn = sym_anywhere(r->name);
    if (fn && o.found) {
        ct_lock();
        int k = r->n, known = 0;
        for (int i = 0; i < k; i++) known |= a >= r->by_caller[i].lo && a < r->by_caller[i].hi;
        if (!known && k < (int)(sizeof r->by_caller / sizeof *r->by_caller)) {
            r->by_caller[k] = (ct_by_caller){o.lo, o.hi, fn};
            __atomic_store_n(&r->n, k + 1, __ATOMIC_RELEASE);
        }
        ct_unlock();
    }
out:
    ct_tls.inside = inside;
    return fn;
}
