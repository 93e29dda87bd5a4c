"""Run the plans: blocks go to worker processes (read, decode, encode); for netCDF-4 output the
parent writes the results in file order (one HDF5 file, and HDF5 has one writer without MPI), for
Zarr output each worker writes its block's chunks into the store itself (disjoint chunk objects).
Reading and writing go through the format modules (rechunk.formats). Hand-offs copy as little as
they can: workers leave encoded chunks in shared-memory files the parent maps (blocks.Spilled; one
slot per task in flight, handed out again, removed at the end of the pass), and read and write a
two-pass plan's contiguous intermediate themselves.

Memory follows plan.peak_memory: each worker holds one block, and at most 2 x `workers` tasks are
handed out at a time (a new one only when the oldest result has been written), so at most that
many encoded results exist at once, in the workers or waiting in the parent: within the model's
`workers` x (block + encoded chunks + pickled result) + `workers` results. Two per worker keep the
next task ready in each worker's pipe while the parent writes, instead of the worker waiting for it.
A worker that writes its block itself (a local Zarr store's chunks, one at a time; a two-pass
plan's intermediate) hands back no result: the plan counts its block, its source scratch and one
target chunk (Pass.own_writes), and bench/rechunk_worker_rss.py measures that against its RSS.
"""

import collections
import dataclasses
import math
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from climio.machine import spawning
from climio.dataset.h5filters import needs_h5py_write
from . import blocks, formats, phases
from .quantize import quantizer
from .model import Target, VarInfo
from climio.dataset.layout import chunks_in, count_blocks, iter_blocks
from ..model.convert import Plan


@dataclass
class Job:
    """One variable to convert."""
    info: VarInfo
    target: Target
    out_path: str             # the variable in the output: HDF5 dataset path, or Zarr array path
    plan: Plan
    skip: frozenset = frozenset()   # block starts already written by a killed run (--resume, rechunk.resume)
    lite_in: object = None    # zarr_lite.LiteSpec of the local Zarr input array: workers read it without zarr
    lite_out: object = None   # ... of the local Zarr output array: workers write it without zarr


@dataclass
class RechunkStats:
    bytes_read: int = 0
    chunks_decoded: int = 0
    worker_rss: dict = field(default_factory=dict)   # pid -> peak RSS bytes
    retries: int = 0          # object-store requests retried (stores.retry)
    skipped: int = 0          # blocks a resumed run found written

    def add(self, r: blocks.Result) -> None:
        self.bytes_read += r.bytes_read
        self.chunks_decoded += r.chunks_decoded
        if r.pid != os.getpid():   # this process's own retries are counted by the command (stores.retry.COUNTER)
            self.retries += r.retries
        self.worker_rss[r.pid] = max(self.worker_rss.get(r.pid, 0), r.maxrss)


IN_FLIGHT_PER_WORKER = 2   # tasks handed out per worker (see the module docstring)


def pool_size(plans) -> int:
    """Worker processes the plans need: their largest pass's (1: convert in this process)."""
    return max((p.workers for plan in plans for p in plan.passes), default=1)


def block_done(stats, result, write, progress) -> None:
    """One finished block task, wherever it ran (local processes or Dask workers): counted, its
    result written, the progress told its bytes."""
    stats.add(result)
    write(result)
    if progress:
        progress(result.nbytes)


