"""The 4-D field as a Zarr v3 store (a directory), with or without sharding, in bounded memory.

    write_zarr_4d("field4d.zarr", shape, chunks=[1,1,Y,X], shards=[8,1,Y,X], compression=...)

The same values and CF attributes as the netCDF-4 writer (climio.data.fields), variable `ta`
over (time, lev, lat, lon) with `dimension_names`, so xarray.open_zarr reads it as the netCDF
file. Written in blocks that are unions of whole shards (or chunks), each written once; the
store is written under a marked temporary name and renamed when complete (climio.runs.staging).
Codecs: none, deflateN (Zarr's gzip codec, level N), zstdN, blosc_*N, with shuffle as a filter
(blosc: its own shuffle) and bitroundN as numcodecs' BitRound filter.
"""

import math
import shutil
from pathlib import Path

import numpy as np

from .. import __version__
from climio.base.errors import InputError
from climio.dataset.layout import bounded_block, iter_block_slices, validate_chunks
from climio.runs.staging import make_marked_dir, replace_output, tmp_name
from . import fields
from climio.dataset.compression import NONE, Compression, zarr_v3_compressors
from .writer import _COORDS, DEFAULT_BLOCK_BYTES, check_space

ZARR_NAME = "field4d.zarr"


def zarr_codecs(compression: Compression, itemsize: int) -> dict:
    """create_array keyword arguments (filters, compressors) for a climio compression setting: v3
    specification codecs (a shuffle goes inside blosc: compression.zarr_v3_compressors)."""
    c = compression or NONE
    filters = []
    if c.quantize:
        from zarr.codecs.numcodecs import BitRound
        if c.quantize != "BitRound":
            raise InputError(f"{c.label}: Zarr output quantizes with bitroundN only")
        filters.append(BitRound(keepbits=int(c.nsd)))
    return {"filters": filters or None, "compressors": zarr_v3_compressors(c, itemsize) or None}


def check_shards(shape, chunks, shards):
    """Shards: whole multiples of the chunk shape; InputError otherwise."""
    if shards is None:
        return None
    shards = validate_chunks(shape, shards)
    bad = [i for i, (s, c) in enumerate(zip(shards, chunks)) if s % c]
    if bad:
        raise InputError(f"shard shape [{','.join(map(str, shards))}] is not a whole number of chunks "
                         f"[{','.join(map(str, chunks))}] along dimension {bad[0]}")
    return list(shards)


def zarr_chunks(shape, chunks, itemsize):
    """[t,z,y,x] chunks for Zarr: given, or the netCDF default's shape ('default'/None); Zarr has
    no contiguous layout."""
    from climio.dataset.layout import library_default_chunks
    if chunks == "contiguous":
        raise InputError("Zarr stores are always chunked: give --chunks T,Z,Y,X or default, not contiguous")
    if chunks in (None, "default"):
        return list(library_default_chunks(shape, itemsize))
    return list(validate_chunks(shape, chunks))


def write_zarr_4d(path, shape, chunks=None, shards=None, dtype="f8", compression=None, seed=0, random=False,
                  var="ta", progress=None, max_block_bytes=DEFAULT_BLOCK_BYTES) -> int:
    """Write the store at `path`; returns the data bytes (uncompressed)."""
    import zarr
    shape = fields.check_shape(shape)
    dt = fields.check_dtype(dtype)
    chunk = zarr_chunks(shape, chunks, dt.itemsize)
    shard = check_shards(shape, chunk, shards)
    unit = shard or chunk
    if math.prod(unit) * dt.itemsize > max_block_bytes:
        raise InputError(f"a {'shard' if shard else 'chunk'} of [{','.join(map(str, unit))}] is more than the "
                         f"{max_block_bytes >> 20} MiB write block")
    nbytes = math.prod(shape) * dt.itemsize
    final = Path(path)
    check_space([(final, nbytes)])
    codecs = zarr_codecs(compression, dt.itemsize)
    tmp = tmp_name(final)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        # marked from its creation: what a SIGKILLed run leaves is the next run's to remove
        make_marked_dir(tmp)
        root = zarr.open_group(str(tmp), mode="a", zarr_format=3, attributes=_global_attrs(seed, random))
        for (name, values, attrs), n in zip(_COORDS, shape):
            c = root.create_array(name, shape=(n,), dtype="f8", chunks=(n,), dimension_names=[name],
                                  attributes=attrs, compressors=None, fill_value=0.0)
            c[:] = values(n, 0, n)
        a = root.create_array(var, shape=tuple(shape), dtype=dt, chunks=tuple(chunk),
                              shards=tuple(shard) if shard else None,
                              dimension_names=[name for name, _, _ in _COORDS],
                              attributes=_var_attrs(random), fill_value=0.0, **codecs)
        for sel in iter_block_slices(shape, bounded_block(shape, unit, dt.itemsize, max_block_bytes)):
            block = np.asarray(fields.values_4d(shape, sel, seed=seed, random=random, dtype=dt), dtype=dt)
            a[sel] = block
            if progress:
                progress(block.nbytes)
        replace_output(tmp, final)   # an existing store (--force) is moved aside, then removed
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return nbytes


def _global_attrs(seed, random) -> dict:
    return {"title": "climio synthetic 4-D field", "source": "climio make-data", "climio_version": __version__,
            "generator_version": fields.GENERATOR_VERSION, "seed": int(seed) if abs(int(seed)) < 2**53 else str(seed),
            "random": int(bool(random)), "Conventions": "CF-1.8"}


def _var_attrs(random) -> dict:
    if random:
        return {"long_name": "uniform random numbers in [0, 1)", "units": "1"}
    return {"standard_name": "air_temperature", "long_name": "Air Temperature (synthetic)", "units": "K"}
