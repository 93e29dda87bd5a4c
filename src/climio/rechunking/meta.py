"""Read what a source file holds (`scan`) and write the output file with everything but the bulk data
of the re-laid-out variables (`define_output`).

netCDF4-python does the netCDF side (groups, dimensions, user types, attributes with their types,
variables, fill values); h5py answers what netCDF hides: the HDF5 filter pipeline, the HDF5 dataset
path (netCDF-C stores a variable that shares a dimension's name without being its coordinate variable
as `_nc4_non_coord_<name>`), and NC_CHAR vs NC_STRING for text attributes.
Values are always copied raw: no masking, no scale_factor/add_offset, no char-to-string.
"""

import itertools
import math
import re

import h5py
import netCDF4
import numpy as np

from climio.dataset.compression import Compression
from ..data.writer import MAX_CHUNKS_PER_WRITE
from climio.base.errors import ClimioError, DataError, InputError, disk_full_error
from climio.dataset.layout import bounded_block, iter_block_slices
from .model import VarInfo

NON_COORD = "_nc4_non_coord_"
# Memory estimate per element of a string / vlen variable (Python object + payload); their true size
# is unknown before reading them.
OBJECT_ITEM_BYTES = 256
# HDF5 filter ids that netCDF4-python's names stand for (the executor encodes for exactly this pipeline).
FILTER_IDS = {"shuffle": 2, "zlib": 1, "szip": 4, "bzip2": 307, "zstd": 32015, "blosc": 32001, "fletcher32": 3}


# ---------------------------------------------------------------- opening and walking

def open_dataset(path) -> netCDF4.Dataset:
    """Read-only netCDF4 Dataset; a missing or non-netCDF file is a one-line DataError."""
    try:
        return netCDF4.Dataset(str(path), "r")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (OSError, RuntimeError, ValueError) as e:   # ValueError: a name that is not UTF-8
        raise DataError(f"{path}: not a readable netCDF file ({str(e)[:200]})") from None


def file_format(src_path) -> str:
    """NETCDF4, NETCDF4_CLASSIC, NETCDF3_CLASSIC, NETCDF3_64BIT_OFFSET or NETCDF3_64BIT_DATA."""
    with open_dataset(src_path) as ds:
        return ds.file_format


def is_netcdf4(ds) -> bool:
    return ds.file_format.startswith("NETCDF4")


def walk(group):
    """The group and its subgroups, depth-first, parents first, in file order."""
    yield group
    for g in group.groups.values():
        yield from walk(g)


def var_path(var) -> str:
    g = var.group().path
    return f"{g.rstrip('/')}/{var.name}"


def hdf5_path(h5, path: str) -> str:
    """The HDF5 dataset holding netCDF variable `path` ("" when there is none)."""
    group, name = path.rsplit("/", 1)
    for candidate in (f"{group}/{NON_COORD}{name}", path):
        if isinstance(h5.get(candidate), h5py.Dataset):
            return candidate
    return ""


def hdf5_filters(dset) -> tuple:
    plist = dset.id.get_create_plist()
    return tuple(plist.get_filter(i)[0] for i in range(plist.get_nfilters()))


def h5open(path, mode="r"):
    # read-only ("r") next to netCDF-C's read-only handle: both take shared locks; "r+" reopens an output.
    try:
        return h5py.File(str(path), mode)
    except OSError as e:
        raise DataError(f"{path}: cannot {'open' if mode == 'r' else 'reopen'} with h5py ({e})") from None


# ---------------------------------------------------------------- scan

def kind(var) -> str:
    """str, vlen, compound, enum, or "" for a primitive type."""
    if var.dtype is str:
        return "str"
    dt = var.datatype
    if isinstance(dt, netCDF4.VLType):
        return "vlen"
    if isinstance(dt, netCDF4.CompoundType):
        return "compound"
    if isinstance(dt, netCDF4.EnumType):
        return "enum"
    return ""


