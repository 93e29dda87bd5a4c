"""The serial read-stack study (thesis ch. 3): layers x patterns x buffer sizes, cold cache.

Each layer runs as one process per series (a C probe or the Python worker); this module
only builds the grid, runs the untimed strace pass that counts the read syscalls each layer
issues, runs the timed pass and merges the two into the records.
"""

import os
import sys
from collections import Counter
from dataclasses import dataclass

from .. import native, syscalls
from ..errors import DataError, InputError
from ..measure import stream_records
from ..options import parse_choice
from ..patterns import PATTERNS, plan
from ..units import parse_size_list
from .read_stack_layers import LAYERS, NATIVE_LAYERS, file_kind

STUDY = "read-stack"
FULL_BUFFERS = "512B..1GiB"          # the thesis's range, capped by the file size
QUICK_BUFFERS = "4KiB,64KiB,1MiB,16MiB"
TRACE_MAX_OPS = 1000                  # requests traced per configuration: enough for per-request ratios


@dataclass
class Grid:
    layers: list
    patterns: list
    buffers: list
    reps: int = 3
    cache: str = "cold"
    budget_s: float = 60.0
    random_count: int = 100
    seed: int = 1
    odirect: bool = False
    c_api: str = "read"      # c-posix: read(2), or unbuffered fread as in the thesis's appendix C
    verify: bool = False
    trace_syscalls: bool = True
    variable: str = "data"

    def configs_per_layer(self) -> int:
        return len(self.patterns) * len(self.buffers)


def buffers_for(spec, file_bytes) -> list:
    """Buffer sizes from a spec, capped by the file size (a buffer larger than the file is no new case)."""
    sizes = parse_size_list(spec)
    kept = [s for s in sizes if s <= file_bytes]
    bad = [s for s in sizes if s % 8]
    if bad:
        raise InputError(f"buffer size {bad[0]} B is not a whole number of float64 values (multiple of 8)")
    if not kept:
        raise InputError(f"every buffer size is larger than the file ({file_bytes} B)")
    return kept


def layer_command(layer, path, grid: Grid, platform_id="", reps=None, cache=None, max_ops=0, budget=None) -> list:
    common = [
        "--file", path, "--patterns", ",".join(grid.patterns),
        "--buffers", ",".join(map(str, grid.buffers)), "--reps", str(reps or grid.reps),
        "--cache", cache or grid.cache, "--random-count", str(grid.random_count), "--seed", str(grid.seed),
        "--budget", str(grid.budget_s if budget is None else budget), "--max-ops", str(max_ops),
        "--platform-id", platform_id,
    ]
    if file_kind(layer) == "nc":
        common += ["--var", grid.variable]
    if grid.verify:
        common.append("--verify")
    if layer in NATIVE_LAYERS:
        extra = ["--api", grid.c_api, *(["--odirect"] if grid.odirect else [])] if layer == "c-posix" else []
        return [native.program(NATIVE_LAYERS[layer]), *common, *extra]
    return [sys.executable, "-m", "climio.bench.read_stack_worker", "--layer", layer, *common]


def trace_layer(layer, path, grid: Grid) -> dict:
    """{(pattern, buffer): syscall summary} from one untimed strace pass of the layer."""
    cmd = layer_command(layer, path, grid, reps=1, cache="cold", max_ops=TRACE_MAX_OPS, budget=0)
    per_mark = syscalls.trace(cmd, path)
    file_bytes = data_bytes(path, layer, grid.variable)
    out = {}
    for pattern in grid.patterns:
        for buffer in grid.buffers:
            requests = min(len(plan(pattern, file_bytes, buffer, grid.random_count, grid.seed)), TRACE_MAX_OPS)
            sizes = per_mark.get((pattern, str(buffer), "0"), Counter())
            out[(pattern, buffer)] = syscalls.summarise(sizes, requests)
    return out


def data_bytes(path, layer, variable="data") -> int:
    """Bytes the patterns range over: the whole binary file, or the netCDF variable's data."""
    if file_kind(layer) == "bin":
        return os.path.getsize(path)
    import netCDF4
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


