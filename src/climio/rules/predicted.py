"""The rules on predicted facts: a workflow's reads with the model's predictions (Facts.workflow),
and collective-vs-independent, which judges workflows, traces and Darshan logs alike.

The core does not import the model: the caller (climio.advice) hands over the predictions and a
what-if function (WorkflowFacts.again) that predicts the same reads with one thing changed, and
the rechunk planner's one-off cost. Every recommendation carries the predicted time before and
after (seconds over all passes), the one-off cost and the break-even passes.
"""

import math

from . import fixes
from .registry import REGISTRY, rule, saving_share, severity
from .chunks import ADVISED_MAX_CHUNK_BYTES, SMALL_CHUNK_BYTES, bounded_chunks
from .measured import SMALL_REQUEST_BYTES, SMALL_REQUEST_MIN_COUNT, SMALL_REQUEST_SHARE
from climio.dataset.layout import Layout, balanced_chunks
from climio.dataset.reads import read_count as parse_read
from climio.base.units import format_size

MIN_GAIN_SHARE = 0.10        # a recommendation must save at least this share of the predicted time
NODE_COUNTS = (1, 2, 4, 8, 16)   # node counts the tasks rule weighs (each node like this one)
MOST_OF_THE_GAIN = 0.9       # ... it advises the fewest tasks and nodes that reach this share of the best gain
CACHE_HEADROOM = 1.25        # a recommended chunk cache holds this much more than one read touches
# the workflow's stack names -> the program stacks fixes.py speaks
PROGRAM_STACK = {"c-netcdf": "native", "netcdf4-python": "netcdf4-python", "h5py": "h5py", "h5netcdf": "h5netcdf",
                 "xarray": "xarray"}


def recommendation(rule_id, message, evidence, before, after, one_off=0.0, per_pass_saving=None, command="",
                   advice="") -> dict:
    """A workflow recommendation: gain = before - after (seconds over all passes); break-even
    passes = one-off cost / saving per pass (0 when there is no one-off cost)."""
    r = REGISTRY[rule_id]
    if set(evidence) != set(r.evidence):
        raise ValueError(f"rule {rule_id}: evidence {sorted(evidence)} is not the declared {sorted(r.evidence)}")
    gain = None if before is None or after is None else before - after
    be = None
    if gain is not None and per_pass_saving:
        be = one_off / per_pass_saving if per_pass_saving > 0 else None
    return {"rule": rule_id, "title": r.title, "message": message, "evidence": evidence, "before_s": before,
            "after_s": after, "gain_s": gain, "one_off_s": one_off, "break_even_passes": be,
            "command": command, "advice": advice, "thresholds": dict(r.thresholds)}


def _first(wf):
    it = wf.items[0]
    same_var = all(x.path == it.path and x.var == it.var for x in wf.items)
    return it, same_var


def read_chunks(spec, lay, desc=None) -> tuple:
    """The chunk shape advised for one read of the workflow, within the chunk-size bounds (the read
    by the dimensions' roles when the variable's description is known)."""
    count = ((lay.shape[0], 1, 1, lay.shape[3]) if spec.read.strip().lower() == "stsa" else
             parse_read(spec.read, lay.shape, getattr(desc, "dims", None), getattr(desc, "roles", None)))
    return bounded_chunks(count, lay.shape, lay.itemsize)


@rule("chunk-shape", "A chunk shape for the workflow's reads", inputs=("workflow",), needs=("workflow",),
      thresholds={"MIN_GAIN_SHARE": MIN_GAIN_SHARE, "SMALL_CHUNK_BYTES": SMALL_CHUNK_BYTES,
                  "ADVISED_MAX_CHUNK_BYTES": ADVISED_MAX_CHUNK_BYTES},
      evidence=("current", "target_chunks", "candidates", "chosen_by"),
      looks_for="the chunk shape (of each read's shape, Rew's balanced one, the current one; each within "
                "SMALL_CHUNK_BYTES..ADVISED_MAX_CHUNK_BYTES, the bounds climio rechunk warns about) with the least "
                "predicted time over all the workflow's reads; one-off cost from the rechunk planner")
