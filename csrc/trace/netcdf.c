/* netCDF-C layer (4). Compiled against netcdf.h only; every netCDF function, the traced ones
 * and the nc_inq_* the tracer asks, is looked up per calling library (resolve.c), so a wheel's
 * bundled libnetcdf answers about its own ncids.
 *
 * Events: nc_open[_par], nc_create[_par] (aux: mode, ncid, parallel), nc_enddef, nc_close,
 * nc_var_par_access (aux: access), nc_def_var_chunking (aux: storage, chunks),
 * nc_set_var_chunk_cache (aux: cache_*), and nc_{get,put}_{vara,vars,var1,var}[_TYPE] for
 * text, schar, short, int, long, float, double, uchar, ushort, uint, longlong, ulonglong and the
 * untyped form. For those: var_id = variable name ("/grp/name" outside the root group),
 * size = selection bytes = prod(count) * the memory item size (sizeof TYPE; the variable's own
 * size for the untyped calls), ret = netCDF status; aux = start, count, stride, the variable's
 * shape, itemsize, storage and chunk shape, filters/compression and the chunk cache in effect.
 * The variable description is asked once (after the first access, with the tracer's guard on,
 * so the library's own I/O for it is not traced) and cached per (library, ncid, varid) until
 * nc_enddef/nc_close of its file or a chunking/cache change of the variable. */
#include "buffer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netcdf.h>
#if __has_include(<netcdf_filter.h>)
#include <netcdf_filter.h>
#define CT_NC_FILTER_IDS 1
#endif
#if CT_HAVE_MPI
#include <mpi.h>
#include <netcdf_par.h>
#endif

/* ---- per-file and per-variable state (under ct_lock) -------------------------------------- */
typedef struct ncfile {
    uintptr_t lib;
    int ext;            /* ncid >> 16: the file part of an ncid */
    uint32_t file_id;
    int excluded;
    struct ncfile *next;
} ncfile;

typedef struct ncvar {
    uintptr_t lib;
    int ncid, varid;
    uint32_t name_id;
    int ndims;
    size_t itemsize;
    size_t *shape, *chunks;
    unsigned char *unlim;
    int storage;        /* NC_CHUNKED, NC_CONTIGUOUS, NC_COMPACT, -1 unknown */
    int shuffle, deflate, level;
    size_t nfilters;
    unsigned *filters;
    int have_cache;
    size_t cache_size, cache_nelems;
    float cache_pre;
    ct_sb desc;         /* the description above as the aux JSON tail, built once (under ct_lock) */
    struct ncvar *next;
} ncvar;

static ncfile *files;
#define NVB 256
static ncvar *vars[NVB];

/* Every change to the tables above bumps nc_gen. A thread keeps what its last access resolved
 * to (library, ncid, varid -> file, variable) and uses it while nc_gen is unchanged: a loop of
 * reads on one variable takes no lock and asks nothing (three lock pairs and two lookups per
 * call before). */
static unsigned nc_gen = 1;
typedef struct {
    unsigned gen;
    uintptr_t lib;
    int ncid, varid;
    ncvar *v;
    uint32_t file;
    int excluded;
} nc_seen;
static __thread nc_seen nc_last;
static inline unsigned gen_now(void) { return __atomic_load_n(&nc_gen, __ATOMIC_ACQUIRE); }
static inline void gen_bump(void) { __atomic_add_fetch(&nc_gen, 1, __ATOMIC_ACQ_REL); }
/* This thread's last access was to this file (of this library), and nothing changed since. */
static inline int seen_file(uintptr_t lib, int ncid, unsigned gen) {
    return nc_last.gen == gen && nc_last.lib == lib && nc_last.ncid == ncid;
}

/* Which libnetcdf answers this caller: ncids of two copies overlap. */
static uintptr_t nc_lib(const void *caller) { return (uintptr_t)CT_LIB(nc_inq_libvers, caller); }

static ncfile *file_find(uintptr_t lib, int ncid) {
    for (ncfile *f = files; f; f = f->next)
        if (f->lib == lib && f->ext == ncid >> 16) return f;
    return NULL;
}

