"""The STSA study's numbers, from records only: Table 6.1 rows (job wall, per-task wall and CPU,
equivalent read rate), speed-ups, and the checks of the thesis's findings F12-F18, each with a
verdict from climio.present.sections.VERDICTS and the numbers behind it.

    summarise(records) -> {"rows": [...], "checks": [...], "bytes": ..., "decidable": (bool, reason)}
"""

import math

from climio.present.stats import describe, group_configs

STUDY = "stsa"
DECIDE_BYTES = 256 << 20     # below this much data read per job the page cache, start-up and Python overheads decide
STSA_THESIS = {
    "F12": "x-t reads from a contiguous [t,z,y,x] file are I/O-bound (task CPU 35 s of 350 s wall); serial ~11 MB/s",
    "F13": "reads from default-chunked files are CPU-bound (CPU ~ wall) and ~2x slower than contiguous",
    "F14": "x-t chunks read ~24x faster than contiguous (230 vs 5600 s serial)",
    "F15": "16 workers: ~11-15x faster for I/O only, 5-10x with the spectra (strong scaling, one file)",
    "F16": "layout ~ parallelism: contiguous with many workers + spectra (680 s) ~ x-t chunks on 1 worker + spectra (1000 s)",
    "F17": "compressed default chunks read ~5-6x slower than uncompressed default; compressed x-t costs little",
    "F18": "per-task time independent of the worker count, job time sub-linear (stragglers)",
}


def _p(r, k, default=None):
    return r.get("params", {}).get(k, default)


def _m(r, k, default=None):
    return r.get("metrics", {}).get(k, default)


def ok(records):
    return [r for r in records if r.get("status") == "ok" and r.get("study", STUDY) == STUDY]


def configs(records) -> dict:
    """{(mode, layout, workers): [records]} of the ok records."""
    return {(c.params.get("mode"), c.params.get("layout"), c.params.get("workers")): c.records
            for c in group_configs(ok(records), by=["params.mode", "params.layout", "params.workers"])}


def _warm(r) -> bool:
    """A job the page cache served: asked warm, or cold but effectively warm (storage-share check)."""
    return (r.get("cache", {}).get("effective") or r.get("cache", {}).get("state")) in ("effectively-warm", "warm")


def _effective(recs) -> str:
    states = {r.get("cache", {}).get("effective") or r.get("cache", {}).get("state") for r in recs}
    return states.pop() if len(states) == 1 else ", ".join(sorted(map(str, states)))


def row(key, recs) -> dict:
    mode, layout, workers = key
    job = describe(_m(r, "wall_s") for r in recs)
    tw = describe(v for r in recs for v in _m(r, "task_wall_s", []))
    tc = describe(v for r in recs for v in _m(r, "task_cpu_s", []))
    rw = describe(v for r in recs for v in _m(r, "task_read_wall_s", []))
    rc = describe(v for r in recs for v in _m(r, "task_read_cpu_s", []))
    cw = describe(v for r in recs for v in _m(r, "task_compute_wall_s", []))
    nbytes = _m(recs[0], "bytes", 0)
    return {"mode": mode, "test": "IO" if mode == "io" else "CPU", "layout": layout, "workers": workers,
            "chunks": _p(recs[0], "chunks"), "compression": _p(recs[0], "compression"),
            "reps": len(recs), "job": job, "task_wall": tw, "task_cpu": tc, "read_wall": rw, "read_cpu": rc,
            "compute_wall": cw, "bytes": nbytes, "file_bytes": _p(recs[0], "file_bytes"),
            "rate_MBps": nbytes / job.mean / 1e6 if job and job.mean else None,
            "slowest_rate_MBps": nbytes / max(_m(r, "wall_s") for r in recs) / 1e6,
            "n_tasks": _p(recs[0], "n_tasks"), "cache": _effective(recs), "warm": sum(1 for r in recs if _warm(r))}


def _order(layout):
    base, _, comp = str(layout).partition("+")
    return (bool(comp), {"contiguous": 0, "default": 1, "xt": 2}.get(base, 3), str(layout))


def rows(records) -> list:
    cs = configs(records)
    return [row(k, cs[k]) for k in sorted(cs, key=lambda k: (k[0] != "io", _order(k[1]), k[2]))]


def _find(rs, mode, layout, workers=None, largest=False):
    c = [r for r in rs if r["mode"] == mode and r["layout"] == layout]
    if not c:
        return None
    if largest:
        return max(c, key=lambda r: r["workers"])
    c = [r for r in c if r["workers"] == (workers if workers is not None else min(x["workers"] for x in c))]
    return c[0] if c else None


def _noise(*rs) -> float:
    """Largest relative std of the job wall among the rows (0 with one repetition)."""
    return max((r["job"].std / r["job"].mean for r in rs if r and r["job"] and r["job"].mean), default=0.0)