def chunk_shape(facts):
    wf = facts.workflow
    it, same_var = _first(wf)
    lay0 = it.layout
    if not same_var or len(lay0.shape) < 2:
        return []
    total, per_pass = wf.total_s, wf.per_pass_s
    cands = {f"read {x.spec.read}": read_chunks(x.spec, x.layout, x.desc) for x in wf.items}
    cands["balanced"] = tuple(balanced_chunks(lay0.shape, lay0.itemsize))
    best = None
    for label, ch in cands.items():
        if lay0.chunks is not None and tuple(lay0.chunks) == ch:
            continue
        ratio = (lay0.stored / lay0.nbytes) if lay0.compressed and lay0.nbytes else None

        def relayout(lay, ch=ch, ratio=ratio):
            return Layout(lay.shape, lay.itemsize, ch, lay.compressed, round(lay.nbytes * ratio) if ratio else None)
        t, tp = wf.again(layout=relayout)
        if best is None or t < best[1]:
            best = (label, t, tp, ch)
    if not best or best[1] >= (1 - MIN_GAIN_SHARE) * total:
        return []
    label, t, tp, ch = best
    one_off = wf.rechunk_cost(lay0, Layout(lay0.shape, lay0.itemsize, ch, lay0.compressed), it.codec)
    return [recommendation(
        "chunk-shape", f"chunks {list(ch)} ({label}) instead of {lay0.label()}: predicted {total:.3g} s -> {t:.3g} s "
                       f"for the workflow ({total / t:.1f}x)",
        {"current": lay0.to_dict(), "target_chunks": list(ch), "candidates": {k: list(v) for k, v in cands.items()},
         "chosen_by": label},
        total, t, one_off, per_pass - tp, f"climio rechunk {it.path} {wf.out_name} -c {it.var}:{','.join(map(str, ch))}",
        "Re-lay the variable out so that each read takes whole chunks (the thesis's x-t chunks: 24x for the STSA "
        "read); reading it in the new layout pays back after the break-even passes.")]


@rule("chunk-cache", "A chunk cache that holds what one read touches", inputs=("workflow",), needs=("workflow",),
      thresholds={"CACHE_HEADROOM": CACHE_HEADROOM, "MIN_GAIN_SHARE": MIN_GAIN_SHARE},
      evidence=("touched_bytes_max", "cache_bytes", "recommended_bytes"),
      looks_for="partial-chunk reads of chunks shared by consecutive reads, with a chunk cache smaller than one "
                "read's chunks")
def chunk_cache(facts):
    wf, profile = facts.workflow, facts.profile
    need = max((x.prediction.counts.max_touched_bytes for x in wf.items
                if x.layout.chunks is not None and x.prediction.counts.partial_chunks), default=0)
    # the cache the library really opens the variable with (read from it by the prediction), else
    # the size asked, else the profile's figure for the stack
    real = next((x.prediction.chunk_cache for x in wf.items if x.layout.chunks is not None
                 and x.prediction.chunk_cache and x.prediction.chunk_cache.get("nbytes") is not None), None)
    cache_now = (int(real["nbytes"]) if real else wf.chunk_cache if wf.chunk_cache is not None
                 else profile.stack(wf.stack).chunk_cache_bytes)
    if not need or need <= cache_now:
        return []
    total, per_pass = wf.total_s, wf.per_pass_s
    size = int(math.ceil(need * CACHE_HEADROOM / 2**20)) * 2**20
    t, tp = wf.again(cache=size)
    if t >= (1 - MIN_GAIN_SHARE) * total:
        return []
    it = wf.items[0]
    return [recommendation(
        "chunk-cache", f"one read touches {need / 2**20:.1f} MiB of chunks, the {wf.stack} chunk cache holds "
                       f"{cache_now / 2**20:.1f} MiB: a {size / 2**20:.0f} MiB cache predicts {total:.3g} s -> {t:.3g} s",
        {"touched_bytes_max": need, "cache_bytes": cache_now, "recommended_bytes": size},
        total, t, 0.0, per_pass - tp,
        f"netCDF4: var.set_var_chunk_cache({size}); h5py: h5py.File(..., rdcc_nbytes={size}); "
        f"C: nc_set_var_chunk_cache(ncid, varid, {size}, 4133, 0.75)",
        fixes.chunk_cache(PROGRAM_STACK.get(wf.stack), it.path, it.var, size, it.layout.chunks, None))]


