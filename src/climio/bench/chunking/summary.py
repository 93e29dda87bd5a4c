"""What the chunking study's records say, as numbers (pure: records in, dicts out; nothing drawn).

A *cell* is (layer, compression, cache_setting, read_shape, chunk_label); its repetitions are the
records with those five parameters (grouped by stats.group_configs over records.to_frame). A
cell's rate is the mean over its finished repetitions; a cell where none finished ("dnf") is
known only as a bound, rate < X MB/s. Ratios of two cells carry that through (Bounded): dividing
by a dnf cell gives a lower bound ("> N"), a dnf cell divided by a finished one an upper bound
("< N").

    cells_of, best_worst (Table 4.1), cache_ratios, compression_table (Table 4.2),
    unavailable_cells, reproduction_checks (the thesis's three findings), summarise
"""

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from climio.present.cells import dnf_text, num, plural
from climio.present.sections import VERDICTS as _ALL_VERDICTS
from climio.dataset.stack_names import stack_sort_key
from climio.present.stats import RATE, group_configs
from climio.base.units import format_size

STUDY = "chunking"
CHUNKING_STACKS = ("netcdf4-python", "h5py", "c-netcdf")  # the stacks that read hyperslabs
CACHE_SETTINGS = ("default", "fit")
CELL_PARAMS = ("layer", "compression", "cache_setting", "read_shape", "chunk_label")
# The same five as columns of records.to_frame: the shared nouns where the design has one.
CELL_COLUMNS = ("stack", "compression", "params.cache_setting", "params.read_shape", "params.chunk_label")
CHUNK_ORDER = ("A", "B", "C", "D", "E", "F", "G", "default", "balanced", "custom")
READ_ORDER = ("xy", "xt", "xyt")
CACHE_ORDER = ("default", "fit")
NONE, CONTIGUOUS, XT_CHUNKS = "none", "A", "F"
_DEFAULTS = {"compression": NONE, "cache_setting": "default"}

THRESHOLD_XT, THRESHOLD_XY, THRESHOLD_COMPRESSION = 5.0, 5.0, 2.0
# The verdicts a check can get (words of climio.present.sections.VERDICTS): "refuted" when the measured
# ratio is below 1, i.e. the opposite of the thesis's effect holds.
CHECK_VERDICTS = ("reproduced", "not reproduced", "refuted", "inconclusive", "not decidable", "not measured")
assert set(CHECK_VERDICTS) <= set(_ALL_VERDICTS)
# Below this many bytes per repetition a cell's time is per-call latency, not transfer: the
# thesis's effects (measured on 255 GiB) cannot show, so a check on such cells is not decidable.
MIN_DECIDABLE_BYTES = 1 << 20
# Presets whose size is too small by design (the --quick grid: a 1 MiB variable).
UNDECIDABLE_PRESETS = ("quick",)
# A cold cell that fetched less than this share of the bytes it needs from storage read the page
# cache (issue 17): no verdict is drawn from it.
MIN_STORAGE_SHARE = 0.5


# --- bounded values ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bounded:
    """A rate or ratio: kind "=" measured, "<" the true value is below it, ">" above it."""

    value: float
    kind: str = "="


_DIR = {"=": 0, "<": -1, ">": 1}
_KIND = {0: "=", -1: "<", 1: ">"}


def ratio(a, b):
    """a / b with bounds carried through; None when unknown (missing, or bounds that cancel)."""
    if a is None or b is None or not (a.value > 0 and b.value > 0):
        return None
    da, db = _DIR[a.kind], -_DIR[b.kind]
    if da and db and da != db:
        return None
    return Bounded(a.value / b.value, _KIND[da or db])


def geomean(terms):
    """Geometric mean of Bounded ratios: a bound when some terms are bounds all the same way,
    None when there are none or bounds point both ways."""
    terms = [t for t in terms if t is not None and t.value > 0]
    dirs = {_DIR[t.kind] for t in terms} - {0}
    if not terms or len(dirs) > 1:
        return None
    return Bounded(math.exp(sum(math.log(t.value) for t in terms) / len(terms)), _KIND[dirs.pop() if dirs else 0])


