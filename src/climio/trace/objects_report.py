"""The object-store part of `climio trace report`: facts attached to a trace's Facts, text lines, the
HTML section and its figure. Every number says its level: store op (what the job asked of a store) or
wire (the HTTP requests sent).

    attach(facts, trace_dir, src)   Facts.objects from DIR/objects-*.jsonl (and netCDF byte-range opens in
                                    the preload's events); the object-store time joins the traced I/O time
    text_lines(objects) -> [str];   html_section(objects) -> Section | None;   figure(objects) -> PNG | None
"""

import numpy as np

from climio.base.units import format_size
from climio.present.cells import text_columns
from climio.present.sections import Figure, Paragraph, Section, Table
from .objects_facts import analyse_objects, union_ns
from .objects_reader import has_objects, read_objects

LEVEL = {"store": "store op", "wire": "wire"}


def netcdf_urls(src) -> list:
    """netCDF files opened by URL (netCDF-C's byte-range mode) in a trace's events: calls and time."""
    from .reader import LAYER_IDS, Trace
    if not isinstance(src, Trace) or not len(src.events):
        return []
    ev = src.events[src.events["layer"] == LAYER_IDS["netcdf"]]
    out = []
    for fid in np.unique(ev["file_id"]):
        name = src.strings[int(fid)] if int(fid) < len(src.strings) else ""
        if "://" not in name:
            continue
        sel = ev[ev["file_id"] == fid]
        top = sel[sel["depth"] == sel["depth"].min()]
        iv = np.stack([top["t_start_ns"].astype(np.int64), top["t_end_ns"].astype(np.int64)], 1)
        url = name.split("#", 1)[0]
        parts = url.split("/", 4)
        out.append({"url": name, "calls": int(len(sel)), "time_s": union_ns(iv) / 1e9,
                    "s3_url": f"s3://{parts[3]}/{parts[4]}" if len(parts) == 5 else None})
    return out


def attach(facts, trace_dir, src) -> None:
    urls = netcdf_urls(src)
    if not has_objects(trace_dir) and not urls:
        facts.missing["objects"] = ("no object-store records: the job made no zarr/fsspec/S3/HTTP request through "
                                    "Python (or ran with python -S / -I, which skips the sitecustomize)")
        return
    from .objects_reader import ObjectTrace
    ot = read_objects(trace_dir) if has_objects(trace_dir) else ObjectTrace(path=trace_dir, processes=[])
    o = analyse_objects(ot, urls)
    facts.objects = o
    busy = o.get("busy_s") or 0.0
    run = facts.run
    if busy > 0:   # waiting on the object store is I/O time the preload does not see
        run["object_time_s"] = busy
        run["io_time_s"] = (run.get("io_time_s") or 0.0) + busy
        if run.get("process_time_s"):
            run["io_share"] = min(1.0, run["io_time_s"] / run["process_time_s"])
        run.setdefault("notes", []).append(f"traced I/O time includes {busy:.3g} s of object-store operations "
                                           "(time any store operation was in flight, per process)")


def _ms(x) -> str:
    return "—" if x is None else f"{x:.1f}"


def op_rows(o) -> list:
    rows = []
    for level in ("store", "wire"):
        for op, s in ((o.get("levels") or {}).get(level, {}).get("by_op") or {}).items():
            rows.append([LEVEL[level], op, s["count"], format_size(s["bytes"]), f"{s['time_s']:.3f}",
                         _ms(s.get("p50_ms")), _ms(s.get("p90_ms")), _ms(s.get("p99_ms"))])
    return rows


OP_HEAD = ["level", "operation", "requests", "bytes", "time [s]", "p50 [ms]", "p90 [ms]", "p99 [ms]"]
ARRAY_HEAD = ["array", "chunk reads", "distinct chunks", "reads/chunk", "wire req./chunk read", "mean chunk", "chunks"]


def array_rows(o) -> list:
    return [[a["array"], a["chunk_reads"], a["distinct_chunks"], f"{a['reads_per_chunk']:.2f}",
             "—" if a["requests_per_chunk_read"] is None else f"{a['requests_per_chunk_read']:.2f}",
             format_size(a["mean_chunk_bytes"]), str((a.get("layout") or {}).get("chunks") or "—")]
            for a in o.get("arrays") or []]


