"""`climio rechunk 'in/*.nc' OUT --concat time`: many netCDF files written as one dataset (one Zarr
store or one netCDF-4 file), in bounded memory.

The files are opened, ordered and checked first (fileset.py: nothing is written before every check
has passed). The dataset is the files concatenated as xarray's open_mfdataset(combine='by_coords',
data_vars='minimal', coords='minimal', compat='override', join='exact') makes it: variables along
the dimension concatenated, the others and the attributes taken from the first file. Values are
carried as stored (packed integers stay packed, times stay numbers with their units), so
`xr.open_zarr(OUT)` is identical to that open_mfdataset.

Zarr: xarray writes the metadata and the small variables (to_zarr, compute=False); the variables
along the dimension are then streamed block by block: a block is whole target chunks (as many as
--max-mem / (2 x workers) holds), read from the one or two files it spans and encoded and written
chunk by chunk by the worker processes themselves (zarr_chunks.ChunkIO), so no block passes
through the parent and at most one block per worker is in memory. netCDF-4 (one HDF5 writer):
xarray writes the file, the large variables as Dask arrays of blocks of the same bound, computed one
after another by Dask's synchronous scheduler.
"""

import dataclasses
import resource
import time
from pathlib import Path

import numpy as np

from climio.base.errors import DataError, DiskSpaceError, InputError, disk_full_in
from climio.base.units import format_size, rate_MBps
from climio.machine.memory import default_max_mem
from climio.runs.staging import remove_stale, stale_temporaries
from . import formats


def rechunk_concat(inputs, out, opts, dim: str, allow_overlap=False, dry_run=False, say=print) -> dict:
    """Write the files `inputs` (paths or a glob) as one dataset along `dim` to `out`; the summary."""
    from . import many
    from .command import _targets, zarr_settings   # not at the top: the block workers import this module
    from .fileset import open_fileset
    out = Path(out)
    many.refuse_url(out, "output")
    paths = many.expand(inputs)
    out_fmt = formats.output_format(out, opts.out_format)
    if opts.shards:
        raise InputError("--shards with --concat is not supported: write the store unsharded, then "
                         "`climio rechunk OUT.zarr SHARDED.zarr --shards ...`")
    # every variable along the dimension is streamed: one left out would be loaded whole
    for flag, given in (("--var", opts.variables), ("--verify", opts.verify), ("--tmp", opts.tmp_dir)):
        if given:
            raise InputError(f"{flag} is not supported with --concat (every variable is written; compare the "
                             "output with xr.open_mfdataset to check it)" if flag != "--tmp" else
                             "--tmp is not used with --concat (one pass, no intermediate file)")
    if out_fmt == "zarr":
        formats.module("zarr").check_settings(zarr_settings(opts))
    _check_output(out, opts.force, paths)
    remove_stale(stale_temporaries(out), say, "rechunk", remove=not dry_run)
    t0 = time.perf_counter()
    pool = None if dry_run else start_pool(opts.workers)   # its workers start while the files are checked
    fs = None
    sync = _synchronous_dask()   # entered here, left in the finally below
    sync.__enter__()
    try:
        # Zarr: the values are never computed through Dask (few tasks); netCDF-4: Dask reads them,
        # in blocks cut from the stored chunks
        fs = open_fileset(paths, dim, allow_overlap, one_chunk=out_fmt == "zarr")
        for line in fs.notes:
            say(line)
        combined = combine(fs)
        infos = _infos(fs)
        targets = _targets(infos, opts, paths[0], out_fmt)
        streamed = [v for v in infos if v.path in targets and v.dims[:1] == (dim,) and len(v.dims) > 1]
        budget = block_budget(opts.max_mem or default_max_mem(), opts.workers, streamed)
        plan = {v.path: block_shape(v.shape, _chunks(v, targets[v.path]), v.itemsize, budget) for v in streamed}
        summary = {"inputs": [str(p) for p in fs.paths], "output": str(out), "concat": dim, "steps": fs.total,
                   "notes": list(fs.notes), "workers": opts.workers, "block_bytes": budget,
                   "blocks": {p: n_blocks(next(v.shape for v in streamed if v.path == p), b) for p, b in plan.items()}}
        for v in streamed:
            say(f"{v.path} [{fs.total} {dim} from {len(fs.paths)} files] -> {targets[v.path].label()}: "
                f"{summary['blocks'][v.path]} block(s) of at most {format_size(budget)}")
        if dry_run:
            return summary
        writer = formats.module(out_fmt)
        try:
            with writer.staged(out) as tmp:
                if out_fmt == "zarr":
                    _write_zarr(fs, combined, infos, targets, streamed, plan, tmp, opts, pool)
                else:
                    _write_netcdf(fs, combined, infos, targets, streamed, plan, tmp)
        except (OSError, RuntimeError, ValueError) as exc:   # HDF5, a worker's I/O, a worker that died
            if disk_full_in(exc):
                raise DiskSpaceError(f"disk full while writing {out}: nothing written (temporary output removed)") \
                    from None
            raise DataError(f"I/O error while concatenating: {type(exc).__name__}: {exc}; nothing written to "
                            f"{out}") from None
    finally:
        sync.__exit__(None, None, None)
        if fs is not None:
            fs.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    seconds = time.perf_counter() - t0
    nbytes = sum(v.nbytes for v in streamed)
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
    summary.update(seconds=seconds, bytes=nbytes, rate_MBps=rate_MBps(nbytes, seconds), peak_rss=peak)
    say(f"concatenated {len(fs.paths)} files along {dim} ({fs.total} steps), {format_size(nbytes)} in "
        f"{seconds:.1f} s ({summary['rate_MBps']:.0f} MB/s), peak RSS {format_size(peak)} "
        f"(this process + its largest worker) -> {out}")
    return summary


