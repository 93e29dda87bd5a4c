"""Read the counters a climio trace holds (csrc/trace/counters.c, FORMAT.md "Counters") into what
climio.trace.counters analyses: the same shape as a Darshan log (climio.trace.darshan_log), with
real function names, exact access classes per stream, and the events that were kept (a sample in
counters mode, or those before the event cap of a full trace) as `dxt`.

    has_counters(dir) -> bool
    read_counters_trace(dir) -> CountersTrace
    aggregate_events(trace, proc) -> COUNTERS_DTYPE table of one process's events (ns, global ids)
    read_counters_file(path) -> (header dict, COUNTERS_DTYPE table with the process's own string ids)

A process in counters mode (CLIMIO_TRACE_MODE=counters) counted every call; one in full mode that
reached CLIMIO_TRACE_MAX_EVENTS counted the calls after the cap: its events are aggregated here in
the same way (per file, function, layer and rank; streams per file, layer and kind) and added to
its counters, so the tables cover the whole run, and the report says when the cap was reached.
"""

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from climio.runs.records import iso_utc
from .analysis import SIZE_EDGES, op_kind, is_collective, without_wrappers
from .darshan_log import CounterRecord
from .reader import (_EVENTS_RE, EVENTS_DTYPE, LAYER_NAMES, Proc, Trace, TraceError, _read_done, _read_strings,
                     merge_strings, read_trace)

COUNTERS_DTYPE = np.dtype([
    ("file_id", "<u4"), ("func_id", "<u4"), ("rank", "<i4"), ("layer", "u1"), ("kind", "u1"), ("pad0", "u2"),
    ("count", "<u8"), ("failed", "<u8"), ("bytes", "<u8"), ("moved", "<u8"), ("hist", "<u8", (10,)),
    ("time", "<u8"), ("time_top", "<u8"), ("time_max", "<u8"), ("first", "<u8"), ("last", "<u8"),
    ("transitions", "<u8"), ("consec", "<u8"), ("seq", "<u8"), ("unknown", "<u8"),
    ("last_off", "<i8"), ("last_end", "<i8"), ("stride", "<i8", (4,)), ("stride_n", "<u8", (4,)),
    ("sz", "<i8", (4,)), ("sz_n", "<u8", (4,)), ("stream", "<u4"), ("pad2", "<u4")])
assert COUNTERS_DTYPE.itemsize == 352
HEAD_DTYPE = np.dtype([("magic", "S8"), ("version", "<u4"), ("rec_size", "<u4"), ("n_records", "<u8"),
                       ("t0_ns", "<u8"), ("counted", "<u8"), ("capped_at_ns", "<u8"), ("written_ns", "<u8"),
                       ("sample", "<u4"), ("mode", "<u4")])
assert HEAD_DTYPE.itemsize == 64

_COUNTERS_RE = re.compile(r"^(?P<host>.+)-(?P<pid>\d+)(\.exec(?P<k>\d+))?\.counters$")
OFFSET_LAYER_IDS = (1, 2, 3)   # posix, stdio, mpiio: the layers whose offsets are bytes of a file
MODULE_OF = {"posix": "POSIX", "stdio": "STDIO", "mpiio": "MPI-IO", "netcdf": "NETCDF", "hdf5": "H5D"}
ACCESS_NOTE = ("climio counters: per process, file, function and layer (calls, bytes, Darshan's size buckets, "
               "the four most common request sizes, cumulative / outermost / maximum time, first and last "
               "timestamps) and per stream (process, file, layer, kind: transitions, consecutive, sequential, the "
               "most common strides), as the events would give them; no call nesting (exclusive time is estimated "
               "per file from the layer below) and no netCDF request geometry.")


def has_counters(path) -> bool:
    p = Path(path)
    return p.is_dir() and any(_COUNTERS_RE.match(f.name) for f in p.iterdir())


