"""The layouts study's run: the source file, one layout search per mix (and per pattern), the grid
of shapes, a `climio rechunk` to each (timed: the one-off cost the search predicts), and every
read pattern cold on each shape. Records:

    kind=search   one per mix: the advised shape, its predicted reads and conversion, the top 3
    kind=convert  one per shape: the conversion's wall time (0 for the file as it is)
    kind=read     one per (shape, pattern, repetition): the measured pass, with the predicted one
"""

import math
import os
import subprocess
import time

from climio.machine import native
from climio.base.errors import ClimioError, NativeError
from climio.dataset.layout import Layout, balanced_chunks, format_chunks, library_default_chunks
from ...data.writer import check_room, write_4d
from ...measure.procs import failure_line, kill_group
from ...measure.progress import info
from ...measure.tasks import measure
from ...model import layout_search
from climio import profiles
from ...model.convert import rechunk_cost
from climio.machine.memory import here
from ...model.layout_search import Pattern
from ...model.predict import predict
from climio.dataset.description import layout_of
from ...model.workflow import reads_for
from climio.dataset.options import parse_compression
from climio.runs.records import make_record
from climio.measure.stacks import chunk_cache_of
from . import MIN_SHAPES, STUDY

VAR = "ta"
CONVERT_TIMEOUT_S = 1800.0


def label(chunks) -> str:
    return "contiguous" if chunks is None else format_chunks(chunks)


def _patterns(grid) -> list:
    return list(dict.fromkeys(p for _, parts in grid.mix_list for p, _ in parts))


