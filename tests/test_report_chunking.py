"""The chunking section of the report: cell annotations, Table 4.1, the compression table, the
chunk-cache ratios, the reproduction checks and the rendered page, on records with known values."""

import base64
import html as _html
import json
import math
import re

import pytest

from climio.present import render
from climio.bench.chunking import section as ch
from climio.bench.chunking.summary import Bounded
from climio.runs.records import make_record
from climio.report import render_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SHAPE = [16, 4, 32, 64]
CHUNKS = {"A": "contiguous", "B": [4, 2, 8, 16], "E": [1, 1, 32, 64], "F": [16, 1, 1, 64],
          "default": [8, 2, 16, 32]}
COUNTS = {"xy": [1, 1, 32, 64], "xt": [16, 1, 1, 64], "xyt": [16, 1, 32, 64]}
CACHE = {"state": "cold", "method": "posix_fadvise(DONTNEED)", "resident_fraction": 0.0, "verified_by": "mincore"}


def crec(chunk="A", read="xy", rate=100.0, rep=0, status="ok", layer="netcdf4-python", comp="none",
         cache="default", bound=None, bdpb=1.0, cratio=1.0, slices_read=None, unavailable=None):
    """One chunking record; `rate` in MB/s sets wall_s. dnf: `bound` is rate_bound_MBps."""
    count = COUNTS.get(read, [1, 1, 1, 64])
    total = math.prod(SHAPE) // math.prod(count)
    slice_bytes = math.prod(count) * 8
    if unavailable:
        params = {"layer": layer, "chunk_label": chunk, "chunking": CHUNKS[chunk], "read_shape": read,
                  "compression": comp, "cache_setting": cache, "unavailable": True}
        return make_record("chunking", params, {"error": unavailable}, {"state": "cold", "method": "not measured"},
                           0, "error", "pid0")
    params = {"layer": layer, "chunk_label": chunk, "chunking": CHUNKS[chunk], "read_shape": read,
              "read_count": count, "compression": comp, "cache_setting": cache,
              "chunk_cache": {"size": 1 << 20 if cache == "default" else 8 << 20, "nelems": 521, "preemption": 0.75},
              "var_shape": SHAPE, "dtype": "f8", "file": f"/d/ta_{chunk}_{comp}.nc", "variable": "ta",
              "slices_total": total, "sample": "all", "library": "netCDF4-python 1.7", "source": "generated"}
    uncompressed = math.prod(SHAPE) * 8
    geo = {"chunks_touched_per_slice": 2.0, "bytes_decoded_per_byte": bdpb, "compression_ratio": cratio,
           "stored_bytes": uncompressed / cratio, "file_bytes": uncompressed / cratio + 20000}
    if status == "dnf":
        n = slices_read or 0
        metrics = {"bytes": n * slice_bytes, "ops": n, "slices_read": n, "wall_s": 5.0, "user_s": 4.0, "sys_s": 0.5,
                   "sampled": True, "planned_bytes": total * slice_bytes, "budget_s": 5.0,
                   "rate_bound_MBps": bound if bound is not None else n * slice_bytes / 5.0 / 1e6, **geo}
    else:
        nbytes = total * slice_bytes
        wall = nbytes / (rate * 1e6)
        metrics = {"bytes": nbytes, "ops": total, "slices_read": total, "wall_s": wall, "user_s": wall * 0.3,
                   "sys_s": wall * 0.1, "sampled": False, **geo}
    return make_record("chunking", params, metrics, CACHE, rep, status, "pid0")


def section_html(recs) -> str:
    """The chunking section of `recs` rendered as the report renders it."""
    return render.page("chunking", [], [ch.chunking_section(recs)])


def cell(chunk, read, rates, **kw):
    """Repetitions of one cell; a rate of None is a dnf repetition (bound kw `bound`)."""
    return [crec(chunk, read, r if r is not None else 1.0, rep=i, status="ok" if r is not None else "dnf", **kw)
            for i, r in enumerate(rates)]