def dtype_of(var) -> tuple:
    """(dtype string, itemsize) as VarInfo documents them. Primitive types carry the byte order the
    variable has on disk in netCDF-4; netCDF-3's big-endian order is a format rule, not a choice, so
    those report (and the output gets) the native order."""
    k = kind(var)
    if k in ("str", "vlen"):
        return k, 0
    if k:
        return k, var.datatype.dtype.itemsize
    dt = np.dtype(var.dtype)
    order = {"little": "<", "big": ">"}.get(var.endian(), "=")
    if dt.itemsize > 1:
        dt = dt.newbyteorder(order)
    return dt.str, dt.itemsize


def compression_of(var) -> Compression:
    f = var.filters()
    if not f:                                    # netCDF-3
        return Compression()
    codec = next((c for c in ("zlib", "zstd", "bzip2") if f[c]), "none")
    shuffle = bool(f["shuffle"])
    if f["blosc"]:   # Blosc's own shuffle is the setting's shuffle (bit shuffle is kept as byte shuffle)
        codec, shuffle = f["blosc"]["compressor"], shuffle or bool(f["blosc"]["shuffle"])
    q = var.quantization()
    return Compression(codec, f["complevel"] if codec != "none" else 0, shuffle,
                       q[1] if q else "", q[0] if q else 0)


def chunks_of(var):
    c = var.chunking()
    return tuple(int(n) for n in c) if isinstance(c, list) and var.ndim else None


def read_attrs(obj) -> dict:
    """Attribute name -> value (attributes of a type netCDF4-python cannot read are left out)."""
    out = {}
    for name in obj.ncattrs():
        try:
            out[name] = obj.getncattr(name)
        except (KeyError, AttributeError):
            pass
    return out


def scan(src_path) -> list:
    """Every variable of the file as a VarInfo: file order, groups depth-first (root first)."""
    with open_dataset(src_path) as ds:
        h5 = h5open(src_path) if is_netcdf4(ds) else None
        try:
            return [_info(v, h5) for g in walk(ds) for v in g.variables.values()]
        except (OSError, RuntimeError, KeyError) as e:
            raise DataError(f"{src_path}: cannot read variable metadata ({e})") from None
        finally:
            if h5 is not None:
                h5.close()


def _info(var, h5) -> VarInfo:
    path = var_path(var)
    dims = var.get_dims()
    dtype, itemsize = dtype_of(var)
    hpath = hdf5_path(h5, path) if h5 is not None else ""
    attrs = read_attrs(var)
    return VarInfo(path=path, dims=tuple(d.name for d in dims), shape=tuple(var.shape),
                   unlimited=tuple(d.isunlimited() for d in dims), dtype=dtype, itemsize=itemsize,
                   chunks=chunks_of(var), compression=compression_of(var),
                   filters=hdf5_filters(h5[hpath]) if hpath else (),
                   fill_value=attrs.get("_FillValue"), hdf5_path=hpath, attrs=attrs)


# ---------------------------------------------------------------- blocks in bounded memory

def item_bytes(var) -> int:
    return dtype_of(var)[1] or OBJECT_ITEM_BYTES


def block_elements(index, shape) -> int:
    if index is Ellipsis:
        return 1
    return math.prod(s.stop - s.start for s in index)


def raw(obj):
    """Turn off every value conversion of netCDF4-python on a Dataset/Group (recursively) or Variable."""
    obj.set_auto_maskandscale(False)
    obj.set_auto_chartostring(False)
    obj.set_always_mask(False)
    return obj


# ---------------------------------------------------------------- attributes with their types

def string_attr_names(h5obj) -> set:
    """Names of the NC_STRING (HDF5 variable-length string) attributes; the other text ones are NC_CHAR."""
    names = set()
    if h5obj is None:
        return names
    for name in h5obj.attrs:
        t = h5obj.attrs.get_id(name).get_type()
        if isinstance(t, h5py.h5t.TypeStringID) and t.is_variable_str():
            names.add(name)
    return names