class Runner:
    """Hands tasks to a process pool (or runs them in-process) and writes results in order. The
    pool starts when the Runner is made (the command makes it before it defines the output, so
    that the workers' start-up overlaps that), unless start_early started it sooner."""

    def __init__(self, workers: int, stats: RechunkStats = None):
        self.workers = workers
        self.stats = stats if stats is not None else RechunkStats()
        self.pool = None
        self.spill = ""
        early = _early.pop("pool", None)
        if early is not None and (workers <= 1 or early[0] != workers):
            _stop(*early[1:], abort=True)   # started for a plan that turned out different
            early = None
        if workers > 1:
            self.pool, self.spill = early[1:] if early else _start(workers)

    def run(self, tasks, write, workers: int, progress=None) -> None:
        """`workers` = the pass's planned parallelism: its memory bound assumes that many blocks in flight."""
        if self.pool is None or workers <= 1:
            previous = None
            for t in tasks:
                blocks.prefetch(t)   # read while the one before it is decoded and encoded
                if previous is not None:
                    self._done(blocks.run_task(previous), write, progress)
                previous = t
            if previous is not None:
                self._done(blocks.run_task(previous), write, progress)
            blocks.close_handles()
            return
        window = IN_FLIGHT_PER_WORKER * workers
        # one shared-memory slot per task in flight, handed out again once its result is written
        slots = collections.deque(f"{self.spill}-slot{k}" for k in range(window)) if self.spill else None
        pending, unfetched = collections.deque(), []
        for t in tasks:
            if slots is not None:
                t = dataclasses.replace(t, spill=slots.popleft())
            pending.append((self.pool.apply_async(blocks.run_task, (t,)), t.spill))
            unfetched.append(t)
            if len(pending) >= window:
                _prefetch(unfetched)
                self._take(pending, write, progress, slots)
        _prefetch(unfetched)
        while pending:
            self._take(pending, write, progress, slots)
        for slot in slots or ():   # their pages are this pass's memory, not the next one's
            Path(slot).unlink(missing_ok=True)
        # workers cache file handles; the next pass may read a file this one wrote
        # (blocks' function itself: one of this module's made each worker import this module and the cost model)
        self.pool.starmap(blocks.close_handles, [()] * self.workers, chunksize=1)

    def _take(self, pending, write, progress, slots) -> None:
        """Wait for the oldest task handed out, write its result, free its slot."""
        result, slot = pending.popleft()
        self._done(result.get(), write, progress)
        if slots is not None:
            slots.append(slot)

    def _done(self, result, write, progress) -> None:
        block_done(self.stats, result, write, progress)

    def close(self, abort=False) -> None:
        if self.pool is not None:
            _stop(self.pool, self.spill, abort)
            self.pool = None


def _prefetch(handed_out: list) -> None:
    """Start reading the chunks of tasks already handed out (after handing them out: asking for
    reads never holds a task back), while the tasks ahead of them run."""
    for t in handed_out:
        blocks.prefetch(t)
    handed_out.clear()


def _start(workers: int) -> tuple:
    """(pool, spill prefix): `workers` spawned processes (a forked child would inherit the
    parent's open HDF5 state), started without re-running a user's script (climio.machine.spawning)."""
    return spawning.context().Pool(workers, initializer=blocks.init_worker), spill_prefix()


def _stop(pool, spill: str, abort: bool) -> None:
    if abort:
        pool.terminate()
    else:
        pool.close()
    pool.join()
    if spill:
        blocks.remove_spilled(spill)


_early = {}   # "pool": (workers, pool, spill prefix) started by start_early, not yet taken by a Runner


def start_early(workers: int) -> None:
    """Start the pool before the input is scanned, planned and the output defined (about 0.3 s
    of the command's start-up on this 2-core machine: interpreter, imports, workers' imports), so
    that the workers are up when the first block is handed out. The next Runner takes it if its
    plan wants that many workers; otherwise it is stopped (discard_early does it after failures)."""
    discard_early()
    if workers > 1:
        _early["pool"] = (workers,) + _start(workers)


def discard_early() -> None:
    early = _early.pop("pool", None)
    if early is not None:
        _stop(*early[1:], abort=True)