static void var_free(ncvar *v) {
    free(v->shape); free(v->chunks); free(v->unlim); free(v->filters); ct_sb_free(&v->desc); free(v);
}

/* Forget cached variables: of one variable (varid >= 0) or of the whole file. */
static void vars_drop(uintptr_t lib, int ncid, int varid) {
    ct_lock();
    gen_bump();
    for (int b = 0; b < NVB; b++)
        for (ncvar **p = &vars[b]; *p;) {
            ncvar *v = *p;
            if (v->lib == lib && v->ncid >> 16 == ncid >> 16 && (varid < 0 || (v->ncid == ncid && v->varid == varid))) {
                *p = v->next;
                var_free(v);
            } else {
                p = &v->next;
            }
        }
    ct_unlock();
}

static void file_drop(uintptr_t lib, int ncid) {
    ct_lock();
    gen_bump();
    for (ncfile **p = &files; *p;) {
        if ((*p)->lib == lib && (*p)->ext == ncid >> 16) {
            ncfile *f = *p;
            *p = f->next;
            free(f);
        } else {
            p = &(*p)->next;
        }
    }
    vars_drop(lib, ncid, -1);
    ct_unlock();
}

static void file_set(uintptr_t lib, int ncid, uint32_t id, int excluded) {
    ncfile *f = calloc(1, sizeof *f);
    if (!f) return;
    *f = (ncfile){.lib = lib, .ext = ncid >> 16, .file_id = id, .excluded = excluded};
    ct_lock();
    gen_bump();
    f->next = files;
    files = f;
    ct_unlock();
}

/* The file's path id; a file opened before tracing (or through nc_open_mem...) is asked once. */
static uint32_t file_id_of(uintptr_t lib, int ncid, const void *caller, int *excluded) {
    ct_lock();
    ncfile *f = file_find(lib, ncid);
    uint32_t id = f ? f->file_id : 0;
    *excluded = f ? f->excluded : 0;
    ct_unlock();
    if (f) return id;
    __typeof__(&nc_inq_path) ip = CT_LIB(nc_inq_path, caller);
    size_t len = 0;
    char *p = NULL;
    if (ip && ip(ncid, &len, NULL) == NC_NOERR && (p = calloc(1, len + 1)) && ip(ncid, &len, p) == NC_NOERR) {
        id = ct_path_id(p, AT_FDCWD);
        *excluded = !id && *p;
        file_set(lib, ncid, id, *excluded);
    }
    free(p);
    return id;
}

static int nc_traced(uintptr_t lib, int ncid) {
    if (seen_file(lib, ncid, gen_now())) return !nc_last.excluded;
    ct_lock();
    ncfile *f = file_find(lib, ncid);
    int t = !(f && f->excluded);
    ct_unlock();
    return t;
}

/* "/grp/sub/name", or "name" in the root group */
static uint32_t var_name_id(int ncid, int varid, const void *caller) {
    char name[NC_MAX_NAME + 1];
    __typeof__(&nc_inq_varname) vn = CT_LIB(nc_inq_varname, caller);
    if (varid < 0) return 0;
    if (!vn || vn(ncid, varid, name) != NC_NOERR) return 0;
    if (!(ncid & 0xFFFF)) return ct_intern(name);
    __typeof__(&nc_inq_grpname_full) gn = CT_LIB(nc_inq_grpname_full, caller);
    size_t len = 0;
    char *g = NULL;
    uint32_t id;
    if (gn && gn(ncid, &len, NULL) == NC_NOERR && (g = calloc(1, len + NC_MAX_NAME + 3)) &&
        gn(ncid, &len, g) == NC_NOERR) {
        if (strcmp(g, "/") != 0) strcat(g, "/");
        strcat(g, name);
        id = ct_intern(g);
    } else {
        id = ct_intern(name);
    }
    free(g);
    return id;
}

/* The variable's description as the tail of its access events' aux (FORMAT.md): built once per
 * variable, and again when a write grows an unlimited dimension (under ct_lock then). */
