"""netCDF-4/HDF5 (and netCDF-3/CDF-5 input) for `climio rechunk`: reading variables as raw chunks
or through HDF5/netCDF-C, defining the output file, writing encoded chunks with HDF5 direct chunk
writes (or blocks through HDF5's pipeline), and checking the result.

The metadata side (scan, define the output with everything but the bulk data) is rechunk.meta;
a Zarr input's metadata is written through xarray, as xarray's own to_netcdf would write it.
"""

import os
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path

from climio.base.errors import DataError, disk_full_error
from climio.dataset.h5filters import use_hdf5plugin_blosc
from climio.runs.staging import staged as _staged
from .. import blocks, codec, meta
from ..model import VarInfo

FORMAT_NAME = "netcdf4"


# ---------------------------------------------------------------- input

def scan(path) -> list:
    return meta.scan(path)


def stored_bytes(path, infos) -> dict:
    """Bytes each variable occupies in the file (compressed size), for the cost model and disk check."""
    import h5py
    if not h5py.is_hdf5(path):
        return {v.path: v.nbytes for v in infos}
    try:
        with h5py.File(path, "r") as f:
            return {v.path: (f[v.hdf5_path].id.get_storage_size() if v.hdf5_path else v.nbytes) for v in infos}
    except (RuntimeError, OSError, KeyError) as exc:   # a damaged chunk index (HDF5: "wrong B-tree signature")
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: damaged HDF5 structure ({why})") from None


def total_bytes(path) -> int:
    return Path(path).stat().st_size


def open_input(path):
    """The handle input_source reads the chunk index and dataset properties from (h5py, or None)."""
    import h5py
    return h5py.File(path, "r") if h5py.is_hdf5(path) else nullcontext(None)


def filters_of(dset) -> list:
    """[(filter id, client values)] of a dataset's pipeline."""
    plist = dset.id.get_create_plist()
    return [(code, values) for code, _, values, _ in (plist.get_filter(i) for i in range(plist.get_nfilters()))]


def chunk_index(dset) -> dict:
    """Chunk origin (elements) -> (file address, stored size, filter mask) for every allocated chunk."""
    index = {}

    def add(info):
        index[tuple(info.chunk_offset)] = (info.byte_offset, info.size, info.filter_mask)

    if hasattr(dset.id, "chunk_iter"):
        dset.id.chunk_iter(add)
    else:  # HDF5 < 1.12.3: by index (slower, but only once per variable)
        for i in range(dset.id.get_num_chunks()):
            add(dset.id.get_chunk_info(i))
    return index


def input_source(info: VarInfo, path: str, h5file, cache_bytes: int):
    """(Source, chunk index or None) for reading a variable of the input file."""
    if not info.hdf5_path:
        return blocks.Source(path, "netcdf4", info.path, info.dtype, info.shape, None), None
    if not codec.can_decode(info.filters):
        use_hdf5plugin_blosc()   # before the dataset opens: zstd, blosc, bzip2... for h5py's HDF5
    dset = h5file[info.hdf5_path]
    fill = dset.fillvalue
    kind = "h5py"
    if dset.chunks and codec.can_decode(info.filters) and h5file.userblock_size == 0:
        kind = "direct"
    extent = tuple(dset.shape) if tuple(dset.shape) != tuple(info.shape) else None
    src = blocks.Source(path, kind, info.hdf5_path, dset.dtype.str, tuple(info.shape), dset.chunks,
                        tuple(info.filters), fill.item() if hasattr(fill, "item") else fill, cache_bytes, extent)
    if kind != "direct":
        return src, None
    index = chunk_index(dset)
    _agrees_with_the_library(path, dset, index, info.filters)
    return src, index


CHECKED_CHUNKS = 3     # the first, middle and last chunk of the index (by file address)


