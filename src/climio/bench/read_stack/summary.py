"""Summaries of the read-stack study (thesis ch. 3): series of rate vs buffer size, profile
classes (Tables 3.1/3.2), the syscall table, and the facts the key findings rest on; pure
functions of records (grouped through stats.group_configs, i.e. records.to_frame).

Records of every schema version read the same way: the software stack is the params' `layer`
(version 1 and the native probes) or `stack` (records.shared_value).
"""

import json
import math
from collections import OrderedDict
from dataclasses import dataclass

from climio.runs.records import shared_value
from climio.present.stats import (CPU, RATE, WALL, config_rows,  # noqa: F401
                      group_configs, pattern_sort_key)
from climio.dataset.stack_names import STACK_NAMES, stack_sort_key  # noqa: F401  (figures order by STACK_NAMES)

# Parameters that follow from the position on the rate-vs-buffer curve (pattern, buffer) rather
# than define a series: a series is a layer plus everything else.
POINT_PARAMS = frozenset({"pattern", "buffer_bytes", "planned_ops", "planned_bytes"})
STACK_KEYS = frozenset({"layer", "stack"})


def stack_of(params: dict):
    """The software stack a configuration read through (`layer` in version-1 records)."""
    return shared_value(params, "stack")


# --- series: one curve of rate vs buffer size ------------------------------------------------

@dataclass
class Curve:
    """The configurations of one layer (plus any distinguishing params) and one pattern, by buffer."""

    layer: str
    label: str
    pattern: str
    configs: list

    @property
    def buffers(self) -> list:
        return [c.params["buffer_bytes"] for c in self.configs]

    def rates(self) -> list:
        """Mean rate [MB/s] per buffer; NaN where no repetition finished."""
        out = []
        for c in self.configs:
            s = c.stats(RATE)
            out.append(s.mean if s else float("nan"))
        return out

    def bounds(self) -> list:
        """Upper bound [MB/s] per buffer where the configuration did not finish, else None."""
        return [c.dnf_bound if c.status == "dnf" else None for c in self.configs]


def overlap(params) -> float:
    """How many times the requests of a random configuration cover the file (planned bytes / file
    bytes); above 1 they overlap, later requests hit pages the earlier ones brought in, and the
    "cold" rate is a page-cache rate. 0 for other patterns or when unknown."""
    planned, size = params.get("planned_bytes"), params.get("file_bytes")
    if params.get("pattern") != "random" or not planned or not size:
        return 0.0
    return planned / size


def overlapping_configs(configs) -> list:
    return [c for c in configs if overlap(c.params) > 1]


def series_of(configs, patterns=None) -> list:
    """Group curve-like configurations (with layer, pattern and buffer_bytes) into series.

    A series is one layer and pattern; when several configurations of one layer differ in other
    parameters (e.g. two files appended to one run directory) each becomes its own series and
    its label names the differing parameters.
    """
    # random reads that overlap are shown apart (overlapping_configs), never as a point of a curve
    curve = [c for c in configs if stack_of(c.params) is not None and {"pattern", "buffer_bytes"} <= set(c.params)
             and overlap(c.params) <= 1]
    ident = {}
    for c in curve:
        rest = {k: v for k, v in c.params.items() if k not in POINT_PARAMS}
        ident[id(c)] = json.dumps(rest, sort_keys=True, default=str)
    # Which non-point params vary between series of the same layer: they go in the label.
    per_layer = {}
    for c in curve:
        per_layer.setdefault(stack_of(c.params), {})[ident[id(c)]] = c.params
    labels = {}
    for layer, variants in per_layer.items():
        varying = sorted({k for p in variants.values() for k in p if k not in POINT_PARAMS and k not in STACK_KEYS
                          and len({json.dumps(q.get(k), default=str) for q in variants.values()}) > 1})
        for key, p in variants.items():
            extra = ", ".join(f"{k}={p.get(k)}" for k in varying)
            labels[key] = f"{layer} ({extra})" if extra else str(layer)
    groups = OrderedDict()
    for c in curve:
        if patterns and c.params["pattern"] not in patterns:
            continue
        key = (ident[id(c)], c.params["pattern"])
        groups.setdefault(key, []).append(c)
    out = []
    for (ident_key, pattern), cfgs in groups.items():
        cfgs.sort(key=lambda c: c.params["buffer_bytes"])
        out.append(Curve(stack_of(cfgs[0].params), labels[ident_key], pattern, cfgs))
    out.sort(key=lambda s: (stack_sort_key(s.layer), s.label, pattern_sort_key(s.pattern)))
    return out