def copy_attrs(src, dst, nc_strings: set, skip=("_FillValue",), fill=None):
    """All attributes in order with their netCDF types. NC_CHAR values travel as latin-1 bytes, which
    round-trips any byte (netCDF4-python would write a non-ASCII str as NC_STRING). `fill(value)`, if
    given, writes a variable's _FillValue at its place in the order (see put_fill_value)."""
    for name in src.ncattrs():
        if name in skip:
            continue
        if fill is not None and name == "_FillValue":
            fill(src.getncattr(name))
            continue
        try:
            if name in nc_strings:
                dst.setncattr_string(name, src.getncattr(name))
                continue
            value = src.getncattr(name, encoding="latin-1")
        except KeyError:
            raise DataError(f"attribute {name} of {_where(src)} has a type netCDF4-python cannot copy") from None
        dst.setncattr(name, value.encode("latin-1") if isinstance(value, str) else value)


# ---------------------------------------------------------------- _FillValue at its place
#
# netCDF-C accepts _FillValue like any attribute while a variable is being defined (before data is
# written): nc_put_att(..., "_FillValue", ...) both sets the HDF5 fill value and puts the attribute
# where it comes in the order, as the program that wrote the source did (NEMO puts it after units,
# for instance). netCDF4-python refuses _FillValue after createVariable (its issue #959) and puts
# the one given to createVariable first, so climio calls nc_put_att of the very libnetcdf that
# netCDF4-python loaded (same process, same ncids) through ctypes.

NC_TYPES = {"i1": 1, "S1": 2, "i2": 3, "i4": 4, "f4": 5, "f8": 6, "u1": 7, "u2": 8, "u4": 9, "i8": 10, "u8": 11}
_NETCDF_LIB = []


def _netcdf_lib():
    """The libnetcdf netCDF4-python uses, as a ctypes library (None if it cannot be found)."""
    if not _NETCDF_LIB:
        lib = None
        try:
            import ctypes
            with open("/proc/self/maps") as fh:
                paths = sorted({line.split()[-1] for line in fh
                                if re.match(r"libnetcdf[-.]", line.split()[-1].rsplit("/", 1)[-1])})
            # the one netCDF4-python's wheel bundles, or the only one loaded
            bundled = [p for p in paths if "/netcdf4.libs/" in p.lower()]
            paths = bundled or paths
            if len(paths) == 1:
                lib = ctypes.CDLL(paths[0])
                lib.nc_put_att.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.c_size_t, ctypes.c_void_p]
                lib.nc_strerror.restype = ctypes.c_char_p
                lib.nc_strerror.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            lib = None
        _NETCDF_LIB.append(lib)
    return _NETCDF_LIB[0]


def _fill_type(var):
    """(netCDF type id, numpy memory dtype) for writing a _FillValue of `var` with nc_put_att, or None
    when it must go through createVariable (strings, vlen, compound)."""
    k = kind(var)
    if k == "enum":
        return var.datatype._nc_type, np.dtype(var.datatype.dtype).newbyteorder("=")
    if k:
        return None
    dt = np.dtype(var.dtype)
    key = "S1" if dt.kind == "S" else dt.str[1:]
    if key not in NC_TYPES:
        return None
    return NC_TYPES[key], (dt if dt.kind == "S" else dt.newbyteorder("="))


def can_place_fill(var) -> bool:
    """Whether put_fill_value can write this variable's _FillValue at its place in the order."""
    return _fill_type(var) is not None and _netcdf_lib() is not None


def put_fill_value(dst_var, src_var, value):
    """Write _FillValue of `dst_var` (being defined) now, i.e. after the attributes written so far."""
    import ctypes
    xtype, dt = _fill_type(src_var)
    data = np.asarray(value).astype(dt, copy=False).reshape(-1)
    if data.size != 1:
        raise DataError(f"_FillValue of {var_path(src_var)} has {data.size} values, netCDF allows one")
    raw_bytes = data.tobytes()
    buf = ctypes.create_string_buffer(raw_bytes, len(raw_bytes))
    lib = _netcdf_lib()
    rc = lib.nc_put_att(dst_var._grpid, dst_var._varid, b"_FillValue", xtype, 1, buf)
    if rc != 0:
        raise DataError(f"cannot set _FillValue of {var_path(src_var)}: {lib.nc_strerror(rc).decode()}")


