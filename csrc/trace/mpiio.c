/* MPI-IO layer (3): MPI_File_* defined here, PMPI_File_* called through dlsym, so the library
 * links no libmpi and non-MPI programs never touch this code. Compiled against mpi.h only; no
 * MPI object (MPI_COMM_WORLD is a data symbol in Open MPI) is referenced at link time.
 *
 * Offsets (bytes): the view of each file is followed (MPI_File_set_view: displacement, etype
 * size, filetype). When the filetype has no holes (size == extent: the default view, etype ==
 * filetype, HDF5's one-block types) its copies tile the file without gaps from disp + lb, and the
 * byte offset is disp + lb + offset * etype_size, where offset is the explicit one (_at) or the
 * individual file pointer before the call (MPI_File_get_position). Exact, unless a hole-free
 * filetype lists its blocks out of file order (legal, unusual). With holes (subarray, vector
 * views) the offset is -1: the bytes a rank touches are then in its nested POSIX events.
 * size = count * MPI_Type_size(datatype); ret = bytes transferred (MPI_Get_count on the status,
 * ours when the caller passed MPI_STATUS_IGNORE), or the MPI error code (flag bit1).
 * Hints: MPI_File_get_info once per file right after a successful open -> aux {"hints": {...}}. */
#include "buffer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uintptr_t key;      /* the MPI_File handle */
    uint32_t file_id;   /* 0: excluded path */
    int contiguous;
    int64_t disp, esize;
} fhinfo;
#define NFH 1024
static fhinfo fh_tab[NFH];   /* open addressing on key, under ct_lock */

static uintptr_t fh_key(MPI_File fh) {
    uintptr_t k = 0;
    memcpy(&k, &fh, sizeof fh < sizeof k ? sizeof fh : sizeof k);
    return k;
}
#define TOMB ((uintptr_t)-1)   /* a closed file's slot: keeps probe chains intact, reusable */
static fhinfo *fh_slot(MPI_File fh, int create) {
    uintptr_t k = fh_key(fh);
    size_t i = (k >> 4) % NFH;
    fhinfo *tomb = NULL;
    for (size_t n = 0; n < NFH; n++, i = (i + 1) % NFH) {
        if (fh_tab[i].key == k) return &fh_tab[i];
        if (fh_tab[i].key == TOMB) { if (!tomb) tomb = &fh_tab[i]; continue; }
        if (!fh_tab[i].key) return create ? (tomb ? tomb : &fh_tab[i]) : NULL;
    }
    return create ? tomb : NULL;
}
static void fh_drop(MPI_File fh) {
    ct_lock();
    fhinfo *s = fh_slot(fh, 0);
    if (s) *s = (fhinfo){.key = TOMB};
    ct_unlock();
}
/* Copy of the file's entry; an unknown handle (opened before tracing) gives file 0, view unknown. */
static int fh_get(MPI_File fh, fhinfo *out) {
    ct_lock();
    fhinfo *s = fh_slot(fh, 0);
    *out = s ? *s : (fhinfo){.key = fh_key(fh), .file_id = 0, .contiguous = 0};
    ct_unlock();
    return s ? s->file_id != 0 : 1;   /* 0: excluded */
}

/* The rank, once MPI is initialised (and not finalised). */
static void mpi_rank(const void *caller) {
    if (ct_rank >= 0) return;
    int init = 0, fin = 0, r = -1;
    __typeof__(&PMPI_Initialized) ini = CT_LIB(PMPI_Initialized, caller);
    __typeof__(&PMPI_Finalized) fnd = CT_LIB(PMPI_Finalized, caller);
    __typeof__(&PMPI_Comm_rank) rank = CT_LIB(PMPI_Comm_rank, caller);
    if (!ini || !fnd || !rank || ini(&init) != MPI_SUCCESS || !init || fnd(&fin) != MPI_SUCCESS || fin) return;
#ifdef OPEN_MPI
    /* a data object: the executable may hold the live copy (copy relocation), which only a
     * lookup from the start of the global scope finds; RTLD_NEXT would give libmpi's unused one */
    MPI_Comm world = (MPI_Comm)dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
    if (!world) world = (MPI_Comm)CT_LIB(ompi_mpi_comm_world, caller);
    if (!world) return;
#else
    MPI_Comm world = MPI_COMM_WORLD;
#endif
    if (rank(world, &r) == MPI_SUCCESS) ct_rank = r;
}

static int64_t type_size(MPI_Datatype dt, const void *caller) {
    __typeof__(&PMPI_Type_size) ts = CT_LIB(PMPI_Type_size, caller);
    int s = 0;
    return ts && ts(dt, &s) == MPI_SUCCESS ? s : -1;
}