# --- the profile classifier -------------------------------------------------------------------

HUMP_TAIL = 0.6      # humped: rate at the largest buffer below this fraction of an interior peak
FLAT_REACH = 0.8     # flat: reaches this fraction of the peak ...
FLAT_EARLY = 1 / 3   # ... within this fraction of the log2 buffer-size span ...
FLAT_FLOOR = 0.6     # ... and never falls below this fraction of the peak afterwards
MIN_POINTS = 3


def classify_profile(buffers, rates, bounds=None) -> str:
    """The thesis's profile class of one rate-vs-buffer curve (Tables 3.1 and 3.2).

    `buffers` are sizes in bytes, `rates` the mean rate at each (NaN or None where no repetition
    finished); `bounds`, when given, holds for such points an upper bound on the rate (the dnf
    "< X MB/s"). Points are sorted by buffer size. Positions are measured on the log2 axis, so
    unevenly spaced grids (e.g. x4 steps) are judged like the thesis's doubling grid.

    With peak = the largest measured rate, at buffer index p, x = log2(buffer) and
    span = x[last] - x[first], the rules, in order:

    1. "insufficient data": fewer than 3 measured points, or no positive finite peak.
    2. "humped": the peak is interior - not at one of the two largest buffer sizes - and the
       rate at the largest buffer is < 0.6 x peak (a dnf point there counts when its bound is).
       netCDF4-python in the thesis peaks at 1 MiB and falls to ~50 % at 1 GiB (Fig. 3.7:
       300 -> 150 MB/s); plain-binary Python, which the thesis calls flat, ends ~30 % below C
       at 1 GiB, i.e. at ~0.7 of its peak - so the tail threshold sits between 0.5 and 0.7.
    3. "flat": the first point reaching >= 0.8 x peak lies within the first third of the span
       (x <= x[first] + span/3), and no later point falls below 0.6 x peak (a later dnf point
       falls when its bound is < 0.6 x peak). The thesis's sequential curves reach their level
       by 4-8 KiB on a 512 B..1 GiB grid (~3-4 of 21 octaves, well inside 7); 0.8 tolerates
       the run-to-run noise of one-std error bars of ~10-20 %; the floor equals the hump
       threshold so a curve that sags at the end is flat until it is humped, never neither.
    4. "steadily increasing": everything else - curves that climb gradually and peak at large
       buffers (the thesis's striding and random reads), including ones that wobble near the top.

    A constant curve is flat (it reaches its peak at the first point). A dnf point never counts
    as reaching the peak (its true rate is unknown below its bound).
    """
    pts = []
    for i, b in enumerate(buffers):
        r = rates[i] if i < len(rates) else None
        ub = bounds[i] if bounds is not None and i < len(bounds) else None
        measured = isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r)
        if not (isinstance(b, (int, float)) and b > 0):
            continue
        if not measured and not (isinstance(ub, (int, float)) and math.isfinite(ub)):
            continue
        pts.append((float(b), float(r) if measured else None, float(ub) if not measured else None))
    pts.sort(key=lambda t: t[0])
    measured = [p for p in pts if p[1] is not None]
    if len(measured) < MIN_POINTS:
        return "insufficient data"
    peak = max(p[1] for p in measured)
    if not (peak > 0 and math.isfinite(peak)):
        return "insufficient data"
    n = len(pts)
    p_idx = next(i for i, p in enumerate(pts) if p[1] == peak)
    x = [math.log2(p[0]) for p in pts]

    def below(pt, frac):
        """True when the point is known to be below frac x peak."""
        rate, bound = pt[1], pt[2]
        return rate < frac * peak if rate is not None else bound < frac * peak

    if p_idx < n - 2 and below(pts[-1], HUMP_TAIL):
        return "humped"
    reach = next(i for i, p in enumerate(pts) if p[1] is not None and p[1] >= FLAT_REACH * peak)
    span = x[-1] - x[0]
    if x[reach] <= x[0] + FLAT_EARLY * span + 1e-9 and not any(below(p, FLAT_FLOOR) for p in pts[reach + 1:]):
        return "flat"
    return "steadily increasing"


# --- tables -------------------------------------------------------------------------------------