def factor_text(v) -> str:
    """48.2 -> "48", 2.463 -> "2.46", 1.04 -> "1.04", 0.4531 -> "0.453"."""
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.3g}"


def bounded_text(b, prefix="") -> str:
    if b is None:
        return "—"
    return {"=": "", "<": "< ", ">": "> "}[b.kind] + prefix + factor_text(b.value)


def effect_text(r) -> str:
    """A ratio to contiguous in words: "48× faster", "20% slower", "> 50× slower"."""
    if r is None:
        return "—"
    v, k = r.value, r.kind
    if k == "=" and abs(v - 1) < 0.02:
        return "same (±2%)"
    faster = v >= 1
    pre = {"=": "", ">": "> " if faster else "< ", "<": "< " if faster else "> "}[k]
    f = v if faster else 1 / v
    amount = f"{factor_text(f)}×" if f >= 1.5 else f"{abs(v - 1) * 100:.0f}%"
    return f"{pre}{amount} {'faster' if faster else 'slower'}"


# --- cells ------------------------------------------------------------------------------------------

def cell_key(rec) -> tuple:
    p = rec.get("params", {})
    return tuple(str(p.get(k, _DEFAULTS.get(k, "?"))) for k in CELL_PARAMS)


def _ordered(values, preferred=()) -> list:
    seen = list(dict.fromkeys(values))
    pref = list(preferred)
    return sorted(seen, key=lambda v: (pref.index(v) if v in pref else len(pref), seen.index(v)))


def is_unavailable(cfg) -> bool:
    return not cfg.ok and not cfg.dnf and any(r.get("params", {}).get("unavailable") for r in cfg.records)


class Cells:
    """The cells of the study's records, by their five parameters, with the orders to show them in.

    Grouped by stats.group_configs(by=CELL_COLUMNS); records written before a parameter existed
    (no compression: "none", no cache setting: "default") join the cell they mean."""

    def __init__(self, records):
        recs = [r for r in records if r.get("study", STUDY) == STUDY]
        self.all = OrderedDict()
        for cfg in group_configs(recs, by=list(CELL_COLUMNS)):
            key = cell_key(cfg.records[0])
            if key in self.all:
                self.all[key].records.extend(cfg.records)
            else:
                self.all[key] = cfg
        self.cells = OrderedDict((k, c) for k, c in self.all.items() if not is_unavailable(c))
        self.unavailable = OrderedDict((k, c) for k, c in self.all.items() if is_unavailable(c))
        keys = list(self.all)
        self.layers = sorted(dict.fromkeys(k[0] for k in keys), key=stack_sort_key)
        self.compressions = _ordered([k[1] for k in keys], (NONE,))
        self.caches = _ordered([k[2] for k in keys], CACHE_ORDER)
        self.reads = _ordered([k[3] for k in keys], READ_ORDER)
        self.chunks = _ordered([k[4] for k in keys], CHUNK_ORDER)
        self.records = recs

    def get(self, layer, compression, cache, read, chunk):
        return self.cells.get((layer, compression, cache, read, chunk))

    def select(self, **fixed) -> list:
        """Measured cells whose parameters equal `fixed` (names as CELL_PARAMS)."""
        idx = {k: CELL_PARAMS.index(k) for k in fixed}
        return [(k, c) for k, c in self.cells.items() if all(k[i] == str(fixed[n]) for n, i in idx.items())]

    def param(self, name, **fixed):
        """The first value of params[name] among matching cells (e.g. a chunk label's shape)."""
        for _, c in self.select(**fixed) if fixed else self.all.items():
            for r in c.records:
                v = r.get("params", {}).get(name)
                if v is not None:
                    return v
        return None

    def chunk_shape_text(self, label) -> str:
        shape = self.param("chunking", chunk_label=label)
        if isinstance(shape, (list, tuple)):
            return "[" + ",".join(map(str, shape)) + "]"
        return str(shape) if shape is not None else "?"

    def order_key(self, key) -> tuple:
        lists = (self.layers, self.compressions, self.caches, self.reads, self.chunks)
        return tuple(lst.index(v) for lst, v in zip(lists, key))


