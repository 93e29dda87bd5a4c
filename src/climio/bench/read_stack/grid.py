"""The read-stack grid: its command-line options (Grid field metadata), the presets, and the
parsing and checks that turn the user's values into a Grid (one-line errors).

The option fields hold, once the grid is built, the parsed values: `layers` (the stacks, option
--stacks) and `patterns` as lists of names, `buffers` as a list of byte sizes (capped by the
data's size), `budget_s` in seconds. The command line gives them as text ("c-posix,numpy",
"512B..1GiB").
"""

import os
from dataclasses import dataclass, field, fields
from typing import Optional

from climio.dataset import integrity
from climio.base.errors import DataError, InputError
from ..base import checked_values, option

FULL_BUFFERS = "512B..1GiB"          # the thesis's range, capped by the file size
QUICK_BUFFERS = "4KiB,64KiB,1MiB,16MiB"
CACHES = ("cold", "warm")
C_APIS = ("read", "fread")

PRESETS = {
    # The thesis's grid: 512 B doubling to 1 GiB (capped by the file), 3 cold repeats.
    "full": {"size": "1GiB", "buffers": FULL_BUFFERS, "reps": 3, "budget_s": 60.0},
    # What `climio survey` (and `climio bench read-stack` without --quick/--full) runs: the same
    # shape at a size that finishes in minutes on a laptop.
    "survey": {"size": "128MiB", "buffers": "512B..128MiB:4", "reps": 3, "budget_s": 4.0},
    "quick": {"size": "16MiB", "buffers": QUICK_BUFFERS, "reps": 2, "budget_s": 3.0},
}


@dataclass
class Grid:
    file: Optional[str] = field(default=None, metadata=option(
        "--file", "netCDF-4 file with a 1-D float64 variable (see --var).", "FILE"))
    bin_file: Optional[str] = field(default=None, metadata=option(
        "--bin-file", "Plain binary file for the c-posix, py-file and numpy layers.", "FILE"))
    variable: str = field(default="data", metadata=option("--var", "Variable to read from --file.", "NAME"))
    size: Optional[str] = field(default=None, metadata=option(
        "--size", "Generate files of this size instead (e.g. 1GiB) in --data-dir or a temporary directory.", "SIZE"))
    layers: Optional[list] = field(default=None, metadata=option(
        "--stacks", "Comma list of c-posix, c-netcdf, py-file, numpy, netcdf4-python, h5py, h5netcdf, xarray "
                    "(default all).", "LIST", deprecated=("--layers",)))
    patterns: Optional[list] = field(default=None, metadata=option(
        "--patterns", "Comma list of sequential, strided, random (default all).", "LIST"))
    buffers: Optional[list] = field(default=None, metadata=option(
        "--buffers", "Buffer sizes: 512B,4KiB,1MiB or a range 512B..1GiB (doubling) or 512B..1GiB:4.", "LIST"))
    reps: int = field(default=3, metadata=option("--reps", "Repetitions per configuration (default 3).", "N"))
    page_cache: str = field(default="cold", metadata=option(
        "--page-cache", "Page-cache state of every repetition: cold (the file evicted with posix_fadvise, verified "
        "with mincore) or warm.", "cold|warm", deprecated=("--cache",)))
    budget_s: float = field(default=60.0, metadata=option(
        "--budget", "Seconds per repetition: a repetition still reading then is stopped and recorded as "
        "did-not-finish with the rate bound it implies (0 = none).", "SECONDS"))
    odirect: bool = field(default=False, metadata=option(
        "--odirect/--no-odirect", "c-posix layer opens with O_DIRECT (needs c-posix in --stacks)."))
    c_api: Optional[str] = field(default=None, metadata=option(
        "--c-api", "c-posix layer reads with read (lseek + read(2)) or fread (unbuffered stdio, as the thesis's "
                   "appendix C) (default read; needs c-posix in --stacks).", "read|fread"))
    trace_syscalls: bool = field(default=True, metadata=option(
        "--syscalls/--no-syscalls", "Count the read syscalls of every layer in an untimed strace pass."))
    seed: int = field(default=1, metadata=option("--seed", "Seed of the random read offsets.", "N"))
    # Derived (not options): set by build_grid / the run.
    random_count: int = 100
    verify: bool = False
    size_bytes: Optional[int] = None      # bytes of each generated file (None: the user's files)
    files: dict = field(default_factory=dict)   # {"nc": path, "bin": path} once known

    def configs_per_layer(self) -> int:
        return len(self.patterns) * len(self.buffers)


def _names(value, allowed, what) -> list:
    from climio.dataset.options import parse_choice
    text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
    return parse_choice(text, allowed, what)


def buffers_for(spec, file_bytes) -> list:
    """Buffer sizes from a spec (text or a list of sizes), capped by the file size (a buffer
    larger than the file is no new case)."""
    from climio.dataset.options import parse_size, parse_size_list
    if isinstance(spec, (list, tuple)):
        sizes = sorted({parse_size(s) for s in spec})
        if not sizes or sizes[0] <= 0:
            raise InputError(f"buffer sizes must be positive: {spec}")
    else:
        sizes = parse_size_list(spec)
    bad = [s for s in sizes if s % 8]
    if bad:
        raise InputError(f"buffer size {bad[0]} B is not a whole number of float64 values (multiple of 8)")
    kept = [s for s in sizes if s <= file_bytes]
    if not kept:
        raise InputError(f"every buffer size is larger than the file ({file_bytes} B)")
    return kept


