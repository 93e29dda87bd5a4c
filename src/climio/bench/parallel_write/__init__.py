"""The parallel-write study: benchio (ARCHER white paper) and a model-output emulator (MOM5/FMS,
ROMS) over MPI-IO, parallel HDF5, parallel netCDF-4 and PnetCDF.

    Grid                  the options of `climio bench parallel-write` (option() metadata) and what
                          grid() derives from them (modes, hints, stripe bytes)
    ParallelWrite         the Study: grid, check, run (+ the load test), summarise, section, findings
    run.py                launches climio-pario --op write under MPI (one launch per rank count)
    tune.py               `climio tune write`: the MOM5 paper's sweep
    summary.py            pure numbers from records; section.py / figures.py: the report's section

The CLI form of a Grid option: a field annotated bool is a switch (`--verify/--no-verify` when the
flag says so), int / float (or Optional of them) take that type, a `repeat` option is a list of
text, and every other option takes text that grid() parses into the field (LIST -> [int] or [name],
nx,ny,nz -> [int, int, int]). A Grid returned by grid() holds parsed values only.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from climio.machine import native
from climio.base.errors import InputError
from climio.dataset.options import parse_choice, parse_hints, parse_int_list
from climio.dataset.options import parse_size
from .. import base
from ..base import option
from climio.dataset.options import check_mpi_io
from .summary import STUDY

MODES = ("benchio", "model")
STRATEGIES = ("shared", "file-per-process", "file-per-node", "serial")
MODEL_STRATEGIES = ("shared", "file-per-process", "serial")
ALLOWED = {"benchio": STRATEGIES, "model": MODEL_STRATEGIES}

PRESETS = {
    # benchio's own local size (128^3 doubles = 16 MiB per rank) and 10 repetitions.
    "full": {"ranks": "1,2,4", "local": "128,128,128", "model_grid": "192,128,20", "nt": 4, "reps": 10},
    "survey": {"ranks": "2,4", "local": "48,48,48", "model_grid": "96,64,10", "nt": 3, "reps": 5},
    "quick": {"ranks": "2,4", "local": "24,24,24", "model_grid": "48,32,6", "nt": 2, "reps": 3},
}
# The papers' grids, for --grid on a cluster.
PAPER_GRIDS = {"mom5": "1440,1080,50", "roms": "899,629,40"}
SURVEY_TIMEOUT_S = 900.0


@dataclass
class Grid:
    # --- options of `climio bench parallel-write` (the CLI adds --quick, --out, --data-dir, --report)
    mode: str = field(default="benchio", metadata=option(
        "--mode", "benchio (ARCHER benchio: 3-D float64 blocks with halo) or model (FMS/ROMS output: records of "
        "3-D/2-D fields, small variables, restart).", "benchio|model"))
    ranks: Optional[list] = field(default=None, metadata=option(
        "--ranks", "Rank counts, comma separated, e.g. 1,2,4,8 (default 1,2,4; --quick 2,4).", "LIST"))
    backends: Optional[list] = field(default=None, metadata=option(
        "--backends", "Comma list of mpiio, hdf5, netcdf4, pnetcdf (default all).", "LIST"))
    strategies: Optional[list] = field(default=None, metadata=option(
        "--strategies", "Comma list of shared, file-per-process, file-per-node, serial (model mode: shared, "
        "file-per-process = one file per I/O domain, serial).", "LIST"))
    hint: list = field(default_factory=list, metadata=option(
        "--hint", "MPI-IO hint KEY=VALUE (cb_nodes, cb_buffer_size, cb_config_list, romio_cb_write, romio_ds_write, "
        "striping_factor, striping_unit, ...); repeatable.", "KEY=VALUE", repeat=True))
    hints_file: Optional[str] = field(default=None, metadata=option(
        "--hints-file", "File of hints, one KEY=VALUE (or ROMIO's 'KEY VALUE') per line.", "FILE"))
    reps: Optional[int] = field(default=None, metadata=option(
        "--reps", "Repetitions per configuration (default 10 as benchio; --quick 3).", "N"))
    local: Optional[list] = field(default=None, metadata=option(
        "--local", "benchio weak scaling: local array n1,n2,n3 per rank (default 128,128,128).", "n1,n2,n3"))
    global_: Optional[list] = field(default=None, metadata=option(
        "--global", "benchio strong scaling: global array N1,N2,N3 split over the ranks.", "N1,N2,N3"))
    model_grid: Optional[list] = field(default=None, metadata=option(
        "--grid", "model: nx,ny,nz, or mom5 (1440,1080,50) / roms (899,629,40) (default 192,128,20).", "nx,ny,nz"))
    nt: Optional[int] = field(default=None, metadata=option(
        "--nt", "model: records appended (default 4).", "N"))
    decomposition: Optional[list] = field(default=None, metadata=option(
        "--decomposition", "model: px,py ranks (default MPI_Dims_create).", "px,py"))
    io_layout: Optional[list] = field(default=None, metadata=option(
        "--io-layout", "model: FMS io_layout ix,iy; each I/O domain gathers to one writing rank (default px,py: "
        "every rank writes).", "ix,iy"))
    small: str = field(default="collective", metadata=option(
        "--small", "model: small non-tiled variables written collectively (one rank's data) or independently by "
        "every rank (ROMS).", "collective|independent"))
    chunk: str = field(default="default", metadata=option(
        "--chunks", "model: netCDF-4/HDF5 chunk shape of the 2-D/3-D fields: default, contiguous, or CKX,CKY "
        "(the MOM5 chunk study).", "default|contiguous|CKX,CKY", deprecated=("--chunk",)))
    variables: Optional[list] = field(default=None, metadata=option(
        "--var-counts", "model: numbers of 3-D, 2-D and restart variables (default 4,3,2).", "n3d,n2d,nrst",
        deprecated=("--vars",)))
    select: float = field(default=0.0, metadata=option(
        "--select", "model: ROMS selective writing; skip a 3-D record whose RMS change since the last written one "
        "is below this (0 = write all).", "RMS"))
    independent: bool = field(default=False, metadata=option(
        "--independent", "Independent instead of collective writes of the big arrays to a shared file."))
    fsync: bool = field(default=False, metadata=option("--fsync", "fsync before close, timed as its own phase."))
    verify: bool = field(default=True, metadata=option(
        "--verify/--no-verify", "Read every file back (outside the timed region) and check every value."))
    stripe_count: Optional[int] = field(default=None, metadata=option(
        "--stripe-count", "Lustre stripe count for the output directory (lfs setstripe; recorded as not applicable "
        "elsewhere).", "N"))
    stripe_size: Optional[str] = field(default=None, metadata=option(
        "--stripe-size", "Lustre stripe size, e.g. 1MiB.", "SIZE"))
    instances: int = field(default=0, metadata=option(
        "--instances", "Load test (benchio Fig. 14): also run this many instances at once at the largest rank count "
        "and report their aggregate bandwidth.", "N"))
    hostfile: Optional[str] = field(default=None, metadata=option(
        "--hostfile", "mpirun --hostfile for a multi-node run.", "FILE"))
    launcher: Optional[str] = field(default=None, metadata=option(
        "--launcher", "Launch command template instead of mpirun, e.g. 'srun -n {ranks}'.", "COMMAND"))
    timeout: float = field(default=3600.0, metadata=option(
        "--timeout", "Seconds before a launch is killed and reported as failed.", "SECONDS"))
    mpi_io: str = field(default="default", metadata=option(
        "--mpi-io", "Open MPI's MPI-IO implementation: default, romio or ompio (Open MPI 4 defaults to OMPIO, which "
        "ignores ROMIO hints such as cb_nodes).", "default|romio|ompio"))
    # --- derived by grid()
    modes: list = field(default_factory=lambda: ["benchio"])
    hints: dict = field(default_factory=dict)
    stripe_bytes: Optional[int] = None
    extra: dict = field(default_factory=dict)   # params added to every record (e.g. the tuning sweep's)

    # --- one mode at a time: what a launch of climio-pario --op write needs
    def split(self) -> list:
        """One Grid per mode, each with the strategies that mode has."""
        return [self if self.modes == [m] else
                replace(self, mode=m, modes=[m], strategies=[s for s in self.strategies if s in ALLOWED[m]])
                for m in self.modes]

    def jobs_per_launch(self) -> int:
        return sum(len(g.backends) * len(g.strategies) * g.reps for g in self.split())

    def program_args(self, out_dir, platform_id="") -> list:
        """The command line of climio-pario --op write for this (one-mode) grid: one launch."""
        if len(self.modes) != 1:
            raise ValueError("program_args needs a grid of one mode (Grid.split)")
        a = [*native.pario("write"), "--mode", self.mode, "--dir", str(out_dir),
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
            if self.model_grid:
                a += ["--grid", _csv(self.model_grid)]
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
        """Upper bound of the bytes one job leaves on disk (for the free-space check), over the modes."""
        out = 0
        for mode in self.modes:
            if mode == "benchio":
                if self.global_:
                    n = self.global_[0] * self.global_[1] * self.global_[2]
                else:
                    loc = self.local or [128, 128, 128]
                    n = loc[0] * loc[1] * loc[2] * ranks
                out = max(out, 8 * n)
            else:
                nx, ny, nz = self.model_grid or [192, 128, 20]
                n3d, n2d, nrst = self.variables or [4, 3, 2]
                out = max(out, 4 * self.nt * (n3d * nz + n2d) * nx * ny + 8 * nrst * nx * ny * nz)
        return out

    def mpi_launcher(self, ranks=None):
        """The measure.mpi.Launcher of this grid's launcher options."""
        from ...measure.mpi import Launcher
        return Launcher(ranks=ranks or self.ranks[-1], hostfile=self.hostfile, template=self.launcher,
                        timeout_s=self.timeout, mpi_io=self.mpi_io)


