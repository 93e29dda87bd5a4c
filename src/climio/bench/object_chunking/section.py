"""The object-chunking study in the report: the cells and the findings with verdicts."""

from statistics import median

from climio.present.sections import Figure, Finding, Note, Paragraph, Section, Table
from climio.base.units import format_size
from . import STUDY
from .summary import PEAK_SHARE, RECOVERS, summarise


def section(records) -> Section:
    s = summarise(records)
    sec = Section("study-object-chunking", "Object storage: chunk shapes, shards and references")
    fig = key_figure(records, s)
    if fig is not None:
        sec.add(fig)
    sec.add(Paragraph("Zarr v3 stores (zarr-python + obstore) with the thesis's chunk shapes, with and without shards "
                      "holding the whole time axis, and the same field as netCDF-4 read through a kerchunk reference "
                      "(zarr-kerchunk); a random sample of hyperslabs per read shape, cold, at each injected latency."))
    if s["not_cold"]:
        sec.add(Note(f"{s['not_cold']} record(s) were not cold; their rates include the page cache."))
    rows = [[f"{c['latency_ms']:g}", c["stack"], f"{c['label']} {c['chunks']}", c["shards"], c["compression"], c["read"],
             f"{c['rate_MBps']:.1f}", f"{c['gets']:.0f}", f"{c['cold']}/{c['n']}"] for c in s["cells"]]
    sec.add(Table(["latency [ms]", "stack", "chunks", "shards", "codec", "read", "rate [MB/s]", "GETs", "cold"], rows,
                  "Median over repetitions."))
    return sec


def smallest_verdict(rows) -> str:
    """Claim: a longer round trip needs larger chunks to reach the share of the peak. Decided per read
    shape by the smallest such chunk at the highest latency against the lowest."""
    if all(r["shapes"] < 3 for r in rows):
        return "not decidable"
    lats = sorted({r["latency_ms"] for r in rows})
    if len(lats) < 2:
        return "not measured"
    at = {(r["latency_ms"], r["read"]): r["smallest_chunk_bytes"] for r in rows}
    moves = {(at[(lats[-1], read)] > b) - (at[(lats[-1], read)] < b)
             for (lat, read), b in at.items() if lat == lats[0] and (lats[-1], read) in at}
    if not moves:
        return "not measured"
    if moves == {0}:
        return "not reproduced"
    return "reproduced" if -1 not in moves else "refuted" if 1 not in moves else "inconclusive"


def references_verdict(rows, stack) -> str:
    """Claim: netCDF-4 through references reads at least PEAK_SHARE of native Zarr's rate (`stack`)."""
    return "reproduced" if median(r[stack] for r in rows if stack in r) >= PEAK_SHARE else "not reproduced"


def findings(records) -> list:
    s = summarise(records)
    out = []
    if s["smallest"]:
        text = "; ".join(f"{lat:g} ms: " + ", ".join(
            f"{r['read']} {r['smallest_label']} ({format_size(r['smallest_chunk_bytes'])}, {r['smallest_MBps']:.3g} "
            f"of peak {r['peak_MBps']:.3g} MB/s with {r['peak_label']})" for r in s["smallest"] if r["latency_ms"] == lat)
            for lat in sorted({r["latency_ms"] for r in s["smallest"]}))
        out.append(Finding(STUDY, f"smallest chunk reaching {PEAK_SHARE:.0%} of the peak rate: {text} (claim: a longer "
                                  "round trip needs larger chunks)", smallest_verdict(s["smallest"])))
    for row in s["sharding"]:
        xt, xy = row.get("xt"), row.get("xy")
        verdict = "reproduced" if xt >= RECOVERS else ("inconclusive" if xt >= 1 / RECOVERS else "refuted")
        gets = row.get("xt_gets")
        out.append(Finding(STUDY, f"{row['latency_ms']:g} ms, {row['compression']}: shards over time make the xt read of "
                                  f"xy chunks {xt:.2f}x as fast (GETs {gets[0]:.0f} -> {gets[1]:.0f})"
                                  + (f", the xy read {xy:.2f}x" if xy is not None else "")
                                  + " (claim: sharding recovers xt)", verdict))
    refs = s["references"]
    for lat in sorted({r["latency_ms"] for r in refs}):
        rs = [r for r in refs if r["latency_ms"] == lat]
        against = [k for k in ("zarr-fsspec", "zarr-obstore") if any(k in r for r in rs)]
        parts = [f"{median(r[k] for r in rs if k in r):.2f}x native Zarr through {k}" for k in against]
        # judged against the references' own client (s3fs) when it was measured
        out.append(Finding(STUDY, f"{lat:g} ms: netCDF-4 through kerchunk references reads at " + ", ".join(parts)
                                  + f" (median over {len(rs)} cells, same chunks and codec; the references' client is "
                                  f"s3fs; claim: at least {PEAK_SHARE:.0%} of native Zarr through {against[0]})",
                           references_verdict(rs, against[0])))
    return out


def key_figure(records, s=None):
    """The study's key plot for the report's first screen: zarr-obstore's rate per chunk shape (with
    and without shards) per read shape, one panel per latency, for the first codec."""
    from .figures import rate_by_chunks
    s = s or summarise(records)
    cs = [c for c in s["cells"] if c["stack"] == "zarr-obstore"]
    if not cs:
        return None
    comp = sorted({c["compression"] for c in cs})[0]
    return Figure(lambda: rate_by_chunks(s["cells"], "zarr-obstore", comp), "Zarr read rate per chunk shape, read shape and latency",
                  f"Which chunk shape (and shards over time) each read shape needs on object storage as the round trip "
                  f"grows (zarr-python + obstore, {comp}; taller is faster).")