def decidable(records) -> tuple:
    """(True, "") or (False, why): too small or a --quick grid. Jobs served by the page cache take
    the verdict from their own cells only (page_cache)."""
    recs = ok(records)
    if not recs:
        return False, "no finished jobs"
    if any(_p(r, "preset") == "quick" for r in recs):
        return False, "a --quick grid is too small to decide"
    small = max(_m(r, "bytes", 0) for r in recs)
    if small < DECIDE_BYTES:
        return False, f"{small / 2**20:.0f} MiB per job is below {DECIDE_BYTES >> 20} MiB"
    return True, ""


def _cell(r) -> str:
    return f"{r['layout']} {r['workers']}w {r['mode']}"


def page_cache(*rs):
    """Why the cells `rs` cannot give a verdict, or None: any job of one was served by the page cache."""
    warm = [r for r in rs if r and r.get("warm")]
    if not warm:
        return None
    return "page cache: " + ", ".join(f"{r['warm']} of {r['reps']} jobs of {_cell(r)}" for r in warm) + \
        " read from the page cache"


def warm_cells(rows_) -> list:
    return [f"{_cell(r)} ({r['warm']} of {r['reps']})" for r in rows_ if r.get("warm")]


def _ratio(a, b):
    return a / b if a and b else None


def _ratio_verdict(r, want, noise, dec):
    """A verdict for a ratio that the thesis says is >= want (an effect of the expected sign)."""
    if r is None:
        return "not measured"
    if not dec:
        return "not decidable"
    if r >= want:
        return "reproduced"
    if r < 1 / (1 + 2 * noise) and r < 0.9:
        return "refuted"
    if abs(r - 1) <= 2 * noise:
        return "inconclusive"
    return "not reproduced"


def checks(records) -> list:
    # long: one short block per check of the thesis's claims, in the report's order, sharing add()
    rs = rows(records)
    dec, why = decidable(records)
    out = []

    def add(fid, verdict, text, cells=()):
        warm = page_cache(*cells) if verdict not in ("not measured", "not measurable here") else None
        if warm:   # no verdict from a cell with a job the page cache served (issue 17)
            verdict, text = "not decidable", f"{text} (not decidable: {warm})"
        elif verdict == "not decidable" and why:
            text += f" (not decidable: {why})"
        out.append({"id": fid, "claim": STSA_THESIS[fid], "verdict": verdict, "text": text})

    c1 = _find(rs, "io", "contiguous")
    if c1:
        share = c1["task_cpu"].mean / c1["task_wall"].mean if c1["task_wall"] and c1["task_wall"].mean else None
        v = "not decidable" if not dec else ("reproduced" if share is not None and share < 0.5 else "not reproduced")
        add("F12", v, f"contiguous, I/O only, {c1['workers']} worker(s): task CPU {c1['task_cpu'].mean:.3g} s of "
                      f"{c1['task_wall'].mean:.3g} s wall ({100 * (share or 0):.0f}% CPU); equivalent rate "
                      f"{c1['rate_MBps']:.3g} MB/s (thesis 10% CPU, 11 MB/s)", (c1,))
    else:
        add("F12", "not measured", "no contiguous I/O-only job")

    d1 = _find(rs, "io", "default")
    if c1 and d1:
        share = d1["task_cpu"].mean / d1["task_wall"].mean if d1["task_wall"].mean else 0
        slow = _ratio(d1["job"].mean, c1["job"].mean)
        if not dec:
            v = "not decidable"
        elif share >= 0.7 and slow >= 1.2:
            v = "reproduced"
        elif slow < 1 / (1 + 2 * _noise(c1, d1)) and share < 0.7:
            v = "refuted"
        else:
            v = "not reproduced"
        add("F13", v, f"default chunks {d1['chunks']}: task CPU {100 * share:.0f}% of wall; job {slow:.2f}x "
                      f"the contiguous job (thesis ~100% CPU, 2.0x)", (c1, d1))
    else:
        add("F13", "not measured", "no default-chunk and contiguous I/O-only jobs at one worker count")

    x1 = _find(rs, "io", "xt")
    if c1 and x1:
        sp = _ratio(c1["job"].mean, x1["job"].mean)
        add("F14", _ratio_verdict(sp, 2.0, _noise(c1, x1), dec),
            f"x-t chunks {sp:.2f}x faster than contiguous at {x1['workers']} worker(s) "
            f"({x1['rate_MBps']:.3g} vs {c1['rate_MBps']:.3g} MB/s; thesis 24x)", (c1, x1))
    else:
        add("F14", "not measured", "no x-t and contiguous I/O-only jobs")

    parts = []
    verdicts = []
    used = []
    for mode in ("io", "cpu"):
        for layout in ("contiguous",):
            lo, hi = _find(rs, mode, layout), _find(rs, mode, layout, largest=True)
            if lo and hi and hi["workers"] > lo["workers"]:
                used += [lo, hi]
                sp = lo["job"].mean / hi["job"].mean
                n = hi["workers"] / lo["workers"]
                parts.append(f"{'I/O only' if mode == 'io' else 'I/O + spectra'}: {sp:.2f}x on {hi['workers']} "
                             f"vs {lo['workers']} worker(s) ({100 * sp / n:.0f}% efficiency)")
                verdicts.append(_ratio_verdict(sp / n, 0.6, _noise(lo, hi), dec))
    if not parts:
        add("F15", "not measurable here", "one worker count only")
    else:
        v = verdicts[0] if len(set(verdicts)) == 1 else ("reproduced" if verdicts[0] == "reproduced" else verdicts[0])
        add("F15", v, "; ".join(parts) + " (thesis 11-15x I/O only, 5-10x with spectra on 16 workers; "
                      "reproduced here = at least 60% parallel efficiency)", used)

    cN, x1c = _find(rs, "cpu", "contiguous", largest=True), _find(rs, "cpu", "xt")
    if cN and x1c and cN["workers"] > x1c["workers"]:
        r = cN["job"].mean / x1c["job"].mean
        v = "not decidable" if not dec else ("reproduced" if 0.5 <= r <= 2.0 else "not reproduced")
        add("F16", v, f"contiguous on {cN['workers']} workers + spectra {cN['job'].mean:.3g} s vs x-t chunks on "
                      f"{x1c['workers']} worker + spectra {x1c['job'].mean:.3g} s (ratio {r:.2f}; thesis 680 vs 1000 s)",
            (cN, x1c))
    else:
        add("F16", "not measured" if not (cN and x1c) else "not measurable here",
            "needs contiguous with several workers and x-t chunks on one, both with spectra")

    dz = [r for r in rs if r["mode"] == "io" and str(r["layout"]).startswith("default+")]
    xz = [r for r in rs if r["mode"] == "io" and str(r["layout"]).startswith("xt+")]
    if dz and d1:
        dzz = next((r for r in dz if r["workers"] == d1["workers"]), dz[0])
        slow = dzz["job"].mean / d1["job"].mean
        text = f"{dzz['layout']} {slow:.2f}x the uncompressed default job"
        v = _ratio_verdict(slow, 2.0, _noise(dzz, d1), dec)
        used = [dzz, d1]
        if xz and x1:
            xzz = next((r for r in xz if r["workers"] == x1["workers"]), xz[0])
            xs = xzz["job"].mean / x1["job"].mean
            used += [xzz, x1]
            text += f"; {xzz['layout']} {xs:.2f}x the uncompressed x-t job"
            if v == "reproduced" and xs > 2.0:
                v = "not reproduced"
        add("F17", v, text + " (thesis 5-6x for default; small for x-t)", used)
    else:
        add("F17", "not measured", "no compressed default-chunk job beside an uncompressed one")

    f18 = []
    vs = []
    used = []
    for mode, layout in (("io", "contiguous"), ("io", "xt"), ("cpu", "contiguous")):
        lo, hi = _find(rs, mode, layout), _find(rs, mode, layout, largest=True)
        if lo and hi and hi["workers"] > lo["workers"]:
            used += [lo, hi]
            task_ratio = hi["task_wall"].mean / lo["task_wall"].mean
            sp = lo["job"].mean / hi["job"].mean
            f18.append(f"{layout} {mode}: mean task wall x{task_ratio:.2f} from {lo['workers']} to {hi['workers']} "
                       f"workers, job speed-up {sp:.2f}x of {hi['workers'] / lo['workers']:.0f}x")
            vs.append("reproduced" if task_ratio <= 1.25 and sp < 0.9 * hi["workers"] / lo["workers"] else
                      "not reproduced")
    if not f18:
        add("F18", "not measurable here", "one worker count only")
    else:
        v = "not decidable" if not dec else ("reproduced" if all(x == "reproduced" for x in vs) else "not reproduced")
        add("F18", v, "; ".join(f18), used)
    return out