CT_EXPORT int MPI_Init(int *argc, char ***argv) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_Init) real = CT_LIB(PMPI_Init, caller);
    if (!real) { ct_missing("PMPI_Init"); return MPI_ERR_INTERN; }
    int r = real(argc, argv);
    if (r == MPI_SUCCESS && ct_active) mpi_rank(caller);
    return r;
}

CT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_Init_thread) real = CT_LIB(PMPI_Init_thread, caller);
    if (!real) { ct_missing("PMPI_Init_thread"); return MPI_ERR_INTERN; }
    int r = real(argc, argv, required, provided);
    if (r == MPI_SUCCESS && ct_active) mpi_rank(caller);
    return r;
}

CT_EXPORT int MPI_Finalize(void) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_Finalize) real = CT_LIB(PMPI_Finalize, caller);
    if (!real) { ct_missing("PMPI_Finalize"); return MPI_ERR_INTERN; }
    if (ct_active) mpi_rank(caller);
    int r = real();
    ct_mpi_finalize_hook();   /* everything so far on disk, done.json says "finalize" */
    return r;
}

/* MPI_File_open("ufs:/path") names the ROMIO driver: the path follows the prefix. */
static const char *strip_prefix(const char *name) {
    const char *c = name ? strchr(name, ':') : NULL;
    if (c && c - name >= 2 && !memchr(name, '/', (size_t)(c - name))) return c + 1;
    return name;
}

static void hints_aux(int64_t ev, MPI_File fh, int amode, const void *caller) {
    __typeof__(&PMPI_File_get_info) gi = CT_LIB(PMPI_File_get_info, caller);
    __typeof__(&PMPI_Info_get_nkeys) nk = CT_LIB(PMPI_Info_get_nkeys, caller);
    __typeof__(&PMPI_Info_get_nthkey) key = CT_LIB(PMPI_Info_get_nthkey, caller);
    __typeof__(&PMPI_Info_get_valuelen) vlen = CT_LIB(PMPI_Info_get_valuelen, caller);
    __typeof__(&PMPI_Info_get) get = CT_LIB(PMPI_Info_get, caller);
    __typeof__(&PMPI_Info_free) fr = CT_LIB(PMPI_Info_free, caller);
    ct_sb b = {0};
    ct_sb_printf(&b, ",\"amode\":%d,\"hints\":{", amode);
    MPI_Info info;
    int n = 0;
    if (gi && nk && key && vlen && get && fr && gi(fh, &info) == MPI_SUCCESS) {
        if (nk(info, &n) != MPI_SUCCESS) n = 0;
        for (int i = 0, first = 1; i < n; i++) {
            char k[MPI_MAX_INFO_KEY + 1];
            int len = 0, flag = 0;
            if (key(info, i, k) != MPI_SUCCESS || vlen(info, k, &len, &flag) != MPI_SUCCESS || !flag) continue;
            char *v = malloc((size_t)len + 1);
            if (!v) continue;
            if (get(info, k, len, v, &flag) == MPI_SUCCESS && flag) {
                v[len] = 0;
                if (!first) ct_sb_printf(&b, ",");
                ct_sb_json(&b, k);
                ct_sb_printf(&b, ":");
                ct_sb_json(&b, v);
                first = 0;
            }
            free(v);
        }
        fr(&info);
    }
    ct_sb_printf(&b, "}");
    ct_aux(ev, &b);
    ct_sb_free(&b);
}

CT_EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_File_open) real = CT_LIB(PMPI_File_open, caller);
    if (!real) { ct_missing("PMPI_File_open"); return MPI_ERR_INTERN; }
    if (!ct_on(CT_MPIIO)) return real(comm, filename, amode, info, fh);
    mpi_rank(caller);
    CT_BEGIN();
    int r = real(comm, filename, amode, info, fh);
    CT_END();
    ct_tls.inside = 1;
    uint32_t id = ct_path_id(strip_prefix(filename), AT_FDCWD);
    if (r == MPI_SUCCESS) {
        ct_lock();
        fhinfo *s = fh_slot(*fh, 1);
        if (s) *s = (fhinfo){.key = fh_key(*fh), .file_id = id, .contiguous = 1, .disp = 0, .esize = 1};
        ct_unlock();
    }
    if (id) {
        CT_EVENT(CT_MPIIO, CT_FUNC_ID("MPI_File_open"));
        ev_.file_id = id;
        ev_.ret = r;
        ev_.flags = r == MPI_SUCCESS ? CT_F_AUX : CT_F_FAILED;
        int64_t i = ct_emit(&ev_);
        if (r == MPI_SUCCESS) hints_aux(i, *fh, amode, caller);
    }
    ct_tls.inside = 0;
    CT_RETURN(r);
}