def profile_table(records) -> list:
    """One row per series (layer x pattern), as the thesis's Tables 3.1/3.2.

    Row keys: layer, series (label), pattern, profile, peak_MBps, peak_std_MBps, buffer_at_peak
    (bytes), n_buffers (buffer sizes tried), n_measured (with a finished repetition), largest_measured
    (the largest buffer with a finished repetition),
    dnf (list of (buffer_bytes, bound MB/s)), errors (buffer sizes with only error records),
    warm (configurations with any warm repetition), effectively_warm (configurations with any cold
    repetition the storage-share check found served by the page cache).
    """
    rows = []
    for s in series_of(group_configs(records)):
        rates, bounds = s.rates(), s.bounds()
        measured = [(b, r, c) for b, r, c in zip(s.buffers, rates, s.configs) if math.isfinite(r)]
        if measured:
            b_pk, r_pk, c_pk = max(measured, key=lambda t: t[1])
            std_pk = c_pk.stats(RATE).std
        else:
            b_pk = r_pk = std_pk = None
        rows.append({
            "layer": s.layer, "series": s.label, "pattern": s.pattern,
            "profile": classify_profile(s.buffers, rates, bounds),
            "peak_MBps": r_pk, "peak_std_MBps": std_pk, "buffer_at_peak": b_pk,
            "n_buffers": len(s.configs), "n_measured": len(measured),
            "dnf": [(c.params["buffer_bytes"], c.dnf_bound) for c in s.configs if c.status == "dnf"],
            "errors": [c.params["buffer_bytes"] for c in s.configs if c.status == "error"],
            "warm": sum(1 for c in s.configs if c.cache_states.get("warm")),
            "effectively_warm": sum(1 for c in s.configs if effectively_warm(c)),
            "largest_measured": max((b for b, _, _ in measured), default=None),
        })
    return rows


def effectively_warm(cfg) -> bool:
    """A configuration with a cold repetition that read far less from storage than it needs."""
    return bool(cfg.cache_states.get("effectively-warm"))


def page_cache_configs(configs, layer, pattern) -> list:
    """(buffer_bytes, lowest storage share or None) of `layer`'s `pattern` configurations with an
    effectively-warm repetition: no verdict is drawn from them."""
    out = []
    for c in configs:
        if stack_of(c.params) == layer and c.params.get("pattern") == pattern and effectively_warm(c):
            shares = [r["cache"].get("storage_share") for r in c.records
                      if isinstance(r.get("cache", {}).get("storage_share"), (int, float))]
            out.append((c.params.get("buffer_bytes"), min(shares) if shares else None))
    return sorted(out, key=lambda t: t[0] or 0)


def dominant_size(sizes: dict):
    """(size in bytes, share of calls) of the most frequent read-syscall size; ties -> larger size."""
    counts = {}
    for k, v in (sizes or {}).items():
        try:
            size = int(k)
        except (TypeError, ValueError):
            continue
        if size > 0 and v:
            counts[size] = counts.get(size, 0) + int(v)
    if not counts:
        return None, None
    size = max(counts, key=lambda s: (counts[s], s))
    return size, counts[size] / sum(counts.values())


def syscall_table(records) -> list:
    """One row per (series, buffer) whose records carry metrics.syscalls.

    Row keys: layer, series, pattern, buffer_bytes, calls_per_request, bytes_per_request,
    bytes_per_call (mean read-syscall size), dominant_bytes, dominant_share, requests,
    read_calls, tool.
    """
    rows = []
    for s in series_of(group_configs(records)):
        for c in s.configs:
            sc = c.syscalls()
            if not sc:
                continue
            cpr, bpr = sc.get("calls_per_request"), sc.get("bytes_per_request")
            if sc.get("read_calls") and sc.get("read_bytes") is not None:
                per_call = sc["read_bytes"] / sc["read_calls"]
            elif cpr and bpr is not None:
                per_call = bpr / cpr
            else:
                per_call = None
            dom, share = dominant_size(sc.get("sizes"))
            rows.append({
                "layer": s.layer, "series": s.label, "pattern": s.pattern,
                "buffer_bytes": c.params["buffer_bytes"],
                "calls_per_request": cpr, "bytes_per_request": bpr, "bytes_per_call": per_call,
                "dominant_bytes": dom, "dominant_share": share,
                "requests": sc.get("requests"), "read_calls": sc.get("read_calls"), "tool": sc.get("tool"),
            })
    return rows


# --- facts: the numbers the key findings and the predictor read --------------------------------

