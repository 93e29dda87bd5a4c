"""Compare two netCDF files in everything a layout conversion must preserve, in bounded memory.

Compared: the group tree, dimensions (names, order, lengths, unlimited), user types, variable order,
dims, data types, attributes (names, order including _FillValue's place, values, types NC_CHAR /
NC_STRING / numeric, NaN-aware),
fill mode, and every value: raw (no masking, scaling or char-to-string), bit-exact, except that NaN
equals NaN at the same place (whatever its payload).
Not compared, being layout: chunking, filters, contiguous/compact storage, byte order, the file
format, and netCDF-4's special attributes (_NCProperties, _Netcdf4Dimid, _Storage, ...).
_FillValue is an attribute like the others here: its place in the order is compared too (the
converter puts it where the source has it, see meta.put_fill_value).
"""

import numpy as np

from .meta import (block_elements, chunks_of, dtype_of, hdf5_path, is_netcdf4, item_bytes, kind, open_dataset,
                   raw, string_attr_names, var_path, h5open)
from climio.base.errors import DataError
from climio.dataset.layout import bounded_block, iter_block_slices

MAX_LISTED = 20
# The two blocks share max_mem with the comparison's temporaries (bit views, NaN masks, a bool mask
# per block) and netCDF-C's conversion buffers: one block gets a sixth.
BLOCK_FRACTION = 6
SPECIAL_ATTRS = frozenset((
    "_NCProperties", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict", "_IsNetcdf4", "_SuperblockVersion",
    "_Format", "_Storage", "_ChunkSizes", "_DeflateLevel", "_Shuffle", "_Fletcher32", "_Endianness", "_NoFill",
    "_Filter", "_Codecs", "_NCZARR_ATTR", "DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME"))


class _Listing:
    """Differences of one object, listed up to MAX_LISTED; later ones are only counted."""

    def __init__(self, out: list, where: str):
        self.out, self.where, self.listed, self.unlisted = out, where, 0, 0

    def add(self, message: str):
        if self.listed < MAX_LISTED:
            self.out.append(f"{self.where}: {message}")
            self.listed += 1
        else:
            self.unlisted += 1

    @property
    def full(self) -> bool:
        return self.listed >= MAX_LISTED

    def close(self, extra_values: int = 0):
        n = self.unlisted + extra_values
        if n:
            self.out.append(f"{self.where}: {n} more differences not listed")


# ---------------------------------------------------------------- value comparison