def check_files(files: dict, layers) -> None:
    for layer in layers:
        path = files.get(file_kind(layer))
        if not path or not os.path.isfile(path):
            raise DataError(f"layer {layer} needs a {file_kind(layer)} file, not found: {path}")


def run_grid(files: dict, grid: Grid, writer, platform_id="", progress=None) -> int:
    """Run the grid, writing records through `writer`; return the number of records."""
    check_files(files, grid.layers)
    count = 0
    for layer in grid.layers:
        path = files[file_kind(layer)]
        traced = trace_layer(layer, path, grid) if grid.trace_syscalls else {}
        if progress:
            progress.note(f"{layer}: timed pass")

        def on_record(rec, traced=traced):
            nonlocal count
            key = (rec["params"]["pattern"], rec["params"]["buffer_bytes"])
            if key in traced:
                rec["metrics"]["syscalls"] = traced[key]
            writer.write(rec)
            count += 1
            if progress:
                progress.advance(grid.reps - rec["rep"] if rec["status"] == "dnf" else 1, rec)

        stream_records(layer_command(layer, path, grid, platform_id), on_record)
    return count


# --- the study as a command: data, run directory, grid, report -------------------------------

PRESETS = {
    # The thesis's grid: 512 B doubling to 1 GiB (capped by the file), 3 cold repeats.
    "full": {"size": "1GiB", "buffers": FULL_BUFFERS, "reps": 3, "budget_s": 60.0},
    # What `climio survey` runs: the same shape at a size that finishes in minutes on a laptop.
    "survey": {"size": "128MiB", "buffers": "512B..128MiB:4", "reps": 3, "budget_s": 4.0},
    "quick": {"size": "16MiB", "buffers": QUICK_BUFFERS, "reps": 2, "budget_s": 3.0},
}


def prepare_files(file=None, bin_file=None, size=None, data_dir=None, seed=0, progress=True) -> dict:
    """The netCDF-4 and binary files to read: the user's, or generated (random numbers, as the thesis)."""
    from ..data import make_data
    from ..progressbar import BytesProgress
    from ..units import parse_size

    if file or bin_file:
        for p in (file, bin_file):
            if p and not os.path.isfile(p):
                raise DataError(f"no such file: {p}")
        return {"nc": file, "bin": bin_file}
    nbytes = parse_size(size)
    with BytesProgress(2 * nbytes, "make-data (1-D netCDF-4 + binary)", enabled=None if progress else False) as bar:
        made = make_data(data_dir, size=nbytes, kinds=("1d",), random=True, seed=seed, progress=bar.callback)
    return {"nc": str(made["1d_nc"]), "bin": str(made["1d_bin"])}


def grid_from_options(files, layers, patterns, buffers, reps, cache, budget_s, variable="data", **kw) -> Grid:
    layers = parse_choice(layers, LAYERS, "layer") if layers else list(LAYERS)
    available = [l for l in layers if files.get(file_kind(l))]
    missing = [l for l in layers if l not in available]
    if missing and layers != list(LAYERS):
        kind = file_kind(missing[0])
        raise DataError(f"layer {missing[0]} needs a {'netCDF-4 (--file)' if kind == 'nc' else 'plain binary (--bin-file)'} file")
    if not available:
        raise DataError("no file to read: give --file (netCDF-4) and/or --bin-file (binary), or --size to generate")
    kinds = {file_kind(l): l for l in available}
    sizes = [data_bytes(files[kind], layer, variable) for kind, layer in kinds.items()]
    return Grid(layers=available, patterns=parse_choice(patterns or ",".join(PATTERNS), PATTERNS, "pattern"),
                buffers=buffers_for(buffers, min(sizes)), reps=reps, cache=cache, budget_s=budget_s,
                variable=variable, **kw)


def run_study(run, files, grid: Grid, progress=True) -> int:
    """Run the grid into an open RunDir with a progress bar; return the number of records."""
    from ..progressbar import StudyProgress

    total = len(grid.layers) * grid.configs_per_layer() * grid.reps
    with StudyProgress(total, "read-stack", enabled=None if progress else False) as bar:
        return run_grid(files, grid, run.writer, run.platform_id, bar)
