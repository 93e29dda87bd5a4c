"""The chunking section of the report (thesis chapter 4) as climio.present.sections objects: Figs 4.3-4.6
as heat maps and bars (drawn when the page is rendered), Tables 4.1/4.2, the chunk cache
comparison, and the check of the thesis's three chunking/compression findings. The numbers come
from .summary (pure); this module only arranges them.

    chunking_section(records) -> Section        findings(records) -> [Finding]
"""

import math

import numpy as np

from climio.present.cells import CONFIG_HEADERS, bound_num, config_cells, num, plural
from climio.present.sections import Cell, Details, Figure, Finding, Heading, Note, Paragraph, Section, Table
from climio.present.stats import CPU, RATE, WALL, config_row, describe
from climio.base.units import format_size
from . import figures as cf
from .summary import (NONE, STUDY, THRESHOLD_COMPRESSION, THRESHOLD_XT, THRESHOLD_XY,  # noqa: F401
                      Bounded, _ordered, best_worst, bounded_text, cache_ratios, cell_rate, cells_of,
                      compression_table, dnf_bound, effect_text, factor_text, geomean, metric_of, rate_text,
                      ratio, reproduction_checks, summarise, unavailable_cells)

TITLE = "Study: chunking — read rate by chunk shape, read shape and compression"


# --- cells as drawn ---------------------------------------------------------------------------------

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


# --- tables -----------------------------------------------------------------------------------------

def _itemsize(dtype):
    try:
        return np.dtype(dtype).itemsize if dtype else None
    except TypeError:
        return None