@rule("tasks", "Tasks per node and nodes / Dask workers", inputs=("workflow",), needs=("workflow",),
      thresholds={"MIN_GAIN_SHARE": MIN_GAIN_SHARE, "NODE_COUNTS": NODE_COUNTS, "MOST_OF_THE_GAIN": MOST_OF_THE_GAIN},
      evidence=("cores", "tasks_per_node", "nodes", "speedup_io", "speedup_cpu", "shared_fs_Bps", "best", "candidates"),
      looks_for="tasks per node among 1, the cores and twice the cores, on NODE_COUNTS nodes of this platform (the "
                "calibrated per-node speed-ups, capped by a shared-file-system bandwidth when the profile has one): "
                "the fewest tasks and nodes that reach MOST_OF_THE_GAIN of the best predicted gain")
def tasks_and_nodes(facts):
    """Tasks per node (1, the cores, twice the cores) x nodes (NODE_COUNTS) of this platform: of the
    configurations within MOST_OF_THE_GAIN of the best predicted gain, the one with the fewest
    tasks, then the fewest nodes. More tasks than the workflow has reads would sit idle: not weighed.
    Nodes are weighed only when the profile has the shared file system's bandwidth (measured across
    nodes): without it, more nodes would be predicted to add storage bandwidth without bound."""
    wf, profile = facts.workflow, facts.profile
    total, per_pass = wf.total_s, wf.per_pass_s
    cores, ceiling = wf.cores, wf.shared_fs_Bps
    most = max(len(x.reads) for x in wf.items)
    cands = {}
    for n in sorted({1, cores, 2 * cores}):
        for nodes in NODE_COUNTS if ceiling else (1,):
            if (n, nodes) != (wf.tasks, 1) and n * nodes <= max(most, wf.tasks):
                cands[(n, nodes)] = wf.again(tasks=n, nodes=nodes)
    if not cands:
        return []
    (bn, bnodes), (best_t, _) = min(cands.items(), key=lambda kv: kv[1][0])
    if best_t >= (1 - MIN_GAIN_SHARE) * total:
        return []
    goal = total - MOST_OF_THE_GAIN * (total - best_t)
    (n, nodes), (t, tp) = min(((k, v) for k, v in cands.items() if v[0] <= goal),
                              key=lambda kv: (kv[0][0] * kv[0][1], kv[0][1], kv[1][0]))
    s_io, s_cpu = profile.speedup("io", n), profile.speedup("cpu", n)
    where = f"{n} task{'s' if n != 1 else ''} per node on {nodes} nodes ({n * nodes} tasks)" if nodes > 1 \
        else f"{n} tasks"
    bandwidth = (f"; the shared file system caps the nodes at {float(ceiling) / 1e6:.0f} MB/s together" if ceiling else
                 "; more nodes not predicted: the profile has no shared-file-system bandwidth (measure it across nodes "
                 "with climio bench parallel-read, then climio calibrate --from)")
    if nodes > 1:
        command = (f"{n * nodes} tasks, {n} per node: mpirun -n {n * nodes} --map-by ppr:{n}:node; Dask: {nodes} "
                   f"jobs of {n} worker{'s' if n != 1 else ''} (dask-jobqueue cores={n}, processes={n}; cluster.scale(jobs={nodes}))")
    else:
        command = f"{wf.check_command(tasks=n)}   # Dask: n_workers={n}, threads_per_worker=1"
    return [recommendation(
        "tasks", f"{where} instead of {wf.tasks} on one node: predicted {total:.3g} s -> {t:.3g} s, "
                 f"{100 * (total - t) / (total - best_t):.0f}% of the best gain ({best_t:.3g} s with {bn} per node on "
                 f"{bnodes} node{'s' if bnodes != 1 else ''}); calibrated speed-up per node I/O {s_io:.2f}x, CPU "
                 f"{s_cpu:.2f}x on {cores} cores{bandwidth}",
        {"cores": cores, "tasks_per_node": n, "nodes": nodes, "speedup_io": s_io, "speedup_cpu": s_cpu,
         "shared_fs_Bps": float(ceiling) if ceiling else None, "best": [bn, bnodes, best_t],
         "candidates": [[k[0], k[1], v[0]] for k, v in sorted(cands.items())]},
        total, t, 0.0, per_pass - tp, command,
        "Tasks per node beyond the cores only share them; more nodes add their storage bandwidth until the "
        "shared file system's is reached (measure it with climio bench parallel-read across nodes).")]


@rule("stack", "A different software stack", inputs=("workflow",), needs=("workflow",),
      thresholds={"MIN_GAIN_SHARE": MIN_GAIN_SHARE}, evidence=("stack", "call_s"),
      looks_for="the calibrated stack with the least predicted time for the same reads")
