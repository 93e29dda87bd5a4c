"""Pure numbers of the parallel-read study from its records (no measuring code here).

Rate definitions (thesis §5.1.2.1, both reported):
    mean-task rate   x_tot / mean_i(t_i)      the thesis's "mean aggregate read rate"
    slowest rate     x_tot / max_i(t_i)       the honest one ("strictly speaking ...")
    per-task rate    r_i = x_tot / t_i        the thesis's range bars and box plots (Fig. 5.7)
t_i is task i's open + read + close time; x_tot the bytes all tasks read.
"""

import statistics
from collections import OrderedDict

from climio.present.stats import group_configs
from climio.base.units import format_size

STUDY = "parallel-read"
# Experiment A's C stacks were called posix and netcdf-c before they took every study's names
# (climio.dataset.stack_names): records written then are read under the new names, and the options
# still take the old ones (with a note).
OLD_STACK_NAMES = {"posix": "c-posix", "netcdf-c": "c-netcdf"}
CONFIG_KEYS = ("experiment", "stack", "file_set", "pattern", "access", "buffer_bytes", "ranks", "nodes",
               "tasks_per_node", "mpi_io")
# The findings compare aggregate rates across task counts, stacks and access modes: they need each
# task's read to be a transfer, not fixed costs. Below this many bytes per task (the --quick
# preset's 4 MiB files, or a shared file split many ways) a task's whole read is one or two kernel
# readahead windows (read_ahead_kb is 8 MiB on the development VM) done in a few ms, so its open +
# close, the launch's barrier skew and per-call overheads (each about a millisecond) weigh as much
# as the bytes, and the thesis's effects (measured on 16-256 GB files) cannot show.
MIN_DECIDABLE_TASK_BYTES = 16 << 20


def host_layout(hosts) -> tuple:
    """(nodes, most tasks on one node, host index of each task) from the hostname of each task."""
    order = list(OrderedDict.fromkeys(hosts))
    idx = [order.index(h) for h in hosts]
    per = max(idx.count(i) for i in range(len(order))) if order else 0
    return len(order), per, idx


def task_rates(total_bytes, times) -> dict:
    """Both aggregate rates and the per-task rates, MB/s (1e6 B/s), from per-task seconds."""
    times = [float(t) for t in times]
    if not times or min(times) <= 0:
        raise ValueError("task times must be positive")
    mean = sum(times) / len(times)
    return {"mean_task_MBps": total_bytes / mean / 1e6, "slowest_MBps": total_bytes / max(times) / 1e6,
            "per_task_MBps": [total_bytes / t / 1e6 for t in times]}


def quartiles(values) -> dict:
    v = sorted(float(x) for x in values)
    if not v:
        return {}
    if len(v) == 1:
        q1 = q3 = v[0]
    else:
        q1, _, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return {"min": v[0], "q1": q1, "median": statistics.median(v), "q3": q3, "max": v[-1]}


def configurations(records) -> list:
    """One row per configuration: reps, both aggregate rates (mean over reps, min, max), the per-task
    rate distribution over all reps (min, quartiles, max), cache states, verification."""
    ok = [r for r in records if r.get("study") == STUDY and r.get("status") == "ok"]
    rows = []
    for cfg in group_configs(ok, by=[f"params.{k}" for k in CONFIG_KEYS]):
        recs = cfg.records
        p = {k: cfg.params.get(k) for k in CONFIG_KEYS}
        p["stack"] = OLD_STACK_NAMES.get(p["stack"], p["stack"])
        mean_task = [r["metrics"]["rate_mean_task_MBps"] for r in recs]
        slowest = [r["metrics"].get("rate_slowest_task_MBps", r["metrics"]["rate_MBps"]) for r in recs]
        per_task = [x for r in recs for x in r["metrics"].get("per_rank", {}).get("rate_MBps", [])]
        cold = [r["cache"]["state"] == "cold" for r in recs]
        shares = [r["cache"].get("storage_share") for r in recs]
        rows.append({**p, "reps": len(recs), "bytes": recs[0]["metrics"]["bytes"],
                     "task_bytes_min": min(_task_bytes(r) for r in recs),
                     "effectively_warm": sum(r["cache"].get("effective") == "effectively-warm" for r in recs),
                     "storage_share_min": min((x for x in shares if isinstance(x, (int, float))), default=None),
                     "file_bytes": recs[0]["params"].get("file_bytes"),
                     "mean_task_MBps": statistics.fmean(mean_task), "slowest_MBps": statistics.fmean(slowest),
                     "slowest_min": min(slowest), "slowest_max": max(slowest),
                     "mean_task_min": min(mean_task), "mean_task_max": max(mean_task),
                     "per_task": quartiles(per_task), "per_task_values": per_task,
                     "cold_reps": sum(cold), "verified": all(r["metrics"].get("verified") for r in recs),
                     "hints": recs[0]["params"].get("hints") or {}, "library": recs[0]["params"].get("library", "")})
    return rows