def thesis_like():
    """Fig 4.3-like values for A, B, E, F, default x xy, xt, xyt; default cache; netcdf4-python."""
    table = {"xy": {"A": 400, "B": 60, "E": 320, "F": None, "default": 150},
             "xt": {"A": 2, "B": 3, "E": 2.5, "F": 96, "default": 4},
             "xyt": {"A": 100, "B": 30, "E": 200, "F": 50, "default": 80}}
    recs = []
    for read, row in table.items():
        for chunk, rate in row.items():
            if rate is None:
                recs += cell(chunk, read, [None], bound=7.0)
            else:
                recs += cell(chunk, read, [rate * 0.9, rate, rate * 1.1], bdpb=1.0 if chunk in ("A", "E") else 4.0)
    return recs


# --- arithmetic of bounds ---------------------------------------------------------------------------

def test_ratio_and_geomean_carry_bounds():
    assert ch.ratio(Bounded(100), Bounded(4)) == Bounded(25.0, "=")
    assert ch.ratio(Bounded(100), Bounded(4, "<")) == Bounded(25.0, ">")   # dividing by a dnf: lower bound
    assert ch.ratio(Bounded(4, "<"), Bounded(100)) == Bounded(0.04, "<")
    assert ch.ratio(Bounded(4, "<"), Bounded(7, "<")) is None               # both dnf: unknown
    assert ch.ratio(None, Bounded(1)) is None
    g = ch.geomean([Bounded(2), Bounded(8)])
    assert g.kind == "=" and g.value == pytest.approx(4.0)
    assert ch.geomean([Bounded(2), Bounded(8, ">")]).kind == ">"
    assert ch.geomean([Bounded(2, "<"), Bounded(8, ">")]) is None
    assert ch.geomean([]) is None


def test_effect_text():
    assert ch.effect_text(Bounded(48.0)) == "48× faster"
    assert ch.effect_text(Bounded(0.8)) == "20% slower"
    assert ch.effect_text(Bounded(7 / 400, "<")) == "> 57× slower"
    assert ch.effect_text(Bounded(2.0)) == "2× faster"
    assert ch.effect_text(Bounded(1.25)) == "25% faster"
    assert ch.effect_text(Bounded(0.25)) == "4× slower"
    assert ch.effect_text(Bounded(1.0)) == "same (±2%)"
    assert ch.effect_text(Bounded(10.0, ">")) == "> 10× faster"
    assert ch.effect_text(None) == "—"


# --- cells and their annotation ---------------------------------------------------------------------

def test_cell_annotation_mean_n_max():
    cells = ch.cells_of(cell("E", "xy", [100.0, 200.0, 360.0]))
    (c,) = cells.cells.values()
    assert ch.cell_annotation(c) == "220\n(3)\n[360]"
    hc = ch.heat_cell(c)
    assert hc.kind == "ok" and hc.value == pytest.approx(220.0)


def test_cell_annotation_partial_and_dnf():
    # Two repetitions finished, the third ran out of time: mean over the two, (2).
    recs = cell("B", "xt", [3.0, 5.0]) + [crec("B", "xt", rep=2, status="dnf", bound=2.5)]
    (c,) = ch.cells_of(recs).cells.values()
    assert ch.cell_annotation(c) == "4.00\n(2)\n[5.00]"
    (d,) = ch.cells_of(cell("F", "xy", [None], bound=7.0)).cells.values()
    assert ch.cell_annotation(d) == "< 7"
    assert ch.heat_cell(d).kind == "dnf" and ch.cell_rate(d) == Bounded(7.0, "<")
    # Not one slice within the budget: the bound is one slice's bytes / budget, never "< 0".
    (z,) = ch.cells_of([crec("F", "xy", status="dnf", slices_read=0)]).cells.values()
    one_slice = 32 * 64 * 8 / 5.0 / 1e6
    assert ch.cell_rate(z) == Bounded(pytest.approx(one_slice), "<")
    assert ch.cell_annotation(z) == f"< {one_slice:.3g}"
    text = section_html([crec("F", "xy", status="dnf", slices_read=0)])
    assert f"&lt; {one_slice:.3g} MB/s" in text and "&lt; 0 MB/s" not in text


def test_cells_are_the_five_parameters_and_ordered():
    recs = (cell("default", "xyt", [10.0]) + cell("F", "xt", [5.0]) + cell("A", "xy", [50.0])
            + cell("E", "xy", [40.0], cache="fit") + cell("E", "xy", [30.0]) + cell("B", "xy", [1.0], layer="h5py"))
    cells = ch.cells_of(recs)
    assert cells.reads == ["xy", "xt", "xyt"] and cells.chunks == ["A", "B", "E", "F", "default"]
    assert cells.caches == ["default", "fit"] and cells.layers == ["netcdf4-python", "h5py"]
    assert len(cells.cells) == 6
    assert cells.chunk_shape_text("F") == "[16,1,1,64]" and cells.chunk_shape_text("A") == "contiguous"


