"""The chunking section of the report (thesis chapter 4): Figs 4.3-4.6, Tables 4.1/4.2, the chunk
cache comparison, and a check of the thesis's three chunking/compression findings.

A *cell* is (layer, compression, cache_setting, read_shape, chunk_label); its repetitions are the
records with those five parameters. A cell's rate is the mean over its finished repetitions; a
cell where none finished ("dnf") is known only as a bound, rate < X MB/s. Ratios of two cells
carry that through (Bounded): dividing by a dnf cell gives a lower bound ("> N"), a dnf cell
divided by a finished one an upper bound ("< N").

Public functions (pure, on records): cells_of, cell_annotation, best_worst, cache_ratios,
compression_table, unavailable_cells, reproduction_checks.
"""

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..units import format_size
from . import chunking_figures as cf
from .html import CONFIG_HEADERS, bound_num, config_cells, dnf_text, e, figure, num, plural, section, table
from .summary import CPU, RATE, WALL, config_row, describe, group_configs, layer_sort_key

STUDY = "chunking"
CELL_PARAMS = ("layer", "compression", "cache_setting", "read_shape", "chunk_label")
CHUNK_ORDER = ("A", "B", "C", "D", "E", "F", "G", "default", "balanced", "custom")
READ_ORDER = ("xy", "xt", "xyt")
CACHE_ORDER = ("default", "fit")
NONE, CONTIGUOUS, XT_CHUNKS = "none", "A", "F"
_DEFAULTS = {"compression": NONE, "cache_setting": "default"}

THRESHOLD_XT, THRESHOLD_XY, THRESHOLD_COMPRESSION = 5.0, 5.0, 2.0
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not measured")


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
    """The cells of the study's records, by their five parameters, with the orders to show them in."""

    def __init__(self, records):
        recs = [r for r in records if r.get("study", STUDY) == STUDY]
        configs = group_configs(recs, key=cell_key)
        self.all = OrderedDict((cell_key(c.records[0]), c) for c in configs)
        self.cells = OrderedDict((k, c) for k, c in self.all.items() if not is_unavailable(c))
        self.unavailable = OrderedDict((k, c) for k, c in self.all.items() if is_unavailable(c))
        keys = list(self.all)
        self.layers = sorted(dict.fromkeys(k[0] for k in keys), key=layer_sort_key)
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
    return Cells(records)


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


def cell_annotation(cfg) -> str:
    """The thesis's cell text: "mean\\n(repeats finished)\\n[max]", or "< X" when none finished."""
    st = cfg.stats(RATE)
    if st:
        return f"{num(st.mean)}\n({st.n})\n[{num(st.max)}]"
    if cfg.dnf:
        return f"< {bound_num(dnf_bound(cfg))}"
    return "error"


def heat_cell(cfg):
    st = cfg.stats(RATE)
    if st:
        return cf.HeatCell("ok", st.mean, cell_annotation(cfg))
    return cf.HeatCell("dnf" if cfg.dnf else "error", None, cell_annotation(cfg))


def _rate_text(b) -> str:
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
    if not measured:
        return "not measured"
    if r is None:
        return "inconclusive"
    if r.kind == "=":
        return "reproduced" if r.value >= threshold else "not reproduced"
    if r.kind == ">":
        return "reproduced" if r.value >= threshold else "inconclusive"
    return "not reproduced" if r.value < threshold else "inconclusive"


def _check(name, title, r, threshold, measured, detail, **extra) -> dict:
    return {"name": name, "title": title, **extra, "ratio": r.value if r else None,
            "bound_kind": r.kind if r else None, "threshold": threshold,
            "verdict": verdict(r, threshold, measured), "detail": detail}


def _is_deflate(comp) -> bool:
    return "deflate" in str(comp)


