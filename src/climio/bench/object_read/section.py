"""The object-read study in the report: rates and peer ratios per cell, and the target."""

from climio.present.sections import Figure, Finding, Note, Paragraph, Section, Table
from climio.base.units import format_size
from . import PEER, STUDY
from .summary import summarise


def section(records) -> Section:
    s = summarise(records)
    sec = Section("study-object-read", "Object storage: GET size x concurrency x latency, against raw ranged GETs")
    fig = key_figure(records, s)
    if fig is not None:
        sec.add(fig)
    sec.add(Paragraph(f"Each stack read the same Zarr chunk objects as the raw-GET peer ({PEER}: obstore ranged GETs "
                      "of the same size and concurrency) in the same rounds, alternating the order; the ratio is "
                      "the stack's rate over the peer's of the same round (median over rounds). Latency is added "
                      "per round trip by Toxiproxy in front of SeaweedFS on this machine."))
    if s["not_cold"]:
        sec.add(Note(f"{s['not_cold']} record(s) were not cold (the server read less from storage than they needed, "
                     "or the eviction failed); their rates include the page cache."))
    rows = [[f"{c['latency_ms']:g}", format_size(c["get_bytes"]), c["concurrency"], c["stack"], f"{c['rate_MBps']:.1f}",
             f"{c['req_p50_ms']:.1f}", f"{c['req_p99_ms']:.1f}",
             "" if c["peer_ratio"] is None else f"{c['peer_ratio']:.2f}", f"{c['cold']}/{c['n']}"]
            for c in s["cells"]]
    sec.add(Table(["latency [ms]", "GET size", "concurrency", "stack", "rate [MB/s]", "GET p50 [ms]", "GET p99 [ms]",
                   "ratio to peer", "cold"], rows, "Median over rounds; GET times as each request saw them."))
    return sec


def findings(records) -> list:
    s = summarise(records)
    t = s["target"]
    out = []
    if t["by_latency"]:
        text = "; ".join(f"{lat:g} ms: " + ", ".join(f"x{c} {r:.2f}" for c, r in v.items())
                         for lat, v in t["by_latency"].items())
        out.append(Finding(STUDY, f"{t['stack']} over raw GETs at {format_size(t['get_bytes'])} (ratio by latency, "
                                  f"concurrency; target >= {t['goal']}): {text}", "met" if t["met"] else "not met"))
    for lat, p in s["profile"].items():
        need = ", ".join(f"{format_size(size)} x{v['measured']} (Little {v['littles_law']:.1f})"
                         for size, v in p["sizes"].items())
        out.append(Finding(STUDY, f"{lat:g} ms: a GET costs {1e3 * p['latency_s']:.1f} ms + size / "
                                  f"{p['per_connection_Bps'] / 1e6:.0f} MB/s per connection, {p['aggregate_Bps'] / 1e6:.0f} MB/s "
                                  f"at best; in flight for 80% of each size's best rate: {need}"))
    peers = [c for c in s["cells"] if c["stack"] == PEER]
    for lat in sorted({c["latency_ms"] for c in peers}):
        best = max((c for c in peers if c["latency_ms"] == lat), key=lambda c: c["rate_MBps"])
        out.append(Finding(STUDY, f"raw GETs at {lat:g} ms: peak {best['rate_MBps']:.0f} MB/s with "
                                  f"{format_size(best['get_bytes'])} x {best['concurrency']} in flight"))
    return out


def key_figure(records, s=None):
    """The study's key plot for the report's first screen: rate vs GET size per latency, each stack
    and concurrency a line, the raw-GET peer dashed."""
    from .figures import rate_vs_size
    s = s or summarise(records)
    if not s["cells"]:
        return None
    return Figure(lambda: rate_vs_size(s["cells"]), "object-store read rate vs GET size per latency",
                  f"How large and how many GETs in flight it takes to reach the store's rate at each round-trip "
                  f"latency (solid: the stacks, dashed: {PEER}; colours: concurrency).")