# --- Table 4.1 ---------------------------------------------------------------------------------------

def test_best_and_worst_chunk_shape():
    rows = {r["read_shape"]: r for r in ch.best_worst(thesis_like())}
    xy, xt, xyt = rows["xy"], rows["xt"], rows["xyt"]
    assert xy["best"] == "E" and xy["best_vs_A"].value == pytest.approx(0.8) and xy["best_effect"] == "20% slower"
    assert xy["worst"] == "F" and xy["worst_vs_A"] == Bounded(pytest.approx(7 / 400), "<")
    assert xy["worst_effect"] == "> 57× slower"
    assert xt["best"] == "F" and xt["best_vs_A"].value == pytest.approx(48.0) and xt["best_effect"] == "48× faster"
    assert xt["worst"] == "E" and xt["worst_effect"] == "25% faster"   # every chunked shape beats A here
    assert xyt["best"] == "E" and xyt["best_effect"] == "2× faster"
    assert xyt["worst"] == "B" and xyt["worst_effect"] == "3.33× slower"


def test_worst_notes_a_dnf_that_may_be_slower():
    recs = cell("A", "xy", [400.0]) + cell("E", "xy", [5.0]) + cell("F", "xy", [None], bound=7.0)
    (row,) = ch.best_worst(recs)
    assert row["worst"] == "E" and "F did not finish" in row["note"]


# --- reproduction checks -----------------------------------------------------------------------------

def checks_by(recs):
    out = {}
    for c in ch.reproduction_checks(recs):
        out.setdefault(c["name"], []).append(c)
    return out


def test_checks_reproduced_with_a_dnf_bound():
    recs = thesis_like()
    for read, chunk in (("xy", "default"), ("xt", "default"), ("xyt", "default"), ("xyt", "E")):
        base = {"xy": 150, "xt": 4, "xyt": 80 if chunk == "default" else 200}[read]
        bdpb = 4.0 if chunk == "default" else 1.0
        recs += cell(chunk, read, [base / 5, base / 5], comp="deflate4+shuffle", bdpb=bdpb, cratio=4.0)
    c = checks_by(recs)
    (a,) = c["a"]
    assert a["verdict"] == "reproduced" and a["ratio"] == pytest.approx(48.0) and a["bound_kind"] == "="
    assert a["layer"] == "netcdf4-python" and a["threshold"] == 5.0
    (b,) = c["b"]
    # xy from F did not finish (< 7 MB/s): A / F = 400 / 7 is a lower bound, above 5.
    assert b["verdict"] == "reproduced" and b["bound_kind"] == ">" and b["ratio"] == pytest.approx(400 / 7)
    pooled, per = c["c"][0], c["c"][1:]
    assert pooled["compression"] is None and [p["compression"] for p in per] == ["deflate4+shuffle"]
    # Only the default-chunk cells read partial chunks (bytes decoded per byte 4): xy, xt, xyt.
    assert pooled["n_cells"] == 3 and pooled["ratio"] == pytest.approx(5.0) and pooled["verdict"] == "reproduced"


def test_checks_not_reproduced():
    recs = (cell("A", "xt", [10.0]) + cell("F", "xt", [30.0]) + cell("A", "xy", [100.0]) + cell("F", "xy", [50.0])
            + cell("default", "xy", [100.0], bdpb=2.0) + cell("default", "xy", [80.0], comp="deflate1", bdpb=2.0)
            + cell("default", "xy", [50.0], comp="deflate9", bdpb=2.0))
    c = checks_by(recs)
    assert c["a"][0]["ratio"] == pytest.approx(3.0) and c["a"][0]["verdict"] == "not reproduced"
    assert c["b"][0]["ratio"] == pytest.approx(2.0) and c["b"][0]["verdict"] == "not reproduced"
    pooled, d1, d9 = c["c"]
    assert pooled["ratio"] == pytest.approx(math.sqrt(1.25 * 2.0)) and pooled["verdict"] == "not reproduced"
    assert (d1["compression"], d1["ratio"], d1["verdict"]) == ("deflate1", pytest.approx(1.25), "not reproduced")
    assert (d9["compression"], d9["ratio"], d9["verdict"]) == ("deflate9", pytest.approx(2.0), "reproduced")


