"""The validation run: draw the configurations (space.draw with --seed), write each drawn layout
to a new file, predict each configuration from the profile with the chunk cache the stack really
opens the variable with, count the chunk reads HDF5 makes for its reads (counts.chunk_reads),
measure it cold (climio.measure.tasks) and write one record per repetition with the prediction
and both counts in its params."""

import os
import time

from ...data.writer import write_4d
from climio.base.errors import ClimioError, InputError
from ...measure import probes
from ...measure.progress import info
from ...measure.tasks import measure, split
from climio import profiles
from ...model.predict import DATASET_PER_READ, predict
from climio.dataset.description import layout_of
from ...model.workflow import reads_for
from climio.dataset.options import parse_compression
from climio.runs.records import make_record
from climio.measure.stacks import chunk_cache_of
from . import STUDY
from .counts import chunk_reads
from .space import draw


def _simulated_chunk_reads(p, lay) -> float:
    """The model's chunks read from storage as whole chunks: its decodes (filtered), or its misses
    when the chunks fit the cache (unfiltered chunks larger than it are read in pieces)."""
    c = p.counts
    if lay.compressed:
        return c.decodes
    fits = p.chunk_cache and lay.chunk_nbytes <= p.chunk_cache["nbytes"] and p.chunk_cache["nslots"] > 0
    return c.chunks_visited - c.chunk_cache_hits if fits else 0.0


def _params(cfg, lay, codec, p, cache, measured_reads, prof) -> dict:
    c = p.counts
    return {"config": cfg.id, "seed_index": cfg.index, "layout": lay.label(), "shape": list(lay.shape),
            "dtype": cfg.dtype, "chunks": list(lay.chunks) if lay.chunks else "contiguous", "compression": codec,
            "read": cfg.read, "read_kind": cfg.read_kind, "stack": cfg.stack, "tasks": cfg.tasks,
            "chunk_cache_asked": cfg.cache_bytes, "chunk_cache": cache,
            "predicted_s": p.seconds,
            "predicted": {"io_s": p.io_s, "decode_s": p.decode_s, "cpu_s": p.cpu_s, "bound": p.bound, "path": p.path},
            "simulated": {"chunk_visits": c.chunks_visited, "cache_hits": c.chunk_cache_hits,
                          "collisions": c.chunk_cache_collisions, "decodes": c.decodes,
                          "chunk_reads": _simulated_chunk_reads(p, lay), "reads": c.reads},
            "measured_counts": {"chunk_reads": measured_reads},
            "profile": prof.platform_id, "profile_source": prof.source}


def run_validation(ctx, grid) -> int:
    pid = ctx.run.platform_id
    say = info if ctx.progress else (lambda *_: None)
    prof = profiles.calibrated(ctx.run.platform_id, grid.profile, say)
    configs = draw(grid.configs, grid.seed)
    words = [w.strip() for w in grid.only.split(",") if w.strip()]
    configs = [c for c in configs if not words or any(w in c.id for w in words)]
    if not probes.available(probes.SLAB) and any(c.stack == "c-netcdf" for c in configs):
        raise InputError("the native slab probe (c-netcdf) is not built: run `make setup` (the space includes c-netcdf)")
    d = os.path.join(ctx.data_dir, f"predict-seed{grid.seed}")
    os.makedirs(d, exist_ok=True)
    by_layout = {}
    for c in configs:
        by_layout.setdefault(c.layout_key, []).append(c)
    n = done = 0
    t0 = time.perf_counter()
    for k, (key, group) in enumerate(by_layout.items()):
        shape, dtype, chunks, codec = key
        path = os.path.join(d, f"layout{k}.nc")
        write_4d(path, list(shape), chunks=list(chunks) if chunks else "contiguous", dtype=dtype,
                 compression=parse_compression(codec), seed=grid.seed + k, random=True)
        try:
            for cfg in group:
                try:
                    n += _one(ctx, grid, prof, cfg, path, pid, say)
                except ClimioError as exc:
                    # a stack that cannot read the drawn file (c-netcdf without the zstd plugin): said, recorded
                    line = str(exc).splitlines()[0]
                    ctx.run.writer.write(make_record(STUDY, {**cfg.to_dict(), "config": cfg.id, "reason": line},
                                                     {"wall_s": 0.0}, {"state": "cold", "note": "not run"}, 0, "error", pid))
                    say(f"predict {cfg.id}: not measured: {line}")
                    n += 1
                done += 1
                say(f"predict: {done}/{len(configs)} configurations, {time.perf_counter() - t0:.0f} s")
        finally:
            os.remove(path)
    say(f"predict: {len(configs)} configurations (seed {grid.seed}) in {time.perf_counter() - t0:.0f} s")
    return n


def _one(ctx, grid, prof, cfg, path, pid, say) -> int:
    """Predict, count and measure one configuration; its records written; how many."""
    lay, codec, var = layout_of(path, "ta")
    reads = reads_for(lay, cfg.read, var)
    cache = chunk_cache_of(cfg.stack, path, var, probes.chunk_cache_spec(cfg.cache_bytes))
    p = predict(lay, reads, cfg.stack, prof, tasks=cfg.tasks, codec=codec if lay.compressed else "",
                chunk_cache=cache)
    tasks = min(cfg.tasks, len(reads))
    if p.seconds > grid.max_s:
        # declared in the space: a configuration predicted past the budget is not run (a dnf record says so)
        params = {**_params(cfg, lay, codec, p, cache, None, prof), "reason": f"predicted {p.seconds:.3g} s > --max-s"}
        ctx.run.writer.write(make_record(STUDY, params, {"wall_s": 0.0}, {"state": "cold", "note": "not run"}, 0, "dnf", pid))
        say(f"predict {cfg.id}: predicted {p.seconds:.3g} s, over the --max-s {grid.max_s:g} s budget: not run")
        return 1
    measured = (chunk_reads(path, var, split(reads, tasks), cache, per_read=cfg.stack in DATASET_PER_READ)
                if lay.chunks is not None and cache else None)
    params = _params(cfg, lay, codec, p, cache, measured, prof)
    # the machine's load as the configuration is measured: a shared machine slows every stack alike
    params["load_1min"], params["cores"] = round(os.getloadavg()[0], 2), os.cpu_count() or 1
    recs = measure(path, var, reads, cfg.stack, cfg.tasks, grid.reps, chunk_cache=cfg.cache_bytes, platform_id=pid,
                   study=STUDY, params=params, needed_bytes=int(p.counts.cold_bytes()))
    for r in recs:
        ctx.run.writer.write(r)
    meas = sorted(r["metrics"]["wall_s"] for r in recs)[len(recs) // 2]
    say(f"predict {cfg.id}: predicted {p.seconds:.3g} s, measured {meas:.3g} s ({p.seconds / meas:.2f}x); chunk reads "
        f"simulated {params['simulated']['chunk_reads']:.0f}, counted {measured if measured is not None else '-'}")
    return len(recs)