def reproduction_checks(records) -> list:
    """The thesis's three findings checked on the records; a list of dicts with keys name ("a",
    "b", "c"), title, layer, compression, ratio, bound_kind ("=" measured, ">" a lower bound, "<" an
    upper bound, None when unknown), threshold, verdict (one of VERDICTS), detail, n_cells.

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
                          f"{num_lab} {_rate_text(ra)} / {den_lab} {_rate_text(rb)}")
            out.append(_check(name, title, r, thr, not missing, detail, layer=layer, compression=NONE,
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
        partial.append((comp, ratio(cell_rate(ref), cell_rate(c))))
    title = "compressed partial-chunk reads vs uncompressed"
    for comp in [None, *comps] if comps else [None]:
        pairs = [r for cmp, r in partial if comp is None or cmp == comp]
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
        out.append(_check("c", title, g, THRESHOLD_COMPRESSION, bool(pairs), detail, layer=None,
                          compression=comp, n_cells=len(known)))
    return out


# --- figures from cells -----------------------------------------------------------------------------

def _rate_range(cells):
    means = [c.stats(RATE).mean for c in cells.cells.values() if c.stats(RATE) and c.stats(RATE).mean > 0]
    return (min(means), max(means)) if means else None


def rate_panel(cells, title, layer, comp, cache, chunks) -> cf.HeatPanel:
    cols = [(ch, f"{ch}\n{cells.chunk_shape_text(ch)}") for ch in chunks]
    p = cf.HeatPanel(title, list(cells.reads), cols)
    for read in cells.reads:
        for ch in chunks:
            c = cells.get(layer, comp, cache, read, ch)
            if c is not None:
                p.cells[(read, ch)] = heat_cell(c)
    return p


def ratio_panel(cells, ratios, layer, comp) -> cf.HeatPanel:
    mine = [r for r in ratios if r["layer"] == layer and r["compression"] == comp]
    chunks = _ordered([r["chunk_label"] for r in mine], cells.chunks)
    p = cf.HeatPanel(f"compression {comp}", list(cells.reads),
                     [(ch, f"{ch}\n{cells.chunk_shape_text(ch)}") for ch in chunks])
    for r in mine:
        q = r["ratio"]
        if q is None:
            both = r["fit"] is None or r["default"] is None
            p.cells[(r["read_shape"], r["chunk_label"])] = cf.HeatCell("error" if both else "dnf", None,
                                                                       "error" if both else "both\ndnf")
        else:
            p.cells[(r["read_shape"], r["chunk_label"])] = cf.HeatCell("ok" if q.kind == "=" else "bound",
                                                                       q.value, bounded_text(q, "×"))
    return p


def bar_panels(cells, layer, cache) -> list:
    """Fig 4.4 for one layer and chunk cache, no compression: per read shape, wall and CPU time per
    read (one slice) of every chunk shape the layer measured (empty slots keep panels aligned)."""
    chunks = _ordered([k[4] for k, _ in cells.select(layer=layer, compression=NONE)], cells.chunks)
    panels = []
    for read in cells.reads:
        bars = []
        for ch in chunks:
            c = cells.get(layer, NONE, cache, read, ch)
            if c is None:
                bars.append(cf.Bar(ch))
                continue
            per = lambda r, m: (r["metrics"].get(m) or 0) / max(1, r["metrics"].get("slices_read") or r["metrics"].get("ops") or 1)
            wall = describe(per(r, WALL) for r in c.ok)
            cpu = describe(per(r, CPU) for r in c.ok)
            dnf_at = max([(r["metrics"].get(WALL) or 0) / ((r["metrics"].get("slices_read") or 0) + 1)
                          for r in c.dnf] or [0.0]) or None
            bars.append(cf.Bar(ch, wall.mean if wall else None, wall.std if wall else 0.0,
                               cpu.mean if cpu else None, dnf_at if not c.ok else None))
        panels.append(cf.BarPanel(f"{read} reads", bars))
    return panels


# --- HTML -------------------------------------------------------------------------------------------

def _chunk_table(cells) -> str:
    rows = []
    dtype = cells.param("dtype")
    try:
        itemsize = np.dtype(dtype).itemsize if dtype else None
    except TypeError:
        itemsize = None
    for ch in cells.chunks:
        shape = cells.param("chunking", chunk_label=ch) if cells.select(chunk_label=ch) else None
        size = (format_size(math.prod(shape) * itemsize) if isinstance(shape, list) and itemsize else "—")
        rows.append([ch, cells.chunk_shape_text(ch), size])
    return table(["chunk label", "chunk shape [t,z,y,x]", "chunk size (uncompressed)"], rows)


def _read_table(cells) -> str:
    rows = []
    dtype = cells.param("dtype")
    for read in cells.reads:
        cnt = cells.param("read_count", read_shape=read)
        total = cells.param("slices_total", read_shape=read)
        try:
            nbytes = format_size(math.prod(cnt) * np.dtype(dtype).itemsize) if isinstance(cnt, list) and dtype else "—"
        except TypeError:
            nbytes = "—"
        rows.append([read, "[" + ",".join(map(str, cnt)) + "]" if isinstance(cnt, list) else "—", nbytes,
                     total if total is not None else "—"])
    return table(["read shape", "count per read [t,z,y,x]", "bytes per read", "reads per pass"], rows)


def _best_worst_html(rows, cells) -> str:
    out = []
    for r in rows:
        best = f"{r['best']} {cells.chunk_shape_text(r['best'])}" if r["best"] else "—"
        worst = f"{r['worst']} {cells.chunk_shape_text(r['worst'])}" if r["worst"] else "—"
        out.append([r["layer"], r["read_shape"], _rate_text(r["contiguous"]), best, _rate_text(r["best_rate"]),
                    r["best_effect"], worst, _rate_text(r["worst_rate"]), r["worst_effect"], r["note"]])
    return table(["layer", "read shape", "contiguous (A) mean rate", "best chunk shape", "mean rate",
                  "effect vs contiguous", "worst chunk shape", "mean rate", "effect vs contiguous", "note"],
                 out, cls="num")


def _change_text(pair) -> str:
    g, n = pair
    if not n:
        return "—"
    if g is None:
        return f"? ({n})"
    return f"{bounded_text(g, '×')} ({n})"


def _compression_html(rows, cells) -> str:
    out = []
    for r in rows:
        if r["unavailable"]:
            out.append([r["compression"], f"{r['chunk_label']} {cells.chunk_shape_text(r['chunk_label'])}",
                        "unavailable: " + "; ".join(r["unavailable"]), "", "", "",
                        *["" for _ in cells.reads], ""])
            continue
        ratio_ = r["ratio"]
        out.append([r["compression"], f"{r['chunk_label']} {cells.chunk_shape_text(r['chunk_label'])}",
                    factor_text(ratio_) if ratio_ else "—", f"{100 / ratio_:.0f}%" if ratio_ else "—",
                    num(r["stored_bytes"] / 2**20) if r["stored_bytes"] else "—",
                    num(r["file_bytes"] / 2**20) if r["file_bytes"] else "—",
                    *(_change_text(r["rate_change"][rd]) if r["compression"] != NONE else "1 (reference)"
                      for rd in cells.reads),
                    _change_text(r["rate_change_all"]) if r["compression"] != NONE else "1 (reference)"])
    return table(["compression", "chunk shape", "compression ratio (uncompressed / stored)", "stored / uncompressed",
                  "stored size [MiB]", "file size [MiB]", *(f"rate vs none, {rd} reads" for rd in cells.reads),
                  "rate vs none, all cells"], out, cls="num")


def _checks_html(checks) -> str:
    rules = {"a": f"reproduced when the ratio is ≥ {factor_text(THRESHOLD_XT)}",
             "b": f"reproduced when the ratio is ≥ {factor_text(THRESHOLD_XY)}",
             "c": f"reproduced when the geometric mean is ≥ {factor_text(THRESHOLD_COMPRESSION)}"}
    rows = []
    for c in checks:
        r = Bounded(c["ratio"], c["bound_kind"]) if c["ratio"] is not None else None
        cls = {"reproduced": "prof-flat", "not reproduced": "prof-humped"}.get(c["verdict"], "prof-insufficient")
        rows.append([e(c["name"]), e(c["title"]), e(c["layer"] or "all"),
                     e(c["compression"] if c["compression"] else ("every deflate setting" if c["name"] == "c" else "—")),
                     e(bounded_text(r)), e(rules[c["name"]]),
                     f'<span class="prof {cls}">{e(c["verdict"])}</span>', e(c["detail"])])
    return table(["", "finding", "layer", "compression", "measured ratio", "rule", "verdict", "detail"],
                 rows, cls="num", raw=True)


def _config_table(cells) -> str:
    rows = []
    for key in sorted(cells.all, key=cells.order_key):
        c = cells.all[key]
        layer, comp, cache, read, chunk = key
        cc = c.params.get("chunk_cache")
        cache_txt = cache + (f" ({format_size(cc['size'])})" if isinstance(cc, dict) and cc.get("size") else "")
        touched, bdpb = metric_of(c, "chunks_touched_per_slice"), metric_of(c, "bytes_decoded_per_byte")
        sample = str(c.params.get("sample") or "—")
        limited = [r["metrics"].get("slices_read") for r in c.ok if r.get("metrics", {}).get("sampled")]
        if limited:
            sample += f"; time-limited: {min(x or 0 for x in limited)} of {c.params.get('slices_total', '?')} read"
        row = config_row(c)
        if c.dnf:
            row["dnf_bound"] = dnf_bound(c)
        cells_html = [e(layer), e(comp), e(cache_txt), e(read), e(f"{chunk} {cells.chunk_shape_text(chunk)}"),
                      *config_cells(row), e(num(touched) if touched is not None else "—"),
                      e(num(bdpb) if bdpb is not None else "—"), e(sample)]
        rows.append((cells_html, row["status"]))
    return table(["layer", "compression", "chunk cache", "read shape", "chunk shape", *CONFIG_HEADERS,
                  "chunks touched per read", "bytes decoded per byte delivered", "sample"],
                 rows, cls="num full", raw=True)


@section(STUDY)
def chunking_section(records, ctx) -> str:
    cells = cells_of(records)
    n_status = {s: sum(1 for r in cells.records if r.get("status") == s) for s in ("ok", "dnf", "error")}
    vrange = _rate_range(cells)
    variables = sorted({(str(c.params.get("var_shape")), str(c.params.get("dtype")), str(c.params.get("source")))
                        for c in cells.cells.values() if c.params.get("var_shape")})
    budgets = sorted({r["metrics"]["budget_s"] for r in cells.records if r.get("metrics", {}).get("budget_s")})
    parts = [
        f'<section id="study-{STUDY}"><h2>Study: chunking — read rate by chunk shape, read shape and compression</h2>',
        f"<p>{len(cells.records)} records ({n_status['ok']} ok, {n_status['dnf']} did not finish, "
        f"{n_status['error']} error) in {plural(len(cells.all), 'cell')} (layer × compression × chunk cache × "
        f"read shape × chunk shape). Layers: {e(', '.join(cells.layers))}. "
        + "; ".join(f"Variable shape {e(v)} [t,z,y,x], dtype {e(d)}, data {e(s)}" for v, d, s in variables) + ". "
        "Rates are MB/s = 10<sup>6</sup> B/s of bytes delivered over wall time, cold cache; a cell's rate is the "
        "mean over its finished repetitions (std: sample). A cell none of whose repetitions finished in the time "
        "budget" + (f" ({', '.join(num(b) for b in budgets)} s)" if budgets else "") +
        " is shown as &lt; X: its rate is below X MB/s.</p>",
    ]
    if len(variables) > 1:
        parts.append('<p class="warn">These records come from more than one variable; cells are grouped by '
                     "layer, compression, chunk cache, read shape and chunk shape only.</p>")
    parts += [_chunk_table(cells), _read_table(cells)]
    unav = unavailable_cells(records)
    if unav:
        items = "".join(f"<li>unavailable: <b>{e(u['compression'])}</b> through {e(u['layer'])} — {e(u['reason'])} "
                        f"({plural(u['n_cells'], 'cell')}: chunk shapes {e(', '.join(u['chunk_labels']))}; read "
                        f"shapes {e(', '.join(u['read_shapes']))})</li>" for u in unav)
        parts.append(f'<div class="warn"><p>Codecs that could not be measured on this build (not drawn):</p>'
                     f"<ul>{items}</ul></div>")

    # 1. Heat maps, no compression (Fig 4.3).
    parts.append("<h3>Read rate by read shape and chunk shape, no compression</h3>")
    if not cells.select(compression=NONE):
        parts.append("<p>No uncompressed cells in these records.</p>")
    for layer in cells.layers:
        chunks = _ordered([k[4] for k, _ in cells.select(layer=layer, compression=NONE)], cells.chunks)
        panels = [rate_panel(cells, f"{layer}, chunk cache {cache}", layer, NONE, cache, chunks)
                  for cache in cells.caches]
        parts.append(figure(
            lambda panels=panels: cf.heatmaps(panels, "Mean read rate [MB/s] by read shape (rows) and chunk shape "
                                              "(columns), no compression", "mean read rate [MB/s] (log scale)",
                                              vrange=vrange),
            f"read rate heat map {layer}",
            f"{layer}: each cell shows the mean read rate in MB/s (colour, log scale shared by every heat map of "
            "this section), the number of repetitions that finished in (), and the fastest repetition in []. "
            "White cells (< X) did not finish in the time budget: their rate is below X MB/s. A contiguous "
            "variable (A) has no chunk cache, so it is measured under the default setting only (thesis Fig. 4.3)."))

    # 5. Table 4.1.
    bw = best_worst(records)
    if bw:
        parts += ["<h3>Best and worst chunk shape per read shape</h3>",
                  "<p>No compression, default chunk cache; best and worst among the chunked shapes by mean rate, "
                  "compared with the contiguous variable (A) as the thesis's Table 4.1. A worst cell that did not "
                  "finish gives a bound (&gt; N× slower).</p>", _best_worst_html(bw, cells)]

    # 3. Wall vs CPU time (Fig 4.4).
    parts.append("<h3>Wall vs CPU time</h3>")
    for layer in cells.layers:
        rows = [(f"chunk cache {cache}", bar_panels(cells, layer, cache)) for cache in cells.caches]
        parts.append(figure(
            lambda rows=rows, layer=layer: cf.wall_cpu_bars(rows, f"{layer}: wall vs CPU time per read, no compression",
                                                            "time per read [s] (log scale)"),
            f"wall vs CPU time {layer}",
            f"{layer}: mean wall time (dark) and CPU time = user + system (light, in front) per read (one slice of "
            "the read shape), log scale. CPU near wall: the library decoding or copying; CPU far below wall: waiting "
            "on I/O (thesis Fig. 4.4)."))

    # 2. Chunk cache comparison.
    ratios = cache_ratios(records)
    if ratios:
        known = [r["ratio"] for r in ratios if r["ratio"] is not None and r["ratio"].kind == "="]
        big = [r for r in ratios if r["ratio"] is not None and r["ratio"].kind == "=" and abs(math.log(r["ratio"].value)) > math.log(1.2)]
        g = geomean(known)
        parts += ["<h3>Chunk cache: sized to fit vs library default</h3>",
                  f"<p>{plural(len(ratios), 'cell')} measured with both chunk-cache settings. Ratio = rate with a cache "
                  "holding every chunk one read touches (fit) / rate with the library's default cache. A ratio near 1 "
                  "means the layout, not the cache, sets the rate; a large ratio means the default cache was too small "
                  f"and the chunks were read more than once. Geometric mean over the {len(known)} cells where both "
                  f"finished: {e(bounded_text(g, '×'))}; {len(big)} of them differ by more than 20%.</p>"]
        for layer in cells.layers:
            comps = _ordered([r["compression"] for r in ratios if r["layer"] == layer], cells.compressions)
            panels = [ratio_panel(cells, ratios, layer, comp) for comp in comps]
            parts.append(figure(
                lambda panels=panels, layer=layer: cf.heatmaps(
                    panels, f"{layer}: rate with chunk cache 'fit' / rate with 'default'",
                    "rate(fit) / rate(default) (log scale)", kind="ratio",
                    footnote="blue: the larger cache is faster; red: slower. > ×N: only 'fit' finished (a lower "
                             "bound); < ×N: only 'default' finished."),
                f"chunk cache ratio {layer}",
                f"{layer}: rate(fit) / rate(default) per cell, one panel per compression setting."))

    # 4. Compression: Table 4.2 and Figs 4.5/4.6.
    comp_rows = compression_table(records)
    compressed = [c for c in cells.compressions if c != NONE]
    parts.append("<h3>Compression</h3>")
    if not compressed:
        parts.append("<p>No compressed layouts in these records.</p>")
    else:
        parts += ["<p>Compression ratio = uncompressed bytes / stored bytes of the variable (the thesis's Table 4.2 "
                  "gives the inverse as a percentage, shown next to it). Rate vs none = geometric mean of "
                  "rate(compressed) / rate(uncompressed) over the cells measured both ways (same layer, chunk "
                  "cache, chunk and read shape); the number of cells in (); &lt; / &gt; when cells that did not "
                  "finish make it a bound.</p>", _compression_html(comp_rows, cells)]
        chunks_c = _ordered([k[4] for k in cells.cells if k[1] != NONE], cells.chunks)
        for layer in cells.layers:
            for cache in cells.caches:
                comps = [c for c in cells.compressions if cells.select(layer=layer, compression=c, cache_setting=cache)]
                if not any(c != NONE for c in comps):
                    continue
                panels = [rate_panel(cells, f"compression {comp}", layer, comp, cache, chunks_c) for comp in comps]
                parts.append(figure(
                    lambda panels=panels, layer=layer, cache=cache: cf.heatmaps(
                        panels, f"{layer}, chunk cache {cache}: mean read rate [MB/s] per compression setting",
                        "mean read rate [MB/s] (log scale)", vrange=vrange),
                    f"compressed read rate heat maps {layer} {cache}",
                    f"{layer}, chunk cache {cache}: one heat map per compression setting, read shapes in rows and the "
                    "chunk shapes that were compressed in columns; the uncompressed panel for reference. Cells as "
                    "above: mean (colour), repetitions finished (), fastest [], < X did not finish "
                    "(thesis Figs 4.5/4.6)."))

    # 6. Reproduction.
    parts += ["<h3>Reproduction of the thesis's findings</h3>",
              "<p>(a) xt reads from xt chunks (F) are many times faster than from the contiguous variable (A): "
              f"rate(xt, F) / rate(xt, A) ≥ {factor_text(THRESHOLD_XT)}. (b) xy reads from xt chunks are much slower "
              f"than from contiguous: rate(xy, A) / rate(xy, F) ≥ {factor_text(THRESHOLD_XY)}. Both with no "
              "compression and the default chunk cache. (c) Compressed reads of partial chunks (bytes decoded per "
              "byte delivered &gt; 1) are several times slower than uncompressed ones: geometric mean of "
              f"rate(none) / rate(deflate) ≥ {factor_text(THRESHOLD_COMPRESSION)}. A cell that did not finish "
              "enters with its bound; a bound that cannot decide the rule is <b>inconclusive</b>, a missing cell "
              "<b>not measured</b>.</p>",
              _checks_html(reproduction_checks(records))]

    # 7. Every cell.
    parts += [f"<details><summary>All cells ({len(cells.all)}; every repetition is in records.jsonl)</summary>",
              _config_table(cells), "</details></section>"]
    return "\n".join(p for p in parts if p)
