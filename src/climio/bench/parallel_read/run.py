"""Launching the parallel-read study: experiment B (climio-pario --op read --mode mpiio), experiment A
(climio-pario --op read --mode tasks for C POSIX / netCDF-C, the Python task module for netCDF4-python
and h5py) and the Dask path (dask_read.py), one launch per configuration, repetitions inside.

File sets (Fig. 5.3), written once per run into DATA_DIR/parallel-read/ under a temporary name and
renamed when complete, after a free-space check covering every file the grid needs:
    per-task   one file of --size per task (weak scaling)
    shared     one file of --size, split into N contiguous pieces
    small      one file of --size/16 per task (the thesis's "sixteen 16 GB files")
Each file is a 1-D float64 variable `var` (dimension `dim1`), element i = float(i): raw bytes for
C POSIX, netCDF-4 contiguous for the others.
"""

import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...data.writer import check_room
from climio.base.errors import InputError
from climio.runs.staging import staged
from ...measure import probes
from ...measure.mpi import stream_mpi
from ...measure.progress import StudyProgress, info
from climio.base.units import format_size
from .summary import STUDY
from .task_record import check_storage, file_bytes, task_record  # noqa: F401  (task_record: the task takes it from here)

READ_PROGRAM = probes.PARIO_READ
C_STACKS = ("c-posix", "c-netcdf")   # read by climio-pario --op read --mode tasks
WRITE_BLOCK = 1 << 22     # elements per write while generating


def fmt_of(stack) -> str:
    return "bin" if stack == "c-posix" else "nc"


def planned_files(grid) -> dict:
    """{path name: bytes} of every generated file the grid needs (experiment A and Dask)."""
    need = {}
    stacks = list(grid.stacks) if "tasks" in grid.experiments else []
    fmts = {fmt_of(s) for s in stacks} | ({"nc"} if "dask" in grid.experiments else set())
    nmax = max(grid.ranks)
    for fs in grid.file_sets:
        for fmt in sorted(fmts):
            names = [f"shared.{fmt}"] if fs == "shared" else [f"{fs}-{i}.{fmt}" for i in range(nmax)]
            for n in names:
                need[n] = file_bytes(grid, fs)
    return need


def space_needed(grid) -> int:
    """Bytes the file sets and experiment B's file take (the common check adds its margin)."""
    data = sum(planned_files(grid).values())
    mpiio = grid.size if "mpiio" in grid.experiments else 0
    return data + mpiio


def check_space(grid, data_dir) -> None:
    check_room(data_dir, space_needed(grid), "use a smaller --size, fewer --ranks or another --data-dir")


def write_file(path: Path, nbytes: int) -> None:
    """The generator's file at `path` (raw .bin or netCDF-4 .nc), via a temporary name."""
    if path.exists() and path.stat().st_size >= nbytes:
        return
    elems = nbytes // 8
    with staged(path) as (tmp,):
        if path.suffix == ".bin":
            with open(tmp, "wb") as fh:
                for a in range(0, elems, WRITE_BLOCK):
                    np.arange(a, min(elems, a + WRITE_BLOCK), dtype="<f8").tofile(fh)
                fh.flush()
                os.fsync(fh.fileno())
        else:
            import netCDF4
            with netCDF4.Dataset(tmp, "w", format="NETCDF4") as d:
                d.createDimension("dim1", elems)
                v = d.createVariable("var", "f8", ("dim1",), contiguous=True)
                for a in range(0, elems, WRITE_BLOCK):
                    v[a:min(elems, a + WRITE_BLOCK)] = np.arange(a, min(elems, a + WRITE_BLOCK), dtype="<f8")


def prepare_files(grid, top: Path) -> None:
    top.mkdir(parents=True, exist_ok=True)
    check_space(grid, top)
    for name, nbytes in planned_files(grid).items():
        write_file(top / name, nbytes)


def files_arg(top: Path, file_set, stack_fmt) -> tuple:
    """(--files value, split?) of a file set."""
    if file_set == "shared":
        return str(top / f"shared.{stack_fmt}"), True
    return str(top / f"{file_set}-%d.{stack_fmt}"), False