# The thesis's strace finding (ch. 3): netCDF4-python (HDF5's sieve buffer underneath) reads at
# least 64 KiB per read syscall, whatever buffer it is asked for. Buffers below this size decide it.
LIBRARY_MIN_READ = 64 << 10
# netCDF4-python's humped sequential profile (Fig. 3.7: ~300 MB/s at 1 MiB down to ~150 MB/s at
# 1 GiB) falls below the classifier's hump threshold (0.6 x peak) only past ~256 MiB: a grid
# whose largest buffer is smaller cannot show the hump, so it cannot refute it either.
HUMP_DECIDES_FROM = 512 << 20


def status_counts(records) -> dict:
    return {s: sum(1 for r in records if r.get("status") == s) for s in ("ok", "dnf", "error")}


def headline_pattern(profiles) -> str:
    """The pattern the headline speaks of: sequential when measured, else the first one."""
    patterns = sorted({p["pattern"] for p in profiles}, key=pattern_sort_key)
    return "sequential" if "sequential" in patterns else (patterns[0] if patterns else None)


def peaks(profiles, pattern) -> list:
    """Series of `pattern` with a measured peak, fastest first: dicts of series, layer,
    peak_MBps, peak_std_MBps, buffer_at_peak."""
    rows = [{k: p[k] for k in ("series", "layer", "peak_MBps", "peak_std_MBps", "buffer_at_peak")}
            for p in profiles if p["pattern"] == pattern and p["peak_MBps"] is not None]
    return sorted(rows, key=lambda r: -r["peak_MBps"])


def fastest(peak_rows):
    """The fastest series of peak_rows and how it compares with the next one, or None.

    within_noise: the two peaks' one-std intervals overlap, so the order is not established."""
    if not peak_rows:
        return None
    top = dict(peak_rows[0])
    nxt = peak_rows[1] if len(peak_rows) > 1 else None
    top["next"] = dict(nxt) if nxt else None
    top["ratio_to_next"] = top["peak_MBps"] / nxt["peak_MBps"] if nxt and nxt["peak_MBps"] > 0 else None
    top["within_noise"] = bool(nxt) and (top["peak_MBps"] - (top["peak_std_MBps"] or 0)
                                         <= nxt["peak_MBps"] + (nxt["peak_std_MBps"] or 0))
    return top


def syscall_facts(sc_rows, below=LIBRARY_MIN_READ) -> dict:
    """Per series: what its read syscalls were at buffers smaller than `below`.

    {series: {layer, configs (traced below `below`), buffers (sorted), min_dominant_bytes (the
    smallest most-frequent syscall size over those configurations), min_bytes_per_call}}."""
    out = {}
    for r in sc_rows:
        if r["buffer_bytes"] >= below:
            continue
        f = out.setdefault(r["series"], {"layer": r["layer"], "configs": 0, "buffers": set(),
                                         "min_dominant_bytes": None, "min_bytes_per_call": None})
        f["configs"] += 1
        f["buffers"].add(r["buffer_bytes"])
        for key, val in (("min_dominant_bytes", r["dominant_bytes"]), ("min_bytes_per_call", r["bytes_per_call"])):
            if val is not None and (f[key] is None or val < f[key]):
                f[key] = val
    for f in out.values():
        f["buffers"] = sorted(f["buffers"])
    return out


def hump_fact(profiles, layer="netcdf4-python", pattern="sequential", left_out=()):
    """The profile of `layer`'s `pattern` series and whether the grid decides the thesis's hump:
    {series, profile, peak_MBps, buffer_at_peak, largest_measured, decides, page_cache}, or None when
    not measured. `profiles` are classified without the configurations in `left_out` (page_cache:
    their (buffer, storage share)); if they were the whole series, nothing decides it."""
    rows = [p for p in profiles if p["layer"] == layer and p["pattern"] == pattern]
    if not rows and not left_out:
        return None
    if not rows:
        return {"series": layer, "profile": "insufficient data", "peak_MBps": None, "buffer_at_peak": None,
                "largest_measured": None, "decides": False, "page_cache": list(left_out)}
    p = rows[0]
    return {"series": p["series"], "profile": p["profile"], "peak_MBps": p["peak_MBps"],
            "buffer_at_peak": p["buffer_at_peak"], "largest_measured": p["largest_measured"],
            "decides": p["profile"] == "humped" or (p["profile"] != "insufficient data"
                                                   and (p["largest_measured"] or 0) >= HUMP_DECIDES_FROM),
            "page_cache": list(left_out)}