def spill_prefix() -> str:
    """Where pool workers leave encoded chunks for the parent: shared memory (/dev/shm) if this
    system has it, else "" (they go through the pool's pipe)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return str(shm / f".climio-rechunk-{os.getpid()}")
    return ""


def tasks(src: blocks.Source, sink: blocks.Sink, block, index):
    endpoint = _endpoint(src, sink)
    refs = _netcdf_object(src)
    for start, count in iter_blocks(src.shape, block):
        entries = ()
        if index is not None:
            entries = tuple((o,) + index[o] for o in
                            (tuple(i * c for i, c in zip(idx, src.chunks)) for idx in chunks_in(start, count, src.chunks))
                            if o in index)
        task_refs = () if refs is None else refs.task_refs(src.var, [
            refs.chunk_key(src.var, idx) for idx in chunks_in(start, count, src.chunks)])
        yield blocks.Task(src, sink, start, count, entries, endpoint=endpoint, refs=task_refs)


def _netcdf_object(src: blocks.Source):
    """The RefChunks of a netCDF-4 object in S3 read through references (rechunk.remote_nc), or None."""
    from .remote_nc import RefChunks, is_netcdf_object
    if src.kind != "zarr" or not is_netcdf_object(src.path):
        return None
    return RefChunks.of(src.path)


def _endpoint(src: blocks.Source, sink: blocks.Sink):
    """The object store's Endpoint for tasks that read or write s3:// (this process's: --endpoint-url
    and the credentials), handed to the workers in the task, not through their environment."""
    if not (sink.remote or str(src.path).startswith("s3://")):
        return None
    from ..stores.endpoint import Endpoint
    return Endpoint.from_env()


def _requantize(job: Job) -> bool:
    """Quantization is netCDF-C's, applied on write; data already quantized the same way is copied as is."""
    t, s = job.target.compression, job.info.compression
    return bool(t.quantize) and (t.quantize, t.nsd) != (s.quantize, s.nsd)


def _intermediate(tmp_dir: str, info: VarInfo, tile) -> tuple:
    """(path, byte offset) of a two-pass plan's intermediate: an HDF5 file holding one contiguous
    uncompressed dataset, allocated now so that its bytes have an address, that holds the array
    in C order or in `tile`s (the second pass's blocks: rechunking.tiles); the workers then write and read their
    blocks there themselves (pwritev/preadv), no block passes through the parent."""
    import h5py

    from .tiles import file_bytes
    path = Path(tmp_dir) / f".climio-rechunk-{os.getpid()}-{info.name}.h5"
    items = (file_bytes(info.shape, tile, np.dtype(info.dtype).itemsize) // np.dtype(info.dtype).itemsize if tile
             else math.prod(info.shape))
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.CONTIGUOUS)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        space = h5py.h5s.create_simple((items,))
        dset = h5py.h5d.create(f.id, b"data", h5py.h5t.py_create(np.dtype(info.dtype)), space, dcpl=dcpl)
        offset = dset.get_offset()
    return path, int(offset)


def _run_job(job: Job, runner: Runner, in_path: str, reader, write_to, tmp_dir: str, progress) -> None:
    """All passes of one variable. `reader` = (input format module, its open handle);
    `write_to()` -> (Sink, write function) for the output."""
    passes = job.plan.passes
    fmt, handle = reader
    src, index = fmt.input_source(job.info, in_path, handle, passes[0].cache_bytes if passes else 0)
    if job.lite_in is not None and src.kind == "zarr":
        src = dataclasses.replace(src, lite=job.lite_in)
    inter_path = None
    try:
        for p in passes:
            if p.name == "to-intermediate":
                tile = tuple(p.dst.chunks) if p.dst.chunks else None    # tiled by the second pass's blocks, or C order
                inter_path, offset = _intermediate(tmp_dir, job.info, tile)
                sink = blocks.Sink("raw", tuple(job.info.shape), path=str(inter_path), offset=offset, tile=tile)
                write = _nothing_to_write
            else:
                sink, write = write_to()
                if job.lite_out is not None and sink.kind == "zarr" and not sink.remote:
                    sink = dataclasses.replace(sink, lite=job.lite_out)
            if p.name == "from-intermediate":
                src = blocks.Source(str(inter_path), "raw", "data", src.dtype, src.shape, None, offset=offset,
                                    tile=tile)
                index = None
            todo = tasks(src, sink, p.block, index)
            if job.skip and (sink.kind == "zarr" or p.name == "to-intermediate"):
                todo = _skipping(todo, job, runner.stats, sink.kind == "zarr", progress)
            runner.run(todo, write, p.workers, progress)
            phases.mark(f"{job.info.path} {p.name}")   # a two-pass plan's passes, each timed (--json "phases")
    finally:
        if inter_path is not None:
            inter_path.unlink(missing_ok=True)


