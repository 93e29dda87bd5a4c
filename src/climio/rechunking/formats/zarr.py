"""Zarr stores (format 3, or 2) for `climio rechunk`: codecs users pick, optional v3 sharding, the
metadata as xarray writes it (dimension names, CF encodings, consolidated metadata), and the store
layout through zarr-python.

Output: xarray writes the store's metadata and every variable that is not re-laid out
(`to_zarr(compute=False)`: the re-laid-out ones are lazy and never computed); the workers then
write the re-laid-out variables' raw values (as stored in the input: packed integers stay packed,
fill values stay) block by block through zarr-python. A block is a union of whole target chunks
(whole shards when sharded), so no two workers or MPI ranks write the same chunk or shard object
and no lock is needed. So `xarray.open_zarr(out)` equals `xarray.open_dataset(in)`.
Input: every array of the store (groups too) becomes a variable; its dimension names come from
Zarr v3's dimension_names or v2's _ARRAY_DIMENSIONS attribute, as xarray reads them.
"""

import bisect
import os
import shutil
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from climio.dataset.compression import BLOSC_CNAMES as BLOSC_NAMES, Compression, zarr_v3_compressors, zarr_v3_setting
from climio.base.errors import DataError, InputError
from climio.runs.staging import make_marked_dir, replace_output, tmp_name
from .. import blocks
from ..model import Target, VarInfo
from .zarr_groups import _open_group, group_tree  # noqa: F401  (group_tree: this format's face)

ZARR_FORMATS = (2, 3)
ENDIANS = ("little", "big")


@dataclass(frozen=True)
class Settings:
    """The Zarr-only options: format, --shards specs, byte order of the v3 bytes codec."""
    zarr_format: int = 3
    shards: tuple = ()
    endian: str = ""


def check_settings(s: Settings) -> None:
    if s.zarr_format not in ZARR_FORMATS:
        raise InputError(f"--zarr-format {s.zarr_format}: use 2 or 3")
    if s.shards and s.zarr_format != 3:
        raise InputError("--shards needs Zarr format 3 (sharding is a v3 codec)")
    if s.endian and s.endian not in ENDIANS:
        raise InputError(f"--endian {s.endian}: use little or big")
    if s.endian and s.zarr_format != 3:
        raise InputError("--endian is the Zarr v3 bytes codec's; Zarr v2 stores the byte order in its dtype")


_IS_STORE = {}   # s3:// URL -> is_store's answer, within one command (rechunk.remote clears it: forget_stores)


def is_store(path) -> bool:
    """A Zarr store, or a netCDF-4 object in S3, which is read as one through its references
    (rechunk.remote_nc)."""
    from ..remote_nc import is_netcdf_object
    if is_netcdf_object(path):
        return True
    if str(path).startswith("s3://"):   # asked again by the command's format checks: one round trip
        if str(path) not in _IS_STORE:
            from ...stores.chunks import ObjectChunks
            got = ObjectChunks.of(str(path)).get_many(["zarr.json", ".zgroup", ".zarray"])
            _IS_STORE[str(path)] = any(v is not None for v in got.values())
        return _IS_STORE[str(path)]
    p = Path(path)
    from climio.dataset.description import is_local_zarr
    return is_local_zarr(p)


# ---------------------------------------------------------------- codecs

def parse_compression(text: str) -> Compression:
    """A --compression setting for Zarr output: zstdN, gzipN (deflateN is the same), blosc_lz4:N
    and the other Blosc compressors, each with +shuffle (byte shuffle), or none."""
    from climio.dataset.options import parse_compression as parse
    comp = parse(str(text).lower().replace("gzip", "deflate"))
    check_compression(comp, "")
    return comp


def check_compression(comp: Compression, where: str) -> None:
    """A setting Zarr output can write. A source's own quantization (`where` names the variable) is
    already in its values and is carried over as they are; asking for new quantization is an error."""
    if comp.quantize and not where:
        raise InputError(f"{comp.label}: quantization is netCDF-C's and is not written to Zarr")
    if comp.codec not in ("none", "zlib", "zstd") and comp.codec not in BLOSC_NAMES:
        raise InputError(f"{comp.label}: Zarr output takes zstd, gzip (deflate), blosc_* or none{where}")