static void var_describe(ncvar *v) {
    ct_sb *b = &v->desc;
    int nd = v->ndims;
    b->n = 0;
    ct_sb_printf(b, ",\"shape\":");
    ct_sb_sizes(b, v->shape, nd);
    ct_sb_printf(b, ",\"storage\":%s,\"chunks\":",
                 v->storage == NC_CHUNKED ? "\"chunked\"" : v->storage == NC_CONTIGUOUS ? "\"contiguous\""
                 : v->storage == NC_COMPACT ? "\"compact\"" : "null");
    if (v->storage == NC_CHUNKED) ct_sb_sizes(b, v->chunks, nd);
    else ct_sb_printf(b, "null");
    int compressed = v->deflate;
    ct_sb_printf(b, ",\"filters\":[");
    for (size_t i = 0; i < v->nfilters; i++) {
        ct_sb_printf(b, i ? ",%u" : "%u", v->filters[i]);
        compressed |= v->filters[i] != 2 && v->filters[i] != 3;   /* not shuffle, fletcher32 */
    }
    ct_sb_printf(b, "],\"compressed\":%s,\"deflate_level\":%d,\"shuffle\":%s,\"itemsize\":%zu",
                 compressed ? "true" : "false", v->deflate ? v->level : 0, v->shuffle ? "true" : "false", v->itemsize);
    if (v->have_cache)
        ct_sb_printf(b, ",\"cache_bytes\":%zu,\"cache_nelems\":%zu,\"cache_preemption\":%.9g",
                     v->cache_size, v->cache_nelems, (double)v->cache_pre);
    else
        ct_sb_printf(b, ",\"cache_bytes\":null,\"cache_nelems\":null,\"cache_preemption\":null");
}

static ncvar *var_fill(uintptr_t lib, int ncid, int varid, const void *caller) {
    int nd = 0;
    nc_type xt;
    __typeof__(&nc_inq_varndims) ndims = CT_LIB(nc_inq_varndims, caller);
    __typeof__(&nc_inq_vartype) vtype = CT_LIB(nc_inq_vartype, caller);
    __typeof__(&nc_inq_type) itype = CT_LIB(nc_inq_type, caller);
    __typeof__(&nc_inq_vardimid) vdims = CT_LIB(nc_inq_vardimid, caller);
    __typeof__(&nc_inq_dimlen) dlen = CT_LIB(nc_inq_dimlen, caller);
    __typeof__(&nc_inq_unlimdims) unl = CT_LIB(nc_inq_unlimdims, caller);
    __typeof__(&nc_inq_var_chunking) chunking = CT_LIB(nc_inq_var_chunking, caller);
    __typeof__(&nc_inq_var_deflate) deflate = CT_LIB(nc_inq_var_deflate, caller);
    __typeof__(&nc_get_var_chunk_cache) cache = CT_LIB(nc_get_var_chunk_cache, caller);
    if (!ndims || !vtype || !itype || !vdims || !dlen) return NULL;
    if (ndims(ncid, varid, &nd) != NC_NOERR || nd < 0 || vtype(ncid, varid, &xt) != NC_NOERR) return NULL;
    ncvar *v = calloc(1, sizeof *v);
    size_t n1 = nd ? (size_t)nd : 1;
    int *dimids = calloc(n1, sizeof *dimids);
    if (!v || !dimids || !(v->shape = calloc(n1, sizeof(size_t))) || !(v->chunks = calloc(n1, sizeof(size_t))) ||
        !(v->unlim = calloc(n1, 1))) {
        free(dimids);
        if (v) var_free(v);
        return NULL;
    }
    v->lib = lib;
    v->ncid = ncid;
    v->varid = varid;
    v->ndims = nd;
    v->name_id = var_name_id(ncid, varid, caller);
    if (itype(ncid, xt, NULL, &v->itemsize) != NC_NOERR) v->itemsize = 0;
    if (vdims(ncid, varid, dimids) == NC_NOERR)
        for (int i = 0; i < nd; i++)
            if (dlen(ncid, dimids[i], &v->shape[i]) != NC_NOERR) v->shape[i] = 0;
    int nu = 0;
    if (unl && unl(ncid, &nu, NULL) == NC_NOERR && nu > 0) {
        int *u = calloc((size_t)nu, sizeof *u);
        if (u && unl(ncid, &nu, u) == NC_NOERR)
            for (int i = 0; i < nd; i++)
                for (int k = 0; k < nu; k++) v->unlim[i] |= dimids[i] == u[k];
        free(u);
    }
    free(dimids);
    if (!chunking || chunking(ncid, varid, &v->storage, v->chunks) != NC_NOERR) v->storage = -1;
    if (!deflate || deflate(ncid, varid, &v->shuffle, &v->deflate, &v->level) != NC_NOERR)
        v->shuffle = v->deflate = v->level = 0;
#ifdef CT_NC_FILTER_IDS
    __typeof__(&nc_inq_var_filter_ids) fids = CT_LIB(nc_inq_var_filter_ids, caller);
    size_t nf = 0;
    if (fids && fids(ncid, varid, &nf, NULL) == NC_NOERR && nf > 0 && (v->filters = calloc(nf, sizeof(unsigned))))
        v->nfilters = fids(ncid, varid, &nf, v->filters) == NC_NOERR ? nf : 0;
#endif
    v->have_cache = cache && cache(ncid, varid, &v->cache_size, &v->cache_nelems, &v->cache_pre) == NC_NOERR;
    var_describe(v);
    return v;
}