def _where(obj) -> str:
    return var_path(obj) if isinstance(obj, netCDF4.Variable) else obj.path


# ---------------------------------------------------------------- define_output

def check_targets(targets: dict, infos: dict):
    """Targets must name numeric variables and layouts netCDF-4 (and netCDF4-python) can express."""
    for path, t in targets.items():
        info = infos.get(path)
        if info is None:
            raise InputError(f"rechunk target {path}: no such variable")
        if not info.numeric:
            raise InputError(f"rechunk target {path}: only numeric variables can be re-laid out ({info.dtype})")
        c = t.compression
        if c.shuffle and c.codec not in ("zlib",):
            raise InputError(f"rechunk target {path}: netCDF-4 output can only combine shuffle with deflate")
        if not t.chunks:
            if any(info.unlimited):
                raise InputError(f"rechunk target {path}: an unlimited dimension needs chunks, not contiguous")
            if c.filtered and info.shape:
                raise InputError(f"rechunk target {path}: compression {c.label} needs chunks, not contiguous")
            continue
        if len(t.chunks) != len(info.shape) or any(int(n) < 1 for n in t.chunks):
            raise InputError(f"rechunk target {path}: chunks {list(t.chunks)} do not fit dims {list(info.dims)}")
        for n, length, unlim, dim in zip(t.chunks, info.shape, info.unlimited, info.dims):
            if not unlim and n > length:
                raise InputError(f"rechunk target {path}: chunk {n} exceeds dimension {dim} = {length}")


def define_output(src_path, out_path, targets: dict, max_mem: int, progress=None) -> dict:
    """Write `out_path` (NETCDF4) with the whole content of `src_path` except the values of the target
    variables, which get the Target layout and their full source shape (see size_targets).
    Returns {variable path: HDF5 dataset path in the output} for the targets."""
    infos = {i.path: i for i in scan(src_path)}
    check_targets(targets, infos)
    try:
        with open_dataset(src_path) as src, netCDF4.Dataset(str(out_path), "w", format="NETCDF4") as dst:
            h5 = h5open(src_path) if is_netcdf4(src) else None
            try:
                copies = _define(src, dst, h5, targets)
            finally:
                if h5 is not None:
                    h5.close()
            raw(src)
            raw(dst)
            for s, d in copies:
                copy_values(s, d, max_mem, progress)
    except ClimioError:
        raise
    except (OSError, RuntimeError, ValueError, TypeError, AttributeError, KeyError, IndexError) as e:
        raise disk_full_error(e, out_path, f"writing {out_path}") or DataError(f"cannot write {out_path}: {e}") from None
    return size_targets(src_path, out_path, targets, infos)


def _define(src, dst, h5, targets) -> list:
    """Groups, user types, dims, attributes and variables; returns (source, output) variable pairs
    whose values are to be copied."""
    pairs = [(src, dst)]
    for sg in itertools.islice(walk(src), 1, None):               # parents come before children
        parent = dict((s.path, d) for s, d in pairs)[sg.parent.path]
        pairs.append((sg, parent.createGroup(sg.name)))
    # User types in their source type-id order: the order netCDF-C numbers (and ncdump lists) them,
    # and a compound nested in another one exists before it is used.
    types = {}
    for typ, dg in sorted(((t, dg) for sg, dg in pairs for t in itertools.chain(
            sg.cmptypes.values(), sg.vltypes.values(), sg.enumtypes.values())), key=lambda p: p[0]._nc_type):
        if isinstance(typ, netCDF4.CompoundType):
            types[typ._nc_type] = dg.createCompoundType(typ.dtype, typ.name)
        elif isinstance(typ, netCDF4.VLType):
            types[typ._nc_type] = dg.createVLType(typ.dtype, typ.name)
        else:
            types[typ._nc_type] = dg.createEnumType(typ.dtype, typ.name, typ.enum_dict)

    dims, copies = {}, []
    for sg, dg in pairs:
        copy_attrs(sg, dg, string_attr_names(h5[sg.path] if h5 is not None else None), skip=())
        for d in sg.dimensions.values():
            dims[(sg.path, d.name)] = dg.createDimension(d.name, None if d.isunlimited() else len(d))
        for v in sg.variables.values():
            path = var_path(v)
            target = targets.get(path)
            in_order = "_FillValue" in v.ncattrs() and can_place_fill(v)
            dv = _create_variable(v, dg, target, types, dims, is_netcdf4(src), fill_in_order=in_order)
            skip = [] if in_order else ["_FillValue"]
            if target is not None and target.compression.quantize:
                # netCDF-C writes the attribute of the new quantization; the source's would contradict it
                skip += [n for n in v.ncattrs() if n.startswith("_Quantize")]
            hpath = hdf5_path(h5, path) if h5 is not None else ""
            copy_attrs(v, dv, string_attr_names(h5[hpath]) if hpath else set(), skip=skip,
                       fill=(lambda value, v=v, dv=dv: put_fill_value(dv, v, value)) if in_order else None)
            if path not in targets:
                copies.append((v, dv))
    return copies