def summarise(records) -> dict:
    rs = rows(records)
    dec, why = decidable(records)
    return {"rows": rs, "checks": checks(records), "decidable": dec, "why": why, "warm_cells": warm_cells(rs),
            "bytes": max((r["bytes"] for r in rs), default=0),
            "workers": sorted({r["workers"] for r in rs}), "layouts": sorted({r["layout"] for r in rs}, key=_order)}


def fmt(v, digits=2) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:.0f}"


def headline(records):
    """The study's row of the report's first screen (sections.Headline): the layout (and worker
    count) whose STSA job with spectra (cpu mode, else I/O only) ran fastest, against the slowest."""
    from climio.present.sections import Headline, HeadlineRow
    rs = [r for r in rows(records) if r["job"]]
    if not rs:
        return None
    mode = "cpu" if any(r["mode"] == "cpu" for r in rs) else "io"
    mine = [r for r in rs if r["mode"] == mode]
    best, worst = min(mine, key=lambda r: r["job"].mean), max(mine, key=lambda r: r["job"].mean)
    text = f"{best['layout']}, {best['workers']} worker(s): {fmt(best['job'].mean)} s per job"
    if worst is not best:
        text += f", {fmt(worst['job'].mean / best['job'].mean)}× faster than {worst['layout']} {worst['workers']}w"
    what = "with spectra" if mode == "cpu" else "I/O only"
    return Headline(STUDY, [HeadlineRow(f"best STSA layout ({what})", text, best["cache"])],
                    decide=f"STSA jobs reading at least {DECIDE_BYTES >> 20} MiB each (the default grid, without --quick)")