def _synchronous_dask():
    """dask.config.set(scheduler=<the synchronous scheduler's function>) for the command's few Dask
    computations (the files' small variables loaded, the netCDF-4 output's blocks one at a time).
    The function, not its name: given the name "synchronous", dask imports distributed to look for a
    Client first (0.28 s of the 2.3 s the many-files bench took)."""
    import dask
    from dask.local import get_sync
    return dask.config.set(scheduler=get_sync)


def _check_output(out: Path, force: bool, paths) -> None:
    if not out.parent.is_dir():
        raise DataError(f"output directory {out.parent} does not exist")
    if out.exists():
        if any(out.resolve() == Path(p).resolve() for p in paths):
            raise InputError(f"output {out} is one of the inputs: choose another name")
        if not force:
            raise InputError(f"output {out} exists: remove it or pass --force")


def combine(fs):
    """The files as one lazy dataset, as open_mfdataset(combine='by_coords', data_vars='minimal',
    coords='minimal', compat='override', join='exact') combines them (in fs's order)."""
    import xarray as xr
    return xr.concat(fs.datasets, fs.dim, data_vars="minimal", coords="minimal", compat="override", join="exact",
                     combine_attrs="override")


def _infos(fs) -> list:
    """The first file's variables (formats.netcdf4.scan) with the dimension at its total length."""
    infos = formats.module("netcdf4").scan(fs.paths[0])
    out = []
    for v in infos:
        if v.path.count("/") > 1:
            continue   # groups: the concatenation is of the root group's variables
        if v.dims[:1] == (fs.dim,):
            v = dataclasses.replace(v, shape=(fs.total,) + tuple(v.shape[1:]))
        out.append(v)
    return out


def _chunks(info, target) -> tuple:
    chunks = target.chunks or info.shape
    return tuple(max(1, min(int(c), int(d))) for c, d in zip(chunks, info.shape))


