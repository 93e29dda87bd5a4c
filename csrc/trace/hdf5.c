/* HDF5 layer (5, optional): H5Fcreate, H5Fopen, H5Fflush, H5Fclose, H5Dread, H5Dwrite.
 * Compiled against hdf5.h only; each call and each H5S/H5T/H5I query goes to the HDF5 copy of
 * the caller (resolve.c): netCDF4-python and h5py each bundle their own libhdf5, whose hid_t
 * values mean nothing to the other.
 *
 * H5Dread/H5Dwrite: size = selected elements x H5Tget_size(memory type); the selection is the
 * memory space's, or when that is H5S_ALL the file space's, or when both are H5S_ALL the
 * dataset's whole space. var_id = dataset path (H5Iget_name); aux {"selection_bytes",
 * "dataset"}. Dataset names and files are cached per (library, dataset id): HDF5 does not reuse
 * ids. File events carry the path given to H5Fopen/H5Fcreate (H5Fget_name for flush/close). */
#include "buffer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>

typedef struct { uintptr_t lib; hid_t id; uint32_t name_id, file_id; int excluded; } dsname;
#define NDS 4096
static dsname ds_cache[NDS];   /* direct-mapped; a collision just asks again (under ct_lock) */

static uintptr_t h5_lib(const void *caller) { return (uintptr_t)CT_LIB(H5Iget_name, caller); }

/* path id of the file holding `obj`; *excluded set when under an excluded prefix */
static uint32_t h5_file(hid_t obj, const void *caller, int *excluded) {
    __typeof__(&H5Fget_name) fname = CT_LIB(H5Fget_name, caller);
    char buf[4096];
    ssize_t n = fname ? fname(obj, buf, sizeof buf) : -1;
    *excluded = 0;
    if (n <= 0 || (size_t)n >= sizeof buf) return 0;
    uint32_t id = ct_path_id(buf, AT_FDCWD);
    *excluded = !id;
    return id;
}

static dsname h5_dataset(hid_t dset, const void *caller) {
    uintptr_t lib = h5_lib(caller);
    size_t slot = ((uint64_t)dset * 11400714819323198485ull >> 52) % NDS;
    ct_lock();
    dsname d = ds_cache[slot];
    ct_unlock();
    if (d.lib == lib && d.id == dset && lib) return d;
    d = (dsname){.lib = lib, .id = dset};
    __typeof__(&H5Iget_name) iname = CT_LIB(H5Iget_name, caller);
    char buf[4096];
    ssize_t n = iname ? iname(dset, buf, sizeof buf) : -1;
    if (n > 0 && (size_t)n < sizeof buf) d.name_id = ct_intern(buf);
    d.file_id = h5_file(dset, caller, &d.excluded);
    if (d.name_id) {   /* an anonymous dataset (h5py writes before linking) gets its name later */
        ct_lock();
        ds_cache[slot] = d;
        ct_unlock();
    }
    return d;
}

static int64_t h5_selection(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, const void *caller) {
    __typeof__(&H5Sget_select_npoints) npts = CT_LIB(H5Sget_select_npoints, caller);
    __typeof__(&H5Tget_size) tsize = CT_LIB(H5Tget_size, caller);
    __typeof__(&H5Dget_space) dspace = CT_LIB(H5Dget_space, caller);
    __typeof__(&H5Sclose) sclose = CT_LIB(H5Sclose, caller);
    if (!npts || !tsize) return -1;
    hssize_t n = -1;
    /* ids 0..2 are H5S_ALL and, in HDF5 >= 1.12, H5S_BLOCK / H5S_PLIST: not a dataspace */
    if (mspace > 2) n = npts(mspace);
    else if (fspace > 2) n = npts(fspace);
    else if (dspace && sclose) {
        hid_t s = dspace(dset);
        if (s >= 0) { n = npts(s); sclose(s); }
    }
    /* the memory type's size, remembered per thread and (library, type id): HDF5 does not reuse
     * ids, and H5Tget_size is a locked API call (~300 instructions) on every read otherwise */
    static __thread struct { uintptr_t lib; hid_t id; size_t size; } tcache[16];
    uintptr_t lib = (uintptr_t)tsize;
    unsigned slot = (unsigned)(((uint64_t)mtype * 11400714819323198485ull) >> 60);
    size_t sz = tcache[slot].lib == lib && tcache[slot].id == mtype ? tcache[slot].size : 0;
    if (!sz && (sz = tsize(mtype)) > 0) {
        tcache[slot].lib = lib, tcache[slot].id = mtype, tcache[slot].size = sz;
    }
    return n >= 0 && sz ? (int64_t)n * (int64_t)sz : -1;
}

