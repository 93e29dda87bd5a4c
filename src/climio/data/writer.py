"""Streaming writers: netCDF-4 (+ plain binary) files of any size in bounded memory.

Files appear under their final names only when complete: each is written to a hidden temporary
name in the target directory and renamed; any exception (KeyboardInterrupt included) removes it.
"""

import math
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .. import __version__
from climio.dataset.compression import NONE, Compression
from climio.dataset.h5filters import needs_h5py_write, use_hdf5plugin_blosc
from climio.base.errors import DataError, DiskSpaceError, InputError
from climio.runs.staging import staged
from climio.dataset.layout import bounded_block, chunk_bytes, iter_block_slices, library_default_chunks, prime_at_least, validate_chunks
from climio.base.units import format_size
from . import fields

DEFAULT_BLOCK_BYTES = 64 << 20
# HDF5 keeps ~10 KiB of bookkeeping per chunk a write call touches (measured: 4096 chunks of
# 2 KiB in one call grew RSS by 55 MiB), so small chunks also bound the block by count.
MAX_CHUNKS_PER_WRITE = 512
SPACE_MARGIN_FRACTION = 0.05
SPACE_MARGIN_BYTES = 1 << 20     # HDF5's metadata and the last partial block: small beside the data


# ---------------------------------------------------------------- checks

def check_dir(directory) -> Path:
    d = Path(directory)
    if not d.is_dir():
        raise DataError(f"directory {d} does not exist")
    if not os.access(d, os.W_OK | os.X_OK):
        raise DataError(f"directory {d} is not writable")
    return d


def check_space(plans, hint: str = "") -> None:
    """plans: (path, bytes) of files to write. Raise DiskSpaceError if any file system lacks room.
    CLIMIO_SPACE_CHECK=off skips the check (a file system whose free space is not what it says:
    quotas elsewhere, compression); a full disk then still stops the write with one line."""
    if _space_check_off():
        return
    per_fs = {}
    for path, nbytes in plans:
        d = check_dir(Path(path).parent)
        dev = d.stat().st_dev
        first_dir, total = per_fs.get(dev, (d, 0))
        per_fs[dev] = (first_dir, total + nbytes)
    for d, total in per_fs.values():
        _check_room(d, total, hint)


def check_room(directory, nbytes, hint: str = "") -> None:
    """check_space for `nbytes` under a directory that may not exist yet (a study's data directory,
    made later): its nearest existing ancestor's file system. `hint` says how to need less."""
    if _space_check_off():
        return
    p = Path(directory).expanduser().absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    _check_room(p, nbytes, hint)


def _space_check_off() -> bool:
    return os.environ.get("CLIMIO_SPACE_CHECK", "").lower() in ("off", "0", "no")


def _check_room(d: Path, nbytes, hint: str) -> None:
    need = math.ceil(nbytes * (1 + SPACE_MARGIN_FRACTION)) + SPACE_MARGIN_BYTES
    free = shutil.disk_usage(d).free
    if free < need:
        raise DiskSpaceError(f"need {format_size(need)}, only {format_size(free)} free in {d}"
                             + (f": {hint}" if hint else "") + " (CLIMIO_SPACE_CHECK=off to try anyway)")


def _check_block(max_block_bytes) -> int:
    if int(max_block_bytes) < 8:
        raise InputError(f"block size {max_block_bytes} too small: need at least 8 bytes")
    return int(max_block_bytes)


def _create_nc(tmp: Path):
    import netCDF4
    try:
        ds = netCDF4.Dataset(tmp, "w", format="NETCDF4")
    except OSError as exc:
        raise DataError(f"cannot create {tmp}: {exc.strerror or exc}") from None
    ds.set_fill_off()
    return ds


def _open_bin(tmp: Path):
    try:
        return open(tmp, "wb")
    except OSError as exc:
        raise DataError(f"cannot create {tmp}: {exc.strerror}") from None


@contextmanager
def _closing(ds):
    """Close on every path; a close failing after an earlier error must not hide that error."""
    try:
        yield ds
    except BaseException:
        try:
            ds.close()
        except Exception:
            pass
        raise
    ds.close()


def _global_attrs(ds, title: str, seed: int, random: bool) -> None:
    ds.setncatts({
        "title": title,
        "source": "climio make-data",
        "climio_version": __version__,
        "generator_version": fields.GENERATOR_VERSION,
        # netCDF attributes hold at most int64; a larger seed is kept as text.
        "seed": int(seed) if -2**63 <= int(seed) < 2**63 else str(seed),
        "random": int(bool(random)),
        "Conventions": "CF-1.8",
    })


# ---------------------------------------------------------------- 1-D

