"""The parallel-write study: benchio (ARCHER white paper) and a model-output emulator (MOM5/FMS,
ROMS) over MPI-IO, parallel HDF5, parallel netCDF-4 and PnetCDF.

The measuring is done by the native MPI program `climio-pario-write` (csrc/pario/README.md);
this module holds the parameter grid, launches one MPI job per rank count (the program loops
over backends x strategies x repetitions itself, so a sweep pays mpirun's start-up once per
rank count), sets Lustre stripes where they exist, and adds what only the launcher side knows
(stripe settings, the launch command) to every record.

The load test (benchio Fig. 14) runs K instances at once, each writing its own files, and
aggregates their bandwidth from the wall-clock start and end every record carries.
"""

import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from .. import native
from ..errors import DiskSpaceError, InputError
from ..launcher import Launcher, cores, stream_mpi
from ..options import parse_choice
from ..progressbar import StudyProgress
from ..report.parallel_write_summary import aggregate_instances
from .. import stripes
from ..units import format_size

STUDY = "parallel-write"
PROGRAM = "climio-pario-write"
MODES = ("benchio", "model")


def all_backends() -> tuple:
    """The backends of climio-pario-write in its default order (mpiio, hdf5, netcdf4, pnetcdf),
    asked from the program (`--list`) on first use: importing this module runs nothing."""
    return native.pario_backends()


STRATEGIES = ("shared", "file-per-process", "file-per-node", "serial")
MODEL_STRATEGIES = ("shared", "file-per-process", "serial")
# The hints ROMIO and Lustre understand that the papers tuned; others pass through unchecked.
KNOWN_HINTS = ("cb_nodes", "cb_buffer_size", "cb_config_list", "romio_cb_write", "romio_ds_write",
               "romio_no_indep_rw", "striping_factor", "striping_unit", "ind_wr_buffer_size")

PRESETS = {
    # benchio's own local size (128^3 doubles = 16 MiB per rank) and 10 repetitions.
    "full": {"ranks": "1,2,4", "local": "128,128,128", "grid": "192,128,20", "nt": 4, "reps": 10},
    "survey": {"ranks": "2,4", "local": "48,48,48", "grid": "96,64,10", "nt": 3, "reps": 5},
    "quick": {"ranks": "2,4", "local": "24,24,24", "grid": "48,32,6", "nt": 2, "reps": 3},
}
# The papers' grids, for --grid on a cluster.
PAPER_GRIDS = {"mom5": "1440,1080,50", "roms": "899,629,40"}


@dataclass
class Grid:
    mode: str = "benchio"
    ranks: list = field(default_factory=lambda: [1, 2, 4])
    backends: list = field(default_factory=lambda: list(all_backends()))
    strategies: list = field(default_factory=lambda: list(STRATEGIES))
    reps: int = 10
    hints: dict = field(default_factory=dict)
    fsync: bool = False
    verify: bool = True
    independent: bool = False
    # benchio
    local: Optional[list] = None          # weak scaling
    global_: Optional[list] = None        # strong scaling
    # model
    grid: Optional[list] = None
    nt: int = 4
    decomposition: Optional[list] = None
    io_layout: Optional[list] = None
    small: str = "collective"
    chunk: str = "default"
    variables: Optional[list] = None
    select: float = 0.0
    # launcher side
    stripe_count: Optional[int] = None
    stripe_size: Optional[int] = None
    extra: dict = field(default_factory=dict)   # params added to every record (e.g. the tuning sweep's)

    def jobs_per_launch(self) -> int:
        return len(self.backends) * len(self.strategies) * self.reps

    def program_args(self, out_dir, platform_id="") -> list:
        """The command line of climio-pario-write for this grid (one launch)."""
        a = [native.program(PROGRAM), "--mode", self.mode, "--dir", str(out_dir),
             "--backends", ",".join(self.backends), "--strategies", ",".join(self.strategies),
             "--reps", str(self.reps), "--platform-id", platform_id]
        for k, v in self.hints.items():
            a += ["--hint", f"{k}={v}"]
        a += ["--fsync"] if self.fsync else []
        a += [] if self.verify else ["--no-verify"]
        a += ["--independent"] if self.independent else []
        if self.mode == "benchio":
            if self.global_:
                a += ["--global", _csv(self.global_)]
            elif self.local:
                a += ["--local", _csv(self.local)]
        else:
            if self.grid:
                a += ["--grid", _csv(self.grid)]
            a += ["--nt", str(self.nt), "--small", self.small, "--chunk", self.chunk]
            if self.decomposition:
                a += ["--decomposition", _csv(self.decomposition)]
            if self.io_layout:
                a += ["--io-layout", _csv(self.io_layout)]
            if self.variables:
                a += ["--vars", _csv(self.variables)]
            if self.select:
                a += ["--select", repr(float(self.select))]
        return a

    def bytes_per_job(self, ranks: int) -> int:
        """Upper bound of the bytes one job leaves on disk (for the free-space check)."""
        if self.mode == "benchio":
            if self.global_:
                n = self.global_[0] * self.global_[1] * self.global_[2]
            else:
                loc = self.local or [128, 128, 128]
                n = loc[0] * loc[1] * loc[2] * ranks
            return 8 * n
        nx, ny, nz = self.grid or [192, 128, 20]
        n3d, n2d, nrst = self.variables or [4, 3, 2]
        return 4 * self.nt * (n3d * nz + n2d) * nx * ny + 8 * nrst * nx * ny * nz


