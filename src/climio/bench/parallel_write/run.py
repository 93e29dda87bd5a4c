"""Launching the parallel-write study.

The measuring is done by the native MPI program `climio-pario --op write` (csrc/pario/README.md);
this module launches one MPI job per mode and rank count (the program loops over backends x
strategies x repetitions itself, so a sweep pays mpirun's start-up once per rank count), sets
Lustre stripes where they exist, and adds what only the launcher side knows (stripe settings,
the launch command, the MPI-IO component) to every record.

The load test (benchio Fig. 14) runs K instances at once, each writing its own files, and
aggregates their bandwidth from the wall-clock start and end every record carries.
"""

import os
import threading
from dataclasses import replace
from pathlib import Path

from climio.machine import native, stripes
from ...data.writer import check_room
from climio.machine.memory import cores
from ...measure.mpi import Launcher, stream_mpi
from ...measure.progress import StudyProgress, info
from .summary import aggregate_instances


def all_backends() -> tuple:
    """The backends of climio-pario in its default order (mpiio, hdf5, netcdf4, pnetcdf),
    asked from the program (`--list`) on first use: importing this module runs nothing."""
    return native.pario_backends()


def check_space(grid, data_dir, instances=1) -> None:
    """One job's files must fit twice over (the program removes a repetition's files before the
    next), per instance; the common check adds the margin for metadata and the chunk index."""
    need = 2 * max(grid.bytes_per_job(r) for r in grid.ranks) * instances
    check_room(data_dir, need, "use smaller --local/--grid or another --data-dir")


def run_study(run, grid, data_dir, launcher: Launcher = None, progress=True, label=None) -> list:
    """Every mode and rank count of `grid`, one launch each; records go to run.writer. Returns the records."""
    launcher = launcher or grid.mpi_launcher()
    out_dir = Path(data_dir) / "parallel-write"
    out_dir.mkdir(parents=True, exist_ok=True)
    stripe = stripes.apply(out_dir, grid.stripe_count, grid.stripe_bytes)
    check_space(grid, out_dir)
    total = len(grid.ranks) * grid.jobs_per_launch()
    mpi_io = launcher.io_component()
    got = []
    with StudyProgress(total, label or f"parallel-write ({grid.mode})", enabled=None if progress else False) as bar:
        for g in grid.split():
            for ranks in g.ranks:
                lau = replace(launcher, ranks=ranks)
                bar.note(f"parallel-write {g.mode}: {lau.describe()}")

                def on_record(rec, lau=lau):
                    rec["params"].update(stripe=stripe, launcher=lau.describe(), mpi_io=mpi_io, **g.extra)
                    run.writer.write(rec)
                    got.append(rec)
                    p = rec["params"]
                    bar.advance(1, last=f"{p['backend']} {p['strategy']} {p['ranks']} ranks: "
                                        f"{rec['metrics'].get('rate_MBps', 0):.1f} MB/s")

                stream_mpi(lau, g.program_args(out_dir, run.platform_id), on_record)
    return got


def load_test(run, grid, data_dir, launcher: Launcher = None, instances: int = None) -> list:
    """benchio's load test: `instances` copies of the same job at once, each with its own files, at
    the largest rank count, for each mode. Returns one summary per repetition: aggregate MB/s = all
    bytes / (last end - first start)."""
    instances = grid.instances if instances is None else instances
    launcher = launcher or grid.mpi_launcher()
    check_space(grid, data_dir, instances)
    recs, errors = [], []
    lock = threading.Lock()
    ranks = grid.ranks[-1]
    lau = replace(launcher, ranks=ranks)
    top = Path(data_dir) / "parallel-write-load"
    top.mkdir(parents=True, exist_ok=True)
    stripe = stripes.apply(top, grid.stripe_count, grid.stripe_bytes)   # before the instances' directories
    dirs = [top / f"instance-{i:03d}" for i in range(instances)]
    for d in dirs:
        d.mkdir(exist_ok=True)
    mpi_io = launcher.io_component()

    for g in grid.split():
        def one(i, g=g):
            def on_record(rec):
                rec["params"].update(instances=instances, instance=i, launcher=lau.describe(), stripe=stripe,
                                     mpi_io=mpi_io, **g.extra)
                with lock:
                    run.writer.write(rec)
                    recs.append(rec)

            try:
                stream_mpi(lau, g.program_args(dirs[i], run.platform_id), on_record)
            except Exception as exc:  # noqa: BLE001  (re-raised in the caller's thread below)
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(instances)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    return aggregate_instances(recs)


def default_ranks_note(grid) -> str:
    n = cores()
    over = [r for r in grid.ranks if r > n]
    return f"{', '.join(map(str, over))} ranks on {n} cores: oversubscribed, rates are not scaling figures" if over else ""


def _mbps(v) -> str:
    return f"{v:.1f}" if v is not None else "?"


def run_grid(ctx, grid) -> int:
    """The study's run(): the scaling launches, then the load test when --instances asks; returns the
    number of records written."""
    note = default_ranks_note(grid)
    if note:
        info(f"note: {note}")
    launcher = grid.mpi_launcher()
    data_dir = os.fspath(ctx.data_dir)
    n = len(run_study(ctx.run, grid, data_dir, launcher, progress=ctx.progress))
    if grid.instances:
        for s in load_test(ctx.run, grid, data_dir, launcher, grid.instances):
            n += len(s["per_instance_MBps"])
            info(f"load test {s['instances']} x {grid.ranks[-1]} ranks, {s['mode']} {s['backend']} {s['strategy']} "
                 f"rep {s['rep']}: {_mbps(s['aggregate_MBps'])} MB/s aggregate")
    return n