def read_counters_file(f: Path) -> tuple:
    raw = Path(f).read_bytes()
    if len(raw) < HEAD_DTYPE.itemsize:
        raise TraceError(f"{f} is too short for a counters file")
    head = np.frombuffer(raw[:HEAD_DTYPE.itemsize], HEAD_DTYPE)[0]
    if head["magic"] != b"CLIMIOCT" or head["rec_size"] != COUNTERS_DTYPE.itemsize:
        raise TraceError(f"{f} is not a climio counters file (version 1)")
    n = int(head["n_records"])
    body = raw[HEAD_DTYPE.itemsize:HEAD_DTYPE.itemsize + n * COUNTERS_DTYPE.itemsize]
    if len(body) != n * COUNTERS_DTYPE.itemsize:
        raise TraceError(f"{f} is truncated: {len(body)} bytes for {n} records")
    h = {k: (head[k].item() if k != "magic" else "CLIMIOCT") for k in HEAD_DTYPE.names}
    return h, np.frombuffer(body, COUNTERS_DTYPE).copy()


def _bucket(sizes) -> np.ndarray:
    return np.searchsorted(np.asarray(SIZE_EDGES), np.asarray(sizes), side="left")


def aggregate_events(trace: Trace, proc: int) -> np.ndarray:
    """The counters the tracer would have kept for process `proc`'s events (global string ids, ns)."""
    ev = trace.events[trace.events["proc"] == proc]
    if not len(ev):
        return np.zeros(0, COUNTERS_DTYPE)
    kind_of = np.array([op_kind(s) for s in trace.strings], dtype=np.int64)
    kind = kind_of[ev["func_id"]]
    size = np.maximum(ev["size"], 0)
    failed = (ev["flags"] & 2) > 0
    rows = []
    key = np.stack([ev["file_id"].astype(np.int64), ev["func_id"].astype(np.int64), ev["layer"].astype(np.int64),
                    ev["rank"].astype(np.int64)], axis=1)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    cuts = np.flatnonzero(np.diff(inv[order])) + 1
    for g in np.split(order, cuts):
        e = ev[g]
        r = np.zeros(1, COUNTERS_DTYPE)[0]
        r["file_id"], r["func_id"], r["layer"], r["rank"] = e["file_id"][0], e["func_id"][0], e["layer"][0], e["rank"][0]
        k = int(kind[g[0]])
        r["kind"] = k
        d = (e["t_end_ns"] - e["t_start_ns"]).astype(np.uint64)
        r["count"], r["failed"] = len(g), int(failed[g].sum())
        r["time"], r["time_max"] = int(d.sum()), int(d.max())
        r["time_top"] = int(d[e["depth"] == 0].sum())
        r["first"], r["last"] = int(e["t_start_ns"].min()), int(e["t_end_ns"].max())
        if k:
            s = size[g]
            r["bytes"] = int(s.sum())
            r["moved"] = int(np.where(~failed[g] & (e["ret"] > 0), e["ret"], 0).sum())
            r["hist"] = np.bincount(_bucket(s), minlength=10)[:10]
            top = Counter(s.tolist()).most_common(4)
            for i, (v, c) in enumerate(top):
                r["sz"][i], r["sz_n"][i] = v, c
            if e["layer"][0] in OFFSET_LAYER_IDS and e["file_id"][0]:
                r["unknown"] = int((e["offset"] < 0).sum())
        rows.append(r)
    # streams: data calls with a known offset in the offset layers, per (file, layer, kind, rank), in
    # the order the calls ended (the order the tracer counts them)
    m = (kind > 0) & (ev["offset"] >= 0) & np.isin(ev["layer"], OFFSET_LAYER_IDS) & (ev["file_id"] > 0)
    idx = np.flatnonzero(m)
    if len(idx):
        skey = np.stack([ev["file_id"][idx].astype(np.int64), ev["layer"][idx].astype(np.int64), kind[idx],
                         ev["rank"][idx].astype(np.int64)], axis=1)
        _, sinv = np.unique(skey, axis=0, return_inverse=True)
        sinv = sinv.ravel()
        so = np.argsort(sinv, kind="stable")
        for g in np.split(idx[so], np.flatnonzero(np.diff(sinv[so])) + 1):
            e = ev[g]
            r = np.zeros(1, COUNTERS_DTYPE)[0]
            r["file_id"], r["layer"], r["rank"], r["kind"] = e["file_id"][0], e["layer"][0], e["rank"][0], kind[g[0]]
            off, s = e["offset"].astype(np.int64), size[g].astype(np.int64)
            r["count"], r["bytes"] = len(g), int(s.sum())
            r["first"], r["last"] = int(e["t_start_ns"].min()), int(e["t_end_ns"].max())
            prev_end = off[:-1] + s[:-1]
            r["transitions"] = len(g) - 1
            r["consec"] = int((off[1:] == prev_end).sum())
            r["seq"] = int((off[1:] >= prev_end).sum())
            r["last_off"], r["last_end"] = off[-1], off[-1] + s[-1]
            for i, (v, c) in enumerate(Counter(np.diff(off).tolist()).most_common(4)):
                r["stride"][i], r["stride_n"][i] = v, c
            rows.append(r)
    return np.array(rows, dtype=COUNTERS_DTYPE)