def write_1d(nc_path, bin_path, nbytes, seed=0, random=False, progress=None,
             max_block_bytes=DEFAULT_BLOCK_BYTES) -> int:
    """netCDF-4 file (dimension n, contiguous float64 `data`) + binary file with the same bytes.

    nbytes is rounded down to whole float64s; returns the bytes of data per file.
    """
    n = int(nbytes) // 8
    if n < 1:
        raise InputError(f"1-D file size {nbytes} B is less than one float64 (8 B)")
    block = max(1, _check_block(max_block_bytes) // 8)
    check_space([(nc_path, n * 8), (bin_path, n * 8)])
    with staged(nc_path, bin_path) as (tmp_nc, tmp_bin):
        with _closing(_create_nc(tmp_nc)) as ds, _open_bin(tmp_bin) as fh:
            var = _define_1d(ds, n, seed, random)
            for start in range(0, n, block):
                _write_block_1d(var, fh, start, min(n, start + block), seed, random, progress)
    return n * 8


# Blocks are made in a function of their own so one block's values are freed before the next
# is computed; a loop variable would keep two blocks alive at once.
def _write_block_1d(var, fh, start, stop, seed, random, progress) -> None:
    values = fields.values_1d(start, stop, seed=seed, random=random)
    var[start:stop] = values
    fh.write(values.astype("<f8", copy=False).data)
    if progress:
        progress(2 * values.nbytes)


def _define_1d(ds, n: int, seed: int, random: bool):
    _global_attrs(ds, "climio synthetic 1-D series", seed, random)
    ds.createDimension("n", n)
    var = ds.createVariable("data", "f8", ("n",), contiguous=True, endian="little", fill_value=False)
    var.set_auto_maskandscale(False)
    if random:
        var.setncatts({"long_name": "uniform random numbers in [0, 1)", "units": "1"})
    else:
        var.setncatts({"long_name": "synthetic series: four sinusoids plus uniform noise", "units": "K"})
    return var


# ---------------------------------------------------------------- 4-D

def resolve_layout(shape, chunks, deflate):
    """(contiguous?, chunk list or None for the library default). Filters need chunks, so a
    request for neither (None) with deflate gets the library default."""
    if chunks is None:
        return (False, None) if deflate else (True, None)
    if chunks == "contiguous":
        if deflate:
            raise InputError("deflate needs a chunked layout: give chunks 'default' or [t,z,y,x], not contiguous")
        return True, None
    if chunks == "default":
        return False, None
    return False, validate_chunks(shape, chunks)


def plan_4d(shape, chunks=None, dtype="f8", deflate=0, max_block_bytes=DEFAULT_BLOCK_BYTES) -> dict:
    """Validate a 4-D request before anything is written; InputError names the first problem."""
    shape = fields.check_shape(shape)
    dt = fields.check_dtype(dtype)
    if isinstance(deflate, bool) or not (isinstance(deflate, (int, np.integer)) and 0 <= deflate <= 9):
        raise InputError(f"deflate level {deflate!r} must be an integer 0..9")
    contiguous, chunk = resolve_layout(shape, chunks, deflate)
    if not contiguous and chunk is None:
        # Ask for the library's choice explicitly: netCDF4-python writes a filter-less variable
        # without chunk sizes as contiguous.
        chunk = list(library_default_chunks(shape, dt.itemsize))
    if chunk is not None:
        _check_chunk_fits(chunk, dt.itemsize, _check_block(max_block_bytes))
    # Edge chunks are stored whole, so a chunk shape that does not divide the array adds bytes.
    stored = shape if chunk is None else [-(-d // c) * c for d, c in zip(shape, chunk)]
    return {"shape": shape, "dtype": dt, "contiguous": contiguous, "chunk": chunk,
            "bytes": math.prod(shape) * dt.itemsize, "bound": math.prod(stored) * dt.itemsize}


def planned_bytes_4d(shape, chunks=None, dtype="f8", deflate=0, max_block_bytes=DEFAULT_BLOCK_BYTES) -> int:
    """Upper bound on the data bytes of the 4-D file (uncompressed, edge chunks padded)."""
    return plan_4d(shape, chunks, dtype, deflate, max_block_bytes)["bound"]


def write_4d(path, shape, chunks=None, dtype="f8", deflate=0, shuffle=False, seed=0, random=False,
             var="ta", progress=None, max_block_bytes=DEFAULT_BLOCK_BYTES, compression=None, values=None) -> int:
    """netCDF-4 file with var[time, lev, lat, lon] and CF coordinates; returns the data bytes.

    chunks: None (contiguous; library default chunks if deflate > 0), 'contiguous', 'default'
    (netCDF library's choice) or [t,z,y,x]. shuffle applies only with deflate, as in netCDF.
    `compression` (a data.compression.Compression) replaces deflate/shuffle when given, for
    quantization and other codecs. `values(sel) -> array` replaces the synthetic field, e.g. to
    copy a real variable into a new layout. Written in blocks that are unions of whole chunks, in C order, so each chunk is compressed
    and written once.
    """
    if compression is None:
        plan = plan_4d(shape, chunks, dtype, deflate, max_block_bytes)
        compression = Compression("zlib", int(deflate), bool(shuffle)) if deflate else NONE
    else:
        plan = plan_4d(shape, chunks, dtype, 1 if compression.filtered else 0, max_block_bytes)
    shape, dt, contiguous, chunk = plan["shape"], plan["dtype"], plan["contiguous"], plan["chunk"]
    check_space([(path, plan["bound"])])
    if values is None:
        def values(sel):
            return fields.values_4d(shape, sel, seed=seed, random=random, dtype=dt)
    via_h5py = needs_h5py_write(compression.codec)
    with staged(path) as (tmp,):
        with _closing(_create_nc(tmp)) as ds:
            v = _define_4d(ds, shape, dt, contiguous, chunk, compression, var, seed, random, max_block_bytes)
            slabs, cache = _blocks(v, shape, dt.itemsize, max_block_bytes)
            if cache and not via_h5py:
                v.set_var_chunk_cache(size=cache[0], nelems=cache[1], preemption=1.0)
            if not via_h5py:
                _fill(v, slabs, values, dt, progress)
        if via_h5py:   # netCDF-C's Blosc filter cannot store a chunk it cannot shrink (climio.dataset.h5filters)
            import h5py
            use_hdf5plugin_blosc()
            rdcc = {"rdcc_nbytes": cache[0], "rdcc_nslots": cache[1], "rdcc_w0": 1.0} if cache else {}
            with h5py.File(tmp, "r+", **rdcc) as f:
                _fill(f[var], slabs, values, dt, progress)
    return plan["bytes"]


def _fill(v, slabs, values, dt, progress) -> None:
    for sel in slabs:
        block = np.asarray(values(sel), dtype=dt)
        v[sel] = block
        if progress:
            progress(block.nbytes)


def _check_chunk_fits(chunk, itemsize, max_block_bytes) -> None:
    size = chunk_bytes(chunk, itemsize)
    if size > max_block_bytes:
        raise InputError(f"chunk shape [{','.join(map(str, chunk))}] is {format_size(size)} per chunk, "
                         f"more than the {format_size(max_block_bytes)} write block")


def _define_4d(ds, shape, dt, contiguous, chunk, compression, var, seed, random, max_block_bytes):
    _global_attrs(ds, "climio synthetic 4-D field", seed, random)
    _define_coords(ds, shape, max_block_bytes)
    kw = {"contiguous": True} if contiguous else {"chunksizes": chunk}
    kw.update(compression.netcdf4_kwargs())
    v = ds.createVariable(var, dt, ("time", "lev", "lat", "lon"), endian="little", fill_value=False, **kw)
    v.set_auto_maskandscale(False)
    if random:
        v.setncatts({"long_name": "uniform random numbers in [0, 1)", "units": "1"})
    else:
        v.setncatts({"standard_name": "air_temperature", "long_name": "Air Temperature (synthetic)", "units": "K"})
    return v


_COORDS = (
    ("time", fields.time_values, {"standard_name": "time", "units": "hours since 2000-01-01 00:00:00",
                                  "calendar": "standard", "axis": "T"}),
    ("lev", fields.lev_values, {"standard_name": "air_pressure", "long_name": "pressure level",
                                "units": "hPa", "positive": "down", "axis": "Z"}),
    ("lat", fields.lat_values, {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"}),
    ("lon", fields.lon_values, {"standard_name": "longitude", "units": "degrees_east", "axis": "X"}),
)


def _define_coords(ds, shape, max_block_bytes) -> None:
    step = max(1, max_block_bytes // 8)
    for (name, values, attrs), n in zip(_COORDS, shape):
        ds.createDimension(name, n)
        c = ds.createVariable(name, "f8", (name,), endian="little", fill_value=False)
        c.setncatts(attrs)
        for start in range(0, n, step):
            stop = min(n, start + step)
            c[start:stop] = values(n, start, stop)


def _blocks(v, shape, itemsize, max_block_bytes):
    """(the write blocks of variable v in C order, its chunk cache (bytes, slots) or None)."""
    chunking = v.chunking()
    if chunking == "contiguous":
        # blocks of whole rows (part of one if a row exceeds the block): contiguous byte ranges
        return iter_block_slices(shape, bounded_block(shape, None, itemsize, max_block_bytes)), None
    unit = list(chunking)
    _check_chunk_fits(unit, itemsize, max_block_bytes)  # the library's default chunks too
    limit = min(max_block_bytes, MAX_CHUNKS_PER_WRITE * chunk_bytes(unit, itemsize))
    block = bounded_block(shape, unit, itemsize, limit)  # a chunk fits: blocks are unions of whole chunks
    return iter_block_slices(shape, block), _chunk_cache(block, unit, itemsize)


def _chunk_cache(block, unit, itemsize) -> tuple:
    """(bytes, slots): room for the chunks of one block and no more.

    Blocks hold whole chunks, so no chunk is evicted (compressed) before it is complete; and
    finished chunks do not pile up in netCDF's default cache (measured: 75 MiB of RSS growth
    with 256 KiB chunks and 8 MiB blocks, against 19 MiB with this cache).
    """
    nchunks = math.prod(-(-b // u) for b, u in zip(block, unit))
    return (nchunks + 1) * chunk_bytes(unit, itemsize), prime_at_least(max(1009, 10 * nchunks))