def block_budget(max_mem: int, workers: int, streamed) -> int:
    """Bytes of one block: each worker holds one block and its encoded chunks (so --max-mem / (2 x
    workers)), and no more than a quarter of a worker's share of the data, so that every worker
    gets several blocks and none waits on a last, long one (a block is at least one chunk row)."""
    workers = max(1, workers)
    total = sum(v.nbytes for v in streamed)
    return max(1, min(max_mem // (2 * workers), -(-total // (4 * workers)) if workers > 1 else max_mem))


def block_shape(shape, chunks, itemsize: int, budget: int) -> tuple:
    """Whole chunks up to `budget` bytes (at least one chunk): the full extent of the inner
    dimensions, the outer ones cut first (the first dimension is the concatenated one)."""
    block = list(shape)
    for axis in range(len(shape)):
        if int(np.prod(block)) * itemsize <= budget:
            break
        block[axis] = chunks[axis]
        per = int(np.prod(block)) * itemsize
        if per <= budget:   # grow this axis by whole chunks while it fits
            block[axis] = min(shape[axis], max(1, budget // per) * chunks[axis])
            break
    return tuple(block)


def n_blocks(shape, block) -> int:
    return int(np.prod([-(-n // b) for n, b in zip(shape, block)]))


def blocks_of(shape, block):
    """(start, count) of every block, in C order."""
    for idx in np.ndindex(*[-(-n // b) for n, b in zip(shape, block)]):
        start = tuple(i * b for i, b in zip(idx, block))
        yield start, tuple(min(b, n - s) for s, b, n in zip(start, block, shape))


# ---------------------------------------------------------------- Zarr

def _write_zarr(fs, combined, infos, targets, streamed, plan, tmp, opts, pool) -> None:
    import warnings

    import zarr

    from climio.runs.staging import make_marked_dir
    from .formats.xarray_io import cf_encoding
    from .command import zarr_settings
    from .formats.zarr import chunk_shape, codec_encoding
    settings = zarr_settings(opts)
    by_name = {v.path.lstrip("/"): v for v in infos}
    lazy = {v.path.lstrip("/") for v in streamed}
    for name, var in combined.variables.items():
        if name not in lazy:
            var.load()
    enc = {}
    for name in combined.variables:
        info = by_name.get(name)
        if info is None or info.path not in targets:
            enc[name] = cf_encoding(combined[name].encoding)
            continue
        e = cf_encoding(combined[name].encoding, np.dtype(info.dtype))
        e.update(codec_encoding(targets[info.path].compression, info.itemsize, settings))
        e["chunks"] = chunk_shape(info, targets[info.path])
        enc[name] = e
    make_marked_dir(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "consolidated metadata is not in the v3 specification"
        try:
            combined.to_zarr(tmp, mode="a", encoding=enc, compute=False, zarr_format=settings.zarr_format,
                             safe_chunks=False, consolidated=False)
        except (ValueError, TypeError, KeyError, NotImplementedError) as exc:
            raise DataError(f"cannot write {tmp}: {exc}") from None
        zarr.consolidate_metadata(str(tmp), zarr_format=settings.zarr_format)
    sources = file_sources(fs, streamed)
    tasks = [(str(tmp), v.path.lstrip("/"), start, count, pieces(sources[v.path], fs, start, count))
             for v in streamed for start, count in blocks_of(v.shape, plan[v.path])]
    if pool is None:
        for t in tasks:
            _write_block(t)
        _arrays.clear()
        return
    for _ in pool.map(_write_block, tasks, chunksize=1):
        pass


def start_pool(workers: int):
    """A pool of `workers` spawned processes (None for one worker: blocks run in this process),
    each importing what a block task needs at once (warm_up), so that the start-up overlaps the checks."""
    if workers <= 1:
        return None
    from concurrent.futures import ProcessPoolExecutor

    from climio.machine.spawning import context
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context())
    for _ in range(workers):
        pool.submit(warm_up)
    return pool


def warm_up() -> None:
    import zarr  # noqa: F401

    from . import blocks, zarr_chunks  # noqa: F401


def file_sources(fs, streamed) -> dict:
    """{variable path: [(blocks.Source, chunk index or None) per file]}: each file's own layout
    and filters (direct raw-chunk reads with libdeflate where blocks can, else HDF5), as the
    single-file rechunk reads them (formats.netcdf4.input_source)."""
    import h5py

    from .formats.netcdf4 import input_source, scan
    out = {v.path: [] for v in streamed}
    for p in fs.paths:
        by_path = {i.path: i for i in scan(p)}
        with h5py.File(p, "r") as h5:
            for v in streamed:
                out[v.path].append(input_source(by_path[v.path], str(p), h5, 64 << 20))
    return out


def pieces(sources, fs, start, count) -> list:
    """[(blocks.Task reading one file's part of the block, its first row in the block)]."""
    from . import blocks
    from climio.dataset.layout import chunks_in
    out = []
    t0, t1 = start[0], start[0] + count[0]
    for (src, index), off, n in zip(sources, fs.offsets, fs.lengths):
        lo, hi = max(t0, off), min(t1, off + n)
        if lo >= hi:
            continue
        s, c = (lo - off,) + tuple(start[1:]), (hi - lo,) + tuple(count[1:])
        entries = ()
        if index is not None:
            origins = (tuple(i * k for i, k in zip(idx, src.chunks)) for idx in chunks_in(s, c, src.chunks))
            entries = tuple((o,) + index[o] for o in origins if o in index)
        out.append((blocks.Task(src, blocks.Sink("array"), s, c, entries), lo - t0))
    return out


_arrays: dict = {}


def _array(store: str, name: str):
    """(zarr array, ChunkIO or None) of a variable of the output store, opened once per process."""
    arrays = _arrays
    if name not in arrays:
        import warnings

        import zarr

        from .zarr_chunks import ChunkIO
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = zarr.open_array(store, path=name, mode="r+")
        arrays[name] = (arr, ChunkIO.of(arr, store))
    return arrays[name]


def _write_block(task) -> int:
    """Read a block from the files it spans and write its chunks into the store (in a worker)."""
    from . import blocks
    store, name, start, count, parts = task
    arr, io = _array(store, name)
    block = np.empty(count, arr.dtype)
    for t, row in parts:
        rows = block[row:row + t.count[0]]   # C-contiguous: the direct reader decodes into it, no copy
        part, _, _ = blocks.read_block(t, into=rows if t.source.dtype == rows.dtype.str else None)
        if part is not rows:
            rows[...] = part
    if io is None:   # a layout ChunkIO does not cover: through zarr-python
        arr[tuple(slice(s, s + n) for s, n in zip(start, count))] = block
        return block.nbytes
    for idx in np.ndindex(*[-(-n // c) for n, c in zip(count, io.chunks)]):
        sel = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, io.chunks, count))
        io.write(tuple(s // c + i for s, c, i in zip(start, io.chunks, idx)), block[sel])
    return block.nbytes


# ---------------------------------------------------------------- netCDF-4

def _write_netcdf(fs, combined, infos, targets, streamed, plan, tmp) -> None:
    """xarray writes the file; the large variables as Dask arrays of the planned blocks, computed
    one block after another (the synchronous scheduler: one block in memory at a time)."""
    from .formats.xarray_io import cf_encoding
    by_name = {v.path.lstrip("/"): v for v in infos}
    lazy = {v.path.lstrip("/"): v for v in streamed}
    ds = combined.copy()
    for name, var in ds.variables.items():
        if name in lazy:
            ds[name] = ds[name].chunk(dict(zip(var.dims, plan[lazy[name].path])))
        else:
            var.load()
    enc = {}
    for name in ds.variables:
        info = by_name.get(name)
        e = cf_encoding(ds[name].encoding)
        if info is not None and info.path in targets:
            t = targets[info.path]
            e.update(t.compression.netcdf4_kwargs())
            if t.chunks:
                e["chunksizes"] = _chunks(info, t)
            else:
                e["contiguous"] = True
        enc[name] = e
    unlimited = fs.datasets[0].encoding.get("unlimited_dims") or ()
    try:
        with _synchronous_dask():   # one block in memory at a time
            ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=enc, unlimited_dims=list(unlimited))
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"cannot write {tmp}: {exc}") from None