CT_EXPORT int MPI_File_close(MPI_File *fh) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_File_close) real = CT_LIB(PMPI_File_close, caller);
    if (!real) { ct_missing("PMPI_File_close"); return MPI_ERR_INTERN; }
    fhinfo fi;
    MPI_File h = fh ? *fh : NULL;
    if (!ct_on(CT_MPIIO) || !fh || !fh_get(h, &fi)) {
        int r = real(fh);
        if (fh) fh_drop(h);
        return r;
    }
    CT_BEGIN();
    int r = real(fh);
    CT_END();
    fh_drop(h);
    CT_EVENT(CT_MPIIO, CT_FUNC_ID("MPI_File_close"));
    ev_.file_id = fi.file_id;
    ev_.ret = r;
    ev_.flags = r == MPI_SUCCESS ? 0 : CT_F_FAILED;
    ct_emit(&ev_);
    CT_RETURN(r);
}

static int64_t to_bytes(const fhinfo *fi, MPI_Offset off) {
    return fi->contiguous && off >= 0 ? fi->disp + (int64_t)off * fi->esize : -1;
}

static void rw_event(uint32_t func, const void *caller, const fhinfo *fi, int64_t off, int count,
                     MPI_Datatype dt, MPI_Status *st, int r, uint64_t t0, uint64_t t1, uint16_t d) {
    ct_tls.inside = 1;
    int64_t tsz = type_size(dt, caller);
    int64_t ret = r;
    if (r == MPI_SUCCESS) {
        __typeof__(&PMPI_Get_count) gc = CT_LIB(PMPI_Get_count, caller);
        int c = MPI_UNDEFINED;
        ret = gc && gc(st, dt, &c) == MPI_SUCCESS && c != MPI_UNDEFINED && tsz >= 0 ? (int64_t)c * tsz : -1;
    }
    ct_event e = {.t_start = t0, .t_end = t1, .offset = off, .size = tsz >= 0 ? (int64_t)count * tsz : -1,
                  .ret = ret, .file_id = fi->file_id, .func_id = func, .depth = d, .layer = CT_MPIIO,
                  .flags = r == MPI_SUCCESS ? 0 : CT_F_FAILED};
    ct_emit(&e);
    ct_tls.inside = 0;
}