def _skipping(todo, job: Job, stats: RechunkStats, final: bool, progress):
    """The tasks a resumed run still has to do: the blocks not written (the final pass), and the
    first pass of a two-pass plan only if any is left."""
    n_final = count_blocks(job.info.shape, job.plan.passes[-1].block)
    if not final:
        if len(job.skip) >= n_final:
            return
        yield from todo
        return
    for t in todo:
        if tuple(t.start) in job.skip:
            stats.skipped += 1
            if progress:
                progress(int(np.prod(t.count)) * np.dtype(t.source.dtype).itemsize)
            continue
        yield t


def _nothing_to_write(result) -> None:
    result.payload = None


def convert(in_path: str, out_path: str, jobs: list, workers: int, tmp_dir: str, progress=None,
            in_format: str = "netcdf4", out_format: str = "netcdf4", runner: Runner = None,
            out_remote: str = "") -> RechunkStats:
    """Fill the target variables of `out_path` (already defined by the output format's define_output).
    `runner`: a Runner started earlier for these jobs (pool_size of their plans); closed here."""
    runner = runner or Runner(pool_size(j.plan for j in jobs))
    stats = runner.stats
    src_fmt, dst_fmt = formats.module(in_format), formats.module(out_format)
    ok = False
    try:
        with ExitStack() as stack:
            reader = (src_fmt, stack.enter_context(src_fmt.open_input(in_path)))
            requantized = [j for j in jobs if out_format == "netcdf4" and _requantize(j)]
            nc_jobs = [j for j in requantized if not needs_h5py_write(j.target.compression.codec)]
            if nc_jobs:
                _run_requantized(nc_jobs, runner, in_path, out_path, reader, tmp_dir, progress)
            other = [j for j in jobs if j not in nc_jobs]
            if other:
                out = stack.enter_context(dst_fmt.open_output(out_path))
                for job in other:
                    def write_to(job=job):
                        if out_remote:   # Zarr chunks straight to the bucket (formats.zarr.output)
                            return dst_fmt.output(out, job.out_path, job.target, remote=out_remote)
                        sink, write = dst_fmt.output(out, job.out_path, job.target)
                        if job in requantized:   # quantized by netCDF-C, written through h5py
                            write = _quantized(write, quantizer(job.target.compression, job.info.fill_value))
                        return sink, write

                    _run_job(job, runner, in_path, reader, write_to, tmp_dir, progress)
        ok = True
    finally:
        runner.close(abort=not ok)
        blocks.close_handles()
    return stats


def _quantized(write, quantize):
    def write_quantized(result):
        result.payload = quantize(result.payload)
        write(result)
    return write_quantized


def _run_requantized(jobs, runner, in_path, out_path, reader, tmp_dir, progress) -> None:
    """New quantization is netCDF-C's: these variables are written through netCDF4-python."""
    import netCDF4
    with netCDF4.Dataset(out_path, "a") as ds:
        ds.set_auto_maskandscale(False)
        for job in jobs:
            var = ds[job.info.path]

            def write_nc(result, var=var):
                var[tuple(slice(s, s + n) for s, n in zip(result.start, result.count))] = result.payload
                result.payload = None

            _run_job(job, runner, in_path, reader, lambda: (blocks.Sink("array"), write_nc), tmp_dir, progress)