def cells_of(records) -> Cells:
    """The Cells of `records` (a Cells is returned as is, so callers can share one grouping)."""
    return records if isinstance(records, Cells) else Cells(records)


def metric_of(cfg, name):
    """The first finite value of metrics[name] in a cell (geometry is the same on every record)."""
    for r in cfg.records:
        v = r.get("metrics", {}).get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return v
    return None


def dnf_bound(cfg):
    """The cell's "< X MB/s". A bound of 0 (not one slice in the budget) says nothing; then one
    slice's bytes / budget bounds the rate instead."""
    b = cfg.dnf_bound
    if b is not None and b > 0:
        return b
    for r in cfg.dnf:
        m, p = r.get("metrics", {}), r.get("params", {})
        planned, total, budget = m.get("planned_bytes"), p.get("slices_total"), m.get("budget_s")
        if planned and total and budget:
            return planned / total / budget / 1e6
    return b


def cell_rate(cfg):
    """Bounded mean rate [MB/s] of a cell: measured, "<" bound when it did not finish, else None."""
    if cfg is None:
        return None
    st = cfg.stats(RATE)
    if st:
        return Bounded(st.mean)
    b = dnf_bound(cfg) if cfg.dnf else None
    return Bounded(b, "<") if b is not None and b > 0 else None


def rate_text(b) -> str:
    if b is None:
        return "—"
    return dnf_text(b.value) if b.kind == "<" else f"{num(b.value)} MB/s"


# --- tables -----------------------------------------------------------------------------------------

def best_worst(records, cache="default", compression=NONE) -> list:
    """Table 4.1: per layer and read shape, the fastest and slowest chunk shape other than
    contiguous (A) by mean rate, and their ratio to A (Bounded). A cell that did not finish counts
    with its bound; it is the worst when its bound is the lowest value (ties go to the dnf cell)."""
    cells = cells_of(records)
    rows = []
    for layer in cells.layers:
        for read in cells.reads:
            cand = [(k[4], c, cell_rate(c)) for k, c in cells.select(layer=layer, compression=compression,
                                                                       cache_setting=cache, read_shape=read)]
            ref = next((r for lab, _, r in cand if lab == CONTIGUOUS), None)
            cand = [(lab, c, r) for lab, c, r in cand if lab != CONTIGUOUS and r is not None]
            if not cand and ref is None:
                continue
            done = [t for t in cand if t[2].kind == "="]
            best = max(done, key=lambda t: t[2].value) if done else None
            worst = min(cand, key=lambda t: (t[2].value, t[2].kind == "=")) if cand else None
            note = ""
            if worst and worst[2].kind == "=":
                hidden = [lab for lab, _, r in cand if r.kind == "<" and r.value > worst[2].value]
                if hidden:
                    note = f"{', '.join(hidden)} did not finish and may be slower"
            best_r = ratio(best[2], ref) if best else None
            worst_r = ratio(worst[2], ref) if worst else None
            rows.append({
                "layer": layer, "read_shape": read, "contiguous": ref,
                "best": best[0] if best else None, "best_rate": best[2] if best else None,
                "best_vs_A": best_r, "best_effect": effect_text(best_r),
                "worst": worst[0] if worst else None, "worst_rate": worst[2] if worst else None,
                "worst_vs_A": worst_r, "worst_effect": effect_text(worst_r), "note": note,
            })
    return rows


def cache_ratios(records) -> list:
    """Per cell measured with both chunk-cache settings: rate(fit) / rate(default) (Bounded)."""
    cells = cells_of(records)
    out = []
    for (layer, comp, cache, read, chunk), c in cells.cells.items():
        if cache != "default":
            continue
        fit = cells.get(layer, comp, "fit", read, chunk)
        if fit is None:
            continue
        out.append({"layer": layer, "compression": comp, "read_shape": read, "chunk_label": chunk,
                    "default": cell_rate(c), "fit": cell_rate(fit), "ratio": ratio(cell_rate(fit), cell_rate(c))})
    return out


