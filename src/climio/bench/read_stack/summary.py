"""Summaries of the read-stack study (thesis ch. 3): series of rate vs buffer size, profile
classes (Tables 3.1/3.2) and the syscall table; pure functions of records."""

import math
from collections import Counter
from dataclasses import dataclass

from ...stats import (CPU, LAYER_ORDER, PATTERN_ORDER, RATE, WALL, Config, describe, group_configs,  # noqa: F401
                      layer_sort_key, pattern_sort_key)

# Parameters that follow from the position on the rate-vs-buffer curve (pattern, buffer) rather
# than define a series: a series is a layer plus everything else.
POINT_PARAMS = frozenset({"pattern", "buffer_bytes", "planned_ops", "planned_bytes"})
PROFILES = ("flat", "steadily increasing", "humped", "insufficient data")


# --- series: one curve of rate vs buffer size ------------------------------------------------

@dataclass
class Series:
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


def series_of(configs, patterns=None) -> list:
    """Group curve-like configurations (with layer, pattern and buffer_bytes) into series.

    A series is one layer and pattern; when several configurations of one layer differ in other
    parameters (e.g. two files appended to one run directory) each becomes its own series and
    its label names the differing parameters.
    """
    curve = [c for c in configs if {"layer", "pattern", "buffer_bytes"} <= set(c.params)]
    ident = {}
    for c in curve:
        rest = {k: v for k, v in c.params.items() if k not in POINT_PARAMS}
        ident[id(c)] = json.dumps(rest, sort_keys=True, default=str)
    # Which non-point params vary between series of the same layer: they go in the label.
    per_layer = {}
    for c in curve:
        per_layer.setdefault(c.params["layer"], {})[ident[id(c)]] = c.params
    labels = {}
    for layer, variants in per_layer.items():
        varying = sorted({k for p in variants.values() for k in p if k not in POINT_PARAMS and k != "layer"
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
        out.append(Series(cfgs[0].params["layer"], labels[ident_key], pattern, cfgs))
    out.sort(key=lambda s: (layer_sort_key(s.layer), s.label, pattern_sort_key(s.pattern)))
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
    (bytes), n_buffers (buffer sizes tried), n_measured (with a finished repetition),
    dnf (list of (buffer_bytes, bound MB/s)), errors (buffer sizes with only error records),
    warm (configurations with any warm repetition).
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
        })
    return rows


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