def _create_variable(v, dg, target, types, dims, nc4: bool, fill_in_order=False):
    """createVariable with the source's type, fill mode and layout (or the target's). With
    `fill_in_order` the _FillValue is left to copy_attrs, which puts it at its place."""
    k = kind(v)
    if k == "str":
        datatype = str
    elif k:
        datatype = types[v.datatype._nc_type]
    else:
        datatype = v.dtype
    kw = {}
    if not k:
        kw["endian"] = v.endian()          # "native" for netCDF-3
    attrs = v.ncattrs()
    if "_FillValue" in attrs:
        if not fill_in_order:
            kw["fill_value"] = v.getncattr("_FillValue")
    elif not k and v.get_fill_value() is None:
        kw["fill_value"] = False            # the source variable has fill mode off: keep it off
    # (a no-fill variable that also has a _FillValue attribute gets fill on: netCDF4-python cannot set
    # the attribute otherwise, and the attribute matters more to readers than the fill mode.)
    if target is not None:
        kw.update(target.compression.netcdf4_kwargs())
        if target.chunks:
            kw["chunksizes"] = tuple(int(n) for n in target.chunks)
        else:
            kw["contiguous"] = bool(v.ndim)
    elif nc4:
        kw.update(source_layout(v))
    else:
        # netCDF-3: record variables need chunks in netCDF-4 (the library's default shape);
        # the others stay contiguous as they were.
        kw.update(shuffle=False, contiguous=bool(v.ndim) and not any(d.isunlimited() for d in v.get_dims()))
    vdims = tuple(dims[(d.group().path, d.name)] for d in v.get_dims())
    return dg.createVariable(v.name, datatype, vdims, **kw)


def source_layout(v) -> dict:
    """createVariable arguments reproducing a netCDF-4 variable's chunking and filters, without
    quantization: copied values are already quantized, the attribute saying so is copied as it is."""
    f = v.filters() or {}
    kw = {"shuffle": bool(f.get("shuffle")), "fletcher32": bool(f.get("fletcher32"))}
    for codec in ("zlib", "zstd", "bzip2"):
        if f.get(codec):
            kw.update(compression=codec, complevel=f["complevel"])
    if f.get("blosc"):
        kw.update(compression=f["blosc"]["compressor"], complevel=f["complevel"],
                  blosc_shuffle=f["blosc"]["shuffle"])
    if f.get("szip"):
        kw.update(compression="szip", szip_coding=f["szip"]["coding"],
                  szip_pixels_per_block=f["szip"]["pixels_per_block"])
    chunks = chunks_of(v)
    if chunks:
        kw["chunksizes"] = chunks
    else:
        kw["contiguous"] = bool(v.ndim)     # contiguous or compact (compact becomes contiguous)
    return kw