def _stored_bytes(cells, comp, chunk):
    recs = [r for _, c in cells.select(compression=comp, chunk_label=chunk) for r in c.records]
    vals = [r["metrics"]["stored_bytes"] for r in recs if isinstance(r.get("metrics", {}).get("stored_bytes"), (int, float))]
    if vals:
        return float(np.median(vals))
    ratios = [r["metrics"]["compression_ratio"] for r in recs
              if isinstance(r.get("metrics", {}).get("compression_ratio"), (int, float))]
    p = recs[0].get("params", {}) if recs else {}
    if ratios and p.get("var_shape") and p.get("dtype"):
        try:
            return math.prod(p["var_shape"]) * np.dtype(p["dtype"]).itemsize / float(np.median(ratios))
        except TypeError:
            return None
    return None


def compression_table(records) -> list:
    """Table 4.2: one row per (compression, chunk label) of the chunk labels that were compressed,
    with the compression ratio (uncompressed / stored bytes), stored and file size, and the rate
    change vs "none": geometric mean over matching cells (layer, cache, read shape) of
    rate(compressed) / rate(none), per read shape and over all."""
    cells = cells_of(records)
    compressed_chunks = _ordered([k[4] for k in cells.all if k[1] != NONE], cells.chunks)
    rows = []
    for comp in cells.compressions:
        for chunk in compressed_chunks:
            mine = [(k, c) for k, c in cells.all.items() if k[1] == comp and k[4] == chunk]
            if not mine:
                continue
            measured = [(k, c) for k, c in mine if k in cells.cells]
            ratios = [metric_of(c, "compression_ratio") for _, c in measured]
            ratios = [r for r in ratios if r]
            files = [metric_of(c, "file_bytes") for _, c in measured]
            files = [f for f in files if f]
            per_read, every = OrderedDict(), []
            for read in cells.reads:
                terms = []
                for (layer, _, cache, rd, _), c in measured:
                    if rd == read:
                        terms.append(ratio(cell_rate(c), cell_rate(cells.get(layer, NONE, cache, read, chunk))))
                terms = [t for t in terms if t is not None]
                per_read[read] = (geomean(terms), len(terms))
                every += terms
            reasons = sorted({str(r.get("metrics", {}).get("error", "")) for k, c in mine if k not in cells.cells
                              for r in c.records} - {""})
            rows.append({
                "compression": comp, "chunk_label": chunk, "ratio": float(np.median(ratios)) if ratios else None,
                "stored_bytes": _stored_bytes(cells, comp, chunk) if measured else None,
                "file_bytes": float(np.median(files)) if files else None,
                "rate_change": per_read, "rate_change_all": (geomean(every), len(every)),
                "unavailable": reasons if not measured else [],
            })
    return rows


def unavailable_cells(records) -> list:
    """Codecs that could not be measured on this build: one entry per (compression, layer, reason)."""
    cells = cells_of(records)
    groups = OrderedDict()
    for (layer, comp, cache, read, chunk), c in cells.unavailable.items():
        reason = next((str(r.get("metrics", {}).get("error")) for r in c.records
                       if r.get("metrics", {}).get("error")), "no reason recorded")
        g = groups.setdefault((comp, layer, reason), {"compression": comp, "layer": layer, "reason": reason,
                                                      "n_cells": 0, "chunk_labels": [], "read_shapes": []})
        g["n_cells"] += 1
        for name, v in (("chunk_labels", chunk), ("read_shapes", read)):
            if v not in g[name]:
                g[name].append(v)
    return list(groups.values())


# --- reproduction of the thesis's findings ----------------------------------------------------------

def verdict(r, threshold, measured=True) -> str:
    """The verdict on "ratio >= threshold" (threshold > 1) for a Bounded ratio `r`: a measured
    ratio below 1, or an upper bound at or below 1, is "refuted" (the opposite effect holds)."""
    if not measured:
        return "not measured"
    if r is None:
        return "inconclusive"
    if r.kind in ("=", "<") and (r.value < 1 if r.kind == "=" else r.value <= 1):
        return "refuted"
    if r.kind == "=":
        return "reproduced" if r.value >= threshold else "not reproduced"
    if r.kind == ">":
        return "reproduced" if r.value >= threshold else "inconclusive"
    return "not reproduced" if r.value < threshold else "inconclusive"


