"""The parallel-read study (thesis chapter 5, issue 13): how fast many tasks read climate data at once.

    experiment A  (tasks)  N independent tasks launched by measure.mpi.Launcher, each reading its own
                           file or contiguous piece sequentially with C POSIX / netCDF-C
                           (climio-pario --op read --mode tasks) or netCDF4-python / h5py (task.py), buffers
                           1 MiB and 1 GiB (capped by the piece), file sets per-task, shared, small
    experiment B  (mpiio)  one shared file through MPI-IO, parallel HDF5, netCDF-4 and PnetCDF
                           (climio-pario --op read --mode mpiio): sequential / striding x independent /
                           collective, MPI-IO hints, ROMIO vs OMPIO (--mpi-io)
    dask                   the same files with xarray + Dask on a LocalCluster or --scheduler ADDRESS,
                           per-task times from the task stream (dask_read.py)

    Grid / PRESETS / ParallelRead     the options of `climio bench parallel-read` and the Study
    run.py                            file sets (space checked before writing) and launches
    summary.py                        pure numbers; section.py: Figs 5.4-5.8 and the findings table
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from climio.machine import native
from climio.base.errors import InputError
from climio.dataset.options import parse_choice, parse_hints
from climio.dataset.options import parse_size, parse_size_list
from .. import base
from ..base import option
from climio.dataset.options import check_mpi_io
from .summary import OLD_STACK_NAMES, STUDY

EXPERIMENTS = ("mpiio", "tasks", "dask")
TASK_STACKS = ("c-posix", "c-netcdf", "netcdf4-python", "h5py")
FILE_SETS = ("per-task", "shared", "small")
MPI_PATTERNS = ("sequential", "striding")
ACCESS = ("independent", "collective")

PRESETS = {
    # The thesis's grid scaled to a laptop: 256 MiB per file instead of 256 GB.
    "full": {"ranks": "1,2,4", "size": "256MiB", "buffers": "1MiB,1GiB", "mpi_buffer": "1MiB", "reps": 3},
    "survey": {"ranks": "1,2", "size": "32MiB", "buffers": "1MiB,1GiB", "mpi_buffer": "1MiB", "reps": 3},
    "quick": {"ranks": "1,2", "size": "4MiB", "buffers": "1MiB", "mpi_buffer": "256KiB", "reps": 2,
              "stacks": "c-posix,c-netcdf,netcdf4-python", "file_sets": "per-task,shared", "backends": "mpiio,hdf5"},
}


@dataclass
class Grid:
    # --- options of `climio bench parallel-read`
    experiments: Optional[list] = field(default=None, metadata=option(
        "--experiments", "Comma list of tasks (A: independent tasks), mpiio (B: one file through MPI-IO backends), "
        "dask (xarray + Dask) (default all).", "LIST"))
    ranks: Optional[list] = field(default=None, metadata=option(
        "--ranks", "Task counts (MPI ranks, Dask workers), comma separated (default 1,2,4; --quick 1,2).", "LIST"))
    size: Optional[str] = field(default=None, metadata=option(
        "--size", "Bytes of each file (per-task files and the shared file; small files are 1/16) (default 256MiB).",
        "SIZE"))
    buffers: Optional[list] = field(default=None, metadata=option(
        "--buffers", "Experiment A read sizes (default 1MiB,1GiB; capped by each task's piece).", "LIST"))
    stacks: Optional[list] = field(default=None, metadata=option(
        "--stacks", "Experiment A stacks: c-posix, c-netcdf, netcdf4-python, h5py (default all).", "LIST"))
    file_sets: Optional[list] = field(default=None, metadata=option(
        "--file-sets", "per-task (one file per task), shared (one file split in N pieces), small (one file of "
        "size/16 per task) (default all).", "LIST"))
    backends: Optional[list] = field(default=None, metadata=option(
        "--backends", "Experiment B backends: mpiio, hdf5, netcdf4, pnetcdf (default all).", "LIST"))
    patterns: Optional[list] = field(default=None, metadata=option(
        "--patterns", "Experiment B: sequential (1/N per rank), striding (one buffer, skip N-1) (default both).",
        "LIST"))
    access: Optional[list] = field(default=None, metadata=option(
        "--access", "Experiment B: independent, collective (default both).", "LIST"))
    mpi_buffer: Optional[str] = field(default=None, metadata=option(
        "--mpi-buffer", "Experiment B bytes per get (default 1MiB).", "SIZE"))
    hint: list = field(default_factory=list, metadata=option(
        "--hint", "MPI-IO hint KEY=VALUE for experiment B (cb_nodes, cb_buffer_size, romio_cb_read, ...); "
        "repeatable.", "KEY=VALUE", repeat=True))
    hints_file: Optional[str] = field(default=None, metadata=option(
        "--hints-file", "File of hints, one KEY=VALUE per line.", "FILE"))
    mpi_io: str = field(default="default", metadata=option(
        "--mpi-io", "Open MPI's MPI-IO implementation: default, romio or ompio.", "default|romio|ompio"))
    reps: Optional[int] = field(default=None, metadata=option(
        "--reps", "Cold repetitions per configuration (default 3).", "N"))
    scheduler: Optional[str] = field(default=None, metadata=option(
        "--scheduler", "Dask scheduler address (e.g. from dask-jobqueue or dask-mpi) instead of a LocalCluster "
        "of N workers.", "ADDRESS"))
    hostfile: Optional[str] = field(default=None, metadata=option(
        "--hostfile", "mpirun --hostfile for a multi-node run.", "FILE"))
    launcher: Optional[str] = field(default=None, metadata=option(
        "--launcher", "Launch command template instead of mpirun, e.g. 'srun -n {ranks} --ntasks-per-node 4'.",
        "COMMAND"))
    timeout: float = field(default=3600.0, metadata=option(
        "--timeout", "Seconds before a launch is killed (a hung rank) and reported as failed.", "SECONDS"))
    settle: float = field(default=0.0, metadata=option(
        "--settle", "Experiment B: seconds to wait between writing a shared file and reading it (on a VM the "
        "virtual disk may still be writing it back; 10 s removed a half-speed read from every round here).",
        "SECONDS"))
    stall: Optional[str] = field(default=None, metadata=option(
        "--stall", "Diagnostic: that rank sleeps SECONDS in its read phase (imbalance and timeout checks).",
        "RANK:SECONDS"))
    # --- derived by grid()
    hints: dict = field(default_factory=dict)

    def mpi_launcher(self, ranks=None):
        from ...measure.mpi import Launcher
        return Launcher(ranks=ranks or max(self.ranks), hostfile=self.hostfile, template=self.launcher,
                        timeout_s=self.timeout, mpi_io=self.mpi_io)


# Options that only some experiments read (given without them: an error, not silently ignored).
EXPERIMENT_ONLY = {("tasks",): ("buffers", "stacks"), ("tasks", "dask"): ("file_sets",),
                   ("mpiio",): ("backends", "patterns", "access", "mpi_buffer", "hint", "hints_file", "settle"),
                   ("dask",): ("scheduler",)}


def _text(v) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def build_grid(preset="full", **values) -> Grid:
    values = base.checked_values("parallel-read", Grid, PRESETS, preset, values)
    v = {k: x for k, x in values.items() if x is not None}
    p = PRESETS[preset]
    get = lambda k, d=None: v.get(k, p.get(k, d))  # noqa: E731
    if isinstance(v.get("hint"), str):
        v["hint"] = [v["hint"]]
    try:
        ranks = sorted({int(x) for x in _text(get("ranks")).split(",") if x.strip()})
    except ValueError:
        raise InputError(f"--ranks must be integers, not '{_text(get('ranks'))}'") from None
    if not ranks or ranks[0] < 1:
        raise InputError("--ranks must be positive integers")
    size = parse_size(_text(get("size")))
    if size < 8 or size % 8:
        raise InputError(f"--size {size} must be a positive multiple of 8 bytes (float64 elements)")
    mpi_buffer = parse_size(_text(get("mpi_buffer")))
    if mpi_buffer < 8 or mpi_buffer % 8:
        raise InputError(f"--mpi-buffer {mpi_buffer} must be a positive multiple of 8 bytes")
    buffers = parse_size_list(_text(get("buffers")))
    if any(b < 8 or b % 8 for b in buffers):
        raise InputError("--buffers must be positive multiples of 8 bytes")
    reps = int(get("reps"))
    if reps < 1:
        raise InputError("--reps must be at least 1")
    mpi_io = get("mpi_io", "default")
    check_mpi_io(mpi_io)
    timeout = float(get("timeout", 3600.0))
    if not timeout > 0:
        raise InputError(f"--timeout must be positive, not {timeout:g}")
    stall = v.get("stall")
    if stall:
        try:
            r, s = stall.split(":")
            int(r), float(s)
        except ValueError:
            raise InputError(f"--stall '{stall}' must be RANK:SECONDS") from None
    try:
        settle = float(get("settle", 0.0) or 0.0)
    except (TypeError, ValueError):
        raise InputError(f"--settle '{get('settle')}' must be a number of seconds") from None
    if not 0 <= settle < float("inf"):
        raise InputError(f"--settle must be zero or more seconds, not {settle:g}")
    ch = lambda k, allowed, what, old=None: parse_choice(_text(get(k, ",".join(allowed))), allowed, what,  # noqa: E731
                                                         renamed=old)
    experiments = ch("experiments", EXPERIMENTS, "experiment")
    for exp, names in EXPERIMENT_ONLY.items():   # an option of an experiment this run leaves out: an error
        given = [f"--{n.replace('_', '-')}" for n in names if v.get(n) not in (None, [], "")]
        if given and not any(e in experiments for e in exp):
            raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to experiment "
                             f"{' or '.join(exp)} only, and this run has --experiments {','.join(experiments)}")
    # experiment B's backends as the native programs list them (csrc/pario/backends.h, one X-macro list)
    backends = ch("backends", native.pario_backends(), "backend")
    g = Grid(experiments=experiments, ranks=ranks, size=size, buffers=buffers,
             stacks=ch("stacks", TASK_STACKS, "stack", OLD_STACK_NAMES),
             file_sets=ch("file_sets", FILE_SETS, "file set"),
             backends=backends, patterns=ch("patterns", MPI_PATTERNS, "pattern"),
             access=ch("access", ACCESS, "access"), mpi_buffer=mpi_buffer, hint=list(v.get("hint") or []),
             hints_file=v.get("hints_file"), mpi_io=mpi_io, reps=reps, scheduler=v.get("scheduler"),
             hostfile=v.get("hostfile"), launcher=v.get("launcher"), timeout=timeout, stall=stall,
             settle=settle, hints=parse_hints(v.get("hint") or (), v.get("hints_file")))
    from .run import check_ranks
    check_ranks(g)
    return g


class ParallelRead(base.Study):
    name = STUDY
    title = "Parallel read scaling (thesis ch. 5): independent tasks, MPI-IO on one file, and Dask."
    description = ("Experiment A: N tasks each read their own file or piece (C POSIX, netCDF-C, netCDF4-python, "
                   "h5py). Experiment B: one file through MPI-IO/HDF5/netCDF-4/PnetCDF, sequential or striding, "
                   "independent or collective. Dask: xarray on a LocalCluster or --scheduler (dask-jobqueue, "
                   "dask-mpi). Every repetition is cold per rank (fadvise + mincore) and every value is checked.")
    Grid = Grid
    presets = PRESETS


    def survey_grid(self, quick: bool) -> Grid:
        """2 ranks, small files: well under a minute."""
        return self.grid("quick", ranks="2", size="4MiB" if quick else "16MiB", reps=2 if quick else 3,
                         timeout=600.0)

    def check(self, grid: Grid, data_dir) -> None:
        from . import run
        grid.mpi_launcher().io_component()
        if grid.hostfile and not Path(grid.hostfile).is_file():
            raise InputError(f"hostfile {grid.hostfile} does not exist")
        run.check_space(grid, data_dir)
        if "dask" in grid.experiments and grid.scheduler:
            from ...measure.dask import Cluster
            with Cluster(scheduler=grid.scheduler):     # reachable: one line (exit 5) if not
                pass

    def run(self, ctx: base.RunContext, grid: Grid) -> int:
        from . import run
        return run.run_grid(ctx, grid)


base.register(ParallelRead())