static ncvar *var_get(uintptr_t lib, int ncid, int varid, const void *caller) {
    unsigned b = (unsigned)(lib ^ (uintptr_t)ncid * 2654435761u ^ (uintptr_t)varid * 40503u) % NVB;
    ct_lock();
    ncvar *v = vars[b];
    while (v && !(v->lib == lib && v->ncid == ncid && v->varid == varid)) v = v->next;
    ct_unlock();
    if (v) return v;
    if (!(v = var_fill(lib, ncid, varid, caller))) return NULL;   /* library calls without our lock */
    ct_lock();
    v->next = vars[b];
    vars[b] = v;
    ct_unlock();
    return v;
}

/* ---- events ------------------------------------------------------------------------------- */
enum { K_VARA, K_VARS, K_VAR1, K_VAR };

#define NC_SMALL_DIMS 16   /* start/count on the stack up to this rank */

static void nc_access(uint32_t func, const void *caller, uintptr_t lib, int ncid, int varid, int kind, int put,
                      const size_t *start, const size_t *count, const ptrdiff_t *stride, size_t memsz, int r,
                      uint64_t t0, uint64_t t1, uint16_t d) {
    ct_tls.inside = 1;
    unsigned gen = gen_now();
    int excluded = 0;
    uint32_t file;
    ncvar *v;
    if (seen_file(lib, ncid, gen) && nc_last.varid == varid) {
        file = nc_last.file, excluded = nc_last.excluded, v = nc_last.v;
    } else {
        file = file_id_of(lib, ncid, caller, &excluded);
        v = var_get(lib, ncid, varid, caller);
        if (v) nc_last = (nc_seen){.gen = gen, .lib = lib, .ncid = ncid, .varid = varid, .v = v, .file = file,
                                   .excluded = excluded};
    }
    int nd = v ? v->ndims : 0;
    size_t n1 = nd ? (size_t)nd : 1;
    size_t st_s[NC_SMALL_DIMS], ct_s[NC_SMALL_DIMS];
    size_t *st = n1 <= NC_SMALL_DIMS ? st_s : calloc(n1, sizeof *st);
    size_t *ct = n1 <= NC_SMALL_DIMS ? ct_s : calloc(n1, sizeof *ct);
    int64_t nelem = -1;
    if (v && st && ct) {
        nelem = 1;
        for (int i = 0; i < nd; i++) {
            switch (kind) {
            case K_VAR1: st[i] = start ? start[i] : 0; ct[i] = 1; break;
            case K_VAR: st[i] = 0; ct[i] = v->shape[i]; break;
            default:   /* NULL start/count: netCDF reads from 0 / to the end */
                st[i] = start ? start[i] : 0;
                ct[i] = count ? count[i] : (v->shape[i] > st[i] ? v->shape[i] - st[i] : 0);
            }
            nelem *= (int64_t)ct[i];
        }
    }
    if (v && st && ct && put && r == NC_NOERR) {   /* writes grow unlimited dimensions: the aux
                                                      * gives the shape after the call */
        ct_lock();
        int grew = 0;
        for (int i = 0; i < nd; i++) {
            if (!v->unlim[i] || !ct[i]) continue;
            size_t step = kind == K_VARS && stride ? (size_t)stride[i] : 1;
            size_t end = st[i] + (ct[i] - 1) * step + 1;
            if (end > v->shape[i]) v->shape[i] = end, grew = 1;
        }
        if (grew) var_describe(v);
        ct_unlock();
    }
    size_t isz = memsz ? memsz : (v ? v->itemsize : 0);
    ct_event e = {.t_start = t0, .t_end = t1, .offset = -1, .size = nelem >= 0 && isz ? nelem * (int64_t)isz : -1,
                  .ret = r, .file_id = file, .func_id = func, .var_id = v ? v->name_id : 0, .depth = d,
                  .layer = CT_NETCDF, .flags = (uint8_t)(CT_F_AUX | (r != NC_NOERR ? CT_F_FAILED : 0))};
    int64_t idx = excluded ? -1 : ct_emit(&e);
    if (idx >= 0) {
        /* the per-call part, then the variable's description as built once (var_describe) */
        ct_sb *b = ct_sb_scratch();
        ct_sb_str(b, ",\"ncid\":");
        ct_sb_i64(b, ncid);
        ct_sb_str(b, ",\"varid\":");
        ct_sb_i64(b, varid);
        if (v && st && ct) {
            ct_sb_str(b, ",\"start\":");
            ct_sb_sizes(b, st, nd);
            ct_sb_str(b, ",\"count\":");
            ct_sb_sizes(b, ct, nd);
            if (kind == K_VARS && stride) {
                ct_sb_str(b, ",\"stride\":[");
                for (int i = 0; i < nd; i++) {
                    if (i) ct_sb_str(b, ",");
                    ct_sb_i64(b, (int64_t)stride[i]);
                }
                ct_sb_str(b, "]");
            } else {
                ct_sb_str(b, ",\"stride\":null");
            }
            ct_sb_str(b, ",\"mem_itemsize\":");
            ct_sb_i64(b, (int64_t)isz);
            ct_lock();
            ct_sb_cat(b, v->desc.p, v->desc.n);
            ct_unlock();
        }
        ct_aux(idx, b);
    }
    if (st != st_s) free(st);
    if (ct != ct_s) free(ct);
    ct_tls.inside = 0;
}

