"""`climio rechunk` under mpirun/srun: the blocks of each variable are spread over the ranks and
written collectively with parallel HDF5 (the MPI h5py of climio.measure.mpi_site, HDF5 1.10.8 on Debian 12).

What the parallel path supports, and why (see climio.measure.mpi_site for the measurements):
- output layouts: contiguous, chunked uncompressed, chunked deflate (+shuffle). HDF5 1.10.8 writes
  filtered datasets only collectively through its own filter pipeline, and direct chunk writes do
  not work with the MPI-IO driver, so each rank's blocks go through H5Dwrite and HDF5 deflates the
  chunks on the ranks that own them (zlib, not libdeflate);
- inputs: netCDF-3/CDF-5, and netCDF-4 variables that are contiguous or shuffle/deflate (decoded by
  every rank itself from raw chunks, as the serial path does);
- not: new quantization (applied by netCDF-C on write), other codecs (zstd, blosc, bzip2: plugins
  are not built for the system HDF5), two-pass plans (the planner is asked for one pass).
--max-mem is per rank: each rank holds one block at a time.

Rank 0 checks, plans and defines the output (netCDF4-python or xarray, serially) under a temporary
name; every rank then writes its share (block i goes to rank i mod size) in the same number of
collective calls (a rank without a block joins with an empty selection); rank 0 checks the result,
verifies if asked and renames. A failed read on any rank is agreed on before the next collective
write, so all ranks stop together and rank 0 removes the temporary file.
Zarr output needs no collective call and no lock: a block is a union of whole chunks (or shards),
so each rank writes its blocks' chunk objects into the store itself, and the ranks agree on
failures once, at the end. Zarr input is read by every rank through zarr-python.
"""

import time
from pathlib import Path

from ..data.writer import check_space
from climio.runs.staging import tmp_name
from climio.base.errors import ClimioError, InputError
from climio.base.units import format_size, rate_MBps
from . import blocks, codec, execute, formats

PARALLEL_CODECS = ("none", "zlib")


def _prepare(in_path: Path, out_path: Path, opts, say):
    """Rank 0: everything up to a defined, empty output. Returns (tmp path, jobs)."""
    from . import command
    prep = command.prepare(in_path, out_path, opts, 1, two_pass=False, say=say)
    max_mem, infos, targets, plans = prep.max_mem, prep.infos, prep.targets, prep.plans
    for v in infos:
        t = targets.get(v.path)
        if t is None or prep.out_fmt == "zarr":
            continue
        if t.compression.codec not in PARALLEL_CODECS or (t.compression.quantize and t.compression != v.compression):
            raise InputError(f"{v.path}: {t.compression.label} cannot be written under mpirun (HDF5 1.10.8 writes only "
                             "deflate/shuffle in parallel, quantization is netCDF-C's): run climio rechunk without mpirun")
        if v.filters and not codec.can_decode(v.filters):
            raise InputError(f"{v.path}: the input's filters {list(v.filters)} are read only by the serial path: "
                             "run climio rechunk without mpirun")
    check_space([(out_path, prep.output_bytes(in_path))])
    command.say_plans(prep, say)
    tmp = tmp_name(out_path)
    writer = formats.module(prep.out_fmt)
    try:
        out_paths = writer.define_output(in_path, prep.in_fmt, tmp, targets, infos, max_mem,
                                         command.zarr_settings(opts))
    except BaseException:
        writer.discard(tmp)
        raise
    jobs = [execute.Job(v, targets[v.path], out_paths[v.path], plans[v.path]) for v in infos if v.path in plans]
    return tmp, jobs, max_mem, prep.in_fmt, prep.out_fmt


def _write_zarr_share(comm, in_path: Path, tmp: Path, jobs, in_fmt: str) -> int:
    """Every rank: read its blocks and write their chunks into the store, no collective call; the
    ranks agree on failures at the end. Returns bytes this rank wrote."""
    rank, size = comm.Get_rank(), comm.Get_size()
    reader = formats.module(in_fmt)
    mine, failure = 0, ""
    with reader.open_input(in_path) as handle:
        for job in jobs:
            (p,) = job.plan.passes
            src, index = reader.input_source(job.info, str(in_path), handle, p.cache_bytes)
            sink = blocks.Sink("zarr", path=str(tmp), var=job.out_path)
            for task in list(execute.tasks(src, sink, p.block, index))[rank::size]:
                try:
                    mine += blocks.run_task(task).nbytes
                except Exception as exc:  # agreed on below
                    failure = failure or f"{job.info.path}: block {task.start}: {exc}"
    blocks.close_handles()
    failures = [f for f in comm.allgather(failure) if f]
    if failures:
        raise ClimioError(failures[0])
    return mine


