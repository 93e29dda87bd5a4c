"""Run the plans: blocks go to worker processes (read, decode, encode), the parent writes the
results in file order (the output is one HDF5 file, and HDF5 has one writer without MPI).

Memory follows plan.peak_memory: at most `workers` blocks are in the workers and at most `workers`
finished results wait in the parent, because a new block is handed out only when the oldest
result has been written.
"""

import collections
import multiprocessing
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import blocks, codec
from .model import Target, VarInfo
from .plan import Plan, chunks_in
from ..layout import iter_blocks


@dataclass
class Job:
    """One variable to convert."""
    info: VarInfo
    target: Target
    out_path: str             # HDF5 dataset path of the variable in the output
    plan: Plan


@dataclass
class RechunkStats:
    bytes_read: int = 0
    chunks_decoded: int = 0
    worker_rss: dict = field(default_factory=dict)   # pid -> peak RSS bytes

    def add(self, r: blocks.Result) -> None:
        self.bytes_read += r.bytes_read
        self.chunks_decoded += r.chunks_decoded
        self.worker_rss[r.pid] = max(self.worker_rss.get(r.pid, 0), r.maxrss)


def _filters_of(dset) -> list:
    """[(filter id, client values)] of a dataset's pipeline."""
    plist = dset.id.get_create_plist()
    return [(code, values) for code, _, values, _ in (plist.get_filter(i) for i in range(plist.get_nfilters()))]


def _chunk_index(dset) -> dict:
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
    dset = h5file[info.hdf5_path]
    fill = dset.fillvalue
    kind = "h5py"
    if dset.chunks and codec.can_decode(info.filters) and h5file.userblock_size == 0:
        kind = "direct"
    elif info.filters:
        import hdf5plugin  # noqa: F401  registers zstd, blosc, bzip2... with h5py's HDF5
    extent = tuple(dset.shape) if tuple(dset.shape) != tuple(info.shape) else None
    src = blocks.Source(path, kind, info.hdf5_path, dset.dtype.str, tuple(info.shape), dset.chunks,
                        tuple(info.filters), fill.item() if hasattr(fill, "item") else fill, cache_bytes, extent)
    return src, (_chunk_index(dset) if kind == "direct" else None)


def output_sink(dset) -> blocks.Sink:
    """Encode chunks ourselves ("chunks", written with HDF5 direct chunk writes) when the output
    dataset's pipeline is only shuffle/deflate; otherwise hand the block to HDF5 ("array")."""
    filters = _filters_of(dset)
    if dset.chunks and codec.can_decode([f for f, _ in filters]):
        level = next((v[0] if v else 6 for f, v in filters if f == codec.FILTER_DEFLATE), 0)
        shuffled = any(f == codec.FILTER_SHUFFLE for f, _ in filters)
        return blocks.Sink("chunks", tuple(dset.chunks), shuffled, int(level))
    if filters:
        import hdf5plugin  # noqa: F401
    return blocks.Sink("array")


class Runner:
    """Hands tasks to a process pool (or runs them in-process) and writes results in order."""

    def __init__(self, workers: int, stats: RechunkStats):
        self.workers = workers
        self.stats = stats
        self.pool = None
        if workers > 1:
            # spawn: a forked child would inherit the parent's open HDF5 state
            ctx = multiprocessing.get_context("spawn")
            self.pool = ctx.Pool(workers, initializer=blocks.init_worker)

    def run(self, tasks, write, workers: int, progress=None) -> None:
        """`workers` = the pass's planned parallelism: its memory bound assumes that many blocks in flight."""
        if self.pool is None or workers <= 1:
            for t in tasks:
                self._done(blocks.run_task(t), write, progress)
            blocks.close_handles()
            return
        pending = collections.deque()
        for t in tasks:
            pending.append(self.pool.apply_async(blocks.run_task, (t,)))
            if len(pending) >= workers:
                self._done(pending.popleft().get(), write, progress)
        while pending:
            self._done(pending.popleft().get(), write, progress)
        # workers cache file handles; the next pass may read a file this one wrote
        self.pool.starmap(_close_in_worker, [()] * self.workers, chunksize=1)

    def _done(self, result, write, progress) -> None:
        self.stats.add(result)
        write(result)
        if progress:
            progress(result.nbytes)

    def close(self, abort=False) -> None:
        if self.pool is not None:
            if abort:
                self.pool.terminate()
            else:
                self.pool.close()
            self.pool.join()
            self.pool = None


