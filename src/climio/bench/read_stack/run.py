"""The serial read-stack study (thesis ch. 3): layers x patterns x buffer sizes, cold cache.

Each layer runs as one process per round of repetitions (a C probe or the Python worker); this
module prepares the files, runs the untimed strace passes that count the read syscalls each layer
issues, then the timed rounds with the stacks taking turns in each slot (plan_passes), and merges
the two into the records. The grid and its checks are
in grid.py; what the records say is in summary.py, section.py and figures.py.

    grid = ReadStack().grid("quick", layers="c-posix,numpy")      # climio.bench.read_stack
    run_study(run, grid, data_dir)                                 # records into an open RunDir
"""

import dataclasses
import os
import sys
from collections import Counter

from climio.machine import native
from climio.measure import syscalls
from climio.dataset.access import plan
from climio.machine.cache import warm
from climio.base.errors import DataError
from ...measure.procs import stream_records
from climio.measure.stacks import NATIVE_STACKS, STACK_NAMES, file_kind  # noqa: F401
from . import STUDY
from .grid import Grid, data_bytes

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


# --- the order of the passes ------------------------------------------------------------------------
#
# Why the order matters (issue 27 item 8, measured on a Firecracker VM whose virtio balloon reports
# free memory to the host in ~2 s passes): a cold buffered read is fast (1.3-1.8 GB/s, 0.06-0.1 s of
# system time per GB) when the page cache it fills reuses memory freed a moment before - its eviction
# of a copy of the file read whole just before, or freed huge pages - and slow (170-280 MB/s, 1.0-1.6
# s/GB) when that memory has been free long enough to be reported to the host: a file evicted 6 s
# earlier read 0 of 6 times fast, 5 of 6 after an untimed full read, 5 of 6 after 1 GiB of huge pages
# was touched and freed (4 KiB pages did not help). O_DIRECT reads show no modes. A reporting pass that
# falls inside a read turns part of it slow, so on a loaded machine about one repetition in three
# lands in between whatever ran before: that is recorded (summary.sys_s_per_GB) and flagged
# (summary.two_modes), not removed. What the order removes: every timed process starts right after a
# full read of its file (prime_file), never after a partial one (a random-read configuration of the
# strace pass or of another round), and the stacks take turns in the slots of the timed rounds.

def plan_passes(layers, reps, trace=True) -> list:
    """The passes of a run, in order: ("trace", stack) for every stack (when `trace`), then `reps`
    rounds of ("timed", stack, rep), every stack once per round, rotated one slot per round (with two
    stacks: A B, B A, A B, ...), so no stack is always first or always after the same one. Round 0
    starts with the first stack, whose strace pass is not the last: a stack's timed run never comes
    right after its own strace pass when there is another stack."""
    layers = list(layers)
    steps = [("trace", layer) for layer in layers] if trace else []
    n = len(layers)
    for rep in range(reps if n else 0):
        steps += [("timed", layer, rep) for layer in layers[rep % n:] + layers[:rep % n]]
    return steps


def pending_runs(pending: dict, patterns) -> list:
    """[(patterns, buffers)] processes that cover `pending` ({pattern: [buffers still to run]})
    exactly: patterns with the same buffers left share one process (a probe runs patterns x buffers)."""
    groups = {}
    for pattern in patterns:
        buffers = tuple(pending.get(pattern) or ())
        if buffers:
            groups.setdefault(buffers, []).append(pattern)
    return [(pats, list(buffers)) for buffers, pats in groups.items()]


def prime_file(path) -> None:
    """Read `path` whole (untimed, into the page cache) so that the next repetition's eviction frees a
    whole copy the guest has just used, and its cold read starts in the fast mode (see above)."""
    warm(path)


def run_grid(files: dict, grid: Grid, writer, platform_id="", progress=None) -> int:
    """Run the grid in the order of plan_passes, writing records through `writer`; return the number
    of records. Each timed pass is one process per stack and round (--reps 1; its records carry the
    round as `rep`); a configuration that did not finish is not run again in later rounds."""
    check_files(files, grid.layers)
    count = 0
    traced, pending = {}, {}
    for step in plan_passes(grid.layers, grid.reps, grid.trace_syscalls):
        layer, path = step[1], files[file_kind(step[1])]
        if step[0] == "trace":
            if progress:
                progress.note(f"{layer}: strace pass")
            traced[layer] = trace_layer(layer, path, grid)
            continue
        rep = step[2]
        left = pending.setdefault(layer, {p: list(grid.buffers) for p in grid.patterns})
        if progress:
            progress.note(f"{layer}: timed pass, repetition {rep + 1} of {grid.reps}")

        def on_record(rec, layer=layer, rep=rep, left=left):
            nonlocal count
            key = (rec["params"]["pattern"], rec["params"]["buffer_bytes"])
            if key in traced.get(layer, {}):
                rec["metrics"]["syscalls"] = traced[layer][key]
            rec["rep"] = rep
            if rec["status"] == "dnf" and key[1] in left.get(key[0], ()):
                left[key[0]].remove(key[1])
            writer.write(rec)
            count += 1
            if progress:
                progress.advance(grid.reps - rep if rec["status"] == "dnf" else 1, rec)

        for patterns, buffers in pending_runs(left, grid.patterns):
            if grid.page_cache == "cold" and not (layer == "c-posix" and grid.odirect):
                prime_file(path)
            part = dataclasses.replace(grid, patterns=patterns, buffers=buffers)
            stream_records(layer_command(layer, path, part, platform_id, reps=1), on_record)
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