@dataclass
class ClimioCounterRecord(CounterRecord):
    """A CounterRecord of one (file, function, layer, unit) of a climio counters trace."""
    function: str = None
    kind: str = "other"
    failed: int = 0
    time_top: float = 0.0
    time_max: float = 0.0
    unknown_offset: int = 0
    stream: dict = None        # the (file, layer, kind, unit) stream's counts, on one record of it


@dataclass
class CountersTrace:
    """What climio.trace.counters analyses (the attributes of a DarshanLog, and a few more)."""
    path: Path
    job: dict
    modules: list
    records: list
    dxt: Trace = None
    limits: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    units: list = field(default_factory=list)
    procs: list = field(default_factory=list)   # reader.Proc per process
    source: str = "climio-counters"
    sample: int = 0
    capped: list = field(default_factory=list)   # [{"proc", "capped_at_ns", "counted"}]
    meta: dict = None


def read_counters_trace(path) -> CountersTrace:
    path = Path(path).expanduser()
    files = sorted(path.iterdir())
    stems = {}
    for f in files:
        m = _COUNTERS_RE.match(f.name) or _EVENTS_RE.match(f.name)
        if m:
            stems.setdefault((m.group("host"), int(m.group("pid"))), []).append(f)
    if not stems:
        raise TraceError(f"{path} holds no trace")
    trace = None
    if any(f.stat().st_size > 0 for fs in stems.values() for f in fs if f.name.endswith(".events")):
        trace = read_trace(path)
    meta = _read_meta(path)
    notes, procs, tables, capped = [], [], [], []
    sample = 0
    strings, index = [""], {"": 0}
    for (host, pid), fs in sorted(stems.items()):
        proc, proc_tables, s = _read_proc(path, host, pid, fs, trace, strings, index, capped)
        sample = max(sample, s)
        procs.append(proc)
        tables.append(proc_tables)
    procs, tables = _without_wrappers(path, procs, tables, notes)
    # units: ranks when there are any, else processes
    keys, units, unit_of = {}, [], []
    hosts = {p.host for p in procs}
    for p in procs:
        k = ("rank", p.rank) if p.rank >= 0 else ("pid", p.host, p.pid)
        if k not in keys:
            keys[k] = len(units)
            units.append(p.label if p.rank >= 0 or len(hosts) == 1 else f"{p.label}@{p.host}")
        unit_of.append(keys[k])
    order = sorted(range(len(units)), key=lambda i: (0, int(units[i].split()[1])) if units[i].startswith("rank")
                   else (1, units[i]))
    renum = {old: new for new, old in enumerate(order)}
    units = [units[i] for i in order]
    records = _records(tables, [renum[u] for u in unit_of], strings)
    for p in procs:
        if p.partial:
            notes.append(f"partial: {p.host}-{p.pid} ({p.label}): {'; '.join(p.notes)}")
    t0 = [p.t0_ns for p in procs if p.t0_ns]
    starts = [r.start_s for r in records if r.start_s]
    ends = [r.end_s for r in records if r.end_s]
    start = (meta or {}).get("start_ns") or (min(t0) if t0 else (min(starts) * 1e9 if starts else 0))
    end = (meta or {}).get("end_ns") or (max(ends) * 1e9 if ends else start)
    run_time = max((end - start) / 1e9, 0.0)
    # process time: per process, its start (t0) to the run's end (or its last call)
    ptime = 0.0
    for p, tabs in zip(procs, tables):
        last = max([int(t["last"].max()) for t in tabs if len(t)] + [0])
        p_end = (meta or {}).get("end_ns") or last
        p_start = p.t0_ns or min([int(t["first"][t["count"] > 0].min()) for t in tabs if (t["count"] > 0).any()] or [p_end])
        ptime += max(p_end - p_start, 0) / 1e9
    job = {"nprocs": len(units), "run_time_s": run_time, "start_epoch_s": start / 1e9, "end_epoch_s": end / 1e9,
           "jobid": None, "uid": None, "exe": " ".join((meta or {}).get("command") or []), "log_ver": None,
           "lib_ver": None, "hints": None, "process_time_s": ptime,
           "exit_status": (meta or {}).get("exit_status")}
    limits = [ACCESS_NOTE]
    calls = sum(r.reads + r.writes + r.meta_ops for r in records)
    if any((p.done or {}).get("mode") == "counters" for p in procs):
        notes.append(f"counters mode: {calls} calls of {len(procs)} process(es) counted, not kept as events"
                     + (f"; every {sample}th call kept as an event ({trace.events.size if trace else 0} events)"
                        if sample else ""))
    if sample:
        limits.append(f"climio counters: every {sample}th call was also kept as an event (in the trace "
                      "directory); the tables come from the counters, not from that sample.")
    for c in capped:
        start_ns = next((p.t0_ns for p in procs if f"{p.host}-{p.pid}" == c["proc"]), None)
        after = f" ({(c['capped_at_ns'] - start_ns) / 1e9:.3f} s after the process started)" if start_ns else ""
        notes.append(f"event cap reached in {c['proc']} at {iso_utc((c['capped_at_ns'] or 0) / 1e9, 'milliseconds')}{after}: its first "
                     f"{c['kept']} calls are events, the {c['counted']} calls from then on were counted in counters "
                     "only. The tables cover the whole run; call paths, netCDF request details and shared-write "
                     "checks cover the events before the cap.")
    return CountersTrace(path=path, job=job, modules=sorted({r.module for r in records}), records=records,
                         dxt=trace, limits=limits, notes=notes, units=units, procs=procs, sample=sample,
                         capped=capped, meta=meta)