def test_checks_with_bounds_that_cannot_decide():
    # A lower bound below the threshold says nothing: inconclusive, not "not reproduced".
    recs = cell("A", "xy", [20.0]) + cell("F", "xy", [None], bound=7.0)
    # Both xt cells did not finish: no ratio at all.
    recs += cell("A", "xt", [None], bound=1.0) + cell("F", "xt", [None], bound=2.0)
    c = checks_by(recs)
    assert c["b"][0]["bound_kind"] == ">" and c["b"][0]["ratio"] == pytest.approx(20 / 7)
    assert c["b"][0]["verdict"] == "inconclusive"
    assert c["a"][0]["ratio"] is None and c["a"][0]["verdict"] == "inconclusive"
    # A compressed partial-chunk cell that did not finish: rate(none)/rate(deflate) > 10 / 1.
    recs2 = cell("default", "xt", [10.0], bdpb=3.0) + cell("default", "xt", [None], comp="deflate4", bound=1.0, bdpb=3.0)
    pooled = checks_by(recs2)["c"][0]
    assert pooled["bound_kind"] == ">" and pooled["ratio"] == pytest.approx(10.0) and pooled["verdict"] == "reproduced"


def test_checks_not_measured():
    c = checks_by(cell("E", "xy", [100.0]) + cell("A", "xy", [90.0]))
    assert c["a"][0]["verdict"] == "not measured" and c["a"][0]["ratio"] is None
    assert "F" in c["a"][0]["detail"] and "A" in c["a"][0]["detail"]
    assert c["b"][0]["verdict"] == "not measured"
    assert [x["verdict"] for x in c["c"]] == ["not measured"]
    # Compressed cells that read whole chunks only (bytes decoded per byte = 1) do not count.
    recs = cell("E", "xy", [100.0], bdpb=1.0) + cell("E", "xy", [10.0], comp="deflate4", bdpb=1.0)
    assert [x["verdict"] for x in checks_by(recs)["c"]] == ["not measured", "not measured"]
    assert {x["verdict"] for x in ch.reproduction_checks([])} == {"not measured"}


# --- compression, cache, unavailable -----------------------------------------------------------------

def test_compression_table():
    recs = (cell("E", "xy", [300.0], cratio=1.0) + cell("E", "xt", [2.0])
            + cell("E", "xy", [150.0], comp="deflate4", cratio=4.0) + cell("E", "xt", [0.5], comp="deflate4", cratio=4.0)
            + cell("E", "xy", [200.0], comp="deflate4", cratio=4.0, cache="fit")
            + cell("E", "xy", [None], comp="deflate9", bound=7.0, cratio=5.0))
    rows = {(r["compression"], r["chunk_label"]): r for r in ch.compression_table(recs)}
    d4 = rows[("deflate4", "E")]
    assert d4["ratio"] == pytest.approx(4.0)
    assert d4["stored_bytes"] == pytest.approx(math.prod(SHAPE) * 8 / 4.0)
    g, n = d4["rate_change"]["xy"]
    assert n == 1 and g.value == pytest.approx(0.5)   # the fit cell has no uncompressed partner
    g_all, n_all = d4["rate_change_all"]
    assert n_all == 2 and g_all.value == pytest.approx(math.sqrt(0.5 * 0.25))
    d9 = rows[("deflate9", "E")]
    assert d9["rate_change"]["xy"][0] == Bounded(pytest.approx(7 / 300), "<")
    assert rows[("none", "E")]["ratio"] == pytest.approx(1.0)


def test_cache_ratios():
    recs = (cell("B", "xt", [2.0]) + cell("B", "xt", [8.0], cache="fit") + cell("A", "xt", [1.0])
            + cell("E", "xt", [None], bound=1.0) + cell("E", "xt", [3.0], cache="fit"))
    rows = {r["chunk_label"]: r for r in ch.cache_ratios(recs)}
    assert set(rows) == {"B", "E"}   # A is contiguous: no chunk cache, one setting only
    assert rows["B"]["ratio"] == Bounded(4.0)
    assert rows["E"]["ratio"] == Bounded(3.0, ">")


