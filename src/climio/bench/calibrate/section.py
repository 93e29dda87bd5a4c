"""The calibration's section: the profile the model predicts with."""

from climio.present.sections import Figure, Finding, Note, Paragraph, Section, Table
from . import STUDY, figures
from .summary import summarise


def section(records) -> Section:
    s = summarise(records)
    p = s["profile"]
    sec = Section("study-calibrate", "Calibration: the platform profile of the read-time model")
    sec.add(key_figure(records, s))
    sec.add(Paragraph(f"Profile {p['platform_id']} fitted from {s['records']} records. The model (climio.model.predict) "
                      "predicts time = requests x latency + bytes / rate(request size, pattern) + bytes decoded / "
                      "decode rate + per-call CPU, with parallel speed-ups; these are its rates."))
    if s["effectively_warm"]:
        sec.add(Note(f"{s['effectively_warm']} cold record(s) read far less from storage than their reads need "
                     "(effectively warm: the page cache served them); the profile is fitted without them."))
    rows = []
    for pattern, table in sorted(p["rate_Bps"].items()):
        for size, rate in table:
            rows.append([pattern, f"{size / 1024:.0f}", f"{1e6 * p['latency_s'].get(pattern, 0):.1f}", f"{rate / 1e6:.0f}"])
    sec.add(Table(["pattern", "request [KiB]", "latency [us]", "rate [MB/s]"], rows,
                  "Storage: per-request latency and rate against request size (cold: sequential, strided 1 in 4; "
                  "warm: the page cache)."))
    rows = [[name, f"{1e6 * v['call_s']:.1f}", f"{1e9 * v['piece_s']:.0f}", f"{1e6 * v['chunk_s']:.2f}",
             f"{v['copy_Bps'] / 1e6:.0f}", f"{1e3 * v['open_s']:.1f}", f"{v['chunk_cache_bytes'] / 2**20:.1f}"]
            for name, v in sorted(p["stacks"].items())]
    sec.add(Table(["stack", "per call [us]", "per run [ns]", "per chunk [us]", "copy [MB/s]", "open [ms]",
                   "chunk cache [MiB]"], rows, "Library costs per stack (warm page cache)."))
    sec.add(Table(["codec", "decode [MB/s]"], [[k, f"{v / 1e6:.0f}"] for k, v in sorted(p["decode_Bps"].items())],
                  "Decode rate per codec (decoded bytes per second)."))
    par = p.get("parallel", {})
    rows = [[kind, n, f"{sp:.2f}"] for kind in ("io", "cpu") for n, sp in sorted((par.get(kind) or {}).items(),
                                                                                 key=lambda kv: int(kv[0]))]
    if rows:
        sec.add(Table(["work", "tasks", "speed-up"], rows, f"Parallel scaling ({par.get('cores')} cores)."))
    if s["cache_effect"]:
        sec.add(Paragraph(f"Chunk-cache effect: x-t reads of compressed chunks took {s['cache_effect']:.1f}x longer with "
                          "the chunk cache off than with one that holds the chunks of a read."))
    return sec


def findings(records) -> list:
    s = summarise(records)
    p = s["profile"]
    seq = p["rate_Bps"].get("sequential") or []
    out = []
    if seq:
        out.append(Finding(STUDY, f"storage peaks at {max(r for _, r in seq) / 1e6:.0f} MB/s sequential; strided "
                                  f"requests cost {1e6 * p['latency_s'].get('strided', 0):.0f} us each"))
    if p["decode_Bps"]:
        out.append(Finding(STUDY, "decode: " + ", ".join(f"{k} {v / 1e6:.0f} MB/s" for k, v in sorted(p["decode_Bps"].items()))))
    return out


def key_figure(records, s=None):
    """The calibrated storage rate against request size (the study's key plot)."""
    p = (s or summarise(records))["profile"]
    if not any(p["rate_Bps"].values()):
        return None
    return Figure(lambda: figures.storage_rates(p), "calibrated storage rate vs request size",
                  "How fast this storage delivers each request size, per access pattern: the rates the read-time "
                  "model predicts with.")