def _read_meta(path):
    """The trace directory's meta.json (the command, its start, end and exit status), or None."""
    try:
        return json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_proc(path, host, pid, fs, trace, strings, index, capped) -> tuple:
    """(Proc, its counters tables, the event sampling it ran with) of one traced process: its counters
    files (string ids mapped to the run's `strings`/`index`, which grow), its events aggregated the
    same way when the trace has them (full mode), its rank; an event cap reached goes to `capped`."""
    sample = 0
    stem = f"{host}-{pid}"
    proc = Proc(host=host, pid=pid, rank=-1, n_events=0)
    local = _read_strings(path / f"{stem}.strings", proc)
    remap = merge_strings(local, strings, index)
    n_ev = 0
    pi = None
    if trace is not None:
        pi = next((i for i, p in enumerate(trace.procs) if p.host == host and p.pid == pid), None)
        if pi is not None:
            n_ev = int((trace.events["proc"] == pi).sum())
    _read_done(path / f"{stem}.done.json", proc, n_ev)
    done = proc.done or {}
    if done.get("dropped") and done.get("counted", 0) >= done["dropped"]:
        # past the event cap every call was counted: the counters are whole, only the events are not
        proc.notes = [n for n in proc.notes if not n.startswith(("the tracer marked it partial", "dropped "))]
        proc.partial = bool(proc.notes)
    cfiles = sorted((f for f in fs if f.name.endswith(".counters")),
                    key=lambda f: int((_COUNTERS_RE.match(f.name).group("k") or 0)))
    mode = done.get("mode")
    proc_tables = []
    for cf in cfiles:
        try:
            head, tab = read_counters_file(cf)
        except (OSError, TraceError) as exc:
            proc.partial = True
            proc.notes.append(f"counters file {cf.name} unreadable ({exc})")
            continue
        mode = mode or ("counters" if head["mode"] == 1 else "full")
        sample = max(sample, head["sample"])
        for col in ("file_id", "func_id"):
            ids = tab[col].astype(np.int64)
            bad = ids >= len(remap)
            if bad.any() or ((ids > 0) & (remap[np.minimum(ids, len(remap) - 1)] == 0)).any():
                proc.partial = True
                proc.notes.append(f"string ids missing from {stem}.strings")
                ids = np.where(bad, 0, ids)
            tab[col] = remap[ids]
        if head["mode"] == 0 and head["capped_at_ns"]:
            capped.append({"proc": stem, "capped_at_ns": head["capped_at_ns"], "counted": head["counted"],
                           "kept": n_ev})
        if not proc.done:
            proc.notes.append(f"counts up to {iso_utc((head['written_ns'] or 0) / 1e9, 'milliseconds')} (the last write of {cf.name})")
        proc_tables.append(tab)
    if pi is not None and mode != "counters":
        ev_tab = aggregate_events(trace, pi)   # global ids of the trace: map to ours
        gmap = np.zeros(len(trace.strings), dtype=np.uint32)
        for gid in np.unique(np.r_[ev_tab["file_id"], ev_tab["func_id"]]).tolist():
            if gid:
                text = trace.strings[gid]
                if text not in index:
                    index[text] = len(strings)
                    strings.append(text)
                gmap[gid] = index[text]
        for col in ("file_id", "func_id"):
            ev_tab[col] = gmap[ev_tab[col].astype(np.int64)]
        proc_tables.append(ev_tab)
    if isinstance(done.get("rank"), int) and done["rank"] >= 0:
        proc.rank = done["rank"]
    else:
        rk = [int(t["rank"].max()) for t in proc_tables if len(t)]
        proc.rank = max(rk) if rk else -1
    proc.n_events = n_ev
    return proc, proc_tables, sample