def undecidable_reason(cfgs):
    """Why the cells `cfgs` cannot decide a check at this size, or None: too few bytes per
    repetition (latency-dominated), or cold repetitions served by the page cache."""
    for cfg in cfgs:
        if cfg is None:
            continue
        preset = next((r["params"].get("preset") for r in cfg.records if r["params"].get("preset")), None)
        if preset in UNDECIDABLE_PRESETS:
            return (f"not decidable at this size: the --{preset} grid reads a few MiB per cell, where per-call "
                    "latency, not transfer, sets the time (run without --quick)")
        got = [r["metrics"].get("bytes") for r in cfg.records if r.get("status") == "ok"]
        got = [b for b in got if isinstance(b, (int, float))]
        if got and max(got) < MIN_DECIDABLE_BYTES:
            return (f"not decidable at this size: a repetition reads {format_size(max(got))}, below "
                    f"{format_size(MIN_DECIDABLE_BYTES)}, so per-call latency, not transfer, sets its time")
        shares = [r.get("cache", {}).get("storage_share") for r in cfg.records if r.get("cache", {}).get("state") == "cold"]
        shares = [x for x in shares if isinstance(x, (int, float))]
        warm = [r for r in cfg.records if r.get("cache", {}).get("effective") == "effectively-warm"]
        if warm or (shares and min(shares) < MIN_STORAGE_SHARE):
            low = min(shares) if shares else None
            return ("not decidable: cold repetitions read from the page cache"
                    + (f" (storage share {100 * low:.0f}%)" if low is not None else ""))
    return None


def _check(name, title, r, threshold, measured, detail, cfgs=(), **extra) -> dict:
    v = verdict(r, threshold, measured)
    why = undecidable_reason(cfgs) if measured else None
    if why and v != "not measured":
        v, detail = "not decidable", f"{detail}; {why}"
    return {"name": name, "title": title, **extra, "ratio": r.value if r else None,
            "bound_kind": r.kind if r else None, "threshold": threshold,
            "verdict": v, "detail": detail}


def _is_deflate(comp) -> bool:
    return "deflate" in str(comp)


def reproduction_checks(records) -> list:
    """The thesis's three findings checked on the records; a list of dicts with keys name ("a",
    "b", "c"), title, layer, compression, ratio, bound_kind ("=" measured, ">" a lower bound, "<" an
    upper bound, None when unknown), threshold, verdict (one of CHECK_VERDICTS), detail, n_cells.

    a  rate(xt, F) / rate(xt, A) >= 5: xt reads from xt chunks much faster than from contiguous.
    b  rate(xy, A) / rate(xy, F) >= 5: xy reads from xt chunks much slower than from contiguous.
       a and b: compression none, chunk cache default, one entry per layer.
    c  geometric mean of rate(none) / rate(deflate setting) >= 2 over cells reading partial chunks
       (bytes_decoded_per_byte > 1) measured both ways (same layer, chunk, read shape, cache): one
       entry over every deflate setting (compression None), then one per deflate setting.
    A dnf cell enters with its bound; a ratio known only as a bound below the threshold (or an
    upper bound above it) is "inconclusive"; a missing cell makes the check "not measured".
    """
    cells = cells_of(records)
    out = []
    layers = [l for l in cells.layers if cells.select(layer=l, compression=NONE)] or [None]
    for name, read, num_lab, den_lab, thr, title in (
            ("a", "xt", XT_CHUNKS, CONTIGUOUS, THRESHOLD_XT, "xt reads: xt chunks (F) vs contiguous (A)"),
            ("b", "xy", CONTIGUOUS, XT_CHUNKS, THRESHOLD_XY, "xy reads: contiguous (A) vs xt chunks (F)")):
        for layer in layers:
            a = cells.get(layer, NONE, "default", read, num_lab)
            b = cells.get(layer, NONE, "default", read, den_lab)
            missing = [lab for lab, c in ((num_lab, a), (den_lab, b)) if c is None]
            ra, rb = cell_rate(a), cell_rate(b)
            r = ratio(ra, rb)
            if missing:
                detail = (f"{layer or 'no layer'}: no {read} cell for chunk shape {' and '.join(missing)} "
                          "(compression none, chunk cache default)")
            else:
                detail = (f"{layer}, {read} reads, compression none, chunk cache default: "
                          f"{num_lab} {rate_text(ra)} / {den_lab} {rate_text(rb)}")
            out.append(_check(name, title, r, thr, not missing, detail, cfgs=(a, b), layer=layer, compression=NONE,
                              n_cells=0 if missing else 1))
    partial = []  # (compression, Bounded rate(none)/rate(compressed))
    comps = [c for c in cells.compressions if _is_deflate(c)]
    for (layer, comp, cache, read, chunk), c in cells.cells.items():
        if not _is_deflate(comp):
            continue
        ref = cells.get(layer, NONE, cache, read, chunk)
        if ref is None:
            continue
        bdpb = metric_of(ref, "bytes_decoded_per_byte") or metric_of(c, "bytes_decoded_per_byte")
        if bdpb is None or bdpb <= 1:
            continue
        partial.append((comp, ratio(cell_rate(ref), cell_rate(c)), (ref, c)))
    title = "compressed partial-chunk reads vs uncompressed"
    for comp in [None, *comps] if comps else [None]:
        pairs = [r for cmp, r, _ in partial if comp is None or cmp == comp]
        used = [cfg for cmp, _, two in partial if comp is None or cmp == comp for cfg in two]
        known = [r for r in pairs if r is not None]
        g = geomean(known)
        what = "every deflate setting" if comp is None else comp
        if not pairs:
            detail = (f"{what}: no cell reading partial chunks (bytes decoded per byte > 1) measured both "
                      "uncompressed and compressed" if comps else "no deflate-compressed cells in the records")
        else:
            detail = (f"{what}: geometric mean of rate(none) / rate(compressed) over {plural(len(known), 'cell')} "
                      "reading partial chunks" + (f"; {len(pairs) - len(known)} where neither finished left out"
                                                  if len(known) < len(pairs) else ""))
            if known and g is None:
                detail += "; bounds point both ways, no single bound"
        out.append(_check("c", title, g, THRESHOLD_COMPRESSION, bool(pairs), detail, cfgs=used, layer=None,
                          compression=comp, n_cells=len(known)))
    return out