def data_bytes(path, layer, variable="data") -> int:
    """Bytes the patterns range over: the whole binary file, or the netCDF variable's data."""
    from climio.measure.stacks import file_kind
    if file_kind(layer) == "bin":
        return os.path.getsize(path)
    import netCDF4
    integrity.check(path)
    try:
        with netCDF4.Dataset(path) as ds:
            v = ds.variables[variable]
            if v.ndim != 1 or v.dtype != "f8":
                raise DataError(f"variable {variable!r} in {path} must be 1-D float64 for the read-stack study")
            return v.shape[0] * v.dtype.itemsize
    except KeyError:
        raise DataError(f"no variable {variable!r} in {path}") from None
    except OSError as exc:
        raise DataError(f"cannot open {path} as netCDF: {exc}") from None


def build_grid(preset: str, **values) -> Grid:
    """The Grid of `preset` with the user's `values` (Grid field names; None = not given).

    Every check that needs no measurement runs here: names, sizes, the user's files (they exist,
    hold a 1-D float64 variable, and each asked layer has its file). Without --file/--bin-file
    the files are generated by the run, at `size`."""
    from climio.dataset.access import PATTERNS
    from climio.measure.stacks import STACK_NAMES, file_kind
    from climio.dataset.options import parse_size

    # cache= (--cache) is page_cache= now; random_count and verify are settings without a flag
    values = checked_values("read-stack", Grid, PRESETS, preset, values, also=("random_count", "verify"))
    names = {f.name for f in fields(Grid)} - {"files", "size_bytes"}
    vals = {f.name: f.default for f in fields(Grid) if f.name in names}
    vals.update(PRESETS[preset])
    vals.update({k: v for k, v in values.items() if v is not None})

    if vals["page_cache"] not in CACHES:
        raise InputError(f"unknown --page-cache '{vals['page_cache']}': use cold or warm")
    given = {k for k, v in values.items() if v is not None}
    if "size" in given and (vals["file"] or vals["bin_file"]):
        raise InputError("--size generates files: not with --file/--bin-file (their size is given)")
    vals["c_api"] = vals["c_api"] or "read"
    if vals["c_api"] not in C_APIS:
        raise InputError(f"unknown --c-api '{vals['c_api']}': use read or fread")
    try:
        vals["reps"], vals["budget_s"], vals["seed"] = int(vals["reps"]), float(vals["budget_s"]), int(vals["seed"])
    except (TypeError, ValueError):
        raise InputError("--reps, --budget and --seed take numbers") from None
    if vals["reps"] < 1:
        raise InputError(f"--reps must be at least 1, not {vals['reps']}")
    if vals["budget_s"] < 0:
        raise InputError(f"--budget must be 0 (none) or more seconds, not {vals['budget_s']:g}")

    explicit = vals["layers"] is not None
    layers = _names(vals["layers"], STACK_NAMES, "layer") if explicit else list(STACK_NAMES)
    patterns = _names(vals["patterns"] or ",".join(PATTERNS), PATTERNS, "pattern")
    if "seed" in given and "random" not in patterns:
        raise InputError("--seed applies to the random pattern only, which this run does not measure: "
                         "add random to --patterns or drop --seed")
    file, bin_file = (str(vals[k]) if vals[k] else None for k in ("file", "bin_file"))
    size_bytes, files = None, {}
    if file or bin_file:
        for p in (file, bin_file):
            if p and not os.path.isfile(p):
                raise DataError(f"no such file: {p}")
        files = {"nc": file, "bin": bin_file}
        available = [l for l in layers if files.get(file_kind(l))]
        missing = [l for l in layers if l not in available]
        if missing and explicit:
            kind = file_kind(missing[0])
            raise DataError(f"layer {missing[0]} needs a "
                            f"{'netCDF-4 (--file)' if kind == 'nc' else 'plain binary (--bin-file)'} file")
        if not available:
            raise DataError("no file to read: give --file (netCDF-4) and/or --bin-file (binary), or --size to generate")
        layers = available
        kinds = {file_kind(l): l for l in layers}
        cap = min(data_bytes(files[kind], layer, vals["variable"]) for kind, layer in kinds.items())
    else:
        if vals["variable"] != "data":
            raise InputError(f"--var {vals['variable']} needs --file: generated files hold the variable 'data'")
        size_bytes = parse_size(vals["size"])
        cap = size_bytes // 8 * 8
        if cap < 8:
            raise InputError(f"--size {vals['size']} is less than one float64 (8 B)")
    if "c-posix" not in layers:
        for name, flag, on in (("odirect", "--odirect", bool(vals["odirect"])), ("c_api", "--c-api", "c_api" in given)):
            if name in given and on:
                raise InputError(f"{flag} applies to the c-posix layer only, which this run does not measure"
                                 f"{'' if explicit else ' (no --bin-file)'}: add it to --stacks or drop {flag}")
    vals.update(file=file, bin_file=bin_file, layers=layers, patterns=patterns,
                buffers=buffers_for(vals["buffers"], cap))
    return Grid(**vals, size_bytes=size_bytes, files=files)