def _csv(values) -> str:
    return ",".join(str(v) for v in values)


def parse_int_list(text, what, n=None, minimum=1) -> list:
    try:
        vals = [int(x) for x in str(text).strip("[] ").split(",") if x.strip()]
    except ValueError:
        raise InputError(f"malformed {what} '{text}': use comma-separated integers") from None
    if not vals or (n is not None and len(vals) != n) or min(vals) < minimum:
        want = f"{n} " if n else ""
        raise InputError(f"{what} '{text}' must be {want}integers >= {minimum}")
    return vals


def parse_hints(pairs=(), hints_file=None) -> dict:
    """`KEY=VALUE` items and the lines of a hints file (KEY=VALUE or ROMIO's `KEY VALUE`; # comments)."""
    items = []
    if hints_file:
        try:
            text = Path(hints_file).read_text()
        except OSError as exc:
            raise InputError(f"cannot read hints file {hints_file}: {exc.strerror}") from None
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                items.append(line if "=" in line else "=".join(line.split(None, 1)))
    for p in pairs:
        items += [x.strip() for x in str(p).split(",") if x.strip()]
    hints = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"malformed hint '{item}': use KEY=VALUE, e.g. cb_nodes=4")
        hints[key.strip()] = value.strip()
    return hints


def build_grid(mode="benchio", ranks=None, backends=None, strategies=None, reps=None, hints=None, fsync=False,
               verify=True, independent=False, local=None, global_=None, grid=None, nt=None, decomposition=None,
               io_layout=None, small="collective", chunk="default", variables=None, select=0.0,
               stripe_count=None, stripe_size=None, preset="full") -> Grid:
    if mode not in MODES:
        raise InputError(f"unknown --mode '{mode}': choose from {', '.join(MODES)}")
    p = PRESETS[preset]
    allowed = STRATEGIES if mode == "benchio" else MODEL_STRATEGIES
    if strategies is None:
        strategies = ",".join(allowed)
    if local and global_:
        raise InputError("give --local (weak scaling) or --global (strong scaling), not both")
    if small not in ("collective", "independent"):
        raise InputError(f"unknown --small '{small}': use collective or independent")
    if select < 0:
        raise InputError("--select must be a non-negative RMS threshold")
    g = Grid(mode=mode, ranks=parse_int_list(ranks or p["ranks"], "--ranks"),
             backends=parse_choice(backends or ",".join(all_backends()), all_backends(), "backend"),
             strategies=parse_choice(strategies, allowed, f"{mode}-mode strategy"),
             reps=reps or p["reps"], hints=dict(hints or {}), fsync=fsync, verify=verify, independent=independent,
             small=small, chunk=_check_chunk(chunk), select=select, nt=nt or p["nt"],
             stripe_count=stripe_count, stripe_size=stripe_size)
    if mode == "benchio":
        if global_:
            g.global_ = parse_int_list(global_, "--global", 3)
        else:
            g.local = parse_int_list(local or p["local"], "--local", 3)
    else:
        g.grid = parse_int_list(PAPER_GRIDS.get(str(grid).lower(), grid) if grid else p["grid"], "--grid", 3)
        g.decomposition = parse_int_list(decomposition, "--decomposition", 2) if decomposition else None
        g.io_layout = parse_int_list(io_layout, "--io-layout", 2) if io_layout else None
        g.variables = parse_int_list(variables, "--vars", 3, minimum=0) if variables else None
    return g


