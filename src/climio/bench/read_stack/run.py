"""The serial read-stack study (thesis ch. 3): layers x patterns x buffer sizes, cold cache.

Each layer runs as one process per series (a C probe or the Python worker); this module
prepares the files, runs the untimed strace pass that counts the read syscalls each layer
issues, runs the timed pass and merges the two into the records. The grid and its checks are
in grid.py; what the records say is in summary.py, section.py and figures.py.

    grid = ReadStack().grid("quick", layers="c-posix,numpy")      # climio.bench.read_stack
    run_study(run, grid, data_dir)                                 # records into an open RunDir
"""

import dataclasses
import os
import sys
from collections import Counter

from ... import native, syscalls
from ...access import plan
from ...errors import DataError
from ...measure.procs import stream_records
from ...stacks import NATIVE_STACKS, STACK_NAMES, file_kind  # noqa: F401
from . import STUDY
from .grid import FULL_BUFFERS, PRESETS, QUICK_BUFFERS, Grid, buffers_for, data_bytes  # noqa: F401

TRACE_MAX_OPS = 1000                  # requests traced per configuration: enough for per-request ratios


def layer_command(layer, path, grid: Grid, platform_id="", reps=None, cache=None, max_ops=0, budget=None) -> list:
    common = [
        "--file", path, "--patterns", ",".join(grid.patterns),
        "--buffers", ",".join(map(str, grid.buffers)), "--reps", str(reps or grid.reps),
        "--cache", cache or grid.page_cache, "--random-count", str(grid.random_count), "--seed", str(grid.seed),
        "--budget", str(grid.budget_s if budget is None else budget), "--max-ops", str(max_ops),
        "--platform-id", platform_id,
    ]
    if file_kind(layer) == "nc":
        common += ["--var", grid.variable]
    if grid.verify:
        common.append("--verify")
    if layer in NATIVE_STACKS:
        extra = ["--api", grid.c_api or "read", *(["--odirect"] if grid.odirect else [])] if layer == "c-posix" else []
        return [native.program(NATIVE_STACKS[layer]), *common, *extra]
    return [sys.executable, "-m", "climio.measure.worker", "--study", STUDY, "--stack", layer, *common]


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


# --- the study: files, grid, progress ---------------------------------------------------------------

def prepare_files(grid: Grid, data_dir=None, seed=0, progress=True) -> dict:
    """The netCDF-4 and binary files to read: the user's, or generated in `data_dir` at
    grid.size_bytes (random numbers, as the thesis's files)."""
    from ...data import make_data
    from ...measure.progress import BytesProgress

    if grid.files:
        return grid.files
    if grid.file or grid.bin_file:
        return {"nc": grid.file, "bin": grid.bin_file}
    nbytes = grid.size_bytes
    with BytesProgress(2 * nbytes, "make-data (1-D netCDF-4 + binary)", enabled=None if progress else False) as bar:
        made = make_data(data_dir, size=nbytes, kinds=("1d",), random=True, seed=seed, progress=bar.callback)
    return {"nc": str(made["1d_nc"]), "bin": str(made["1d_bin"])}


def check_space(grid: Grid, data_dir) -> None:
    """Room for the two generated files (none needed when the user gave files)."""
    if grid.files or grid.file or grid.bin_file or not grid.size_bytes:
        return
    from ...data import FILE_NAMES
    from ...data.writer import check_space as check
    n = grid.size_bytes // 8 * 8
    check([(os.path.join(data_dir, FILE_NAMES["1d_nc"]), n), (os.path.join(data_dir, FILE_NAMES["1d_bin"]), n)])


def run_study(run, grid: Grid, data_dir=None, progress=True) -> int:
    """Prepare the files and run the grid into an open RunDir (run.writer, run.platform_id) with a
    progress bar; return the number of records."""
    from ...measure.progress import StudyProgress

    files = prepare_files(grid, data_dir, progress=progress)
    grid = dataclasses.replace(grid, files=files)
    total = len(grid.layers) * grid.configs_per_layer() * grid.reps
    with StudyProgress(total, STUDY, enabled=None if progress else False) as bar:
        return run_grid(files, grid, run.writer, run.platform_id, bar)