def summary_lines(o) -> list:
    """The headline numbers, each with its level."""
    out = []
    c = o.get("concurrency")
    if c and c.get("requests"):
        from climio.rules.objects import needed_in_flight
        out.append(f"concurrency ({LEVEL[c['level']]}): {c['mean_in_flight']:.1f} data requests in flight on average "
                   f"(Little's law), peak {c['peak_in_flight']}; at {_ms(c['latency_p50_ms'])} ms median latency and "
                   f"{format_size(c['mean_request_bytes'])} per request Little's law asks "
                   f"{min(needed_in_flight(c), c['requests']):.0f} for 500 MB/s (at most one per request)" + (f"; zarr async.concurrency = {c['client_limit']}" if c.get("client_limit") else ""))
    b = o.get("bytes")
    if b:
        parts = ([f"{format_size(b['returned_to_job'])} returned to the job (store op)"] if b.get("returned_to_job") is not None else []) \
            + ([f"{format_size(b['fetched_on_wire'])} fetched (wire)"] if b.get("fetched_on_wire") is not None else [])
        if parts:
            out.append("bytes: " + ", ".join(parts))
    r = o.get("repeats")
    if r:
        out.append(f"repeated fetches ({LEVEL[r['level']]}): {r['extra_fetches']} of {r['fetches']} GETs fetch a range "
                   f"again ({r['repeated_ranges']} ranges, {format_size(r['extra_bytes'])})")
    m = o.get("metadata")
    if m:
        out.append(f"metadata requests during compute ({LEVEL[m['level']]}): {m['count']} of {m['all_metadata']} "
                   f"({', '.join(f'{k} {v}' for k, v in m['by_kind'].items()) or 'none'})")
    for f in o.get("netcdf_byte_ranges") or []:
        wire = (f"; {f['wire_requests']} wire requests of netCDF-C's libcurl ({f['wire_gets']} ranged GETs, "
                f"{format_size(f['wire_bytes'])}, at most {f['wire_peak_in_flight']} in flight)"
                if f.get("wire_requests") else "; no libcurl request recorded (a libcurl the preload could not reach)"
                if f.get("wire_requests") == 0 else "")
        out.append(f"netCDF byte ranges: {f['calls']} netCDF calls on {f['url']} in {f['time_s']:.2f} s{wire}")
    note = https_note(o)
    if note:
        out.append(note)
    return out


def https_note(o):
    """obstore's requests are seen on plain-http sockets only: over https the report has its store ops alone."""
    levels = o.get("levels") or {}
    store_libs = (levels.get("store") or {}).get("libs") or {}
    if "zarr:ObjectStore" in store_libs and "socket" not in ((levels.get("wire") or {}).get("libs") or {}):
        return ("obstore (zarr.storage.ObjectStore): store operations only; its HTTP requests are recorded on the wire "
                "for http:// endpoints (the preload's socket parser), not through TLS (https://)")
    return None


def text_lines(o) -> list:
    if not o:
        return []
    out = ["", f"Object storage ({o['processes']} process(es), {o['mode']} mode; store op = what the job asked of a "
               "store, wire = HTTP requests sent)"]
    out += ["  " + l for l in summary_lines(o)]
    rows = op_rows(o)
    if rows:
        out += text_columns(OP_HEAD, rows, left=2)
    if o.get("arrays"):
        out += ["  per array (store op; wire requests joined to the chunk read they served):"]
        out += text_columns(ARRAY_HEAD, array_rows(o), left=2)
    return out


def html_section(o):
    if not o:
        return None
    sec = Section("objects", "Object storage: store operations and wire requests")
    sec.add(Paragraph("Store op: what the job asked of a store (zarr Store methods, fsspec file systems and files); "
                      "wire: the HTTP requests sent (botocore events for s3fs, aiohttp for fsspec's HTTP, each with "
                      "its retries; below Python, the preload's libcurl module for netCDF-C's byte-range mode and its "
                      "HTTP/1.1 parser on the sockets of obstore and other clients for http:// endpoints). A wire "
                      "request ends when its response headers arrive."))
    for line in summary_lines(o):
        sec.add(Paragraph(line))
    if o.get("timeline", {}).get("t_s"):
        sec.add(Figure(lambda: figure(o), "requests over time",
                       f"Requests started per second and mean requests in flight per {o['timeline']['bin_s'] * 1e3:.0f} ms "
                       f"bin ({LEVEL[o['timeline']['level']]} level)."))
    sec.add(Table(OP_HEAD, op_rows(o), caption="Latency by operation and level."))
    if o.get("arrays"):
        sec.add(Table(ARRAY_HEAD, array_rows(o), caption="Requests per chunk read, per array."))
    top = (o.get("repeats") or {}).get("top") or []
    if top:
        sec.add(Table(["key", "range", "fetches", "bytes"], [[t["key"], str(t["range"] or "whole"), t["count"],
                                                               format_size(t["bytes"])] for t in top],
                      caption="Ranges fetched more than once."))
    return sec


def figure(o):
    from matplotlib.figure import Figure as MplFigure
    from climio.present.plotting import to_png
    tl = o.get("timeline") or {}
    if not tl.get("t_s"):
        return None
    fig = MplFigure(figsize=(6.6, 3.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(tl["t_s"], tl["requests_per_s"], color="#1f77b4", lw=1.2, label="requests started / s")
    ax.set_xlabel("time since the first request [s]")
    ax.set_ylabel("requests per second", color="#1f77b4")
    ax2 = ax.twinx()
    ax2.plot(tl["t_s"], tl["in_flight"], color="#d62728", lw=1.2, label="in flight")
    ax2.set_ylabel("requests in flight (mean per bin)", color="#d62728")
    lim = (o.get("concurrency") or {}).get("client_limit")
    if lim:
        ax2.axhline(lim, color="#d62728", ls=":", lw=1)
    ax.set_title(f"{LEVEL[tl['level']]} requests over time", fontsize=10, loc="left")
    ax.grid(True, alpha=0.3)
    return to_png(fig, tight=True)
