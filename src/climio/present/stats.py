"""Statistics every study's summary shares: describe, configurations (grouped through
records.to_frame), one definition of imbalance, and orders of stacks and patterns.

Nothing here draws or writes.

A *configuration* is one point of a study's grid: the study plus every parameter except those
that may legitimately differ between repetitions (PER_REP_PARAMS). Its repetitions are the
records sharing that key; every one is kept. Statistics are computed over the repetitions with
status "ok"; a "dnf" (did not finish in the time budget) record contributes an upper bound on
the rate ("< X MB/s"), an "error" record is counted and shown, never averaged.
"""

import json
import math
import statistics
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

from climio.runs.records import to_frame
from climio.dataset.stack_names import stack_sort_key

RATE, WALL, CPU = "rate_MBps", "wall_s", "cpu_s"

# Parameters that may differ between repetitions of one configuration (never part of its key).
PER_REP_PARAMS = frozenset({"rep", "time", "pid"})

PATTERN_ORDER = ("sequential", "strided", "random")



# --- statistics ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Stats:
    """Mean +- sample std (ddof=1; 0 for a single value), min / median / max of n values."""

    n: int
    mean: float
    std: float
    min: float
    median: float
    max: float


def describe(values):
    """Stats of the finite numbers in `values`, or None when there are none."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not vals:
        return None
    return Stats(n=len(vals), mean=statistics.fmean(vals),
                 std=statistics.stdev(vals) if len(vals) > 1 else 0.0,
                 min=min(vals), median=statistics.median(vals), max=max(vals))


# --- configurations -----------------------------------------------------------------------------

@dataclass
class Config:
    """One configuration and all its repetitions."""

    study: str
    params: dict
    records: list = field(default_factory=list)

    @property
    def ok(self) -> list:
        return [r for r in self.records if r.get("status") == "ok"]

    @property
    def dnf(self) -> list:
        return [r for r in self.records if r.get("status") == "dnf"]

    @property
    def errors(self) -> list:
        return [r for r in self.records if r.get("status") == "error"]

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def n_ok(self) -> int:
        return len(self.ok)

    def stats(self, metric: str):
        """Stats of `metric` over the ok repetitions (None when none has it)."""
        return describe(r.get("metrics", {}).get(metric) for r in self.ok)

    @property
    def status(self) -> str:
        """"ok" when any repetition finished, else "dnf" when any ran out of time, else "error"."""
        if self.ok:
            return "ok"
        return "dnf" if self.dnf else "error"

    @property
    def dnf_bound(self):
        """Upper bound on the rate [MB/s] from the dnf records (the largest, so it holds for all)."""
        bounds = [r["metrics"].get("rate_bound_MBps") for r in self.dnf]
        bounds = [b for b in bounds if isinstance(b, (int, float)) and math.isfinite(b)]
        if bounds:
            return max(bounds)
        # Older records without the bound: planned bytes / budget is the same number.
        for r in self.dnf:
            m, p = r.get("metrics", {}), r.get("params", {})
            planned = m.get("planned_bytes", p.get("planned_bytes"))
            if planned and m.get("budget_s"):
                return planned / m["budget_s"] / 1e6
        return None

    @property
    def cache_states(self) -> Counter:
        # a cold repetition the storage check found served by the page cache shows as such
        return Counter("effectively-warm" if r.get("cache", {}).get("effective") == "effectively-warm"
                       else r.get("cache", {}).get("state", "?") for r in self.records)

    def cache_label(self) -> str:
        """"cold", or e.g. "cold x2, warm x1" when repetitions differ."""
        c = self.cache_states
        if len(c) == 1:
            return next(iter(c))
        return ", ".join(f"{k} x{v}" for k, v in sorted(c.items()))

    def syscalls(self):
        """The strace summary of this configuration (the same on every repetition), or None."""
        for r in self.records:
            s = r.get("metrics", {}).get("syscalls")
            if isinstance(s, dict):
                return s
        return None


def _cell(v) -> str:
    """A hashable, order-stable text of one frame cell (lists and dicts as JSON, NaN as null)."""
    if isinstance(v, float) and math.isnan(v):
        return "null"
    return json.dumps(v, sort_keys=True, default=str)


def config_keys(records, ignore=PER_REP_PARAMS, by=None) -> list:
    """One key per record from records.to_frame(): the study plus `by` (column names of the frame,
    e.g. ["stack", "params.read_shape"]), or plus every params.* column not in `ignore`."""
    if not records:
        return []
    df = to_frame(records)
    if by is None:
        by = [c for c in df.columns if c.startswith("params.") and c.split(".")[1] not in ignore]
    cols = ["study", *by]
    for c in cols:
        if c not in df:
            df[c] = None
    return [tuple(_cell(v) for v in row) for row in df[cols].itertuples(index=False, name=None)]


def group_configs(records, ignore=PER_REP_PARAMS, by=None) -> list:
    """Configurations in order of first appearance, each with all its records (ordered by rep).

    Records are grouped by the columns of records.to_frame(): `by` when given (a study whose
    cells are a few named parameters; the configuration's params are its first record's), else
    every params column not in `ignore`."""
    out = OrderedDict()
    for rec, key_ in zip(records, config_keys(records, ignore, by)):
        if key_ not in out:
            out[key_] = Config(rec.get("study", "?"),
                               {k: v for k, v in rec.get("params", {}).items() if k not in ignore})
        out[key_].records.append(rec)
    for cfg in out.values():
        cfg.records.sort(key=lambda r: (r.get("rep", 0), r.get("time", "")))
    return list(out.values())


def by_study(records) -> "OrderedDict[str, list]":
    out = OrderedDict()
    for rec in records:
        out.setdefault(rec.get("study", "?"), []).append(rec)
    return out


def _order(value, preferred) -> tuple:
    return (preferred.index(value), "") if value in preferred else (len(preferred), str(value))


def pattern_sort_key(pattern) -> tuple:
    return _order(pattern, PATTERN_ORDER)


def config_sort_key(cfg: Config) -> tuple:
    p = cfg.params
    return (stack_sort_key(p.get("layer")), pattern_sort_key(p.get("pattern")), p.get("buffer_bytes") or 0,
            json.dumps(p, sort_keys=True, default=str))


def config_row(c: Config) -> dict:
    """One row of the full table (html.config_cells renders it): stats of rate, wall and CPU time."""
    wall, cpu = c.stats(WALL), c.stats(CPU)
    return {
        "config": c, "params": c.params, "status": c.status, "n": c.n, "n_ok": c.n_ok,
        "n_dnf": len(c.dnf), "n_error": len(c.errors),
        "rate": c.stats(RATE), "wall": wall, "cpu": cpu,
        "cpu_over_wall": (cpu.mean / wall.mean) if wall and cpu and wall.mean > 0 else None,
        "dnf_bound": c.dnf_bound if c.dnf else None, "cache": c.cache_label(),
    }


def config_rows(records) -> list:
    """The full table: one row per configuration with stats of rate, wall and CPU time."""
    return [config_row(c) for c in sorted(group_configs(records), key=config_sort_key)]


def varying_params(configs, skip=()) -> list:
    """Parameter names whose value differs between configurations (for generic tables)."""
    names = []
    for c in configs:
        for k in c.params:
            if k not in names and k not in skip:
                names.append(k)
    return [k for k in names
            if len({json.dumps(c.params.get(k), sort_keys=True, default=str) for c in configs}) > 1]


def constant_params(configs, skip=()) -> dict:
    """Parameters with one value across all configurations."""
    varying = set(varying_params(configs))
    out = {}
    for c in configs:
        for k, v in c.params.items():
            if k not in varying and k not in skip:
                out.setdefault(k, v)
    return out


# --- balance across ranks -----------------------------------------------------------------------

def rank_spread(values) -> dict:
    """min / mean / max of per-rank values (times, bytes) and the two balance measures:

      imbalance   = max / mean            1.0 = perfectly balanced (benchio, the ROMS report)
      idle_share  = (max - mean) / max    the share of the slowest rank's time that a perfect
                                          balance would save (what the average rank waits)

    climio uses "imbalance" for max / mean only, everywhere."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"n": 0, "min": None, "mean": None, "max": None, "imbalance": None, "idle_share": None}
    mean, mx = statistics.fmean(vals), max(vals)
    return {"n": len(vals), "min": min(vals), "mean": mean, "max": mx,
            "imbalance": mx / mean if mean > 0 else None, "idle_share": (mx - mean) / mx if mx > 0 else 0.0}