def _without_wrappers(path, procs, tables, notes) -> tuple:
    """(procs, tables) without the launcher and shell wrappers, by the full trace's rule
    (analysis.without_wrappers; its note goes to `notes`). The rule decides on a trace's events:
    each process stands in as one event, so a process with counters only is judged as well."""
    stand_in = Trace(path=path, events=np.zeros(len(procs), EVENTS_DTYPE), strings=[""], aux={}, procs=procs)
    stand_in.events["proc"] = np.arange(len(procs))
    kept = without_wrappers(stand_in)
    if kept is stand_in:
        return procs, tables
    notes.extend(kept.notes)
    keep = [any(p is q for q in kept.procs) for p in procs]
    return [p for p, k in zip(procs, keep) if k], [t for t, k in zip(tables, keep) if k]


def _records(tables, unit_of, strings) -> list:
    """ClimioCounterRecords: the tables summed per (unit, file, function, layer); streams per (unit, file, layer, kind)."""
    acc, streams = {}, {}
    for unit, tabs in zip(unit_of, tables):
        for t in tabs:
            for r in t:
                if r["count"] == 0:
                    continue
                if r["func_id"] == 0:
                    k = (unit, int(r["file_id"]), int(r["layer"]), int(r["kind"]))
                    s = streams.setdefault(k, {"accesses": 0, "transitions": 0, "consecutive": 0, "sequential": 0,
                                               "strides": Counter(), "first": None, "last": 0})
                    s["accesses"] += int(r["count"])
                    s["transitions"] += int(r["transitions"])
                    s["consecutive"] += int(r["consec"])
                    s["sequential"] += int(r["seq"])
                    for v, c in zip(r["stride"].tolist(), r["stride_n"].tolist()):
                        if c:
                            s["strides"][v] += c
                    continue
                k = (unit, int(r["file_id"]), int(r["func_id"]), int(r["layer"]))
                a = acc.get(k)
                if a is None:
                    a = acc[k] = {"kind": int(r["kind"]), "count": 0, "failed": 0, "bytes": 0, "moved": 0,
                                  "hist": np.zeros(10, np.int64), "time": 0, "time_top": 0, "time_max": 0,
                                  "first": None, "last": 0, "sizes": Counter(), "unknown": 0}
                for f in ("count", "failed", "bytes", "moved", "time", "time_top", "unknown"):
                    a[f] += int(r[f])
                a["hist"] += r["hist"].astype(np.int64)
                a["time_max"] = max(a["time_max"], int(r["time_max"]))
                a["first"] = int(r["first"]) if a["first"] is None else min(a["first"], int(r["first"]))
                a["last"] = max(a["last"], int(r["last"]))
                for v, c in zip(r["sz"].tolist(), r["sz_n"].tolist()):
                    if c:
                        a["sizes"][v] += c
    out, given = [], set()
    kinds = ("other", "read", "write")
    for (unit, fid, func, lid), a in sorted(acc.items()):
        layer = LAYER_NAMES.get(lid, str(lid))
        fname = strings[func]
        module = MODULE_OF.get(layer, layer.upper())
        if layer == "hdf5" and not fname.startswith("H5D"):
            module = "H5F"
        kind = kinds[a["kind"]] if a["kind"] < 3 else "other"
        t, fl = a["time"] / 1e9, strings[fid] if fid else "<no file>"
        rec = ClimioCounterRecord(
            module=module, layer=layer, file=fl, name=fl, rank=unit,
            reads=a["count"] if kind == "read" else 0, writes=a["count"] if kind == "write" else 0,
            meta_ops=a["count"] if kind == "other" else 0,
            bytes_read=a["bytes"] if kind == "read" else 0, bytes_written=a["bytes"] if kind == "write" else 0,
            read_time=t if kind == "read" else 0.0, write_time=t if kind == "write" else 0.0,
            meta_time=t if kind == "other" else 0.0,
            hist_read=a["hist"].tolist() if kind == "read" else None,
            hist_write=a["hist"].tolist() if kind == "write" else None,
            access=[[int(v), int(c)] for v, c in a["sizes"].most_common(4)],
            coll_reads=a["count"] if kind == "read" and is_collective(fname) else 0,
            coll_writes=a["count"] if kind == "write" and is_collective(fname) else 0,
            start_s=a["first"] / 1e9 if a["first"] else None, end_s=a["last"] / 1e9 if a["last"] else None,
            function=fname, kind=kind, failed=a["failed"], time_top=a["time_top"] / 1e9,
            time_max=a["time_max"] / 1e9, unknown_offset=a["unknown"])
        sk = (unit, fid, lid, a["kind"])
        if sk in streams and sk not in given:
            s = dict(streams[sk])
            s["strides"] = [[int(v), int(c)] for v, c in s["strides"].most_common(4)]
            rec.stream = s
            given.add(sk)
        out.append(rec)
    return out