def _csv(values) -> str:
    return ",".join(str(v) for v in values)


def _text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _check_chunk(chunk) -> str:
    if chunk in ("default", "contiguous"):
        return chunk
    parse_int_list(chunk, "--chunks (CKX,CKY)", 2)
    return chunk


def _at_least(value, minimum, flag):
    if value is not None and value < minimum:
        raise InputError(f"{flag} must be at least {minimum}, not {value}")
    return value


FLAGS = {f.name: opt.flag.split("/")[0] for f, opt in base.options_of(Grid)}
# Options that mean something in one mode only: given in a run without that mode, an error.
MODE_ONLY = {"benchio": ("local", "global_"),
             "model": ("model_grid", "nt", "decomposition", "io_layout", "small", "chunk", "variables", "select")}


def _given(values, name) -> bool:
    """Whether the user gave option `name` (None and an empty list are "not given")."""
    return values.get(name) not in (None, [], "")


def build_grid(preset="full", **values) -> Grid:
    """Parse and check the options' values (text as the user typed it, or already parsed values);
    None means the preset's or the option's default. One-line InputError on bad input."""
    values = base.checked_values("parallel-write", Grid, PRESETS, preset, values)   # vars= is variables= now
    p = PRESETS[preset]
    v = {k: x for k, x in values.items() if x is not None}
    if isinstance(v.get("hint"), str):
        v["hint"] = [v["hint"]]
    d = Grid()
    get = lambda k: v.get(k, getattr(d, k))

    modes = parse_choice(_text(get("mode")), MODES, "--mode")
    allowed = [s for s in STRATEGIES if any(s in ALLOWED[m] for m in modes)]
    what = f"{modes[0]}-mode strategy" if len(modes) == 1 else "strategy"
    strategies = parse_choice(_text(v["strategies"]), allowed, what) if "strategies" in v else list(allowed)
    for m in modes:
        if not any(s in ALLOWED[m] for s in strategies):
            raise InputError(f"--strategies {','.join(strategies)} has none of {m} mode's "
                             f"({', '.join(ALLOWED[m])})")
    if v.get("local") and v.get("global_"):
        raise InputError("give --local (weak scaling) or --global (strong scaling), not both")
    for mode, names in MODE_ONLY.items():
        if mode not in modes:
            given = [FLAGS[n] for n in names if _given(v, n)]
            if given:
                raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --mode {mode} "
                                 f"only, and this run is --mode {','.join(modes)}")
    small = get("small")
    if small not in ("collective", "independent"):
        raise InputError(f"unknown --small '{small}': use collective or independent")
    select = float(get("select"))
    if select < 0:
        raise InputError("--select must be a non-negative RMS threshold")
    mpi_io = get("mpi_io")
    check_mpi_io(mpi_io)
    timeout = float(get("timeout"))
    if not timeout > 0:
        raise InputError(f"--timeout must be positive, not {timeout:g}")
    from .run import all_backends
    backends = all_backends()
    g = Grid(mode=",".join(modes), modes=modes, ranks=parse_int_list(_text(get("ranks") or p["ranks"]), "--ranks"),
             backends=parse_choice(_text(v["backends"]) if "backends" in v else ",".join(backends), backends,
                                   "backend"),
             strategies=strategies,
             reps=_at_least(int(v.get("reps", p["reps"])), 1, "--reps"),
             hint=list(get("hint") or []), hints_file=str(v["hints_file"]) if "hints_file" in v else None,
             hints=parse_hints(get("hint") or (), v.get("hints_file")),
             fsync=bool(get("fsync")), verify=bool(get("verify")), independent=bool(get("independent")),
             small=small, chunk=_check_chunk(get("chunk")), select=select,
             nt=_at_least(int(v.get("nt", p["nt"])), 1, "--nt"),
             stripe_count=_at_least(get("stripe_count"), 1, "--stripe-count"),
             stripe_size=v.get("stripe_size"),
             stripe_bytes=parse_size(str(v["stripe_size"])) if "stripe_size" in v else None,
             instances=_at_least(int(get("instances")), 0, "--instances"),
             hostfile=str(v["hostfile"]) if "hostfile" in v else None, launcher=v.get("launcher"),
             timeout=timeout, mpi_io=mpi_io)
    if "benchio" in modes:
        if v.get("global_"):
            g.global_ = parse_int_list(_text(v["global_"]), "--global", 3)
        else:
            g.local = parse_int_list(_text(v.get("local") or p["local"]), "--local", 3)
    if "model" in modes:
        gr = _text(v.get("model_grid") or p["model_grid"])
        g.model_grid = parse_int_list(PAPER_GRIDS.get(gr.lower(), gr), "--grid", 3)
        if v.get("decomposition"):
            g.decomposition = parse_int_list(_text(v["decomposition"]), "--decomposition", 2)
        if v.get("io_layout"):
            g.io_layout = parse_int_list(_text(v["io_layout"]), "--io-layout", 2)
        if v.get("variables"):
            g.variables = parse_int_list(_text(v["variables"]), "--var-counts", 3, minimum=0)
    return g


class ParallelWrite(base.Study):
    name = STUDY
    title = ("Parallel write bandwidth (benchio, MOM5/FMS, ROMS): backends x strategies x ranks, "
             "per-rank phase times.")
    Grid = Grid
    presets = PRESETS


    def survey_grid(self, quick: bool) -> Grid:
        """benchio and the model-output emulator with 2 and 4 ranks, every backend and strategy."""
        return self.grid("quick" if quick else "survey", mode="benchio,model", timeout=SURVEY_TIMEOUT_S)

    def check(self, grid: Grid, data_dir) -> None:
        """A bad --mpi-io, a missing hostfile or too little disk space fail here, before anything runs."""
        from . import run
        grid.mpi_launcher().io_component()
        if grid.hostfile and not Path(grid.hostfile).is_file():
            raise InputError(f"hostfile {grid.hostfile} does not exist")
        run.check_space(grid, data_dir, max(1, grid.instances))

    def run(self, ctx: base.RunContext, grid: Grid) -> int:
        from . import run
        return run.run_grid(ctx, grid)


PARALLEL_WRITE = base.register(ParallelWrite())