def _agrees_with_the_library(path, dset, index, filters) -> None:
    """Decode a few chunks the way the converter will (their address in the index, climio's codec) and
    compare them with what HDF5 itself reads there. A damaged file can make the two disagree (the
    seed-38 fuzz run: HDF5 read a chunk as fill values while its index entry held the old data), and
    converting would then give other values than every netCDF reader sees: one DataError line instead."""
    import numpy as np
    if not index:
        return
    entries = sorted(index.items(), key=lambda kv: kv[1][0])
    picks = {entries[0][0], entries[len(entries) // 2][0], entries[-1][0]}
    chunks, shape, dt = dset.chunks, dset.shape, np.dtype(dset.dtype)
    nbytes = int(np.prod(chunks)) * dt.itemsize
    with open(path, "rb") as fh:
        for origin in sorted(picks)[:CHECKED_CHUNKS]:
            addr, size, mask = index[origin]
            fh.seek(addr)
            try:
                mine = np.frombuffer(codec.decode(fh.read(size), filters, mask, nbytes, dt.itemsize), dt)
            except Exception:  # noqa: BLE001 -- a chunk that does not decode is the executor's one line
                continue
            sel = tuple(slice(o, min(o + c, n)) for o, c, n in zip(origin, chunks, shape))
            part = mine.reshape(chunks)[tuple(slice(0, s.stop - s.start) for s in sel)]
            theirs = dset[sel]
            if part.tobytes() != np.ascontiguousarray(theirs).tobytes():
                raise DataError(f"{path}: {dset.name}: the chunk at {list(origin)} reads differently through HDF5 "
                                "than its index entry holds (damaged HDF5 structure)")


# ---------------------------------------------------------------- output

def commit(tmp, final) -> None:
    os.replace(tmp, final)


def discard(path) -> None:
    Path(path).unlink(missing_ok=True)


@contextmanager
def staged(out_path):
    """The output file under a temporary name, renamed when complete (removed on any failure)."""
    with _staged(out_path) as (tmp,):
        yield tmp


def define_output(in_path, in_format: str, tmp, targets: dict, infos, max_mem: int, settings=None) -> dict:
    """Write `tmp` with everything but the target variables' values; {variable path: HDF5 path}."""
    if in_format == FORMAT_NAME:
        return meta.define_output(in_path, tmp, targets, max_mem)
    return _define_from_xarray(in_path, tmp, targets)


def _define_from_xarray(in_path, tmp, targets: dict) -> dict:
    """A Zarr input: xarray writes the file group by group, empty groups too (coordinates and every
    variable that is not re-laid out, with their CF encodings, times as stored); the targets get
    their layout and no values (filled by the executor)."""
    from . import xarray_io
    bounds = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group, ds in xarray_io.groups(in_path, "zarr", targets):
            bounds[group] = bounds_attrs(ds)
            enc = {}
            for name in ds.variables:
                path = xarray_io.var_path(group, name)
                if path in targets:
                    t = targets[path]
                    e = xarray_io.cf_encoding(ds[name].encoding)
                    e.update(t.compression.netcdf4_kwargs())
                    e.update({"chunksizes": tuple(t.chunks)} if t.chunks else {"contiguous": True})
                    enc[name] = e
                else:
                    enc[name] = xarray_io.cf_encoding(ds[name].encoding)
            try:
                ds.to_netcdf(tmp, mode="w" if group == "/" else "a", group=None if group == "/" else group,
                             format="NETCDF4", engine="netcdf4", encoding=enc, compute=False)
            except (ValueError, TypeError, RuntimeError, OSError) as exc:
                # netCDF-C reports a create on a full disk as "Permission denied" (errors.disk_full_error)
                raise disk_full_error(exc, tmp, f"writing {tmp}") or DataError(f"cannot write {tmp}: {exc}") from None
    restore_bounds_attrs(tmp, bounds)
    found = {i.path: i for i in meta.scan(tmp)}
    out = {}
    with meta.h5open(tmp) as h5:
        for path in targets:
            if path not in found:
                raise DataError(f"{tmp}: {path} was not defined")
            out[path] = meta.hdf5_path(h5, path)
    return out


def bounds_attrs(ds) -> dict:
    """{name: attributes} of the variables another variable names as its `bounds`."""
    names = {str(v.attrs.get("bounds")) for v in ds.variables.values()} & set(map(str, ds.variables))
    return {n: dict(ds[n].attrs) for n in sorted(names)}


def restore_bounds_attrs(tmp, bounds: dict) -> None:
    """xarray's netCDF writer drops a bounds variable's attributes that equal its parent's (units,
    calendar, long_name...: its issue #2921, CF says bounds inherit them); the input had them, so
    they are put back, the attributes in the input's order and those xarray added (its CF
    encodings) after them."""
    import netCDF4
    with netCDF4.Dataset(tmp, "a") as nc:
        for group, wanted in bounds.items():
            g = nc if group == "/" else nc[group]
            for name, attrs in wanted.items():
                v = g.variables[name]
                have = v.ncattrs()
                if all(k in have for k in attrs):
                    continue
                added = {k: v.getncattr(k) for k in have if k not in attrs and k != "_FillValue"}
                for k in have:
                    if k != "_FillValue":
                        v.delncattr(k)
                v.setncatts({**{k: x for k, x in attrs.items() if k != "_FillValue"}, **added})


def output_sink(dset) -> blocks.Sink:
    """Encode chunks ourselves ("chunks", written with HDF5 direct chunk writes) when the output
    dataset's pipeline is only shuffle/deflate; otherwise hand the block to HDF5 ("array")."""
    filters = filters_of(dset)
    if dset.chunks and codec.can_decode([f for f, _ in filters]):
        level = next((v[0] if v else 6 for f, v in filters if f == codec.FILTER_DEFLATE), 0)
        shuffled = any(f == codec.FILTER_SHUFFLE for f, _ in filters)
        return blocks.Sink("chunks", tuple(dset.chunks), shuffled, int(level))
    return blocks.Sink("array")


def writer(sink: blocks.Sink, dset):
    """The parent's write of one result: whole encoded chunks, or the block through HDF5."""
    def write(result):
        if sink.kind == "chunks":
            with blocks.chunks_of(result.payload) as chunks:
                for origin, data in chunks:
                    dset.id.write_direct_chunk(origin, data, 0)
        else:
            sel = tuple(slice(s, s + n) for s, n in zip(result.start, result.count))
            if result.payload.size:
                dset[sel] = result.payload
        result.payload = None
    return write


@contextmanager
def open_output(tmp):
    import h5py
    with h5py.File(tmp, "r+") as out:
        yield out


def output(out, key: str, target=None):
    """(Sink, write function) for one target variable of the open output."""
    if target is None or target.compression.codec not in ("none", "zlib"):
        use_hdf5plugin_blosc()   # before the dataset opens (climio.dataset.h5filters says why)
    dset = out[key]
    sink = output_sink(dset)
    return sink, writer(sink, dset)


def check_written(tmp: Path, jobs) -> None:
    """Before the rename: the output must open and hold every variable at its full shape."""
    import netCDF4
    try:
        with netCDF4.Dataset(tmp, "r") as ds:
            for j in jobs:
                shape = tuple(ds[j.info.path].shape)
                if shape != tuple(j.info.shape):
                    raise DataError(f"{j.info.path}: output shape {shape} != input {tuple(j.info.shape)}")
    except OSError as exc:
        raise DataError(f"the output does not open as netCDF: {exc}") from None