def _close_in_worker():
    blocks.close_handles()


def _tasks(src: blocks.Source, sink: blocks.Sink, block, index):
    for start, count in iter_blocks(src.shape, block):
        entries = ()
        if index is not None:
            entries = tuple((o,) + index[o] for o in
                            (tuple(i * c for i, c in zip(idx, src.chunks)) for idx in chunks_in(start, count, src.chunks))
                            if o in index)
        yield blocks.Task(src, sink, start, count, entries)


def _writer(sink: blocks.Sink, dset):
    def write(result):
        if sink.kind == "chunks":
            for origin, data in result.payload:
                dset.id.write_direct_chunk(origin, data, 0)
        else:
            sel = tuple(slice(s, s + n) for s, n in zip(result.start, result.count))
            if result.payload.size:
                dset[sel] = result.payload
        result.payload = None
    return write


def _requantize(job: Job) -> bool:
    """Quantization is netCDF-C's, applied on write; data already quantized the same way is copied as is."""
    t, s = job.target.compression, job.info.compression
    return bool(t.quantize) and (t.quantize, t.nsd) != (s.quantize, s.nsd)


def _intermediate(tmp_dir: str, info: VarInfo):
    import h5py
    path = Path(tmp_dir) / f".climio-rechunk-{os.getpid()}-{info.name}.h5"
    f = h5py.File(path, "w")
    f.create_dataset("data", shape=info.shape, dtype=np.dtype(info.dtype))  # contiguous, never filled
    return path, f


def _run_job(job: Job, runner: Runner, in_path: str, src_h5, write_to, tmp_dir: str, progress) -> None:
    """All passes of one variable. `write_to()` -> (Sink, write function) for the output."""
    passes = job.plan.passes
    src, index = input_source(job.info, in_path, src_h5, passes[0].cache_bytes if passes else 0)
    inter, inter_path = None, None
    try:
        for p in passes:
            if p.name == "to-intermediate":
                inter_path, inter = _intermediate(tmp_dir, job.info)
                sink, write = blocks.Sink("array"), _writer(blocks.Sink("array"), inter["data"])
            else:
                sink, write = write_to()
            if p.name == "from-intermediate":
                src = blocks.Source(str(inter_path), "h5py", "data", src.dtype, src.shape, None,
                                    cache_bytes=p.cache_bytes)
                index = None
            runner.run(_tasks(src, sink, p.block, index), write, p.workers, progress)
            if inter is not None:
                inter.close()  # written: the next pass's workers read it
                inter = None
    finally:
        if inter is not None:
            inter.close()
        if inter_path is not None:
            inter_path.unlink(missing_ok=True)


def convert(in_path: str, out_path: str, jobs: list, workers: int, tmp_dir: str, progress=None) -> RechunkStats:
    """Fill the target variables of `out_path` (already defined by meta.define_output)."""
    import h5py
    stats = RechunkStats()
    runner = Runner(max((p.workers for j in jobs for p in j.plan.passes), default=1), stats)
    ok = False
    try:
        with ExitStack() as stack:
            src_h5 = stack.enter_context(h5py.File(in_path, "r")) if h5py.is_hdf5(in_path) else None
            nc_jobs = [j for j in jobs if _requantize(j)]
            if nc_jobs:
                import netCDF4
                with netCDF4.Dataset(out_path, "a") as ds:
                    ds.set_auto_maskandscale(False)
                    for job in nc_jobs:
                        var = ds[job.info.path]

                        def write_nc(result, var=var):
                            var[tuple(slice(s, s + n) for s, n in zip(result.start, result.count))] = result.payload
                            result.payload = None

                        _run_job(job, runner, in_path, src_h5, lambda: (blocks.Sink("array"), write_nc),
                                 tmp_dir, progress)
            h5_jobs = [j for j in jobs if not _requantize(j)]
            if h5_jobs:
                out = stack.enter_context(h5py.File(out_path, "r+"))
                for job in h5_jobs:
                    dset = out[job.out_path]

                    def write_to(dset=dset):
                        sink = output_sink(dset)
                        return sink, _writer(sink, dset)

                    _run_job(job, runner, in_path, src_h5, write_to, tmp_dir, progress)
        ok = True
    finally:
        runner.close(abort=not ok)
        blocks.close_handles()
    return stats