def effective_buffer(buffer, nbytes, ranks, split) -> int:
    """The buffer capped by a task's piece (rounded down to whole float64 elements)."""
    piece = nbytes // ranks if split else nbytes
    return max(8, min(buffer, piece) // 8 * 8)


def tasks_argv(grid, stack, file_set, buffer, top, ranks, platform_id) -> list:
    files, split = files_arg(top, file_set, fmt_of(stack))
    buf = effective_buffer(buffer, file_bytes(grid, file_set), ranks, split)
    common = ["--files", files, "--file-set", file_set, "--buffer", str(buf), "--reps", str(grid.reps),
              "--platform-id", platform_id] + (["--split"] if split else [])
    common += ["--stall", grid.stall] if grid.stall else []
    if stack in C_STACKS:
        return probes.pario_read_argv("tasks", "--stack", stack, *common)
    return [sys.executable, "-m", "climio.bench.parallel_read.task", "--stack", stack, *common]


def mpiio_argv(grid, out_dir, platform_id) -> list:
    a = probes.pario_read_argv("mpiio", "--dir", out_dir, "--size", grid.size, "--buffer", grid.mpi_buffer,
                               "--reps", grid.reps, "--backends", ",".join(grid.backends), "--patterns",
                               ",".join(grid.patterns), "--access", ",".join(grid.access), "--platform-id", platform_id)
    for k, v in grid.hints.items():
        a += ["--hint", f"{k}={v}"]
    a += ["--stall", grid.stall] if grid.stall else []
    a += ["--settle", f"{float(grid.settle):g}"] if grid.settle else []
    return a


def launches(grid) -> int:
    n = 0
    for ranks in grid.ranks:
        if "mpiio" in grid.experiments:
            n += len(grid.backends) * len(grid.patterns) * len(grid.access) * grid.reps
        if "tasks" in grid.experiments:
            n += len(grid.stacks) * len(grid.file_sets) * len(grid.buffers) * grid.reps
        if "dask" in grid.experiments:
            n += len(grid.file_sets) * grid.reps
    return n


def run_grid(ctx, grid) -> int:
    launcher = grid.mpi_launcher()
    mpi_io = launcher.io_component()
    top = Path(ctx.data_dir) / "parallel-read"
    got = []
    if "tasks" in grid.experiments or "dask" in grid.experiments:
        info(f"parallel-read: writing the file sets ({format_size(sum(planned_files(grid).values()))})")
        prepare_files(grid, top)
    with StudyProgress(launches(grid), f"{STUDY}", enabled=None if ctx.progress else False) as bar:
        def sink(extra):
            def on_record(rec):
                check_storage(rec)     # the C program's records carry the counter, not the check
                rec["params"].update(extra)
                ctx.run.writer.write(rec)
                got.append(rec)
                p = rec["params"]
                bar.advance(1, last=f"{p['experiment']} {p['stack']} {p.get('file_set')} {p['pattern']} "
                                    f"{p['access']} {p['ranks']} ranks: {rec['metrics']['rate_MBps']:.0f} MB/s")
            return on_record

        for ranks in grid.ranks:
            lau = replace(launcher, ranks=ranks)
            if "mpiio" in grid.experiments:
                out = top / "mpiio"
                out.mkdir(parents=True, exist_ok=True)
                bar.note(f"experiment B: {lau.describe()} {READ_PROGRAM} --mode mpiio")
                stream_mpi(lau, mpiio_argv(grid, out, ctx.run.platform_id),
                           sink({"launcher": lau.describe(), "mpi_io": mpi_io, "buffer_requested": grid.mpi_buffer}))
            if "tasks" in grid.experiments:
                for fs in grid.file_sets:
                    for stack in grid.stacks:
                        for buf in grid.buffers:
                            bar.note(f"experiment A: {stack} {fs} {format_size(buf)} x {ranks}")
                            stream_mpi(lau, tasks_argv(grid, stack, fs, buf, top, ranks, ctx.run.platform_id),
                                       sink({"launcher": lau.describe(), "mpi_io": "none", "buffer_requested": buf}))
            if "dask" in grid.experiments:
                from .dask_read import run_dask
                bar.note(f"dask: {ranks} workers")
                run_dask(grid, top, ranks, ctx.run.platform_id,
                         sink({"launcher": grid.scheduler or f"LocalCluster({ranks})", "mpi_io": "none"}))
    return len(got)


def check_ranks(grid) -> None:
    """More ranks than a file can split: one line before anything is written."""
    for ranks in grid.ranks:
        for fs in grid.file_sets:
            if fs == "shared" and file_bytes(grid, fs) // 8 < ranks:
                raise InputError(f"more ranks than the file can split: {ranks} ranks over a {grid.size}-byte file")
        if "mpiio" in grid.experiments:
            nbuf = -(-grid.size // grid.mpi_buffer)
            if "striding" in grid.patterns and nbuf < ranks:
                raise InputError(f"more ranks than the file can split: {nbuf} buffers of {format_size(grid.mpi_buffer)} "
                                 f"cannot stride over {ranks} ranks (use a smaller --mpi-buffer or fewer --ranks)")