/* An event for the calls about a file or a variable's settings (aux body optional). */
static int64_t nc_simple(uint32_t func, const void *caller, int ncid, int varid, int r, uint64_t t0, uint64_t t1,
                         uint16_t d, const ct_sb *aux) {
    uintptr_t lib = nc_lib(caller);
    int excluded = 0;
    uint32_t file = file_id_of(lib, ncid, caller, &excluded);
    if (excluded) return -1;
    ct_event e = {.t_start = t0, .t_end = t1, .offset = -1, .size = -1, .ret = r, .file_id = file, .func_id = func,
                  .var_id = var_name_id(ncid, varid, caller), .depth = d, .layer = CT_NETCDF,
                  .flags = (uint8_t)((aux ? CT_F_AUX : 0) | (r != NC_NOERR ? CT_F_FAILED : 0))};
    int64_t idx = ct_emit(&e);
    if (aux) ct_aux(idx, aux);
    return idx;
}

static void nc_opened(uint32_t func, const void *caller, const char *path, int mode, int *ncidp, int r, int par,
                      uint64_t t0, uint64_t t1, uint16_t d) {
    ct_tls.inside = 1;
    uint32_t id = ct_path_id(path, AT_FDCWD);
    uintptr_t lib = nc_lib(caller);
    if (r == NC_NOERR && ncidp) {
        file_drop(lib, *ncidp);   /* a previous file's ncid, closed behind our back */
        file_set(lib, *ncidp, id, !id && path && *path);
    }
    if (id) {
        ct_event e = {.t_start = t0, .t_end = t1, .offset = -1, .size = -1, .ret = r, .file_id = id,
                      .func_id = func, .depth = d, .layer = CT_NETCDF,
                      .flags = (uint8_t)(CT_F_AUX | (r != NC_NOERR ? CT_F_FAILED : 0))};
        int64_t idx = ct_emit(&e);
        ct_sb b = {0};
        ct_sb_printf(&b, ",\"mode\":%d,\"parallel\":%s,\"ncid\":", mode, par ? "true" : "false");
        if (r == NC_NOERR && ncidp) ct_sb_printf(&b, "%d", *ncidp);
        else ct_sb_printf(&b, "null");
        ct_aux(idx, &b);
        ct_sb_free(&b);
    }
    ct_tls.inside = 0;
}