def _task_bytes(rec) -> int:
    """The fewest bytes one task of the record read (its own file, piece or stride)."""
    per = rec["metrics"].get("per_rank", {}).get("bytes")
    return min(per) if per else rec["metrics"]["bytes"] // max(1, rec["params"].get("ranks") or 1)


def undecidable(rows):
    """Why the configurations `rows` cannot decide a finding, or None: too few bytes per task for
    the rates to be transfer rates, or cold repetitions that read from the page cache."""
    rows = [r for r in rows if r]
    small = min((r["task_bytes_min"] for r in rows if r.get("task_bytes_min") is not None), default=None)
    if small is not None and small < MIN_DECIDABLE_TASK_BYTES:
        return (f"not decidable at this size: a task reads {format_size(small)}, below "
                f"{format_size(MIN_DECIDABLE_TASK_BYTES)}, so open, close and per-call costs, not transfer, "
                "set its time (use a larger --size)")
    warm = [r for r in rows if r.get("effectively_warm")]
    if warm:
        low = min((r["storage_share_min"] for r in warm if r.get("storage_share_min") is not None), default=None)
        return ("not decidable: cold repetitions read from the page cache"
                + (f" (storage share {100 * low:.0f}%)" if low is not None else ""))
    return None


def _decided(verdict, evidence, rows):
    """(verdict, evidence) with a measured verdict turned "not decidable" when `rows` cannot decide it."""
    why = undecidable(rows) if verdict in ("reproduced", "not reproduced", "refuted", "inconclusive") else None
    return ("not decidable", f"{evidence}; {why}") if why else (verdict, evidence)


def _rate(rows, **match):
    got = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return max(got, key=lambda r: r["mean_task_MBps"]) if got else None