def codec_encoding(comp: Compression, itemsize: int, s: Settings) -> dict:
    """xarray's to_zarr encoding keys (compressors, filters, serializer) for a Compression. Zarr v3:
    only codecs of the v3 specification (a shuffle goes inside blosc: compression.zarr_v3_compressors
    says how each setting maps); Zarr v2: numcodecs' shuffle filter and compressor, as before."""
    if s.zarr_format == 3:
        import zarr.codecs as zc
        return {"compressors": zarr_v3_compressors(comp, itemsize),
                "serializer": zc.BytesCodec(endian=s.endian or "little")}
    import numcodecs
    pre = []
    if comp.shuffle and not comp.codec.startswith("blosc_") and itemsize > 1:
        pre.append(numcodecs.Shuffle(elementsize=itemsize))
    out = {}
    main = {"none": None, "zlib": lambda: numcodecs.GZip(level=comp.level),
            "zstd": lambda: numcodecs.Zstd(level=comp.level)}.get(comp.codec)
    if comp.codec in BLOSC_NAMES:
        main = lambda: numcodecs.Blosc(cname=BLOSC_NAMES[comp.codec], clevel=comp.level,  # noqa: E731
                                       shuffle=numcodecs.Blosc.SHUFFLE if comp.shuffle else numcodecs.Blosc.NOSHUFFLE)
    out["compressors"] = [main()] if main else None
    out["filters"] = pre or None
    return out


# The levels a codec accepts (zstd's negative "fast" levels included); a level outside is damaged metadata.
LEVELS = {"zstd": range(-131072, 23), "zlib": range(0, 10), "blosc": range(0, 10)}


def _level(conf, key, default, name) -> int:
    """A codec's level from its configuration, checked: a level that is not an integer in the codec's
    range (a damaged .zarray: "clevel": "x" or -1) is one DataError line, not a traceback later."""
    v = conf.get(key, default)
    if v is None:
        v = default
    if isinstance(v, bool) or not isinstance(v, (int, float, str)) or not str(v).lstrip("-").isdigit() \
            or int(v) not in LEVELS[name]:
        raise DataError(f"codec {name} has {key} {v!r}: not a level it accepts (damaged Zarr metadata)")
    return int(v)


def compression_of(arr) -> Compression:
    """The Compression of a Zarr array's codecs (Compression() when it has none we name)."""
    shuffle, codec, level = False, "none", 0
    for c in _codecs(arr):
        name = str(c.get("name") or c.get("id") or "").lower()
        conf = c.get("configuration", c)
        if name in ("shuffle", "numcodecs.shuffle"):
            shuffle = True
        elif name in ("zstd", "gzip", "zlib") and codec == "none":
            codec = "zstd" if name == "zstd" else "zlib"
            level = _level(conf, "level", 1, codec) if conf.get("level") != 0 else 0
        elif name == "blosc" and codec == "none" and "id" not in c:   # v3: may stand for deflate/zstd+shuffle
            b = zarr_v3_setting(conf.get("cname"), _level(conf, "clevel", 5, "blosc"), conf.get("shuffle") != "noshuffle")
            codec, level, shuffle = b.codec, b.level, shuffle or b.shuffle
        elif name == "blosc" and codec == "none":
            cname = {v: k for k, v in BLOSC_NAMES.items()}.get(conf.get("cname"), "blosc_lz4")
            codec, level = cname, _level(conf, "clevel", 5, "blosc")
            shuffle = shuffle or conf.get("shuffle") not in (0, "noshuffle")
    return Compression(codec, level, shuffle and codec != "none")


def _codecs(arr) -> list:
    meta = arr.metadata.to_dict()
    if meta.get("zarr_format") == 2:
        return [c for c in (meta.get("filters") or []) + [meta.get("compressor")] if c]
    out = []
    for c in meta.get("codecs") or []:
        if c.get("name") == "sharding_indexed":
            out += c.get("configuration", {}).get("codecs", [])
        else:
            out.append(c)
    return out


# ---------------------------------------------------------------- input

def _arrays(group, prefix=""):
    # zarr parses each array's metadata here, lazily: a damaged zarr.json / .zarray (a negative or
    # huge shape, a field of the wrong type) raises ValueError, TypeError, KeyError, ... from inside
    # zarr; all of them mean the store is damaged
    try:
        arrays, groups = list(group.arrays()), list(group.groups())
    except Exception as exc:  # noqa: BLE001
        where = getattr(getattr(group, "store_path", None), "path", "") or prefix or "/"
        msg = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise DataError(f"not a readable Zarr store: damaged metadata under {where} ({msg})") from None
    for name, arr in arrays:
        yield f"{prefix}/{name}", arr
    for name, sub in groups:
        yield from _arrays(sub, f"{prefix}/{name}")