def stack(facts):
    wf, profile = facts.workflow, facts.profile
    if wf.on_zarr:   # Zarr is read by zarr-python: the file stacks price it only as a proxy
        return []
    total, per_pass = wf.total_s, wf.per_pass_s
    best = None
    for st in sorted(profile.stacks):
        if st == wf.stack:
            continue
        t, tp = wf.again(stack=st)
        if best is None or t < best[1]:
            best = (st, t, tp)
    if not best or best[1] >= (1 - MIN_GAIN_SHARE) * total:
        return []
    st, t, tp = best
    return [recommendation(
        "stack", f"{st} instead of {wf.stack}: predicted {total:.3g} s -> {t:.3g} s (per call "
                 f"{1e6 * profile.stack(st).call_s:.0f} us against {1e6 * profile.stack(wf.stack).call_s:.0f} us)",
        {"stack": st, "call_s": profile.stack(st).call_s}, total, t, 0.0, per_pass - tp, wf.check_command(stack=st))]


@rule("compression", "Compression trade-off", inputs=("workflow",), needs=("workflow",),
      thresholds={"MIN_GAIN_SHARE": MIN_GAIN_SHARE}, evidence=("codec", "decode_s", "stored_bytes", "nbytes"),
      looks_for="compressed chunks read partly (decoded whole for part of them): uncompressed chunks of the same "
                "shape, or the decode share of a whole-chunk read")
def compression(facts):
    wf = facts.workflow
    it, same_var = _first(wf)
    comp = [x for x in wf.items if x.layout.compressed]
    if not comp or not same_var:
        return []
    total, per_pass = wf.total_s, wf.per_pass_s
    decode = sum(x.prediction.decode_s for x in comp)
    partial = any(x.prediction.counts.partial_chunks for x in comp)
    t, tp = wf.again(layout=lambda lay: Layout(lay.shape, lay.itemsize, lay.chunks, False), codec_of=lambda c: "none")
    if not partial or t >= (1 - MIN_GAIN_SHARE) * total:
        return []
    lay0 = it.layout
    dst = Layout(lay0.shape, lay0.itemsize, lay0.chunks, False)
    return [recommendation(
        "compression", f"{it.codec} chunks read partly: {decode:.3g} s of {total:.3g} s is decoding; uncompressed "
                       f"chunks of the same shape predict {t:.3g} s (on disk {lay0.stored / 2**20:.0f} -> "
                       f"{lay0.nbytes / 2**20:.0f} MiB)",
        {"codec": it.codec, "decode_s": decode, "stored_bytes": lay0.stored, "nbytes": lay0.nbytes},
        total, t, wf.rechunk_cost(lay0, dst, it.codec), per_pass - tp,
        f"climio rechunk {it.path} {wf.out_name} --var {it.var} --compression none",
        "Or keep the compression and change the chunk shape so reads take whole chunks (chunk-shape).")]


@rule("one-file-vs-many", "One shared file or one file per task", inputs=("workflow",), needs=("workflow",),
      thresholds={}, evidence=("files", "open_s", "tasks", "speedup_io"),
      looks_for="several tasks reading one file, or a workflow reading several files: files opened x the stack's "
                "calibrated open time, against one file (the one-off cost of merging: the rechunk planner's copy time)")
def one_file_vs_many(facts):
    """Files the workflow opens x the stack's calibrated open time, against one file. Several tasks
    on one file: each task opens one file either way, and the calibrated I/O speed-up is the only
    parallel rate the profile has (measured with tasks sharing one file), so the model predicts no
    difference and says so; several files: merging them saves the opens and costs one copy."""
    wf, profile = facts.workflow, facts.profile
    total = wf.total_s
    files = list(dict.fromkeys(x.path for x in wf.items if x.path))
    if wf.tasks <= 1 and len(files) <= 1:
        return []
    open_s = profile.stack(wf.stack).open_s
    s_io = profile.speedup("io", wf.tasks)
    speed = f"calibrated I/O speed-up {s_io:.2f}x with {wf.tasks} tasks ({100 * s_io / wf.tasks:.0f}% of linear)"
    if len(files) > 1:
        before, after = total + len(files) * open_s, total + open_s
        firsts = {}
        for x in wf.items:
            firsts.setdefault(x.path, (x.layout, x.codec))
        one_off = sum(wf.rechunk_cost(lay, lay, codec) for lay, codec in firsts.values())
        return [recommendation(
            "one-file-vs-many",
            f"the workflow opens {len(files)} files, {1e3 * open_s:.1f} ms each ({wf.stack}): one file predicts "
            f"{before:.3g} s -> {after:.3g} s; copying the data into it once costs {one_off:.3g} s",
            {"files": len(files), "open_s": open_s, "tasks": wf.tasks, "speedup_io": s_io},
            before, after, one_off, before - after, "",
            "The opens are all one file saves: the reads cost the same in one file or many.")]
    t = total + open_s
    return [recommendation(
        "one-file-vs-many",
        f"{wf.tasks} tasks share one file: each opens it once ({1e3 * open_s:.1f} ms, {wf.stack}), as each would open "
        f"its own file; {speed}, the one parallel rate the profile has, so one file per task predicts the same {t:.3g} s",
        {"tasks": wf.tasks, "files": 1, "open_s": open_s, "speedup_io": s_io}, t, t, 0.0, None, "",
        "No change predicted on one node (the thesis found a shared file and per-task files read alike, F4, "
        "and a shared file scaling like many across nodes); measure both with climio bench parallel-read "
        "--file-sets per-task,shared.")]