def curves(rows, experiment="tasks") -> dict:
    """{(stack, file_set, buffer): [(ranks, row), ...]} sorted by ranks (Figs 5.4/5.5)."""
    out = OrderedDict()
    for r in rows:
        if r["experiment"] == experiment:
            out.setdefault((r["stack"], r["file_set"], r["buffer_bytes"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["ranks"]) for k, v in out.items()}


def summarise(records) -> dict:
    rows = configurations(records)
    nodes = max((r["nodes"] or 1 for r in rows), default=1)
    return {"configurations": rows, "nodes": nodes, "findings": verdicts(rows),
            "max_ranks": max((r["ranks"] for r in rows), default=0)}


# --- the chapter's findings -------------------------------------------------------------------------

def _peak(series):
    """(ranks at the peak, peak rate, rate at the largest count, largest count) of a [(ranks, row)] curve."""
    best = max(series, key=lambda r: r["mean_task_MBps"])
    last = series[-1]
    return best["ranks"], best["mean_task_MBps"], last["mean_task_MBps"], last["ranks"]


def verdicts(rows) -> list:
    # long: one short block per finding (F1-F6, F9-F11), each read alone; a function each would only pass cv
    """[(id, claim, verdict, evidence)] for F1-F6 and F9-F11 (thesis-ch5-7.md numbering)."""
    out = []
    nodes = max((r["nodes"] or 1 for r in rows), default=1)
    cv = curves(rows)
    one_node = "one node: needs several nodes" if nodes <= 1 else ""

    def curve(stack, file_set, buffer=None):
        cands = [(k, v) for k, v in cv.items() if k[0] == stack and k[1] == file_set and (buffer is None or k[2] == buffer)]
        cands = [(k, v) for k, v in cands if len(v) > 1]
        return max(cands, key=lambda kv: kv[0][2])[1] if cands else None

    # F1: one node, a file per task, C: rises then falls past the peak
    c = curve("c-netcdf", "per-task") or curve("c-posix", "per-task")
    if c:
        at, peak, last, n = _peak(c)
        r1 = c[0]["mean_task_MBps"]
        if at == n:
            v = "not decidable"
            ev = f"rate still rising at the largest count: {r1:.0f} MB/s at {c[0]['ranks']} -> {last:.0f} at {n} tasks"
        else:
            v = "reproduced" if last < peak * 0.95 else "inconclusive"
            ev = f"peak {peak:.0f} MB/s at {at} tasks, {last:.0f} at {n} tasks (1 task: {r1:.0f})"
            v, ev = _decided(v, ev, c)
        out.append(("F1", "one node, file per task (C): rate rises to a node peak, then falls", v, ev))
    else:
        out.append(("F1", "one node, file per task (C): rate rises to a node peak, then falls", "not measured", ""))
    # F2: netCDF4-python peaks lower than C (CPU-bound)
    py, cc = curve("netcdf4-python", "per-task"), curve("c-netcdf", "per-task") or curve("c-posix", "per-task")
    if py and cc:
        pp, pc = max(r["mean_task_MBps"] for r in py), max(r["mean_task_MBps"] for r in cc)
        v = "reproduced" if pp < 0.9 * pc else ("refuted" if pp > 1.1 * pc else "inconclusive")
        v, ev = _decided(v, f"peak netCDF4-python {pp:.0f} MB/s vs C {pc:.0f} MB/s ({pp / pc:.2f}x)", py + cc)
        out.append(("F2", "netCDF4-python peaks lower than C on one node (CPU-bound)", v, ev))
    else:
        out.append(("F2", "netCDF4-python peaks lower than C on one node (CPU-bound)", "not measured", ""))
    # F3: buffer size matters little for C, much for Python (1 GiB ~60% lower)
    ev, v = [], "not measured"
    for stack in ("c-netcdf", "netcdf4-python"):
        bufs = sorted({r["buffer_bytes"] for r in rows if r["experiment"] == "tasks" and r["stack"] == stack
                       and r["file_set"] == "per-task"})
        if len(bufs) > 1:
            small = _rate(rows, experiment="tasks", stack=stack, file_set="per-task", buffer_bytes=bufs[0])
            big = _rate(rows, experiment="tasks", stack=stack, file_set="per-task", buffer_bytes=bufs[-1])
            ev.append(f"{stack}: {big['mean_task_MBps'] / small['mean_task_MBps']:.2f}x "
                      f"({bufs[-1] >> 20} MiB vs {bufs[0] >> 10} KiB buffers)")
    if ev:
        capped = all(r["buffer_bytes"] < (1 << 30) for r in rows if r["experiment"] == "tasks")
        v = "not decidable" if capped else "inconclusive"
        ev.append("1 GiB buffers capped by the file size here" if capped else "")
    out.append(("F3", "read size: no effect for C, 1 GiB slower than 1 MiB for Python", v, "; ".join(e for e in ev if e)))
    # F4: one shared file on one node: flat
    c = curve("c-netcdf", "shared") or curve("c-posix", "shared")
    if c:
        r1, rn = c[0]["mean_task_MBps"], c[-1]["mean_task_MBps"]
        v = "reproduced" if rn < 1.2 * r1 else "refuted"
        v, ev = _decided(v, f"{r1:.0f} MB/s at {c[0]['ranks']} task(s) -> {rn:.0f} at {c[-1]['ranks']} ({rn / r1:.2f}x)",
                         c)
        out.append(("F4", "one shared file on one node: no gain from more tasks", v, ev))
    else:
        out.append(("F4", "one shared file on one node: no gain from more tasks", "not measured", ""))
    for fid, claim in (("F5", "multi-node scaling is sub-linear (3.7 GB/s at 16 tasks ... 7 GB/s at 92)"),
                       ("F6", "packing 4 tasks per node instead of 1 costs ~20% at a fixed task count")):
        out.append((fid, claim, "not measurable here" if one_node else "not measured",
                    f"{nodes} node(s) in the records" + ("; " + one_node if one_node else "")))
    # F9-F11: MPI-IO, one file
    mp = [r for r in rows if r["experiment"] == "mpiio"]

    def sel(pattern, access, ranks):
        return [r for r in mp if r["pattern"] == pattern and r["access"] == access and r["ranks"] == ranks]

    def m(pattern, access, ranks):
        got = sel(pattern, access, ranks)
        return statistics.fmean(r["mean_task_MBps"] for r in got) if got else None

    ranks = sorted({r["ranks"] for r in mp})
    if len(ranks) > 1:
        n = ranks[-1]
        s1, sn = m("sequential", "independent", 1), m("sequential", "independent", n)
        if s1 and sn:
            v = "reproduced" if sn < 0.8 * s1 else ("refuted" if sn > 1.2 * s1 else "inconclusive")
            v, ev = _decided(v, f"{s1:.0f} -> {sn:.0f} MB/s ({sn / s1:.2f}x); the multi-node half is not measurable "
                                "here", sel("sequential", "independent", 1) + sel("sequential", "independent", n))
            out.append(("F9", f"MPI-IO independent, {n} tasks on one node vs 1 task: the rate drops (540 -> 190 MB/s)",
                        v, ev))
        ci, cc_ = m("sequential", "independent", n), m("sequential", "collective", n)
        si, sc = m("striding", "independent", n), m("striding", "collective", n)
        c1i, c1c = m("sequential", "independent", 1), m("sequential", "collective", 1)
        if ci and cc_ and si and sc:
            better = cc_ > ci and sc > si
            v = "reproduced" if better and (c1c is None or c1c <= c1i) else ("refuted" if cc_ < 0.9 * ci and sc < 0.9 * si
                                                                            else "inconclusive")
            v, ev = _decided(v, f"{n} tasks: sequential {ci:.0f} -> {cc_:.0f} MB/s ({cc_ / ci:.2f}x), striding {si:.0f} "
                                f"-> {sc:.0f} ({sc / si:.2f}x)" + (f"; 1 task: {c1i:.0f} -> {c1c:.0f}" if c1i and c1c else ""),
                             [r for r in mp if r["ranks"] in (1, n)])
            out.append(("F10", f"collective beats independent only for {n} tasks on one node (+60% sequential, more striding)",
                        v, ev))
        out.append(("F11", "striding gains 2x from 4 nodes against 4x for sequential", "not measurable here",
                    f"{nodes} node(s); on one node striding/sequential at {n} tasks: "
                    + (f"{si / ci:.2f}x" if si and ci else "n/a")))
    else:
        for fid in ("F9", "F10", "F11"):
            out.append((fid, "MPI-IO on one shared file", "not measured", "needs at least two rank counts"))
    return out


def _state(rows) -> str:
    """The page-cache state of the repetitions behind rows, as sections.cache_state words."""
    reps = sum(r["reps"] for r in rows)
    warm = sum(r["effectively_warm"] for r in rows)
    cold = sum(r["cold_reps"] for r in rows) - warm
    parts = [(k, n) for k, n in (("cold", cold), ("effectively warm", warm), ("warm", reps - cold - warm)) if n]
    return parts[0][0] if len(parts) == 1 else ", ".join(f"{k} ×{n}" for k, n in parts)


def headline(records):
    """The study's row of the report's first screen (sections.Headline): how the aggregate read
    rate scales from the fewest to the most tasks on the curve with the highest peak."""
    from climio.present.cells import num
    from climio.present.sections import Headline, HeadlineRow
    rows = configurations(records)
    if not rows:
        return None
    out = []
    for exp in sorted(dict.fromkeys(r["experiment"] for r in rows), key=lambda e: e != "tasks"):
        cands = [c for c in curves(rows, exp).values() if len({r["ranks"] for r in c}) > 1]
        if not cands:
            continue
        c = max(cands, key=lambda c: max(r["mean_task_MBps"] for r in c))
        first = max((r for r in c if r["ranks"] == c[0]["ranks"]), key=lambda r: r["mean_task_MBps"])
        last = max((r for r in c if r["ranks"] == c[-1]["ranks"]), key=lambda r: r["mean_task_MBps"])
        out.append(HeadlineRow(f"read scaling ({exp})",
                               f"{first['stack']}, {first['file_set']}: {num(first['mean_task_MBps'])} → "
                               f"{num(last['mean_task_MBps'])} MB/s from {first['ranks']} to {last['ranks']} tasks "
                               f"({last['mean_task_MBps'] / first['mean_task_MBps']:.2f}×)", _state(c)))
    if not out:
        best = max(rows, key=lambda r: r["mean_task_MBps"])
        out.append(HeadlineRow("fastest parallel read", f"{best['experiment']}, {best['stack']}, {best['file_set']}: "
                                                       f"{num(best['mean_task_MBps'])} MB/s at {best['ranks']} tasks "
                                                       "(one task count: no scaling measured)", _state([best])))
    return Headline(STUDY, out[:1], decide=(f"tasks reading at least {format_size(MIN_DECIDABLE_TASK_BYTES)} each "
                                            "(a larger --size) and several nodes (a hostfile or --launcher)"))