def test_unavailable_codecs_are_listed_not_drawn():
    recs = cell("E", "xy", [100.0]) + [
        crec("E", read, layer="c-netcdf", comp="zstd3", cache=cache, unavailable="zstd is not available in netCDF-C 4.9.0")
        for read in ("xy", "xt") for cache in ("default", "fit")]
    (u,) = ch.unavailable_cells(recs)
    assert (u["compression"], u["layer"], u["n_cells"]) == ("zstd3", "c-netcdf", 4)
    assert u["reason"] == "zstd is not available in netCDF-C 4.9.0" and u["read_shapes"] == ["xy", "xt"]
    cells = ch.cells_of(recs)
    assert len(cells.cells) == 1 and len(cells.unavailable) == 4
    text = _html.unescape(section_html(recs))
    assert "unavailable: zstd3 through c-netcdf — zstd is not available in netCDF-C 4.9.0" in text
    row = next(r for r in ch.compression_table(recs) if r["compression"] == "zstd3")
    assert row["unavailable"] == ["zstd is not available in netCDF-C 4.9.0"]


# --- the page ---------------------------------------------------------------------------------------

def rs_rec(layer, buffer, rate, rep):
    nbytes = 64 << 20
    wall = nbytes / (rate * 1e6)
    params = {"layer": layer, "pattern": "sequential", "buffer_bytes": buffer, "file": "/d/f.bin",
              "file_bytes": nbytes, "planned_ops": nbytes // buffer, "planned_bytes": nbytes}
    return make_record("read-stack", params, {"bytes": nbytes, "ops": nbytes // buffer, "wall_s": wall,
                                              "user_s": wall * 0.2, "sys_s": wall * 0.3}, CACHE, rep, "ok", "pid0")


def full_records():
    recs = thesis_like()
    for read, chunk, rate in (("xy", "B", 240.0), ("xt", "B", 12.0), ("xyt", "B", 60.0),
                              ("xy", "default", 160.0), ("xt", "default", 20.0), ("xyt", "default", 90.0),
                              ("xy", "E", 330.0), ("xt", "E", 2.6), ("xyt", "E", 210.0),
                              ("xy", "F", None), ("xt", "F", 99.0), ("xyt", "F", 52.0)):
        recs += (cell(chunk, read, [None], bound=7.0, cache="fit") if rate is None
                 else cell(chunk, read, [rate, rate * 1.05], cache="fit"))
    for comp, f in (("deflate1", 0.3), ("deflate4+shuffle", 0.25), ("bitgroom3+deflate4+shuffle", 0.2)):
        for read, base in (("xy", 320), ("xt", 2.5), ("xyt", 200)):
            recs += cell("E", read, [base * f * 2, base * f * 2.2], comp=comp, cratio=4.0 if "bit" not in comp else 7.0)
        for read, base in (("xy", 150), ("xt", None), ("xyt", 80)):
            recs += (cell("default", read, [None], comp=comp, bound=1.5, bdpb=4.0) if base is None
                     else cell("default", read, [base * f, base * f * 1.1], comp=comp, bdpb=4.0, cratio=4.2))
    recs += [crec("E", "xy", layer="netcdf4-python", comp="zstd3", unavailable="zstd is not available in netCDF-C 4.9.0")]
    return recs


def png_uris(text):
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)]