# --- collective or independent MPI-IO: workflows, traces and Darshan logs ------------------------------------

def mpiio_rates(profile, tasks) -> dict:
    """The profile's parallel-read MPI-IO records (records with params experiment "mpiio", access
    independent / collective, pattern, ranks, and rate_MBps) at the pattern closest to small
    strided pieces (striding, else sequential) and the task count nearest `tasks` that has both
    accesses: {"independent", "collective" (MB/s), "pattern", "ranks"}, or {} without them."""
    table = {}
    for r in getattr(profile, "records", None) or []:
        p = r.get("params") or {}
        if p.get("experiment") == "mpiio" and p.get("access") in ("independent", "collective") and r.get("rate_MBps"):
            key = (p.get("pattern"), int(p.get("ranks") or 1))
            table.setdefault(key, {})[p["access"]] = float(r["rate_MBps"])
    both = [k for k, v in table.items() if len(v) == 2]
    if not both:
        return {}
    pattern, ranks = min(both, key=lambda k: (k[0] != "striding", abs(math.log(k[1] / max(tasks, 1)))))
    return {**table[(pattern, ranks)], "pattern": pattern, "ranks": ranks}


def _mpiio_evidence(rates) -> str:
    if not rates:
        return ("no prediction: the profile has no parallel-read MPI-IO records (run climio bench parallel-read "
                "--experiments mpiio here and build the profile with them); the thesis measured collective beating "
                "independent reads for several tasks on one node (+60% sequential, more striding; F10)")
    return (f"the profile's MPI-IO {rates['pattern']} reads with {rates['ranks']} tasks: independent "
            f"{rates['independent']:.0f} MB/s, collective {rates['collective']:.0f} MB/s")


COLLECTIVE_EVIDENCE = ("kind", "issued_by", "tasks", "pieces", "reads", "piece_bytes", "io_s", "mpiio_rates")


@rule("collective-vs-independent", "Collective or independent MPI-IO", inputs=("workflow", "trace", "darshan"),
      needs=("workflow", "small_requests"),
      thresholds={"SMALL_REQUEST_BYTES": SMALL_REQUEST_BYTES, "SMALL_REQUEST_MIN_COUNT": SMALL_REQUEST_MIN_COUNT,
                  "MIN_GAIN_SHARE": MIN_GAIN_SHARE},
      evidence=COLLECTIVE_EVIDENCE,
      looks_for="several tasks whose reads are small strided pieces (workflow: runs below SMALL_REQUEST_BYTES, several "
                "per read; trace / Darshan: the small requests made in MPI-IO calls); predicted from the profile's "
                "parallel-read MPI-IO records (collective against independent rate) when it has them")
def collective(facts):
    return _collective_workflow(facts) if facts.workflow is not None else _collective_measured(facts)