def _check_chunk(chunk) -> str:
    if chunk in ("default", "contiguous"):
        return chunk
    parse_int_list(chunk, "--chunk (CKX,CKY)", 2)
    return chunk


def check_space(grid: Grid, data_dir, instances=1) -> None:
    """One job's files must fit twice over (the program removes a repetition's files before the next;
    the margin covers file-system metadata and the netCDF-4/HDF5 chunk index), per instance."""
    need = 2 * max(grid.bytes_per_job(r) for r in grid.ranks) * instances
    free = shutil.disk_usage(data_dir).free
    if need > free:
        raise DiskSpaceError(f"the parallel-write study needs about {format_size(need)} in {data_dir}, "
                             f"which has {format_size(free)} free: use smaller --local/--grid or another --data-dir")


def run_study(run, grid: Grid, data_dir, launcher: Launcher, progress=True, label=None) -> list:
    """Every rank count of `grid`, one launch each; records go to run.writer. Returns the records."""
    out_dir = Path(data_dir) / "parallel-write"
    out_dir.mkdir(parents=True, exist_ok=True)
    stripe = stripes.apply(out_dir, grid.stripe_count, grid.stripe_size)
    check_space(grid, out_dir)
    total = len(grid.ranks) * grid.jobs_per_launch()
    mpi_io = launcher.io_component()
    got = []
    with StudyProgress(total, label or f"parallel-write ({grid.mode})", enabled=None if progress else False) as bar:
        for ranks in grid.ranks:
            lau = replace(launcher, ranks=ranks)
            bar.note(f"parallel-write {grid.mode}: {lau.describe()}")

            def on_record(rec, lau=lau):
                rec["params"].update(stripe=stripe, launcher=lau.describe(), mpi_io=mpi_io, **grid.extra)
                run.writer.write(rec)
                got.append(rec)
                p = rec["params"]
                bar.advance(1, last=f"{p['backend']} {p['strategy']} {p['ranks']} ranks: "
                                    f"{rec['metrics'].get('rate_MBps', 0):.1f} MB/s")

            stream_mpi(lau, grid.program_args(out_dir, run.platform_id), on_record)
    return got


def load_test(run, grid: Grid, data_dir, launcher: Launcher, instances: int) -> list:
    """benchio's load test: `instances` copies of the same job at once, each with its own files.
    Returns one summary per repetition: aggregate MB/s = all bytes / (last end - first start)."""
    if instances < 1:
        raise InputError("--instances must be at least 1")
    check_space(grid, data_dir, instances)
    recs, errors = [], []
    lock = threading.Lock()
    ranks = grid.ranks[-1]
    lau = replace(launcher, ranks=ranks)
    base = Path(data_dir) / "parallel-write-load"
    base.mkdir(parents=True, exist_ok=True)
    stripe = stripes.apply(base, grid.stripe_count, grid.stripe_size)   # before the instances' directories
    dirs = [base / f"instance-{i:03d}" for i in range(instances)]
    for d in dirs:
        d.mkdir(exist_ok=True)
    mpi_io = launcher.io_component()

    def one(i):
        def on_record(rec):
            rec["params"].update(instances=instances, instance=i, launcher=lau.describe(), stripe=stripe,
                                 mpi_io=mpi_io, **grid.extra)
            with lock:
                run.writer.write(rec)
                recs.append(rec)

        try:
            stream_mpi(lau, grid.program_args(dirs[i], run.platform_id), on_record)
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


def default_ranks_note(grid: Grid) -> str:
    n = cores()
    over = [r for r in grid.ranks if r > n]
    return f"{', '.join(map(str, over))} ranks on {n} cores: oversubscribed, rates are not scaling figures" if over else ""