def shape_grid(lay, codec, grid, prof, reads_of, cache) -> tuple:
    """(the searches per mix, the shapes to measure {label: (chunks, why)}): the file as it is,
    contiguous, the library default, Rew's balanced, each pattern's best and each mix's top 3
    (topped up from the mixes' rankings to MIN_SHAPES)."""
    cost = rechunk_cost(prof, here())
    searches = {}
    memo = {}    # each (shape, pattern) priced once across the mixes' searches
    for name, parts in grid.mix_list:
        mix = [Pattern(p, reads_of[p], n) for p, n in parts]
        searches[name] = layout_search.search(lay, codec, mix, grid.stack, prof, cost, chunk_cache=cache, memo=memo)
    shapes = {}

    def add(chunks, why):
        shapes.setdefault(label(chunks), (None if chunks is None else tuple(int(c) for c in chunks), why))
    add(lay.chunks, "the file as it is")
    add(None, "contiguous")
    add(library_default_chunks(lay.shape, lay.itemsize), "library default")
    add(balanced_chunks(lay.shape, lay.itemsize), "Rew's balanced")
    for p in _patterns(grid):
        res = layout_search.search(lay, codec, [Pattern(p, reads_of[p], 1)], grid.stack, prof, lambda *a: 0.0,
                                   chunk_cache=cache, memo=memo)
        add(res.ranked[0].chunks, f"best for {p}")
    for name, res in searches.items():
        add(res.best.chunks, f"advised for {name}")
        for c in res.ranked[:3]:
            add(c.chunks, f"top 3 for {name}")
    depth = 3
    while len(shapes) < MIN_SHAPES and depth < max(len(r.ranked) for r in searches.values()):
        for name, res in searches.items():
            if depth < len(res.ranked):
                add(res.ranked[depth].chunks, f"ranked {depth + 1} for {name}")
        depth += 1
    # still short (a small variable has few shapes the search ranks): shapes of the searched space
    # spread evenly over its chunk sizes
    rest = [c for c in layout_search.candidates(lay.shape, lay.itemsize) if label(c) not in shapes]
    rest.sort(key=lambda c: (math.prod(c), c))
    want = MIN_SHAPES - len(shapes)
    for i in range(min(want, len(rest))):
        add(rest[(2 * i + 1) * len(rest) // (2 * want)], "searched space, spread over chunk sizes")
    return searches, shapes


def _convert(src, dst, chunks) -> float:
    """Wall seconds of `climio rechunk SRC DST` to `chunks` (the command advice prints)."""
    target = ["--contiguous", "--compression", "none"] if chunks is None else ["-c", f"{VAR}:{','.join(map(str, chunks))}"]
    argv = [native.program("climio"), "rechunk", src, dst, *target, "--force"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=CONVERT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise NativeError(f"climio rechunk to {label(chunks)} did not finish within {CONVERT_TIMEOUT_S:.0f} s") from None
    except BaseException:       # a stop: the converter removes its temporary output on SIGTERM
        kill_group(proc)
        proc.wait()
        raise
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise ClimioError(f"climio rechunk to {label(chunks)} failed: {failure_line(stderr, 'climio')}")
    return wall


def _search_record(name, res, pid):
    params = {"kind": "search", "mix": name, "advised": label(res.best.chunks),
              "advised_predicted": res.best.to_dict(), "current_predicted": res.current.to_dict(),
              "top": [label(c.chunks) for c in res.ranked[:3]], "searched": res.searched}
    return make_record(STUDY, params, {"wall_s": 0.0}, {"state": "cold", "note": "a model search of cold reads: nothing read"},
                       0, "ok", pid)


def run_layouts(ctx, grid) -> int:
    pid = ctx.run.platform_id
    say = info if ctx.progress else (lambda *_: None)
    prof = profiles.calibrated(ctx.run.platform_id, grid.profile, say)
    d = os.path.join(ctx.data_dir, "layouts")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "source.nc")
    T, Z, Y, X = grid.dims
    comp = parse_compression(grid.compression)
    write_4d(src, list(grid.dims), chunks=[1, 1, Y, X], dtype="f4", compression=comp, seed=7)
    lay, codec, var = layout_of(src, VAR)
    reads_of = {p: reads_for(lay, p, var) for p in _patterns(grid)}
    cache = chunk_cache_of(grid.stack, src, var, None)
    say(f"layouts: searching chunk shapes for {len(grid.mix_list)} mixes")
    searches, shapes = shape_grid(lay, codec, grid, prof, reads_of, cache)
    n = 0
    for name, res in searches.items():
        ctx.run.writer.write(_search_record(name, res, pid))
        n += 1
        say(f"layouts: {name}: advised {label(res.best.chunks)} (predicted {res.best.total_s:.3g} s with conversion)")
    t0 = time.perf_counter()
    for k, (lab, (chunks, why)) in enumerate(shapes.items()):
        same = chunks == (tuple(lay.chunks) if lay.chunks else None)
        path = src if same else os.path.join(d, f"shape{k}.nc")
        wall = 0.0 if same else _convert(src, path, chunks)
        ctx.run.writer.write(make_record(STUDY, {"kind": "convert", "chunks": lab, "why": why, "source": label(lay.chunks)},
                                         {"wall_s": wall}, {"state": "warm", "note": "the source as the run left it"},
                                         0, "ok", pid))
        n += 1
        try:
            n += _read_all(ctx, grid, prof, path, lab, why, reads_of, pid, say)
        finally:
            if not same and os.path.exists(path):
                os.remove(path)
        say(f"layouts: {k + 1}/{len(shapes)} shapes ({lab}, {why}), {time.perf_counter() - t0:.0f} s")
    os.remove(src)
    return n


def _read_all(ctx, grid, prof, path, lab, why, reads_of, pid, say) -> int:
    """Every pattern read cold on one converted file; a pattern predicted past --max-s is a dnf."""
    lay, codec, var = layout_of(path, VAR)
    if label(lay.chunks) != lab:
        raise ClimioError(f"climio rechunk was asked for chunks {lab} and wrote {label(lay.chunks)} ({path})")
    cache = chunk_cache_of(grid.stack, path, var, None)
    n = 0
    for p, reads in reads_of.items():
        pred = predict(lay, reads, grid.stack, prof, codec=codec if lay.compressed else "", chunk_cache=cache)
        params = {"kind": "read", "chunks": lab, "file_chunks": label(lay.chunks), "why": why, "pattern": p,
                  "predicted_s": pred.seconds,
                  "stack": grid.stack, "compression": codec if lay.compressed else "none"}
        if pred.seconds > grid.max_s:
            ctx.run.writer.write(make_record(STUDY, {**params, "reason": f"predicted {pred.seconds:.3g} s > --max-s"},
                                             {"wall_s": 0.0}, {"state": "cold", "note": "not run"}, 0, "dnf", pid))
            say(f"layouts: {lab} {p}: predicted {pred.seconds:.3g} s per pass, over --max-s: not read")
            n += 1
            continue
        recs = measure(path, var, reads, grid.stack, 1, grid.reps, platform_id=pid, study=STUDY, params=params,
                       needed_bytes=int(pred.counts.cold_bytes()))
        for r in recs:
            ctx.run.writer.write(r)
        n += len(recs)
    return n


def check_space(grid, data_dir) -> None:
    """The source and one converted copy at a time (uncompressed bound)."""
    check_room(data_dir, 2 * Layout(grid.dims, 4, None).nbytes, "use a smaller --shape or another --data-dir")