def hump_of(records, configs, profiles, layer="netcdf4-python", pattern="sequential"):
    """hump_fact with the effectively-warm configurations left out (issue 17: no verdict from
    cold cells the page cache served)."""
    left_out = page_cache_configs(configs, layer, pattern)
    if not left_out:
        return hump_fact(profiles, layer, pattern)
    drop = {id(r) for c in configs if effectively_warm(c) for r in c.records}
    return hump_fact(profile_table([r for r in records if id(r) not in drop]), layer, pattern, left_out)


# --- two modes of a cold read: system time per byte (issue 27 item 8) -----------------------------

# On a VM whose balloon reports free memory to the host, a cold buffered read lands in one of two
# modes: its page cache reuses memory just freed (0.06-0.18 s of system time per GB on a loaded
# machine) or memory already reported to the host (0.5-1.6 s/GB, 2-8x slower; see run.py). System
# time per byte tells them apart where the rate, under a loaded machine's noise, cannot.
MODE_GAP = 2.0                # two clusters: the gap between them at least this ratio ...
MODE_DOMINANCE = 1.5          # ... and this many times any gap inside either cluster ...
MODE_MIN_BYTES = 32 << 20     # ... judged on repetitions that read at least this much (sys-time resolution)


def sys_s_per_GB(rec):
    """Seconds of system time per 10^9 bytes read by one repetition, or None."""
    m = rec.get("metrics") or {}
    sys_s, nbytes = m.get("sys_s"), m.get("bytes")
    if not isinstance(sys_s, (int, float)) or not isinstance(nbytes, (int, float)) or nbytes <= 0:
        return None
    return sys_s / nbytes * 1e9


def two_modes(values, gap=MODE_GAP, dominance=MODE_DOMINANCE):
    """Whether `values` (e.g. sys_s_per_GB of a configuration's repetitions) split into two clusters:
    {"low": [...], "high": [...], "gap": ratio} or None.

    Sorted, the values split at the largest ratio between neighbours; they are two modes when that
    ratio is at least `gap` and at least `dominance` times every other ratio between neighbours, so
    a steady drift (1, 2, 4, 8) is not two modes but (0.07, 0.08, 0.9) is, and so is a loaded
    machine's fast mode spread over 0.06-0.18 s/GB beside a slow one at 0.46. Non-positive or
    non-finite values are ignored; fewer than two values are never split."""
    vals = sorted(float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
                  and math.isfinite(v) and v > 0)
    if len(vals) < 2:
        return None
    steps = [vals[k + 1] / vals[k] for k in range(len(vals) - 1)]
    i = max(range(len(steps)), key=lambda k: steps[k])
    ratio, others = steps[i], steps[:i] + steps[i + 1:]
    if ratio < gap or any(ratio < dominance * other for other in others):
        return None
    return {"low": vals[:i + 1], "high": vals[i + 1:], "gap": ratio}


def mode_rows(records, min_bytes=MODE_MIN_BYTES) -> list:
    """One row per configuration with cold repetitions that read at least `min_bytes`: layer,
    series, pattern, buffer_bytes, reps [(rep, rate_MBps, sys_s_per_GB)], split (two_modes of
    sys_s_per_GB, or None) and, when split, the mean rate of each mode (rate_fast, rate_slow)."""
    rows = []
    for s in series_of(group_configs(records)):
        for c in s.configs:
            reps = [(r.get("rep"), (r.get("metrics") or {}).get("rate_MBps"), sys_s_per_GB(r)) for r in c.records
                    if r.get("status") == "ok" and (r.get("cache") or {}).get("state") == "cold"
                    and ((r.get("metrics") or {}).get("bytes") or 0) >= min_bytes and sys_s_per_GB(r) is not None]
            if not reps:
                continue
            split = two_modes([t[2] for t in reps])
            row = {"layer": s.layer, "series": s.label, "pattern": s.pattern, "buffer_bytes": c.params["buffer_bytes"],
                   "reps": reps, "split": split}
            if split:
                cut = split["high"][0]
                fast = [t[1] for t in reps if t[2] < cut and isinstance(t[1], (int, float))]
                slow = [t[1] for t in reps if t[2] >= cut and isinstance(t[1], (int, float))]
                row["rate_fast"] = sum(fast) / len(fast) if fast else None
                row["rate_slow"] = sum(slow) / len(slow) if slow else None
            rows.append(row)
    return rows