# --- the study's numbers ----------------------------------------------------------------------------

def summarise(records) -> dict:
    """Every number the section and the findings show, from one grouping of the records."""
    cells = cells_of(records)
    status = {s: sum(1 for r in cells.records if r.get("status") == s) for s in ("ok", "dnf", "error")}
    return {
        "records": len(cells.records), "status": status, "cells": len(cells.all),
        "layers": cells.layers, "read_shapes": cells.reads, "chunk_labels": cells.chunks,
        "chunk_shapes": {ch: cells.chunk_shape_text(ch) for ch in cells.chunks},
        "compressions": cells.compressions, "cache_settings": cells.caches,
        "best_worst": best_worst(cells), "cache_ratios": cache_ratios(cells),
        "compression": compression_table(cells), "unavailable": unavailable_cells(cells),
        "checks": reproduction_checks(cells),
    }


def headline(records):
    """The study's rows of the report's first screen (sections.Headline): per read shape, the best
    chunk shape (no compression, default chunk cache, over every layer) and its gain over
    contiguous; None without such cells."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    cells = cells_of(records)
    rows = []
    for read in cells.reads:
        cand = [r for r in best_worst(cells) if r["read_shape"] == read and r["best_rate"] is not None]
        if not cand:
            continue
        top = max(cand, key=lambda r: r["best_rate"].value)
        cfg = cells.get(top["layer"], NONE, "default", read, top["best"])
        gain = f", {top['best_effect']} than contiguous" if top["best_vs_A"] is not None else ""
        rows.append(HeadlineRow(f"best chunks for {read} reads",
                                f"{top['best']} {cells.chunk_shape_text(top['best'])}: {rate_text(top['best_rate'])}"
                                f"{gain} ({top['layer']})", cache_state(cfg.records) if cfg else ""))
    if not rows:
        return None
    return Headline(STUDY, rows, decide=("a variable of a few GiB (the default grid, without --quick) read cold: the "
                                         "thesis's ratios need reads long enough that transfer, not per-call latency, "
                                         "sets the time"))