def copy_values(s, d, max_mem: int, progress=None):
    """Copy one variable block by block. A block takes at most half of max_mem: netCDF-C may hold a
    converted copy (byte order, type) of what it writes. Block edges follow the output's chunks, so
    each output chunk is written once, whole; the HDF5 per-chunk bookkeeping of one write call is
    bounded by capping a block at MAX_CHUNKS_PER_WRITE chunks. (`d` was created without attributes,
    so netCDF4-python never applies a copied `least_significant_digit` to what is written.)"""
    shape = tuple(s.shape)
    isz = item_bytes(s)
    chunks = chunks_of(d)
    budget = max(1, max_mem // 2)
    if chunks:
        budget = min(budget, MAX_CHUNKS_PER_WRITE * math.prod(chunks) * isz)
    block = bounded_block(shape, chunks, isz, budget)
    members = list(d.datatype.enum_dict.values()) if kind(d) == "enum" else None
    for index in iter_block_slices(shape, block):
        data = s[index]
        if members is not None:
            # netCDF4-python refuses enum values that are no member, yet unwritten elements read as
            # the default fill (255 for ubyte), often not one. Masked, they pass its check while the
            # buffer it hands to netCDF-C keeps them: in raw mode masked elements are not filled.
            bad = ~np.isin(data, members)
            if bad.any():
                data = np.ma.masked_array(data, mask=bad, fill_value=members[0])
        d[index] = data
        if progress:
            progress(block_elements(index, shape) * isz)


def size_targets(src_path, out_path, targets: dict, infos: dict) -> dict:
    """Give every target dataset its full source shape, check its filter pipeline, return HDF5 paths.

    Why resize with h5py: netCDF-C writes no value here, so an unlimited dimension would stay at
    the length of the copied variables (0 when only targets use it) and the executor could not write
    its chunks (HDF5 refuses chunks beyond a dataset's extent). Writing one value through netCDF-C
    would extend it but also write (and, for filtered variables, compress) a fill chunk the executor
    then overwrites, and a contiguous target cannot have an unlimited dimension anyway. H5Dset_extent
    just changes the dataspace: nothing is allocated. netCDF-C takes an unlimited dimension's length
    as the largest extent of the datasets using it (nc_inq_dimlen, ncdump "// (N currently)") and
    reads unwritten chunks as the fill value, so the file is valid netCDF before the executor runs.
    (The bare dimension-scale dataset of a dimension without coordinate variable is left alone:
    netCDF-C itself never extends it for unlimited dimensions.) The reopened file is checked."""
    mapping = {}
    with h5open(out_path, "r+") as h5:
        for path, t in targets.items():
            info = infos[path]
            hpath = hdf5_path(h5, path)
            if not hpath:
                raise DataError(f"{out_path}: no HDF5 dataset for {path}")
            dset = h5[hpath]
            if dset.shape != info.shape:
                dset.resize(info.shape)
            want = expected_filters(t.compression) if t.chunks else ()
            have = hdf5_filters(dset)
            if have != want:
                raise DataError(f"{out_path}: {path} got HDF5 filters {list(have)}, expected {list(want)} "
                                f"for {t.compression.label}")
            mapping[path] = hpath
        with open_dataset(src_path) as src:
            unlimited = [(f"{g.path.rstrip('/')}/{d.name}", len(d))
                         for g in walk(src) for d in g.dimensions.values() if d.isunlimited()]
    with open_dataset(out_path) as out:
        for dpath, length in unlimited:
            group, name = dpath.rsplit("/", 1)
            n = len((out[group] if group else out).dimensions[name])
            if n != length:
                raise DataError(f"{out_path}: unlimited dimension {dpath} has length {n}, source {length}")
    return mapping


def expected_filters(c: Compression) -> tuple:
    """The HDF5 pipeline netCDF-C builds for a Compression: shuffle before the codec."""
    ids = [FILTER_IDS["shuffle"]] if c.shuffle and c.codec != "none" else []
    if c.codec != "none":
        ids.append(FILTER_IDS["blosc"] if c.codec.startswith("blosc") else FILTER_IDS[c.codec])
    return tuple(ids)