def diff_mask(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """True where a and b differ: bit-exact, NaN == NaN, compound fields and vlen elements recursively."""
    if a.dtype.names:
        m = np.zeros(a.shape, bool)
        for f in a.dtype.names:
            fm = diff_mask(a[f], b[f])
            m |= fm.reshape(a.shape + (-1,)).any(-1) if fm.ndim > a.ndim else fm
        return m
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        flat = [not _same_object(x, y) for x, y in zip(a.ravel(), b.ravel())]
        return np.array(flat, bool).reshape(a.shape)
    if a.dtype.kind == "c":
        return diff_mask(a.real, b.real) | diff_mask(a.imag, b.imag)
    if a.dtype.kind == "f" and b.dtype.kind == "f" and a.dtype.itemsize == b.dtype.itemsize:
        a = a.astype(a.dtype.newbyteorder("="), copy=False)
        b = b.astype(b.dtype.newbyteorder("="), copy=False)
        bits = np.dtype(f"u{a.dtype.itemsize}")
        return (a.view(bits) != b.view(bits)) & ~(np.isnan(a) & np.isnan(b))
    return a != b


def _same_object(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        x, y = np.asarray(x), np.asarray(y)
        return (x.dtype.kind == y.dtype.kind and x.dtype.itemsize == y.dtype.itemsize and x.shape == y.shape
                and not diff_mask(x, y).any())
    return type(x) is type(y) and x == y


def _as_array(value, k: str) -> np.ndarray:
    """A block as read by netCDF4-python -> ndarray (a scalar string or vlen becomes a 0-d object array)."""
    if k in ("str", "vlen") and not (isinstance(value, np.ndarray) and value.dtype.kind == "O"):
        o = np.empty((), object)
        o[()] = value
        return o
    return np.asarray(value)


def _show(value) -> str:
    if isinstance(value, np.ndarray) and value.dtype.names is None and value.ndim:
        return np.array2string(value, threshold=8)
    return repr(value.item() if isinstance(value, np.generic) else value)


def _values(va, vb, listing: _Listing, max_mem: int, progress=None) -> int:
    """Compare all values of two variables of equal shape and type; return how many differing values
    went unlisted."""
    shape = tuple(va.shape)
    k = kind(va)
    isz = item_bytes(va)
    block = bounded_block(shape, chunks_of(va), isz, max(1, max_mem // BLOCK_FRACTION))
    unlisted = 0
    for index in iter_block_slices(shape, block):
        a, b = _as_array(va[index], k), _as_array(vb[index], k)
        mask = diff_mask(a, b)
        n = int(np.count_nonzero(mask))
        if n:
            starts = [s.start for s in index] if index is not Ellipsis else []
            for flat in np.flatnonzero(mask)[:max(0, MAX_LISTED - listing.listed)]:
                at = np.unravel_index(flat, mask.shape)
                pos = ",".join(str(s + int(i)) for s, i in zip(starts, at))
                listing.add(f"value at [{pos}]: {_show(a[at])} != {_show(b[at])}")
                n -= 1
            unlisted += n
        if progress:
            progress(block_elements(index, shape) * isz)
    return unlisted


def _type_label(var) -> str:
    """The netCDF type of a variable, byte order left out (layout)."""
    k = kind(var)
    if k == "str":
        return "string"
    if k == "vlen":
        return f"vlen {var.datatype.name} of {np.dtype(var.datatype.dtype).str[1:]}"
    if k == "compound":
        return f"compound {var.datatype.name} {_dtype_text(var.datatype.dtype)}"
    if k == "enum":
        return f"enum {var.datatype.name} of {var.datatype.dtype.str[1:]} {sorted(var.datatype.enum_dict.items())}"
    return dtype_of(var)[0][1:]


def _dtype_text(dt) -> str:
    """A numpy dtype without byte order (compound fields included)."""
    if dt.names:
        return "{" + ", ".join(f"{n}: {_dtype_text(dt.fields[n][0])}" for n in dt.names) + "}"
    if dt.subdtype:
        return f"{_dtype_text(dt.subdtype[0])}{list(dt.shape)}"
    return dt.str[1:]


def compare_values(a_path, b_path, var_path_: str, max_mem: int = 256 << 20, progress=None) -> list:
    """Differences between the values of one variable in two files (shape and type first)."""
    with open_dataset(a_path) as A, open_dataset(b_path) as B:
        va, vb = _find_var(A, var_path_), _find_var(B, var_path_)
        if va is None:
            raise DataError(f"{a_path}: no variable {var_path_}")
        out = []
        if vb is None:
            return [f"{var_path_}: missing in {b_path}"]
        raw(va)
        raw(vb)
        listing = _Listing(out, var_path_)
        if _comparable(va, vb, listing):
            listing.close(_values(va, vb, listing, max_mem, progress))
        else:
            listing.close()
        return out


def _find_var(ds, path: str):
    group, name = path.rsplit("/", 1)
    try:
        g = ds[group] if group else ds
    except (IndexError, KeyError):
        return None
    return g.variables.get(name)


def _comparable(va, vb, listing) -> bool:
    ok = True
    if va.dimensions != vb.dimensions:
        listing.add(f"dimensions {va.dimensions} != {vb.dimensions}")
        ok = False
    if tuple(va.shape) != tuple(vb.shape):
        listing.add(f"shape {tuple(va.shape)} != {tuple(vb.shape)}")
        ok = False
    ta, tb = _type_label(va), _type_label(vb)
    if ta != tb:
        listing.add(f"type {ta} != {tb}")
        ok = False
    return ok


# ---------------------------------------------------------------- metadata comparison

def _read_attr(obj, name):
    try:
        return obj.getncattr(name, encoding="latin-1")
    except (KeyError, AttributeError) as e:
        return e


def _attr_type(value, name, strings: set) -> str:
    if isinstance(value, Exception):
        return "unreadable"
    if isinstance(value, (str, list)):
        return "NC_STRING" if name in strings else "NC_CHAR"
    if isinstance(value, bytes):                  # a char _FillValue
        return "NC_CHAR"
    return _dtype_text(np.asarray(value).dtype)


def _attrs(a, b, sa: set, sb: set, listing: _Listing):
    na = [n for n in a.ncattrs() if n not in SPECIAL_ATTRS]
    nb = [n for n in b.ncattrs() if n not in SPECIAL_ATTRS]
    for n in _names("attribute", na, nb, "", listing.add):
        va, vb = _read_attr(a, n), _read_attr(b, n)
        ta, tb = _attr_type(va, n, sa), _attr_type(vb, n, sb)
        if ta != tb:
            listing.add(f"attribute {n} type {ta} != {tb}")
        elif ta == "unreadable":
            continue
        elif isinstance(va, (str, list, bytes)):
            if va != vb:
                listing.add(f"attribute {n}: {va!r} != {vb!r}")
        else:
            xa, xb = np.atleast_1d(va), np.atleast_1d(vb)
            if xa.shape != xb.shape or diff_mask(xa, xb).any():
                listing.add(f"attribute {n}: {_show(va)} != {_show(vb)}")


def _names(kind_: str, a: list, b: list, where: str, add) -> list:
    """Report missing / extra / reordered names through `add`; return the common ones in a's order."""
    at = f"{where}: " if where else ""
    for n in a:
        if n not in b:
            add(f"{at}{kind_} {n} missing in second file")
    for n in b:
        if n not in a:
            add(f"{at}{kind_} {n} only in second file")
    common = [n for n in a if n in b]
    order_a = common
    order_b = [n for n in b if n in a]
    if order_a != order_b:
        add(f"{at}{kind_} order {order_a} != {order_b}")
    return common


def _types(ga, gb, where: str, out: list):
    for label, ta, tb in (("compound type", ga.cmptypes, gb.cmptypes), ("vlen type", ga.vltypes, gb.vltypes),
                          ("enum type", ga.enumtypes, gb.enumtypes)):
        for n in _names(label, list(ta), list(tb), where, out.append):
            x, y = ta[n], tb[n]
            dx, dy = _dtype_text(np.dtype(x.dtype)), _dtype_text(np.dtype(y.dtype))
            if dx != dy or getattr(x, "enum_dict", None) != getattr(y, "enum_dict", None):
                out.append(f"{where}: {label} {n} differs: {dx} {getattr(x, 'enum_dict', '')} != "
                           f"{dy} {getattr(y, 'enum_dict', '')}")


def _fill_off(var) -> bool:
    return not kind(var) and var.get_fill_value() is None


def compare(a_path, b_path, max_mem: int = 256 << 20, variables=None, progress=None) -> list:
    """Human-readable differences between two files; [] when they hold the same data and metadata.
    `variables` (paths) limits the value comparison to those variables; metadata is always compared
    in full. progress(nbytes) is called per compared block."""
    out = []
    with open_dataset(a_path) as A, open_dataset(b_path) as B:
        ha = h5open(a_path) if is_netcdf4(A) else None
        hb = h5open(b_path) if is_netcdf4(B) else None
        try:
            raw(A)
            raw(B)
            wanted = None if variables is None else set(variables)
            seen = set()
            _group(A, B, ha, hb, out, max_mem, wanted, seen, progress)
            for p in sorted((wanted or set()) - seen):
                out.append(f"{p}: no such variable in both files")
        finally:
            for h in (ha, hb):
                if h is not None:
                    h.close()
    return out


def _strings(h5, path: str) -> set:
    return string_attr_names(h5[path]) if h5 is not None and path else set()


def _group(ga, gb, ha, hb, out, max_mem, wanted, seen, progress):
    where = ga.path
    da, db = ga.dimensions, gb.dimensions
    for n in _names("dimension", list(da), list(db), where, out.append):
        x, y = da[n], db[n]
        if len(x) != len(y) or x.isunlimited() != y.isunlimited():
            def desc(d):
                return f"{len(d)}{' (unlimited)' if d.isunlimited() else ''}"
            out.append(f"{where}: dimension {n} length {desc(x)} != {desc(y)}")
    _types(ga, gb, where, out)
    listing = _Listing(out, f"{where} (attributes)" if where != "/" else "global attributes")
    _attrs(ga, gb, _strings(ha, ga.path), _strings(hb, gb.path), listing)
    listing.close()
    for n in _names("variable", list(ga.variables), list(gb.variables), where, out.append):
        va, vb = ga.variables[n], gb.variables[n]
        path = var_path(va)
        listing = _Listing(out, path)
        comparable = _comparable(va, vb, listing)
        _attrs(va, vb, _strings(ha, hdf5_path(ha, path) if ha is not None else ""),
               _strings(hb, hdf5_path(hb, path) if hb is not None else ""), listing)
        if _fill_off(va) != _fill_off(vb):
            listing.add(f"fill mode {'off' if _fill_off(va) else 'on'} != {'off' if _fill_off(vb) else 'on'}")
        unlisted = 0
        if wanted is None or path in wanted:
            seen.add(path)
            if comparable:
                unlisted = _values(va, vb, listing, max_mem, progress)
        listing.close(unlisted)
    for n in _names("group", list(ga.groups), list(gb.groups), where, out.append):
        _group(ga.groups[n], gb.groups[n], ha, hb, out, max_mem, wanted, seen, progress)



# ---------------------------------------------------------------- across formats (Zarr in or out)

# The encoding keys whose values say how a variable's values are stored, compared when the first
# dataset has them (xarray gives a Zarr variable a NaN _FillValue that a netCDF one may not have).
# Times are read undecoded (xarray_io.open_lazy): their units and calendar are attributes, compared
# as text like any other, and their values are the stored numbers.
ENCODING_KEYS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "dtype")


def _same(x, y) -> bool:
    """Attribute or encoding values equal, NaN equal to NaN, lists equal to tuples and arrays."""
    if isinstance(x, (str, bytes)) or isinstance(y, (str, bytes)):
        return x == y
    try:
        xa, ya = np.atleast_1d(np.asarray(x)), np.atleast_1d(np.asarray(y))
    except (TypeError, ValueError):
        return x == y
    if xa.shape != ya.shape:
        return False
    if xa.dtype.kind in "fc" and ya.dtype.kind in "fc":
        return bool(np.all((xa == ya) | (np.isnan(xa) & np.isnan(ya))))
    return bool(np.all(xa == ya))


def _native(dt) -> np.dtype:
    dt = np.dtype(dt)
    return dt.newbyteorder("=") if dt.kind in "biufc" else dt


def _raw_arrays(path, fmt: str, stack):
    """variable path -> an array-like giving the values as stored (no masking, no scaling)."""
    if fmt == "zarr":
        from .formats.zarr import _open_group
        g = _open_group(path)
        return lambda p: g[p.lstrip("/")]
    ds = stack.enter_context(open_dataset(path))
    raw(ds)

    def var(p):
        group, name = p.rsplit("/", 1)
        return (ds[group] if group else ds).variables[name]
    return var


def _blockwise(shape, chunks, itemsize, max_mem):
    return iter_block_slices(shape, bounded_block(shape, chunks, itemsize, max(1, max_mem // BLOCK_FRACTION)))


def _compare_var(name, va, vb, raw_a, raw_b, listing, max_mem):
    """Dims, dtype, attributes, CF encodings and values of one variable (raw for targets)."""
    # the dtype as stored: a packed variable's decoded dtype follows its scale_factor's type, which
    # netCDF keeps and Zarr's JSON attributes do not (float32 decodes as float64 from Zarr)
    # netCDF char arrays are stored as fixed-width strings in Zarr: decoded, they are the same
    da, db = va.encoding.get("dtype", va.dtype), vb.encoding.get("dtype", vb.dtype)
    same_type = _native(da) == _native(db) or (raw_a is None and va.dtype == vb.dtype)   # byte order is layout
    if va.dims != vb.dims or va.shape != vb.shape or not same_type:
        listing.add(f"dims/shape/dtype {va.dims} {va.shape} {da} != {vb.dims} {vb.shape} {db}")
        return
    for n in _names("attribute", sorted(va.attrs), sorted(vb.attrs), "", listing.add):
        if not _same(va.attrs[n], vb.attrs[n]):
            listing.add(f"attribute {n}: {va.attrs[n]!r} != {vb.attrs[n]!r}")
    for k in ENCODING_KEYS:
        if k == "dtype":
            continue   # compared above
        if k in va.encoding and not _same(va.encoding[k], vb.encoding.get(k)):
            listing.add(f"encoding {k}: {va.encoding[k]!r} != {vb.encoding.get(k)!r}")
    if raw_a is not None:
        a, b = raw_a, raw_b
        for index in _blockwise(va.shape, getattr(a, "chunks", None), a.dtype.itemsize, max_mem):
            n = int(np.count_nonzero(diff_mask(np.asarray(a[index]), np.asarray(b[index]))))
            if n:
                listing.add(f"{n} raw values differ in {index}")
        return
    for index in _blockwise(va.shape, None, max(va.dtype.itemsize, 8), max_mem):
        sel = dict(zip(va.dims, index)) if index is not Ellipsis else {}
        if not va[sel].load().equals(vb[sel].load()):
            listing.add(f"values differ in {index}")


def compare_formats(a_path, a_fmt: str, b_path, b_fmt: str, targets, max_mem: int = 256 << 20) -> list:
    """Differences between two datasets of which one at least is a Zarr store, as xarray reads them
    with times undecoded: every group (empty ones too), variables, dimensions, global and variable
    attributes (a time's units and calendar exactly as text, none added), CF encodings
    (scale_factor, add_offset, _FillValue, missing_value, stored dtype) and every value: bit-exact
    as stored for the re-laid-out variables `targets` (VarInfos), masked and scaled (NaN == NaN)
    for those xarray wrote, times as their stored numbers. Variable order, chunks and codecs are
    layout and not compared."""
    import contextlib
    import warnings

    from .formats import xarray_io
    out = []
    wanted = {t.path for t in targets}
    with contextlib.ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw_a, raw_b = _raw_arrays(a_path, a_fmt, stack), _raw_arrays(b_path, b_fmt, stack)
        # sorted: a Zarr store's groups have no order (parents still come before their children)
        for g in _names("group", sorted(xarray_io.group_tree(a_path, a_fmt)),
                        sorted(xarray_io.group_tree(b_path, b_fmt)), "", out.append):
            A = stack.enter_context(xarray_io.open_lazy(a_path, a_fmt, g))
            B = stack.enter_context(xarray_io.open_lazy(b_path, b_fmt, g))
            listing = _Listing(out, f"{g} (attributes)" if g != "/" else "global attributes")
            for n in _names("attribute", sorted(A.attrs), sorted(B.attrs), "", listing.add):
                if not _same(A.attrs[n], B.attrs[n]):
                    listing.add(f"attribute {n}: {A.attrs[n]!r} != {B.attrs[n]!r}")
            listing.close()
            names = _names("variable", sorted(A.variables), sorted(B.variables), g, out.append)
            for name in names:
                path = xarray_io.var_path(g, name)
                listing = _Listing(out, path)
                target = path in wanted
                _compare_var(name, A.variables[name], B.variables[name], raw_a(path) if target else None,
                             raw_b(path) if target else None, listing, max_mem)
                listing.close()
    return out