def dims_of(arr) -> tuple:
    if arr.ndim == 0:
        return ()
    names = getattr(arr.metadata, "dimension_names", None)
    if names is None:
        names = arr.attrs.get("_ARRAY_DIMENSIONS")
    if names is None or len(names) != arr.ndim:
        raise DataError(f"Zarr array {arr.path} has no dimension names (_ARRAY_DIMENSIONS or dimension_names): "
                        "xarray cannot read it either")
    return tuple(str(n) for n in names)


METADATA_FILES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def check_metadata(path) -> None:
    """Every metadata file of a local store parses as JSON, else one DataError naming the file: a
    consolidated root lets the store open while an array's own zarr.json is cut, and zarr-python
    then fails in the worker that reads the array (a JSONDecodeError traceback before)."""
    import json
    if str(path).startswith("s3://"):
        return
    for key in sorted(k for k in _listing(path) if k.rsplit("/", 1)[-1] in METADATA_FILES):
        f = Path(path, key)
        try:
            json.loads(f.read_bytes())
        except (ValueError, UnicodeDecodeError) as exc:
            where = f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "its bytes"
            raise DataError(f"{f}: truncated or damaged Zarr metadata (not valid JSON at {where})") from None
        except OSError as exc:
            raise DataError(f"{f}: unreadable Zarr metadata ({exc.strerror})") from None