#define NC_REAL(fn) \
    const void *caller = __builtin_return_address(0); \
    __typeof__(&fn) real = CT_LIB(fn, caller); \
    if (!real) { ct_missing(#fn); return NC_EINTERNAL; }

/* ---- open, create, define mode, close ----------------------------------------------------- */
/* `climio trace try` (try.c): the converted copy of a redirected file, and a chunk cache set in
 * the caller's own libnetcdf just before the open (the default each variable of the file gets). */
static const char *nc_try(const char *path, int mode, const void *caller) {
    if (CT_UNLIKELY(ct_try_nc.on)) {
        __typeof__(&nc_set_chunk_cache) set = CT_LIB(nc_set_chunk_cache, caller);
        if (set) set(ct_try_nc.bytes, ct_try_nc.slots, (float)ct_try_nc.w0);
    }
    return ct_try_path(path, AT_FDCWD, !(mode & NC_WRITE));
}

CT_EXPORT int nc_open(const char *path, int mode, int *ncidp) {
    NC_REAL(nc_open);
    path = nc_try(path, mode, caller);
    if (!ct_on(CT_NETCDF)) return real(path, mode, ncidp);
    CT_BEGIN();
    int r = real(path, mode, ncidp);
    CT_END();
    nc_opened(CT_FUNC_ID("nc_open"), caller, path, mode, ncidp, r, 0, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

CT_EXPORT int nc_create(const char *path, int cmode, int *ncidp) {
    NC_REAL(nc_create);
    if (!ct_on(CT_NETCDF)) return real(path, cmode, ncidp);
    CT_BEGIN();
    int r = real(path, cmode, ncidp);
    CT_END();
    nc_opened(CT_FUNC_ID("nc_create"), caller, path, cmode, ncidp, r, 0, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

#if CT_HAVE_MPI
CT_EXPORT int nc_open_par(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    NC_REAL(nc_open_par);
    path = nc_try(path, mode, caller);
    if (!ct_on(CT_NETCDF)) return real(path, mode, comm, info, ncidp);
    CT_BEGIN();
    int r = real(path, mode, comm, info, ncidp);
    CT_END();
    nc_opened(CT_FUNC_ID("nc_open_par"), caller, path, mode, ncidp, r, 1, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

CT_EXPORT int nc_create_par(const char *path, int cmode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    NC_REAL(nc_create_par);
    if (!ct_on(CT_NETCDF)) return real(path, cmode, comm, info, ncidp);
    CT_BEGIN();
    int r = real(path, cmode, comm, info, ncidp);
    CT_END();
    nc_opened(CT_FUNC_ID("nc_create_par"), caller, path, cmode, ncidp, r, 1, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

CT_EXPORT int nc_var_par_access(int ncid, int varid, int par_access) {
    NC_REAL(nc_var_par_access);
    if (!ct_on(CT_NETCDF) || !nc_traced(nc_lib(caller), ncid)) return real(ncid, varid, par_access);
    CT_BEGIN();
    int r = real(ncid, varid, par_access);
    CT_END();
    ct_tls.inside = 1;
    ct_sb b = {0};
    ct_sb_printf(&b, ",\"access\":\"%s\"", par_access == NC_COLLECTIVE ? "collective" : "independent");
    nc_simple(CT_FUNC_ID("nc_var_par_access"), caller, ncid, varid, r, ct_t0_, ct_t1_, ct_d_, &b);
    ct_sb_free(&b);
    ct_tls.inside = 0;
    CT_RETURN(r);
}
#endif

CT_EXPORT int nc_enddef(int ncid) {
    NC_REAL(nc_enddef);
    uintptr_t lib = nc_lib(caller);
    if (!ct_on(CT_NETCDF) || !nc_traced(lib, ncid)) { vars_drop(lib, ncid, -1); return real(ncid); }
    CT_BEGIN();
    int r = real(ncid);
    CT_END();
    ct_tls.inside = 1;
    vars_drop(lib, ncid, -1);   /* definitions (chunking, filters) are final now */
    nc_simple(CT_FUNC_ID("nc_enddef"), caller, ncid, -1, r, ct_t0_, ct_t1_, ct_d_, NULL);
    ct_tls.inside = 0;
    CT_RETURN(r);
}

CT_EXPORT int nc_close(int ncid) {
    NC_REAL(nc_close);
    uintptr_t lib = nc_lib(caller);
    if (!ct_on(CT_NETCDF) || !nc_traced(lib, ncid)) { int r = real(ncid); file_drop(lib, ncid); return r; }
    ct_tls.inside = 1;
    int excluded;
    uint32_t file = file_id_of(lib, ncid, caller, &excluded);   /* while the ncid is valid */
    ct_tls.inside = 0;
    CT_BEGIN();
    int r = real(ncid);
    CT_END();
    ct_tls.inside = 1;
    file_drop(lib, ncid);
    ct_event e = {.t_start = ct_t0_, .t_end = ct_t1_, .offset = -1, .size = -1, .ret = r, .file_id = file,
                  .func_id = CT_FUNC_ID("nc_close"), .depth = ct_d_, .layer = CT_NETCDF,
                  .flags = r != NC_NOERR ? CT_F_FAILED : 0};
    ct_emit(&e);
    ct_tls.inside = 0;
    CT_RETURN(r);
}

CT_EXPORT int nc_def_var_chunking(int ncid, int varid, int storage, const size_t *chunksizesp) {
    NC_REAL(nc_def_var_chunking);
    uintptr_t lib = nc_lib(caller);
    if (!ct_on(CT_NETCDF) || !nc_traced(lib, ncid)) { vars_drop(lib, ncid, varid); return real(ncid, varid, storage, chunksizesp); }
    CT_BEGIN();
    int r = real(ncid, varid, storage, chunksizesp);
    CT_END();
    ct_tls.inside = 1;
    vars_drop(lib, ncid, varid);
    ct_sb b = {0};
    ct_sb_printf(&b, ",\"storage\":%s,\"chunks\":", storage == NC_CHUNKED ? "\"chunked\"" : storage == NC_CONTIGUOUS
                 ? "\"contiguous\"" : storage == NC_COMPACT ? "\"compact\"" : "null");
    int nd = 0;
    __typeof__(&nc_inq_varndims) ndims = CT_LIB(nc_inq_varndims, caller);
    if (storage == NC_CHUNKED && chunksizesp && ndims && ndims(ncid, varid, &nd) == NC_NOERR) ct_sb_sizes(&b, chunksizesp, nd);
    else ct_sb_printf(&b, "null");
    nc_simple(CT_FUNC_ID("nc_def_var_chunking"), caller, ncid, varid, r, ct_t0_, ct_t1_, ct_d_, &b);
    ct_sb_free(&b);
    ct_tls.inside = 0;
    CT_RETURN(r);
}

CT_EXPORT int nc_set_var_chunk_cache(int ncid, int varid, size_t size, size_t nelems, float preemption) {
    NC_REAL(nc_set_var_chunk_cache);
    uintptr_t lib = nc_lib(caller);
    if (!ct_on(CT_NETCDF) || !nc_traced(lib, ncid)) { vars_drop(lib, ncid, varid); return real(ncid, varid, size, nelems, preemption); }
    CT_BEGIN();
    int r = real(ncid, varid, size, nelems, preemption);
    CT_END();
    ct_tls.inside = 1;
    vars_drop(lib, ncid, varid);
    ct_sb b = {0};
    ct_sb_printf(&b, ",\"cache_bytes\":%zu,\"cache_nelems\":%zu,\"cache_preemption\":%.9g", size, nelems,
                 (double)preemption);
    nc_simple(CT_FUNC_ID("nc_set_var_chunk_cache"), caller, ncid, varid, r, ct_t0_, ct_t1_, ct_d_, &b);
    ct_sb_free(&b);
    ct_tls.inside = 0;
    CT_RETURN(r);
}

/* ---- data access: 4 forms x 13 types x get/put -------------------------------------------- */
#define NC_TYPES(X, op, CQ) \
    X(op, CQ, _text, char, 1) X(op, CQ, _schar, signed char, 1) X(op, CQ, _short, short, sizeof(short)) \
    X(op, CQ, _int, int, sizeof(int)) X(op, CQ, _long, long, sizeof(long)) X(op, CQ, _float, float, sizeof(float)) \
    X(op, CQ, _double, double, sizeof(double)) X(op, CQ, _uchar, unsigned char, 1) \
    X(op, CQ, _ushort, unsigned short, sizeof(short)) X(op, CQ, _uint, unsigned int, sizeof(int)) \
    X(op, CQ, _longlong, long long, sizeof(long long)) X(op, CQ, _ulonglong, unsigned long long, sizeof(long long)) \
    X(op, CQ, , void, 0)

#define NC_BODY(NAME, KIND, PUT, ISZ, START, COUNT, STRIDE, CALL) \
    NC_REAL(NAME); \
    uintptr_t lib; \
    if (!ct_on(CT_NETCDF) || !nc_traced(lib = nc_lib(caller), ncid)) return real CALL; \
    CT_BEGIN(); \
    int r = real CALL; \
    CT_END(); \
    nc_access(CT_FUNC_ID(#NAME), caller, lib, ncid, varid, KIND, PUT, START, COUNT, STRIDE, ISZ, r, ct_t0_, ct_t1_, ct_d_); \
    CT_RETURN(r);

#define NC_VARA(op, CQ, sfx, T, isz) \
CT_EXPORT int nc_##op##_vara##sfx(int ncid, int varid, const size_t *startp, const size_t *countp, CQ T *v) { \
    NC_BODY(nc_##op##_vara##sfx, K_VARA, #op[0] == 'p', isz, startp, countp, NULL, (ncid, varid, startp, countp, v)) }
#define NC_VARS(op, CQ, sfx, T, isz) \
CT_EXPORT int nc_##op##_vars##sfx(int ncid, int varid, const size_t *startp, const size_t *countp, \
                                  const ptrdiff_t *stridep, CQ T *v) { \
    NC_BODY(nc_##op##_vars##sfx, K_VARS, #op[0] == 'p', isz, startp, countp, stridep, \
            (ncid, varid, startp, countp, stridep, v)) }
#define NC_VAR1(op, CQ, sfx, T, isz) \
CT_EXPORT int nc_##op##_var1##sfx(int ncid, int varid, const size_t *indexp, CQ T *v) { \
    NC_BODY(nc_##op##_var1##sfx, K_VAR1, #op[0] == 'p', isz, indexp, NULL, NULL, (ncid, varid, indexp, v)) }
#define NC_VAR(op, CQ, sfx, T, isz) \
CT_EXPORT int nc_##op##_var##sfx(int ncid, int varid, CQ T *v) { \
    NC_BODY(nc_##op##_var##sfx, K_VAR, #op[0] == 'p', isz, NULL, NULL, NULL, (ncid, varid, v)) }

NC_TYPES(NC_VARA, get, )
NC_TYPES(NC_VARA, put, const)
NC_TYPES(NC_VARS, get, )
NC_TYPES(NC_VARS, put, const)
NC_TYPES(NC_VAR1, get, )
NC_TYPES(NC_VAR1, put, const)
NC_TYPES(NC_VAR, get, )
NC_TYPES(NC_VAR, put, const)