/* explicit offset: MPI_File_{read,write}_at[_all] */
#define MPI_RW_AT(NAME, CQ) \
CT_EXPORT int NAME(MPI_File fh, MPI_Offset offset, CQ void *buf, int count, MPI_Datatype dt, MPI_Status *status) { \
    const void *caller = __builtin_return_address(0); \
    __typeof__(&P##NAME) real = CT_LIB(P##NAME, caller); \
    fhinfo fi; \
    if (!real) { ct_missing("P" #NAME); return MPI_ERR_INTERN; } \
    if (!ct_on(CT_MPIIO) || !fh_get(fh, &fi)) return real(fh, offset, buf, count, dt, status); \
    mpi_rank(caller); \
    MPI_Status st_; \
    MPI_Status *sp_ = status == MPI_STATUS_IGNORE ? &st_ : status; \
    CT_BEGIN(); \
    int r = real(fh, offset, buf, count, dt, sp_); \
    CT_END(); \
    rw_event(CT_FUNC_ID(#NAME), caller, &fi, to_bytes(&fi, offset), count, dt, sp_, r, ct_t0_, ct_t1_, ct_d_); \
    CT_RETURN(r); }

/* individual file pointer: MPI_File_{read,write}[_all] */
#define MPI_RW_FP(NAME, CQ) \
CT_EXPORT int NAME(MPI_File fh, CQ void *buf, int count, MPI_Datatype dt, MPI_Status *status) { \
    const void *caller = __builtin_return_address(0); \
    __typeof__(&P##NAME) real = CT_LIB(P##NAME, caller); \
    fhinfo fi; \
    if (!real) { ct_missing("P" #NAME); return MPI_ERR_INTERN; } \
    if (!ct_on(CT_MPIIO) || !fh_get(fh, &fi)) return real(fh, buf, count, dt, status); \
    mpi_rank(caller); \
    __typeof__(&PMPI_File_get_position) gp = CT_LIB(PMPI_File_get_position, caller); \
    MPI_Offset pos = -1; \
    ct_tls.inside = 1; \
    if (!gp || gp(fh, &pos) != MPI_SUCCESS) pos = -1; \
    ct_tls.inside = 0; \
    MPI_Status st_; \
    MPI_Status *sp_ = status == MPI_STATUS_IGNORE ? &st_ : status; \
    CT_BEGIN(); \
    int r = real(fh, buf, count, dt, sp_); \
    CT_END(); \
    rw_event(CT_FUNC_ID(#NAME), caller, &fi, to_bytes(&fi, pos), count, dt, sp_, r, ct_t0_, ct_t1_, ct_d_); \
    CT_RETURN(r); }

MPI_RW_AT(MPI_File_read_at, )
MPI_RW_AT(MPI_File_read_at_all, )
MPI_RW_AT(MPI_File_write_at, const)
MPI_RW_AT(MPI_File_write_at_all, const)
MPI_RW_FP(MPI_File_read, )
MPI_RW_FP(MPI_File_read_all, )
MPI_RW_FP(MPI_File_write, const)
MPI_RW_FP(MPI_File_write_all, const)

CT_EXPORT int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                                const char *datarep, MPI_Info info) {
    const void *caller = __builtin_return_address(0);
    __typeof__(&PMPI_File_set_view) real = CT_LIB(PMPI_File_set_view, caller);
    fhinfo fi;
    if (!real) { ct_missing("PMPI_File_set_view"); return MPI_ERR_INTERN; }
    if (!ct_active) return real(fh, disp, etype, filetype, datarep, info);
    int traced = ct_on(CT_MPIIO) && fh_get(fh, &fi);
    uint16_t ct_d_ = ct_tls.depth;
    uint64_t ct_t0_ = 0, ct_t1_ = 0;
    if (traced) { ct_tls.depth++; ct_t0_ = ct_now(); }
    int r = real(fh, disp, etype, filetype, datarep, info);
    if (traced) { ct_t1_ = ct_now(); ct_tls.depth = ct_d_; }
    int ct_errno_ = errno;
    uint8_t inside = ct_tls.inside;
    ct_tls.inside = 1;
    /* the view is followed even when not traced now, for the offsets of later calls */
    int64_t esz = type_size(etype, caller), fsz = type_size(filetype, caller);
    MPI_Aint lb = 0, ext = 0;
    __typeof__(&PMPI_Type_get_extent) ge = CT_LIB(PMPI_Type_get_extent, caller);
    int contiguous = r == MPI_SUCCESS && esz > 0 && ge && ge(filetype, &lb, &ext) == MPI_SUCCESS && ext == fsz &&
                     fsz % esz == 0;
    if (r == MPI_SUCCESS) {
        ct_lock();
        fhinfo *s = fh_slot(fh, 0);
        if (s) { s->disp = disp + (contiguous ? (int64_t)lb : 0); s->esize = esz; s->contiguous = contiguous; }
        ct_unlock();
    }
    if (traced) {
        CT_EVENT(CT_MPIIO, CT_FUNC_ID("MPI_File_set_view"));
        ev_.file_id = fi.file_id;
        ev_.offset = disp;
        ev_.ret = r;
        ev_.flags = r == MPI_SUCCESS ? CT_F_AUX : CT_F_FAILED;
        int64_t i = ct_emit(&ev_);
        if (r == MPI_SUCCESS) {
            ct_sb b = {0};
            ct_sb_printf(&b, ",\"disp\":%lld,\"etype_size\":%lld,\"filetype_size\":%lld,\"filetype_lb\":%lld,"
                         "\"filetype_extent\":%lld,\"contiguous\":%s,\"datarep\":", (long long)disp, (long long)esz,
                         (long long)fsz, (long long)lb, (long long)ext, contiguous ? "true" : "false");
            ct_sb_json(&b, datarep ? datarep : "");
            ct_aux(i, &b);
            ct_sb_free(&b);
        }
    }
    ct_tls.inside = inside;
    CT_RETURN(r);
}

/* fh-only calls */
#define MPI_SIMPLE(NAME, SIZE, PARAMS, ARGS) \
CT_EXPORT int NAME PARAMS { \
    const void *caller = __builtin_return_address(0); \
    __typeof__(&P##NAME) real = CT_LIB(P##NAME, caller); \
    fhinfo fi; \
    if (!real) { ct_missing("P" #NAME); return MPI_ERR_INTERN; } \
    if (!ct_on(CT_MPIIO) || !fh_get(fh, &fi)) return real ARGS; \
    mpi_rank(caller); \
    CT_BEGIN(); \
    int r = real ARGS; \
    CT_END(); \
    CT_EVENT(CT_MPIIO, CT_FUNC_ID(#NAME)); \
    ev_.file_id = fi.file_id; \
    ev_.size = (SIZE); \
    ev_.ret = r; \
    ev_.flags = r == MPI_SUCCESS ? 0 : CT_F_FAILED; \
    ct_emit(&ev_); \
    CT_RETURN(r); }

MPI_SIMPLE(MPI_File_set_size, (int64_t)size, (MPI_File fh, MPI_Offset size), (fh, size))
MPI_SIMPLE(MPI_File_sync, -1, (MPI_File fh), (fh))
MPI_SIMPLE(MPI_File_set_info, -1, (MPI_File fh, MPI_Info info), (fh, info))