#define H5_REAL(fn, fail) \
    const void *caller = __builtin_return_address(0); \
    __typeof__(&fn) real = CT_LIB(fn, caller); \
    if (!real) { ct_missing(#fn); return fail; }

static herr_t h5_rw(uint32_t func, const void *caller, hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace,
                    herr_t r, uint64_t t0, uint64_t t1, uint16_t d) {
    ct_tls.inside = 1;
    dsname ds = h5_dataset(dset, caller);
    if (!ds.excluded) {
        int64_t sel = h5_selection(dset, mtype, mspace, fspace, caller);
        ct_event e = {.t_start = t0, .t_end = t1, .offset = -1, .size = sel, .ret = r, .file_id = ds.file_id,
                      .func_id = func, .var_id = ds.name_id, .depth = d, .layer = CT_HDF5,
                      .flags = (uint8_t)(CT_F_AUX | (r < 0 ? CT_F_FAILED : 0))};
        int64_t idx = ct_emit(&e);
        if (idx >= 0) {   /* not in counters mode (but for its sampled events) */
            ct_sb *b = ct_sb_scratch();
            ct_sb_str(b, ",\"selection_bytes\":");
            ct_sb_i64(b, sel);
            ct_sb_str(b, ",\"dataset\":");
            ct_sb_json(b, ct_text(ds.name_id));
            ct_aux(idx, b);
        }
    }
    ct_tls.inside = 0;
    return r;
}

CT_EXPORT herr_t H5Dread(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, void *buf) {
    H5_REAL(H5Dread, -1);
    if (!ct_on(CT_HDF5)) return real(dset, mtype, mspace, fspace, dxpl, buf);
    CT_BEGIN();
    herr_t r = real(dset, mtype, mspace, fspace, dxpl, buf);
    CT_END();
    h5_rw(CT_FUNC_ID("H5Dread"), caller, dset, mtype, mspace, fspace, r, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

CT_EXPORT herr_t H5Dwrite(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, const void *buf) {
    H5_REAL(H5Dwrite, -1);
    if (!ct_on(CT_HDF5)) return real(dset, mtype, mspace, fspace, dxpl, buf);
    CT_BEGIN();
    herr_t r = real(dset, mtype, mspace, fspace, dxpl, buf);
    CT_END();
    h5_rw(CT_FUNC_ID("H5Dwrite"), caller, dset, mtype, mspace, fspace, r, ct_t0_, ct_t1_, ct_d_);
    CT_RETURN(r);
}

static void h5_file_event(uint32_t func, uint32_t file, int64_t r, uint64_t t0, uint64_t t1, uint16_t d) {
    ct_event e = {.t_start = t0, .t_end = t1, .offset = -1, .size = -1, .ret = r, .file_id = file,
                  .func_id = func, .depth = d, .layer = CT_HDF5, .flags = r < 0 ? CT_F_FAILED : 0};
    ct_emit(&e);
}

CT_EXPORT hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl) {
    H5_REAL(H5Fcreate, -1);
    if (!ct_on(CT_HDF5)) return real(name, flags, fcpl, fapl);
    CT_BEGIN();
    hid_t r = real(name, flags, fcpl, fapl);
    CT_END();
    ct_tls.inside = 1;
    uint32_t id = ct_path_id(name, AT_FDCWD);
    if (id) h5_file_event(CT_FUNC_ID("H5Fcreate"), id, r, ct_t0_, ct_t1_, ct_d_);
    ct_tls.inside = 0;
    CT_RETURN(r);
}

/* `climio trace try` (try.c): a copy of the file access list with the injected raw-data chunk
 * cache (h5py always passes its own list; H5P_DEFAULT is left alone), in the caller's HDF5. */
static hid_t h5_try_fapl(hid_t fapl, const void *caller) {
    if (CT_LIKELY(!ct_try_h5.on) || fapl == H5P_DEFAULT) return -1;
    __typeof__(&H5Pcopy) copy = CT_LIB(H5Pcopy, caller);
    __typeof__(&H5Pset_cache) set = CT_LIB(H5Pset_cache, caller);
    __typeof__(&H5Pclose) close_ = CT_LIB(H5Pclose, caller);
    if (!copy || !set || !close_) return -1;
    hid_t c = copy(fapl);
    if (c < 0) return -1;
    if (set(c, 0, ct_try_h5.slots, ct_try_h5.bytes, ct_try_h5.w0) < 0) { close_(c); return -1; }
    return c;
}

/* The raw-data chunk cache an open file uses (aux "cache_bytes", "cache_slots"): what the
 * injected H5Pset_cache did, seen by the tracer's own events. */
static void h5_cache_aux(int64_t ev, hid_t file, const void *caller) {
    __typeof__(&H5Fget_access_plist) acc = CT_LIB(H5Fget_access_plist, caller);
    __typeof__(&H5Pget_cache) get = CT_LIB(H5Pget_cache, caller);
    __typeof__(&H5Pclose) close_ = CT_LIB(H5Pclose, caller);
    if (ev < 0 || file < 0 || !acc || !get || !close_) return;
    hid_t p = acc(file);
    if (p < 0) return;
    int mdc;
    size_t slots = 0, bytes = 0;
    double w0;
    if (get(p, &mdc, &slots, &bytes, &w0) >= 0) {
        ct_sb b = {0};
        ct_sb_printf(&b, ",\"cache_bytes\":%zu,\"cache_slots\":%zu", bytes, slots);
        ct_aux(ev, &b);
        ct_sb_free(&b);
    }
    close_(p);
}

CT_EXPORT hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl) {
    H5_REAL(H5Fopen, -1);
    name = ct_try_path(name, AT_FDCWD, !(flags & 0x0001u));   /* H5F_ACC_RDWR (the macro calls H5open) */
    hid_t tried = h5_try_fapl(fapl, caller);
    hid_t use = tried >= 0 ? tried : fapl;
    if (!ct_on(CT_HDF5)) {
        hid_t r = real(name, flags, use);
        if (tried >= 0) CT_LIB(H5Pclose, caller)(tried);
        return r;
    }
    CT_BEGIN();
    hid_t r = real(name, flags, use);
    CT_END();
    ct_tls.inside = 1;
    if (tried >= 0) CT_LIB(H5Pclose, caller)(tried);
    uint32_t id = ct_path_id(name, AT_FDCWD);
    if (id) {
        ct_event e = {.t_start = ct_t0_, .t_end = ct_t1_, .offset = -1, .size = -1, .ret = r, .file_id = id,
                      .func_id = CT_FUNC_ID("H5Fopen"), .depth = ct_d_, .layer = CT_HDF5,
                      .flags = (uint8_t)((r < 0 ? CT_F_FAILED : 0) | CT_F_AUX)};
        h5_cache_aux(ct_emit(&e), r, caller);
    }
    ct_tls.inside = 0;
    CT_RETURN(r);
}

/* flush and close: the file is named before the call (after a close the id is gone) */
#define H5_FILE_OP(fn, CALL) \
    if (!ct_on(CT_HDF5)) return real CALL; \
    ct_tls.inside = 1; \
    int excluded; \
    uint32_t file = h5_file(obj, caller, &excluded); \
    ct_tls.inside = 0; \
    if (excluded) return real CALL; \
    CT_BEGIN(); \
    herr_t r = real CALL; \
    CT_END(); \
    ct_tls.inside = 1; \
    h5_file_event(CT_FUNC_ID(#fn), file, r, ct_t0_, ct_t1_, ct_d_); \
    ct_tls.inside = 0; \
    CT_RETURN(r);

CT_EXPORT herr_t H5Fflush(hid_t obj, H5F_scope_t scope) {
    H5_REAL(H5Fflush, -1);
    H5_FILE_OP(H5Fflush, (obj, scope));
}

CT_EXPORT herr_t H5Fclose(hid_t obj) {
    H5_REAL(H5Fclose, -1);
    H5_FILE_OP(H5Fclose, (obj));
}