def chunk_shape_of(value):
    """A chunk shape from records' params.chunking: a list, or its text "[1,1,16,32]"; None for
    "contiguous" and anything else."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            value = [int(x) for x in value[1:-1].split(",")]
        except ValueError:
            return None
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, int) for x in value):
        return list(value)
    return None


def _chunk_table(cells) -> Table:
    rows = []
    itemsize = _itemsize(cells.param("dtype"))
    for ch in cells.chunks:
        raw = cells.param("chunking", chunk_label=ch) if cells.select(chunk_label=ch) else None
        shape = chunk_shape_of(raw)
        if shape and itemsize:
            size = format_size(math.prod(shape) * itemsize)
        else:
            size = "— (contiguous)" if raw == "contiguous" else "—"
        rows.append([ch, cells.chunk_shape_text(ch), size])
    return Table(["chunk label", "chunk shape [t,z,y,x]", "chunk size (uncompressed)"], rows, numeric=False)


def _read_table(cells) -> Table:
    rows = []
    itemsize = _itemsize(cells.param("dtype"))
    for read in cells.reads:
        cnt = cells.param("read_count", read_shape=read)
        total = cells.param("slices_total", read_shape=read)
        nbytes = format_size(math.prod(cnt) * itemsize) if isinstance(cnt, list) and itemsize else "—"
        rows.append([read, "[" + ",".join(map(str, cnt)) + "]" if isinstance(cnt, list) else "—", nbytes,
                     total if total is not None else "—"])
    return Table(["read shape", "count per read [t,z,y,x]", "bytes per read", "reads per pass"], rows, numeric=False)


def _best_worst_table(rows, cells) -> Table:
    out = []
    for r in rows:
        best = f"{r['best']} {cells.chunk_shape_text(r['best'])}" if r["best"] else "—"
        worst = f"{r['worst']} {cells.chunk_shape_text(r['worst'])}" if r["worst"] else "—"
        out.append([r["layer"], r["read_shape"], rate_text(r["contiguous"]), best, rate_text(r["best_rate"]),
                    r["best_effect"], worst, rate_text(r["worst_rate"]), r["worst_effect"], r["note"]])
    return Table(["layer", "read shape", "contiguous (A) mean rate", "best chunk shape", "mean rate",
                  "effect vs contiguous", "worst chunk shape", "mean rate", "effect vs contiguous", "note"], out)


def _change_text(pair) -> str:
    g, n = pair
    if not n:
        return "—"
    if g is None:
        return f"? ({n})"
    return f"{bounded_text(g, '×')} ({n})"


def _compression_table(rows, cells) -> Table:
    out = []
    for r in rows:
        shape = f"{r['chunk_label']} {cells.chunk_shape_text(r['chunk_label'])}"
        if r["unavailable"]:
            out.append([r["compression"], shape, "unavailable: " + "; ".join(r["unavailable"]), "", "", "",
                        *["" for _ in cells.reads], ""])
            continue
        ratio_ = r["ratio"]
        ref = r["compression"] == NONE
        out.append([r["compression"], shape,
                    factor_text(ratio_) if ratio_ else "—", f"{100 / ratio_:.0f}%" if ratio_ else "—",
                    format_size(r["stored_bytes"]) if r["stored_bytes"] else "—",
                    format_size(r["file_bytes"]) if r["file_bytes"] else "—",
                    *("1 (reference)" if ref else _change_text(r["rate_change"][rd]) for rd in cells.reads),
                    "1 (reference)" if ref else _change_text(r["rate_change_all"])])
    return Table(["compression", "chunk shape", "compression ratio (uncompressed / stored)", "stored / uncompressed",
                  "stored size", "file size", *(f"rate vs none, {rd} reads" for rd in cells.reads),
                  "rate vs none, all cells"], out)


VERDICT_CLASS = {"reproduced": "prof prof-flat", "not reproduced": "prof prof-humped", "refuted": "prof prof-humped"}


def _rule(name) -> str:
    thr = {"a": THRESHOLD_XT, "b": THRESHOLD_XY, "c": THRESHOLD_COMPRESSION}[name]
    what = "the geometric mean" if name == "c" else "the ratio"
    return f"reproduced when {what} is ≥ {factor_text(thr)}; refuted when it is below 1"


def _checks_table(checks) -> Table:
    rows = []
    for c in checks:
        r = Bounded(c["ratio"], c["bound_kind"]) if c["ratio"] is not None else None
        comp = c["compression"] if c["compression"] else ("every deflate setting" if c["name"] == "c" else "—")
        rows.append([c["name"], c["title"], c["layer"] or "all", comp, bounded_text(r), _rule(c["name"]),
                     Cell(c["verdict"], VERDICT_CLASS.get(c["verdict"], "prof prof-insufficient")), c["detail"]])
    return Table(["", "finding", "layer", "compression", "measured ratio", "rule", "verdict", "detail"], rows)


def _config_table(cells) -> Table:
    rows, classes = [], []
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
        rows.append([layer, comp, cache_txt, read, f"{chunk} {cells.chunk_shape_text(chunk)}", *config_cells(row),
                     num(touched) if touched is not None else "—", num(bdpb) if bdpb is not None else "—", sample])
        classes.append(row["status"] if row["status"] != "ok" else "")
    return Table(["layer", "compression", "chunk cache", "read shape", "chunk shape", *CONFIG_HEADERS,
                  "chunks touched per read", "bytes decoded per byte delivered", "sample"], rows, row_classes=classes)


# --- the section ------------------------------------------------------------------------------------

def _intro(cells) -> list:
    n_status = {s: sum(1 for r in cells.records if r.get("status") == s) for s in ("ok", "dnf", "error")}
    variables = sorted({(str(c.params.get("var_shape")), str(c.params.get("dtype")), str(c.params.get("source")))
                        for c in cells.cells.values() if c.params.get("var_shape")})
    budgets = sorted({r["metrics"]["budget_s"] for r in cells.records if r.get("metrics", {}).get("budget_s")})
    text = (f"{len(cells.records)} records ({n_status['ok']} ok, {n_status['dnf']} did not finish, "
            f"{n_status['error']} error) in {plural(len(cells.all), 'cell')} (layer × compression × chunk cache × "
            f"read shape × chunk shape). Layers: {', '.join(cells.layers)}. "
            + "; ".join(f"Variable shape {v} [t,z,y,x], dtype {d}, data {s}" for v, d, s in variables) + ". "
            "Rates are MB/s = 10^6 B/s of bytes delivered over wall time, cold cache; a cell's rate is the "
            "mean over its finished repetitions (std: sample). A cell none of whose repetitions finished in the "
            "time budget" + (f" ({', '.join(num(b) for b in budgets)} s)" if budgets else "")
            + " is shown as < X: its rate is below X MB/s.")
    blocks = [Paragraph(text)]
    if len(variables) > 1:
        blocks.append(Note("These records come from more than one variable; cells are grouped by layer, "
                           "compression, chunk cache, read shape and chunk shape only."))
    return blocks


def _unavailable_blocks(unav) -> list:
    if not unav:
        return []
    return [Note("Codecs that could not be measured on this build (not drawn):"),
            *(Note(f"unavailable: {u['compression']} through {u['layer']} — {u['reason']} "
                   f"({plural(u['n_cells'], 'cell')}: chunk shapes {', '.join(u['chunk_labels'])}; read shapes "
                   f"{', '.join(u['read_shapes'])})") for u in unav)]


def _rate_heatmaps(cells, vrange) -> list:
    blocks = [Heading("Read rate by read shape and chunk shape, no compression")]
    if not cells.select(compression=NONE):
        blocks.append(Paragraph("No uncompressed cells in these records."))
    for layer in cells.layers:
        chunks = _ordered([k[4] for k, _ in cells.select(layer=layer, compression=NONE)], cells.chunks)
        panels = [rate_panel(cells, f"{layer}, chunk cache {cache}", layer, NONE, cache, chunks)
                  for cache in cells.caches]
        blocks.append(Figure(
            lambda panels=panels: cf.heatmaps(panels, "Mean read rate [MB/s] by read shape (rows) and chunk shape "
                                              "(columns), no compression", "mean read rate [MB/s] (log scale)",
                                              vrange=vrange),
            f"read rate heat map {layer}",
            f"{layer}: which chunk shape serves each read shape fastest: mean read rate in MB/s (colour, log scale "
            "shared by this section's heat maps), finished repetitions in (), the fastest in [], and white cells "
            "(< X) that did not finish in the time budget (contiguous A has no chunk cache, so it is measured "
            "under the default setting only; thesis Fig. 4.3)."))
    return blocks


def _wall_cpu(cells) -> list:
    blocks = [Heading("Wall vs CPU time")]
    for layer in cells.layers:
        rows = [(f"chunk cache {cache}", bar_panels(cells, layer, cache)) for cache in cells.caches]
        blocks.append(Figure(
            lambda rows=rows, layer=layer: cf.wall_cpu_bars(rows, f"{layer}: wall vs CPU time per read, no compression",
                                                            "time per read [s] (log scale)"),
            f"wall vs CPU time {layer}",
            f"{layer}: where a read's time goes on each chunk shape (log scale): mean wall time (dark) against CPU "
            "time = user + system (light, in front) per read (one slice of the read shape), CPU near wall meaning "
            "the library decoding or copying and CPU far below wall waiting on I/O (thesis Fig. 4.4)."))
    return blocks


def _cache_blocks(cells, ratios) -> list:
    if not ratios:
        return []
    known = [r["ratio"] for r in ratios if r["ratio"] is not None and r["ratio"].kind == "="]
    big = [q for q in known if abs(math.log(q.value)) > math.log(1.2)]
    g = geomean(known)
    blocks = [Heading("Chunk cache: sized to fit vs library default"),
              Paragraph(f"{plural(len(ratios), 'cell')} measured with both chunk-cache settings. Ratio = rate with a "
                        "cache holding every chunk one read touches (fit) / rate with the library's default cache. A "
                        "ratio near 1 means the layout, not the cache, sets the rate; a large ratio means the default "
                        "cache was too small and the chunks were read more than once. Geometric mean over the "
                        f"{len(known)} cells where both finished: {bounded_text(g, '×')}; {len(big)} of them differ "
                        "by more than 20%.")]
    for layer in cells.layers:
        comps = _ordered([r["compression"] for r in ratios if r["layer"] == layer], cells.compressions)
        panels = [ratio_panel(cells, ratios, layer, comp) for comp in comps]
        blocks.append(Figure(
            lambda panels=panels, layer=layer: cf.heatmaps(
                panels, f"{layer}: rate with chunk cache 'fit' / rate with 'default'",
                "rate(fit) / rate(default) (log scale)", kind="ratio",
                footnote="blue: the larger cache is faster; red: slower. > ×N: only 'fit' finished (a lower "
                         "bound); < ×N: only 'default' finished."),
            f"chunk cache ratio {layer}",
            f"{layer}: where a chunk cache holding every chunk a read touches reads faster than the library's "
            "default one (blue) or slower (red): rate(fit) / rate(default) per cell, one panel per compression "
            "setting."))
    return blocks


def _compression_blocks(cells, comp_rows, vrange) -> list:
    blocks = [Heading("Compression")]
    if not any(c != NONE for c in cells.compressions):
        return blocks + [Paragraph("No compressed layouts in these records.")]
    blocks += [Paragraph("Compression ratio = uncompressed bytes / stored bytes of the variable (the thesis's "
                         "Table 4.2 gives the inverse as a percentage, shown next to it). Rate vs none = geometric "
                         "mean of rate(compressed) / rate(uncompressed) over the cells measured both ways (same "
                         "layer, chunk cache, chunk and read shape); the number of cells in (); < / > when cells "
                         "that did not finish make it a bound."),
               _compression_table(comp_rows, cells)]
    chunks_c = _ordered([k[4] for k in cells.cells if k[1] != NONE], cells.chunks)
    for layer in cells.layers:
        for cache in cells.caches:
            comps = [c for c in cells.compressions if cells.select(layer=layer, compression=c, cache_setting=cache)]
            if not any(c != NONE for c in comps):
                continue
            panels = [rate_panel(cells, f"compression {comp}", layer, comp, cache, chunks_c) for comp in comps]
            blocks.append(Figure(
                lambda panels=panels, layer=layer, cache=cache: cf.heatmaps(
                    panels, f"{layer}, chunk cache {cache}: mean read rate [MB/s] per compression setting",
                    "mean read rate [MB/s] (log scale)", vrange=vrange),
                f"compressed read rate heat maps {layer} {cache}",
                f"{layer}, chunk cache {cache}: how compression changes which chunk shape serves each read shape "
                "fastest, one heat map per compression setting (read shapes in rows, the chunk shapes that were "
                "compressed in columns, the uncompressed panel for reference; cells as above: mean (colour), "
                "repetitions finished (), fastest [], < X did not finish; thesis Figs 4.5/4.6)."))
    return blocks


def _reproduction_blocks(checks) -> list:
    return [Heading("Reproduction of the thesis's findings"),
            Paragraph("(a) xt reads from xt chunks (F) are many times faster than from the contiguous variable (A): "
                      f"rate(xt, F) / rate(xt, A) ≥ {factor_text(THRESHOLD_XT)}. (b) xy reads from xt chunks are "
                      "much slower than from contiguous: rate(xy, A) / rate(xy, F) ≥ "
                      f"{factor_text(THRESHOLD_XY)}. Both with no compression and the default chunk cache. (c) "
                      "Compressed reads of partial chunks (bytes decoded per byte delivered > 1) are several times "
                      "slower than uncompressed ones: geometric mean of rate(none) / rate(deflate) ≥ "
                      f"{factor_text(THRESHOLD_COMPRESSION)}. A ratio below 1 (the opposite effect) is refuted. A "
                      "cell that did not finish enters with its bound; a bound that cannot decide the rule is "
                      "inconclusive, a missing cell not measured."),
            _checks_table(checks)]


def chunking_section(records) -> Section:
    cells = cells_of(records)
    s = summarise(cells)
    vrange = _rate_range(cells)
    sec = Section(f"study-{STUDY}", TITLE)
    sec.add(*_intro(cells), _chunk_table(cells), _read_table(cells), *_unavailable_blocks(s["unavailable"]))
    sec.add(*_rate_heatmaps(cells, vrange))
    if s["best_worst"]:
        sec.add(Heading("Best and worst chunk shape per read shape"),
                Paragraph("No compression, default chunk cache; best and worst among the chunked shapes by mean "
                          "rate, compared with the contiguous variable (A) as the thesis's Table 4.1. A worst cell "
                          "that did not finish gives a bound (> N× slower)."),
                _best_worst_table(s["best_worst"], cells))
    sec.add(*_wall_cpu(cells), *_cache_blocks(cells, s["cache_ratios"]),
            *_compression_blocks(cells, s["compression"], vrange), *_reproduction_blocks(s["checks"]),
            Details(f"All cells ({len(cells.all)}; every repetition is in records.jsonl)", [_config_table(cells)]))
    sec.findings = findings(cells, s)
    return sec


# --- key findings -----------------------------------------------------------------------------------

def _check_finding(c) -> Finding:
    r = Bounded(c["ratio"], c["bound_kind"]) if c["ratio"] is not None else None
    what = {"a": "xt reads are faster from xt chunks (F) than from contiguous (A)",
            "b": "xy reads are slower from xt chunks (F) than from contiguous (A)",
            "c": "compressed reads of partial chunks are slower than uncompressed ones"}[c["name"]]
    where = c["layer"] or "every layer"
    if c["name"] == "c":
        where += ", " + (c["compression"] or "every deflate setting")
    measured = f"measured {bounded_text(r)}×" if r else "no ratio"
    return Finding(STUDY, f"({c['name']}) {what} ({where}): {measured}, rule ≥ {factor_text(c['threshold'])}×.",
                   c["verdict"])


def _headline(rows, cells) -> list:
    out = []
    for layer in cells.layers:
        parts = []
        for r in rows:
            if r["layer"] != layer:
                continue
            if r["best"] is None:
                parts.append(f"{r['read_shape']}: no chunked shape finished")
                continue
            vs = f", {r['best_effect']} than contiguous" if r["best_vs_A"] is not None else ""
            parts.append(f"{r['read_shape']}: {r['best']} {cells.chunk_shape_text(r['best'])} "
                         f"({rate_text(r['best_rate'])}{vs})")
        if parts:
            out.append(Finding(STUDY, f"Best chunk shape per read shape ({layer}, no compression, default chunk "
                                      f"cache): {'; '.join(parts)}."))
    return out


def findings(records, summary=None) -> list:
    """The headline (best chunk shape per read shape, per layer), then the verdicts of checks a and
    b (per layer) and c over every deflate setting."""
    cells = cells_of(records)
    s = summary or summarise(cells)
    checks = [c for c in s["checks"] if c["name"] in ("a", "b") or c["compression"] is None]
    return _headline(s["best_worst"], cells) + [_check_finding(c) for c in checks]


def key_figure(records):
    """The study's key plot for the report's first screen: the read-rate heat map (read shape x
    chunk shape, no compression, default chunk cache) of the layer with the fastest cell."""
    cells = cells_of(records)
    cands = [(k, c) for k, c in cells.select(compression=NONE, cache_setting="default") if c.stats(RATE)]
    if not cands:
        return None
    layer = max(cands, key=lambda kc: kc[1].stats(RATE).mean)[0][0]
    chunks = _ordered([k[4] for k, _ in cells.select(layer=layer, compression=NONE)], cells.chunks)
    panel = rate_panel(cells, f"{layer}, default chunk cache", layer, NONE, "default", chunks)
    return Figure(lambda: cf.heatmaps([panel], "Mean read rate [MB/s] by read shape and chunk shape",
                                      "mean read rate [MB/s] (log scale)", vrange=_rate_range(cells)),
                  f"read rate by read shape and chunk shape, {layer}",
                  f"Which chunk shape serves each read shape fastest ({layer}, no compression; brighter is faster, "
                  "(n) repetitions, [fastest]).")