def cold_modes(records) -> dict:
    """The two-mode check of the cold repetitions: {checked (configurations), split (rows of
    mode_rows that split), text (one sentence for the findings, None when nothing was checked)}."""
    from climio.base.units import format_size
    rows = mode_rows(records)
    split = [r for r in rows if r["split"]]
    if not rows:
        text = None
    elif not split:
        text = (f"Cold repetitions are in one mode: system time per GB read does not split into two clusters "
                f"in any of the {len(rows)} configurations that read at least {format_size(MODE_MIN_BYTES)}.")
    else:
        worst = max(split, key=lambda r: r["split"]["gap"])
        rates = ""
        if worst.get("rate_fast") and worst.get("rate_slow"):
            rates = f", {worst['rate_fast']:.0f} vs {worst['rate_slow']:.0f} MB/s"
        text = (f"Cold repetitions split into two modes in {len(split)} of {len(rows)} configurations "
                f"(system time per GB read {worst['split']['gap']:.1f}x apart in {worst['series']} {worst['pattern']} "
                f"{format_size(worst['buffer_bytes'])}{rates}): their mean mixes two states of the platform's memory, "
                f"not the stack's cost; compare the fast mode's repetitions.")
    return {"checked": len(rows), "split": split, "text": text}


def summarise(records) -> dict:
    """The study's numbers as plain data (JSON-friendly): counts, the profile of every series,
    peak rates per pattern fastest first, the fastest stack, syscall facts, and whether cold
    repetitions split into two modes (cold_modes)."""
    configs = group_configs(records)
    profiles = profile_table(records)
    sc_rows = syscall_table(records)
    head = headline_pattern(profiles)
    by_pattern = {pat: peaks(profiles, pat) for pat in sorted({p["pattern"] for p in profiles}, key=pattern_sort_key)}
    return {
        "study": "read-stack",
        "records": len(records),
        "configurations": len(configs),
        "status": status_counts(records),
        "cache": sorted({str(r.get("cache", {}).get("state")) for r in records}),
        "profiles": profiles,
        "peaks": by_pattern,
        "headline_pattern": head,
        "fastest": {pat: fastest(rows) for pat, rows in by_pattern.items()},
        "syscalls": syscall_facts(sc_rows),
        "syscall_rows": sc_rows,
        "netcdf4_python_sequential": hump_of(records, configs, profiles),
        "cold_modes": cold_modes(records),
    }


def _peak_records(records, row) -> list:
    """The records of the configuration behind a peak (series, pattern, buffer_at_peak)."""
    for s in series_of(group_configs(records)):
        if s.label == row["series"] and s.pattern == row.get("pattern", s.pattern):
            for c in s.configs:
                if c.params.get("buffer_bytes") == row["buffer_at_peak"]:
                    return c.records
    return []


def headline(records):
    """The study's rows of the report's first screen (sections.Headline): the fastest stack for
    the headline pattern and its peak rate, and the slowest stack's peak; None without a peak."""
    from climio.present.cells import num
    from climio.present.sections import Headline, HeadlineRow, cache_state
    from climio.base.units import format_size
    profiles = profile_table(records)
    pattern = headline_pattern(profiles)
    rows = peaks(profiles, pattern) if pattern else []
    if not rows:
        return None
    top = fastest(rows)
    text = f"{top['series']}: {num(top['peak_MBps'])} MB/s at {format_size(top['buffer_at_peak'])}"
    if top["next"] is not None:
        text += (f", within noise of {top['next']['series']}" if top["within_noise"]
                 else f", {num(top['ratio_to_next'])}× {top['next']['series']}")
    out = [HeadlineRow(f"fastest stack ({pattern})", text,
                       cache_state(_peak_records(records, {**top, "pattern": pattern})))]
    if len(rows) > 2:
        low = rows[-1]
        out.append(HeadlineRow(f"slowest stack ({pattern})",
                               f"{low['series']}: {num(low['peak_MBps'])} MB/s at best ({format_size(low['buffer_at_peak'])})",
                               cache_state(_peak_records(records, {**low, "pattern": pattern}))))
    return Headline("read-stack", out, decide=(f"buffers up to 1 GiB on a file of several GiB (--full): the thesis's "
                                               f"netCDF4-python hump shows from about {format_size(HUMP_DECIDES_FROM)}"))