def _write_share(comm, in_path: Path, tmp: Path, jobs, in_fmt: str = "netcdf4") -> int:
    """Every rank: read its blocks and write them collectively. Returns bytes this rank wrote."""
    import h5py

    from climio.measure.mpi_site import write_nothing
    rank, size = comm.Get_rank(), comm.Get_size()
    mine = 0
    reader = formats.module(in_fmt)
    with h5py.File(tmp, "r+", driver="mpio", comm=comm) as out, reader.open_input(in_path) as handle:
        for job in jobs:
            (p,) = job.plan.passes
            dset = out[job.out_path]
            src, index = reader.input_source(job.info, str(in_path), handle, p.cache_bytes)
            tasks = list(execute.tasks(src, blocks.Sink("array"), p.block, index))
            for r in range(-(-len(tasks) // size)):
                i = r * size + rank
                block, failure = None, ""
                if i < len(tasks):
                    try:
                        block = blocks.read_block(tasks[i])[0]
                    except Exception as exc:  # agreed on below, so no rank waits in a collective call
                        failure = f"{job.info.path}: reading block {tasks[i].start}: {exc}"
                failures = [f for f in comm.allgather(failure) if f]
                if failures:
                    raise ClimioError(failures[0])
                if block is None:
                    write_nothing(dset)
                    continue
                sel = tuple(slice(s, s + n) for s, n in zip(tasks[i].start, tasks[i].count))
                with dset.collective:
                    dset[sel] = block
                mine += block.nbytes
    blocks.close_handles()
    return mine


def rechunk_mpi(in_path, out_path, opts, say=print) -> dict:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    in_path, out_path = Path(in_path), Path(out_path)
    t0 = time.perf_counter()
    setup, error = None, None
    if rank == 0:
        try:
            setup = _prepare(in_path, out_path, opts, say)
        except ClimioError as exc:
            error = exc
    error, setup = comm.bcast((error, setup), root=0)
    if error is not None:
        if rank != 0:
            error.quiet = True  # rank 0 says it once
        raise error
    tmp, jobs, max_mem, in_fmt, out_fmt = setup
    ok = False
    from .command import _sigterm_raises
    try:
        with _sigterm_raises():  # mpirun passes SIGTERM (and Ctrl-C) on to the ranks
            if out_fmt == "zarr":
                mine = _write_zarr_share(comm, in_path, tmp, jobs, in_fmt)
            else:
                mine = _write_share(comm, in_path, tmp, jobs, in_fmt)
        written = comm.reduce(mine, root=0)
        if rank == 0:
            from .command import _check_written
            _check_written(tmp, jobs, opts.verify, max_mem, in_path, in_fmt, out_fmt)
            formats.module(out_fmt).commit(tmp, out_path)
        ok = True
    except ClimioError as exc:
        if rank != 0:
            exc.quiet = True
        raise
    finally:
        if rank == 0 and not ok:
            formats.module(out_fmt).discard(tmp)
    if rank != 0:
        return {}
    seconds = time.perf_counter() - t0
    nbytes = sum(j.info.nbytes for j in jobs)
    say(f"rechunked {len(jobs)} variable(s), {format_size(nbytes)} in {seconds:.1f} s "
        f"({rate_MBps(nbytes, seconds):.0f} MB/s) on {size} MPI ranks{', verified' if opts.verify else ''} -> {out_path}")
    from .command import plugin_note
    note = plugin_note(out_path, [j.info for j in jobs], {j.info.path: j.target for j in jobs}) \
        if out_fmt == "netcdf4" else ""
    if note:
        say(note)
    return {"input": str(in_path), "output": str(out_path), "ranks": size, "max_mem_per_rank": max_mem,
            "plans": {j.info.path: j.plan.to_dict() for j in jobs}, "seconds": seconds, "bytes": nbytes,
            "bytes_written": written, "rate_MBps": rate_MBps(nbytes, seconds), "verified": opts.verify}