def test_render_report_with_chunking_and_read_stack(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    recs = full_records() + [rs_rec(l, b, r, i) for l, r0 in (("c-posix", 500.0), ("numpy", 450.0))
                             for b in (4096, 65536, 1 << 20, 16 << 20) for i, r in enumerate((r0, r0 * 0.95))]
    with open(run / "records.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    text = render_report(run).read_text()
    assert 'id="study-chunking"' in text and 'id="study-read-stack"' in text
    assert "No dedicated report section" not in text
    pngs = png_uris(text)
    # the headline figure (read-stack's sequential curves); read-stack: rate + wall/CPU; chunking: heat map,
    # wall/CPU, cache ratio, compression (default cache only).
    assert len(pngs) == 1 + 2 + 4 and all(p.startswith(PNG_MAGIC) and len(p) > 10_000 for p in pngs)
    assert "could not be drawn" not in text
    plain = re.sub(r"\s+", " ", _html.unescape(re.sub(r"<[^>]+>", " ", text)))
    assert "48× faster" in plain and "> 57× slower" in plain
    assert "unavailable: zstd3" in plain
    assert "Reproduction of the thesis's findings" in plain
    # a, b, c over every deflate setting and c for each of the three: all reproduced (c with a dnf bound).
    assert text.count('<span class="prof prof-flat">reproduced</span>') == 6
    assert "not reproduced" not in plain
    d1 = next(c for c in ch.reproduction_checks(recs) if c["compression"] == "deflate1")
    # none / deflate1 over the default-chunk cells: xy and xyt 1 / (0.3 x 1.05), xt 4 / (< 1.5): a lower bound.
    assert d1["bound_kind"] == ">" and d1["ratio"] == pytest.approx(((1 / 0.315) ** 2 * (4 / 1.5)) ** (1 / 3))
    assert f"> {ch.factor_text(d1['ratio'])}" in plain
    # The configuration table: every cell, with geometry columns.
    assert "bytes decoded per byte delivered" in plain and "E [1,1,32,64]" in plain
    assert len(re.findall(r'<tr class="dnf">', text)) == 1 + 1 + 3  # xy-F default, xy-F fit, 3 compressed xt


def test_opposite_effect_is_refuted_and_findings_carry_verdicts():
    # xt chunks slower than contiguous for xt reads: the opposite of (a) holds.
    recs = cell("A", "xt", [10.0]) + cell("F", "xt", [5.0]) + cell("A", "xy", [100.0]) + cell("F", "xy", [10.0])
    c = checks_by(recs)
    assert c["a"][0]["ratio"] == pytest.approx(0.5) and c["a"][0]["verdict"] == "refuted"
    assert c["b"][0]["verdict"] == "reproduced"
    from climio.bench.chunking import study
    from climio.present.sections import VERDICTS
    found = study.findings(recs)
    assert found[0].verdict is None and "Best chunk shape per read shape" in found[0].text
    assert "xt: F [16,1,1,64]" in found[0].text
    assert [f.verdict for f in found[1:]] == ["refuted", "reproduced", "not measured"]
    assert all(f.verdict in VERDICTS for f in found[1:])
    s = study.summarise(recs)
    assert [r["best"] for r in s["best_worst"]] == ["F", "F"] and len(s["checks"]) == 3


def test_checks_not_decidable_at_quick_size_or_from_warm_cells():
    """Issue 17: a --quick grid, or cold cells served by the page cache, decide nothing."""
    from climio.bench.chunking.summary import reproduction_checks
    recs = thesis_like()
    decided = {c["name"]: c["verdict"] for c in reproduction_checks(recs)}
    assert decided["a"] == "reproduced"
    for r in recs:
        r["params"]["preset"] = "quick"
    c = {x["name"]: x for x in reproduction_checks(recs)}
    assert c["a"]["verdict"] == "not decidable" and "--quick" in c["a"]["detail"]
    recs = thesis_like()
    for r in recs:
        r["cache"] = dict(r["cache"], effective="effectively-warm", storage_share=0.02)
    c = {x["name"]: x for x in reproduction_checks(recs)}
    assert c["a"]["verdict"] == "not decidable" and "page cache" in c["a"]["detail"] and "2%" in c["a"]["detail"]


def test_chunk_size_column_and_sizes_in_kib_mib():
    """The chunk table's size column is filled from the records' chunk shapes, as the run writes
    them ("[1,1,32,64]" text) or as lists; stored and file sizes are KiB/MiB, not raw numbers."""
    from climio.bench.chunking.summary import Cells
    recs = cell("A", "xy", [10.0]) + cell("E", "xy", [20.0]) + cell("B", "xy", [5.0])
    for r in recs:
        if r["params"]["chunk_label"] == "E":
            r["params"]["chunking"] = "[1,1,32,64]"      # the form the run records
    table = ch._chunk_table(Cells(recs))
    sizes = {row[0]: row[2] for row in table.rows}
    assert sizes == {"A": "— (contiguous)", "E": "16KiB", "B": "8KiB"}   # 1*1*32*64*8 B, 4*2*8*16*8 B
    html = section_html(recs + cell("E", "xy", [15.0], comp="deflate4", cratio=4.0))
    assert "16KiB" in html and "stored size" in html and "[MiB]" not in html
    assert "256KiB" in html   # the stored bytes of deflate4 (1 MiB / 4) in the compression table