def _collective_workflow(facts) -> list:
    """Several tasks whose reads are small strided pieces of uncompressed data (a compressed
    variable is read chunk by chunk whatever the MPI-IO mode): collective MPI-IO merges the
    tasks' pieces into large requests. The workflow's reads are independent now."""
    wf = facts.workflow
    plain = [x for x in wf.items if not x.layout.compressed]
    pieces = sum(x.prediction.counts.pieces for x in plain)
    calls = sum(x.prediction.counts.calls for x in plain)
    wanted = sum(x.prediction.counts.bytes_wanted for x in plain)
    if wf.tasks <= 1 or pieces < SMALL_REQUEST_MIN_COUNT or pieces <= calls or wanted / pieces >= SMALL_REQUEST_BYTES:
        return []
    total = wf.total_s
    rates = mpiio_rates(facts.profile, wf.tasks)
    io = sum(x.prediction.io_s for x in plain)
    io_pass = sum(x.prediction.io_s / x.spec.passes for x in plain)
    head = (f"{wf.tasks} tasks read {pieces:.0f} pieces of {format_size(wanted / pieces)} on average "
            f"({pieces / calls:.0f} per read, strided) independently")
    evidence = {"kind": "read", "issued_by": None, "tasks": wf.tasks, "pieces": pieces, "reads": calls,
                "piece_bytes": wanted / pieces, "io_s": io, "mpiio_rates": rates}
    if not rates:
        return [recommendation("collective-vs-independent", f"{head}: {_mpiio_evidence(rates)}", evidence, None, None,
                               advice=fixes.INDEPENDENT_ADVICE)]
    k = rates["independent"] / rates["collective"]
    after = total - io + io * k
    if after >= (1 - MIN_GAIN_SHARE) * total:
        return []
    return [recommendation(
        "collective-vs-independent",
        f"{head}: collective reads predict {total:.3g} s -> {after:.3g} s ({_mpiio_evidence(rates)}; the "
        f"{io:.3g} s of I/O scaled by {k:.2f})",
        evidence, total, after, 0.0, io_pass * (1 - k), "nc_var_par_access(ncid, varid, NC_COLLECTIVE)",
        fixes.INDEPENDENT_ADVICE)]


def _collective_measured(facts) -> list:
    """The small requests made in MPI-IO calls of a trace or Darshan log. Independent reads get a
    predicted before/after from the profile's MPI-IO records (the small requests' time scaled by
    independent / collective rate) when it has them; collective calls that still reach the file in
    small pieces get the collective-buffering advice."""
    out = []
    r = REGISTRY["collective-vs-independent"]
    for kind, s in sorted(facts.small_requests.items()):
        issued = s["issued_by"]
        if s["small_requests"] < SMALL_REQUEST_MIN_COUNT or s["small_requests"] < SMALL_REQUEST_SHARE * s["requests"] \
                or not issued:
            continue
        top = max(issued, key=issued.get)
        if top == "no_mpiio" or not issued[top]:
            continue
        mode = "collective" if top == "collective_mpiio" else "independent"
        rates = mpiio_rates(facts.profile, facts.tasks) if facts.profile is not None and kind == "read" else {}
        before = after = None
        advice = fixes.COLLECTIVE_ADVICE if mode == "collective" else fixes.INDEPENDENT_ADVICE
        text = f"{issued[top]} of the {s['small_requests']} small {kind}s are made in {mode} MPI-IO calls"
        if mode == "collective":
            text += ": the MPI-IO layer did not aggregate them (collective buffering)"
        elif kind != "read":
            text += "; no prediction: the profile's MPI-IO rates are read rates"
        elif rates and rates["collective"] > rates["independent"]:
            before = s["time_s"]
            after = before * rates["independent"] / rates["collective"]
            text += f": collective predicts {before:.3g} s -> {after:.3g} s ({_mpiio_evidence(rates)})"
        elif rates:
            text += f"; {_mpiio_evidence(rates)}: collective reads are no faster here"
            advice = fixes.SMALL_ADVICE
        else:
            text += f"; {_mpiio_evidence(rates)}"
        io = facts.run.get("io_time_s") or 0.0
        saves, share_run = saving_share(facts, s["time_s"] if before is None else before - after)
        out.append({"rule": r.id, "title": r.title, "severity": severity(share_run), "message": text,
                    "evidence": {"kind": kind, "issued_by": issued, "tasks": facts.tasks, "pieces": None, "reads": None,
                                 "piece_bytes": None, "io_s": None, "mpiio_rates": rates, "time_s": s["time_s"],
                                 "share_of_io_time": s["time_s"] / io if io > 0 else 0.0, "could_save_s": saves,
                                 "share_of_run": share_run},
                    "advice": advice, "thresholds": dict(r.thresholds), "before_s": before, "after_s": after,
                    "gain_s": None if before is None else before - after, "one_off_s": 0.0,
                    "break_even_passes": None, "command": ""})
    return out