def absent_chunks(path, infos) -> dict:
    """{variable path: (absent, total, the array's fill value)} of the storage objects (chunks, or shards when sharded) an
    array has no object for; zarr-python reads them as the fill value. Often intended (zarr-python
    and climio leave out chunks that are all fill), sometimes a lost file. The grid's size is
    arithmetic and the objects are one listing of the store (zarr-python's nchunks_initialized walks
    every key of the grid: forever for a header claiming a 10^15-long axis)."""
    g = _open_group(path)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in infos:
            arr = g[info.path.lstrip("/")]
            if not arr.ndim:
                continue
            unit = getattr(arr, "shards", None) or arr.chunks
            grid = [-(-int(n) // int(c)) for n, c in zip(arr.shape, unit)]
            total = int(np.prod(grid, dtype=object))
            have = _objects_in_grid(arr, grid, _listing(path))
            if have < total:
                out[info.path] = (total - have, total, arr.fill_value)
    return out


def _objects_in_grid(arr, grid, keys) -> int:
    """How many of the store's `keys` (its listing, _listing) under the array's prefix name a cell of
    its chunk (or shard) grid: "c/1/0", "c.1.0" (v3), "1.0" or "1/0" (v2 and v3's v2 encoding)."""
    prefix = arr.store_path.path.rstrip("/") + "/" if arr.store_path.path else ""
    n = 0
    for key in keys:
        if not key.startswith(prefix):
            continue
        rel = key[len(prefix):]
        rel = rel[2:] if rel[:2] in ("c/", "c.") else rel
        parts = rel.replace("/", ".").split(".")
        if len(parts) == len(grid) and all(p.isdigit() and int(p) < g for p, g in zip(parts, grid)):
            n += 1
    return n


def scan(path) -> list:
    """Every array of the store as a VarInfo (groups depth-first, names sorted as zarr lists them)."""
    check_metadata(path)
    out = []
    for vpath, arr in _arrays(_open_group(path)):
        dt = np.dtype(arr.dtype) if isinstance(arr.dtype, np.dtype) else None
        numeric = dt is not None and dt.kind in "biuf"
        attrs = dict(arr.attrs)
        if arr.ndim and any(int(c) < 1 for c in arr.chunks):   # zarr-python opens it; every grid division fails
            raise DataError(f"{path}: {vpath} has chunk shape [{','.join(str(int(c)) for c in arr.chunks)}]: "
                            "a chunk extent below 1 (damaged Zarr metadata)")
        out.append(VarInfo(path=vpath, dims=dims_of(arr), shape=tuple(arr.shape), unlimited=(False,) * arr.ndim,
                           dtype=dt.str if numeric else (dt.str if dt is not None else "str"),
                           itemsize=dt.itemsize if numeric else 0, chunks=tuple(arr.chunks) if arr.ndim else None,
                           compression=compression_of(arr), fill_value=attrs.get("_FillValue"), attrs=attrs))
    return out


def stored_bytes(path, infos) -> dict:
    from ..remote_nc import RefChunks, is_netcdf_object
    if is_netcdf_object(path):   # a netCDF-4 object read through its references: their byte ranges
        refs = RefChunks.of(str(path))
        return {i.path: refs.stored_bytes(i.path) for i in infos}
    # one listing of the store, not one per array (a round trip each in a bucket), summed in one pass
    # into every directory prefix of every key: an array's stored bytes are its prefix's
    sums = {}
    for key, (size, _) in _listing(path).items():
        at = key.find("/")
        while at > 0:
            sums[key[:at]] = sums.get(key[:at], 0) + size
            at = key.find("/", at + 1)
    return {i.path: sums.get(i.path.strip("/"), 0) for i in infos}


def total_bytes(path) -> int:
    from ..remote_nc import RefChunks, is_netcdf_object
    if is_netcdf_object(path):
        return RefChunks.of(str(path)).stored_bytes()
    return sum(size for size, _ in _listing(path).values())


def chunk_files(path, arrays) -> list:
    """The local files of these arrays' chunks (their metadata documents left out), in key order."""
    keys = sorted(_listing(path))
    out = []
    for a in arrays:   # an array's keys are one run of the sorted listing, found by bisection
        prefix = a.strip("/") + "/"
        i = bisect.bisect_left(keys, prefix)
        while i < len(keys) and keys[i].startswith(prefix):
            if os.path.basename(keys[i]) not in METADATA_FILES:
                out.append(os.path.join(str(path), keys[i]))
            i += 1
    return out


_LISTINGS = {}   # input -> its listing, taken once per command (an input is not written while it is read)


def forget_stores() -> None:
    """Before and after a command: the inputs' listings, the s3:// store checks and opened groups are
    taken again by the next (tests, notebooks and scripts run several commands in one process; a
    store may change between them)."""
    from .zarr_groups import _REMOTE_GROUPS
    _LISTINGS.clear()
    _IS_STORE.clear()
    _REMOTE_GROUPS.clear()


def forget_local() -> None:
    """Before and after a command: the local stores' listings (rechunk.remote forgets the buckets')."""
    for key in [k for k in _LISTINGS if not k.startswith("s3://")]:
        del _LISTINGS[key]


def _remote_listing(url: str) -> dict:
    if url not in _LISTINGS:
        from ...stores.chunks import ObjectChunks
        _LISTINGS[url] = ObjectChunks.of(url).listing()
    return _LISTINGS[url]


def _listing(path) -> dict:
    """{key: (size, None)} of a local store's files ("ta/0.0.0.0", "zarr.json"), or a bucket's
    listing: taken once per command, so that the metadata check, the absent-chunk count, the stored
    sizes and the readahead share it (each walked the store before: 0.8 s of a 1 GiB store's 4,678
    files went to four walks, rglob and zarr's nbytes_stored)."""
    p = str(path)
    if p.startswith("s3://"):
        return _remote_listing(p)
    if p not in _LISTINGS:
        out, todo, seen = {}, [""], set()
        while todo:
            rel = todo.pop()
            try:
                here = os.stat(os.path.join(p, rel))
                if (here.st_dev, here.st_ino) in seen:   # a symlink back up the tree: listed once
                    continue
                seen.add((here.st_dev, here.st_ino))
                entries = list(os.scandir(os.path.join(p, rel)))
            except OSError:
                continue
            for e in entries:
                key = f"{rel}/{e.name}" if rel else e.name
                if e.is_dir(follow_symlinks=True):   # zarr-python reads through symlinks too
                    todo.append(key)
                else:
                    try:
                        out[key] = (e.stat().st_size, None)
                    except OSError:
                        pass
        _LISTINGS[p] = out
    return _LISTINGS[p]


def open_input(path):
    return nullcontext(None)


def input_source(info: VarInfo, path: str, handle, cache_bytes: int):
    return blocks.Source(str(path), "zarr", info.path.lstrip("/"), info.dtype, tuple(info.shape),
                         tuple(info.chunks) if info.chunks else None), None


# ---------------------------------------------------------------- the output's layout

def chunk_shape(info: VarInfo, target: Target) -> tuple:
    """Zarr chunks of a target: its chunks clipped to the shape (a contiguous target is one chunk)."""
    chunks = target.chunks or info.shape
    return tuple(max(1, min(int(c), int(d))) for c, d in zip(chunks, info.shape))


def shard_shapes(infos, targets: dict, specs) -> dict:
    """{variable path: shard shape or None} from --shards specs (dim/len,... or var:s1,s2,...; a
    dimension not named keeps one chunk per shard). A shard length must be a multiple of the chunk
    length; `dim/` is the whole dimension, rounded up to whole chunks."""
    if not specs:
        return {p: None for p in targets}
    from ..spec import _match, _parse_specs
    dims, var_specs, omit = _parse_specs(specs)
    if omit:
        raise InputError("--shards '/' means nothing: give dim/len or var:s1,s2,...")
    by_path = {i.path: i for i in infos}
    per_var = {}
    for name, lens, text in var_specs:
        for info in _match(name, infos):
            per_var.setdefault(info.path, (lens, text))
    out = {}
    for path, t in targets.items():
        info = by_path[path]
        chunks = chunk_shape(info, t)
        if path in per_var:
            lens, text = per_var[path]
            if lens is None or len(lens) != len(chunks):
                raise InputError(f"--shards '{text}' needs {len(chunks)} lengths for {path}")
        else:
            lens = [dims.get(d, c) if d in dims else c for d, c in zip(info.dims, chunks)]
        shards = []
        for d, n, c, length in zip(info.dims, lens, chunks, info.shape):
            n = -(-max(int(length), 1) // c) * c if n is None else int(n)
            if n % c:
                raise InputError(f"--shards: {d}/{n} for {path} is not a multiple of its chunk length {c} "
                                 f"(try {d}/{max(c, n // c * c)})")
            shards.append(n)
        out[path] = tuple(shards) if tuple(shards) != chunks else None
    return out


def layout_targets(infos, targets: dict, settings: Settings) -> dict:
    """The Targets the planner aligns blocks to: the shard shape when sharded (a shard is written
    whole), else the chunk shape."""
    by_path = {i.path: i for i in infos}
    shards = shard_shapes(infos, targets, settings.shards)
    return {p: Target(shards[p] or chunk_shape(by_path[p], t), t.compression) for p, t in targets.items()}


# ---------------------------------------------------------------- output

def commit(tmp: Path, final: Path) -> None:
    """Rename the complete store to its name (without the staging marker); an existing one
    (--force) is moved aside first and removed after the rename, so that a run killed in between
    leaves it for the next run to put back or remove (staging.replace_output)."""
    replace_output(tmp, final)


def discard(path) -> None:
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def staged(out_path):
    """A store written under a temporary name beside OUT, renamed when complete (removed on any failure)."""
    tmp = tmp_name(out_path)
    try:
        yield tmp
        commit(tmp, out_path)
    except BaseException:
        discard(tmp)
        raise


def define_output(in_path, in_format: str, tmp, targets: dict, infos, max_mem: int, settings: Settings) -> dict:
    """Write the store's metadata and the variables not re-laid out (xarray), every group of the
    input (empty ones too), consolidate it; return {variable path: array path in the store} for the
    targets. `tmp` is created first with staging's marker: a run killed at any point after leaves a
    directory the next run to OUT knows as its own (staging.stale_temporaries) and removes.
    No Dask: the targets' metadata is xarray's own, made from their zero-length cuts (_define_like_xarray)."""
    import zarr

    from . import xarray_io
    check_settings(settings)
    by_path = {i.path: i for i in infos}
    shards = shard_shapes(infos, targets, settings.shards)
    make_marked_dir(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group, ds in xarray_io.groups(in_path, in_format, targets, dask=False):
            enc, laid_out = {}, {}
            for name in ds.variables:
                path = xarray_io.var_path(group, name)
                if path not in targets:
                    enc[name] = xarray_io.cf_encoding(ds[name].encoding)
                    continue
                info = by_path[path]
                e = xarray_io.cf_encoding(ds[name].encoding, np.dtype(info.dtype))
                e.update(codec_encoding(targets[path].compression, info.itemsize, settings))
                e["chunks"] = chunk_shape(info, targets[path])
                if shards[path]:
                    e["shards"] = shards[path]
                laid_out[name] = e
            where = None if group == "/" else group.lstrip("/")
            _to_zarr(ds.drop_vars(list(laid_out)), tmp, where, enc, settings, tmp)
            if laid_out:
                _define_like_xarray(ds, laid_out, Path(tmp, where or ""), settings, tmp)
        zarr.consolidate_metadata(str(tmp), zarr_format=settings.zarr_format)
    g = _open_group(tmp)
    for path in targets:
        arr = g[path.lstrip("/")]
        want = np.dtype(by_path[path].dtype).newbyteorder("=")
        if np.dtype(arr.dtype).newbyteorder("=") != want:
            raise DataError(f"{tmp}: {path} was defined as {arr.dtype}, the input stores {want}")
    return {p: p.lstrip("/") for p in targets}


def _to_zarr(ds, store, group, encoding: dict, settings: Settings, out) -> None:
    """ds.to_zarr (values not lazy are written); xarray's complaints are one DataError naming `out`."""
    try:
        ds.to_zarr(store, group=group, mode="a", encoding=encoding, zarr_format=settings.zarr_format,
                   safe_chunks=False, consolidated=False)
    except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
        raise DataError(f"cannot write {out}: {exc}") from None


def _define_like_xarray(ds, encoding: dict, where: Path, settings: Settings, out) -> None:
    """The re-laid-out variables' metadata as xarray's to_zarr writes it (attributes, CF encoding,
    fill value, codecs, chunks, shards, dimension names), without their values and without Dask
    (to_zarr(compute=False) needs Dask arrays: 0.8 s of CPU importing dask.array, the longest part
    of defining a store): xarray writes the variables cut to zero length into memory, and each
    array's metadata documents go into the store with only the shape set back to the variable's.
    tests/test_rechunk_define.py holds them equal, byte for byte, to to_zarr(compute=False)'s."""
    import xarray as xr
    import zarr
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import MemoryStore
    empty = xr.Dataset({n: ds.variables[n][tuple(slice(0, 0) for _ in ds.variables[n].dims)] for n in encoding})
    mem = MemoryStore()
    _to_zarr(empty, mem, None, encoding, settings, out)
    for name in encoding:
        meta = zarr.open_array(mem, path=name, mode="r").metadata.update_shape(tuple(ds.variables[name].shape))
        (where / name).mkdir(parents=True, exist_ok=True)
        for key, buf in meta.to_buffer_dict(default_buffer_prototype()).items():
            (where / name / key).write_bytes(buf.to_bytes())


def lite_specs(store, paths) -> dict:
    """{array path: its zarr_lite.LiteSpec, or None} for arrays of the local store `store`."""
    from ..zarr_lite import describe
    g = _open_group(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {p: describe(g[p.lstrip("/")], str(store)) for p in paths}


def open_output(tmp):
    return nullcontext(str(tmp))


def output(store: str, key: str, target=None, remote: str = ""):
    """(Sink, write): the worker writes its chunks into the store itself; the parent has nothing to
    do. With `remote` (s3://BUCKET/STORE) the chunks go to the bucket and the Sink carries the
    array's metadata documents from the local `store` (they reach the bucket last)."""
    def write(result):
        result.payload = None
    if not remote:
        return blocks.Sink("zarr", path=str(store), var=key), write
    meta = tuple((f"{key}/{name}", (Path(store) / key / name).read_bytes())
                 for name in ("zarr.json", ".zarray", ".zattrs") if (Path(store) / key / name).is_file())
    return blocks.Sink("zarr", path=str(store), var=key, remote=remote, meta=meta), write


def check_written(tmp: Path, jobs) -> None:
    """Before the rename: the store opens (consolidated) with every variable at its full shape.
    Times undecoded: an input time xarray cannot decode ('months since') is carried as it is."""
    import xarray as xr
    g = _open_group(tmp)
    for j in jobs:
        shape = tuple(g[j.info.path.lstrip("/")].shape)
        if shape != tuple(j.info.shape):
            raise DataError(f"{j.info.path}: output shape {shape} != input {tuple(j.info.shape)}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xr.open_zarr(str(tmp), consolidated=True, decode_times=False, decode_timedelta=False,
                         chunks=None).close()
    except Exception as exc:  # xarray raises many types
        raise DataError(f"the output does not open with xarray.open_zarr: {exc}") from None
