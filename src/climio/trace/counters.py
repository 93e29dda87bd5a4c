"""The counters-based path of the trace analysis: a Darshan log's per-file, per-rank counters
(climio.trace.darshan_log), or the counters of a climio trace (counters mode, or a full trace past
its event cap: climio.trace.counters_log, where records carry real function names and exact access
classes per stream, and the kept events take DXT's place), summarised into the same facts Analysis.to_dict() gives for a climio
trace, and judged by the same rules (climio.rules, on the Facts of counters_facts), without inventing events.

    analyse_log(log) -> CountersAnalysis;  .facts() -> Facts;  .to_dict() -> the report's facts

Where the log has DXT segments (real events), they are analysed by climio.trace.analysis as a
trace and supply what counters cannot: access classes from real offsets, timelines, the call-path
flow (nesting inferred by time), and same-offset independent writes.

How counters stand in for events (also in DEFINITIONS_DARSHAN, shown with the report):
  - calls: Darshan's operation counts per class (reads, writes, metadata: opens, seeks, stats, syncs).
  - inclusive time: Darshan's cumulative read / write / metadata time of a layer. Exclusive time is
    estimated per file: a layer's time minus the time of the next lower layer present on that file
    (netCDF (PnetCDF) > HDF5 > MPI-IO > POSIX; STDIO stands alone). Traced I/O time sums, per file, the
    top layer's time (and STDIO's).
  - access classes (POSIX only): per record, transitions = operations - streams (one stream per rank),
    consecutive / sequential from Darshan's CONSEC_ / SEQ_ counters, strided when one of Darshan's four
    most common strides (a gap: offset - end of the previous access) covers >= ACCESS_SHARE of the
    transitions; climio's stride (offset - previous offset) is that gap plus the most common size.
    MPI-IO and STDIO have no such counters: their class is "unknown" without DXT.
  - request sizes: Darshan's histogram (the same buckets); "small" (< 64 KiB) counts the buckets up to
    10 KiB, plus those of the 10-100 KiB bucket that Darshan's four most common sizes place below 64 KiB.
  - per rank: exact for files a rank opened alone; a file shared by all ranks (one reduced record)
    is spread evenly over the ranks in per-rank tables, and its fastest / slowest rank are listed in
    facts["darshan"]["shared_files"].
"""

from collections import Counter

import numpy as np

from ..rules.facts import OFFSET_LAYERS, TRACE_LAYER_ORDER
from . import counters_facts
from .analysis import ACCESS_SHARE, MAIN_PER_LAYER, SIZE_BUCKETS, analyse, imbalance
from .counters_facts import pseudo_file
from .darshan_log import FUNCTION_NAMES

CHAIN = ("netcdf", "hdf5", "mpiio", "posix")  # top to bottom; stdio stands alone


# One access stream's class from its counters, as analysis.Analysis.classify does from events:
# t transitions between accesses, c consecutive and q sequential ones, n_dom of them at the
# dominant gap or stride (which makes the stream `dominant`: strided, or repeated for stride 0).
_WORSE = ("single", "consecutive", "sequential", "strided", "repeated", "random")


def _stream_class(t, c, q, n_dom, dominant) -> str:
    if t == 0:
        return "single"
    if c >= ACCESS_SHARE * t:
        return "consecutive"
    if n_dom >= ACCESS_SHARE * t:
        return dominant
    return "sequential" if q >= ACCESS_SHARE * t else "random"


def _tally(out, classes, cls, ops, t, c, q) -> None:
    classes[cls] += ops
    out["transitions"] += t
    out["consecutive"] += c
    out["sequential"] += q


def _conclude(out, classes, strides) -> dict:
    """The file's class: the one holding most accesses (ties to the worse), and its stride."""
    out["streams"] = dict(classes)
    if classes:
        out["classification"] = max(classes, key=lambda k: (classes[k], _WORSE.index(k)))
    if out["classification"] == "strided" and strides:
        out["stride"] = strides.most_common(1)[0][0]
    return out

class CountersAnalysis:
    def __init__(self, log):
        self.log = log
        self.climio = getattr(log, "source", "darshan") == "climio-counters"
        self.recs = [r for r in log.records if r.reads or r.writes or r.meta_ops or r.time > 0]
        job = log.job
        n = job["nprocs"] or (1 + max([r.rank for r in self.recs] + [0]))
        self.nprocs = n
        self.units = list(getattr(log, "units", None) or [f"rank {i}" for i in range(n)])
        self.process_time = job.get("process_time_s") or n * job["run_time_s"]
        self.dxt = analyse(log.dxt) if log.dxt is not None else None
        self.dxt_facts = self.dxt.to_dict() if self.dxt is not None else None
        self.files_of = {}
        for r in self.recs:
            self.files_of.setdefault(r.file, []).append(r)
        self._excl = self._exclusive()
        if self.climio:   # outermost calls are known exactly (depth 0)
            self.io_time = sum(r.time_top for r in self.recs)
        else:
            self.io_time = sum(self._top_time(rs) for rs in self.files_of.values())

    # --- helpers ---

    def share(self, t):
        return t / self.process_time if self.process_time > 0 else 0.0

    def _layer_time(self, rs, layer):
        return sum(r.time for r in rs if r.layer == layer)

    def _top_time(self, rs):
        present = [l for l in CHAIN if any(r.layer == l for r in rs)]
        return (self._layer_time(rs, present[0]) if present else 0.0) + self._layer_time(rs, "stdio")

    def _exclusive(self) -> dict:
        """(file, layer) -> estimated exclusive time."""
        out = {}
        for f, rs in self.files_of.items():
            present = [l for l in CHAIN if any(r.layer == l for r in rs)]
            for i, l in enumerate(present):
                below = self._layer_time(rs, present[i + 1]) if i + 1 < len(present) else 0.0
                out[(f, l)] = max(0.0, self._layer_time(rs, l) - below)
            out[(f, "stdio")] = self._layer_time(rs, "stdio")
        return out

    def _per_rank(self, recs, value) -> np.ndarray:
        """Per-rank sums of value(record); a shared record (rank -1) spread evenly over the ranks."""
        out = np.zeros(self.nprocs)
        for r in recs:
            v = value(r)
            if r.rank < 0:
                out += v / max(self.nprocs, 1)
            elif r.rank < self.nprocs:
                out[r.rank] += v
        return out

    def _ranks_of(self, recs) -> set:
        if any(r.rank < 0 for r in recs):
            return set(range(self.nprocs))
        return {r.rank for r in recs}

    # --- sections ---

    def layers(self) -> list:
        rows = []
        for name in TRACE_LAYER_ORDER:
            rs = [r for r in self.recs if r.layer == name]
            if not rs:
                continue
            incl = sum(r.time for r in rs)
            excl = sum(v for (f, l), v in self._excl.items() if l == name)
            rows.append({"layer": name, "calls": sum(r.reads + r.writes + r.meta_ops for r in rs),
                         "time_incl_s": incl, "time_excl_s": excl, "share_incl": self.share(incl),
                         "share_excl": self.share(excl), "bytes_read": sum(r.bytes_read for r in rs),
                         "bytes_written": sum(r.bytes_written for r in rs), "ranks": len(self._ranks_of(rs)),
                         "modules": sorted({r.module for r in rs})})
        return rows

    def _classes(self):
        """(module, class, layer, kind, calls(r), time(r), bytes(r))."""
        for mod, (rd, wr, md) in FUNCTION_NAMES.items():
            for cls, name, kind in ((0, rd, "read"), (1, wr, "write"), (2, md, "other")):
                if name is None:
                    continue
                calls = (lambda r: r.reads) if cls == 0 else (lambda r: r.writes) if cls == 1 else (lambda r: r.meta_ops)
                time = (lambda r: r.read_time) if cls == 0 else (lambda r: r.write_time) if cls == 1 \
                    else (lambda r: r.meta_time)
                nbytes = (lambda r: r.bytes_read) if cls == 0 else (lambda r: r.bytes_written) if cls == 1 \
                    else (lambda r: 0)
                yield mod, name, kind, calls, time, nbytes

    def _climio_functions(self) -> list:
        groups = {}
        for r in self.recs:
            groups.setdefault((r.layer, r.function), []).append(r)
        rows = []
        for (layer, fname), rs in groups.items():
            c = sum(r.reads + r.writes + r.meta_ops for r in rs)
            t = sum(r.time for r in rs)
            b = sum(r.bytes_read + r.bytes_written for r in rs)
            per = self._per_rank(rs, lambda r: r.time)
            kind = rs[0].kind
            ex = self._class_exclusive(rs, kind, lambda r: r.time)
            row = {"layer": layer, "function": fname, "module": rs[0].module, "calls": c,
                   "failed": sum(r.failed for r in rs), "time_incl_s": t, "time_excl_s": ex,
                   "share_incl": self.share(t), "share_excl": self.share(ex), "bytes": b, "kind": kind,
                   "mean_request": b / c if (b and c and kind != "other") else None,
                   "ranks": len(self._ranks_of(rs)), "max_rank_time_s": float(per.max()) if len(per) else 0.0,
                   "max_call_s": max(r.time_max for r in rs),
                   "first": min((r.start_s for r in rs if r.start_s), default=None),
                   "last": max((r.end_s for r in rs if r.end_s), default=None)}
            if layer == "mpiio" and kind != "other":
                coll = sum(r.coll_reads + r.coll_writes for r in rs)
                row.update(collective=coll, independent=c - coll)
            rows.append(row)
        rows.sort(key=lambda r: (TRACE_LAYER_ORDER.index(r["layer"]) if r["layer"] in TRACE_LAYER_ORDER else 9,
                                 -r["time_incl_s"]))
        return rows

    def functions(self) -> list:
        if self.climio:
            return self._climio_functions()
        rows = []
        for mod, name, kind, calls, time, nbytes in self._classes():
            rs = [r for r in self.recs if r.module == mod and (calls(r) or time(r) > 0)]
            if not rs:
                continue
            layer = rs[0].layer
            c, t, b = sum(calls(r) for r in rs), sum(time(r) for r in rs), sum(nbytes(r) for r in rs)
            per = self._per_rank(rs, time)
            ex = self._class_exclusive(rs, kind, time)
            row = {"layer": layer, "function": name, "module": mod, "calls": c, "failed": 0, "time_incl_s": t,
                   "time_excl_s": ex, "share_incl": self.share(t), "share_excl": self.share(ex), "bytes": b, "kind": kind,
                   "mean_request": b / c if (b and c) else None, "ranks": len(self._ranks_of(rs)),
                   "max_rank_time_s": float(per.max()) if len(per) else 0.0}
            if mod in ("MPI-IO", "PNETCDF_VAR", "H5D") and kind != "other":
                coll = sum((r.coll_reads if kind == "read" else r.coll_writes) for r in rs)
                row.update(collective=coll, independent=c - coll)
            rows.append(row)
        rows.sort(key=lambda r: (TRACE_LAYER_ORDER.index(r["layer"]), -r["time_incl_s"]))
        return rows

    def _class_exclusive(self, rs, kind, time) -> float:
        """Estimated exclusive time of one operation class: per file, its time minus the same class's
        time in the next lower layer recorded on that file (H5Dwrite - MPI-IO writes - POSIX writes)."""
        attr = {"read": "read_time", "write": "write_time", "other": "meta_time"}[kind]
        out = 0.0
        for f in {r.file for r in rs}:
            mine = sum(time(r) for r in rs if r.file == f)
            layer = rs[0].layer
            below = 0.0
            if layer in CHAIN:
                lower = [l for l in CHAIN[CHAIN.index(layer) + 1:] if any(r.layer == l for r in self.files_of[f])]
                if lower:
                    below = sum(getattr(r, attr) for r in self.files_of[f] if r.layer == lower[0])
            out += max(0.0, mine - below)
        return out

    def flow(self, functions) -> dict:
        if self.dxt_facts is not None and not (self.climio and self.log.sample):
            return self.dxt_facts["flow"]
        nodes = [{"id": i, "layer": f["layer"], "function": f["function"], "calls": f["calls"],
                  "time_s": f["time_incl_s"], "max_rank_time_s": f["max_rank_time_s"], "ranks": f["ranks"],
                  "bytes": f["bytes"]} for i, f in enumerate(functions)]
        return {"nodes": nodes, "edges": []}

    def ranks(self) -> dict:
        main = []
        for name in TRACE_LAYER_ORDER:
            cands = []
            if self.climio:
                for fname in sorted({r.function for r in self.recs if r.layer == name}):
                    rs = [r for r in self.recs if r.layer == name and r.function == fname]
                    cands.append((sum(r.time for r in rs), fname, rs, lambda r: r.time))
            for mod, fname, kind, calls, time, nbytes in ([] if self.climio else self._classes()):
                rs = [r for r in self.recs if r.module == mod and r.layer == name and (calls(r) or time(r) > 0)]
                if rs:
                    cands.append((sum(time(r) for r in rs), fname, rs, time))
            cands.sort(key=lambda c: -c[0])
            for _, fname, rs, time in cands[:MAIN_PER_LAYER]:
                per = self._per_rank(rs, time)
                called = self._ranks_of(rs)
                times = [float(per[i]) if i in called else None for i in range(self.nprocs)]
                main.append({"layer": name, "function": fname, "per_rank_s": times, "ranks_calling": len(called),
                             "shared_spread_evenly": any(r.rank < 0 for r in rs), **imbalance(times)})
        io = np.zeros(self.nprocs)
        for f, rs in ({} if self.climio else self.files_of).items():
            present = [l for l in CHAIN if any(r.layer == l for r in rs)]
            top = [r for r in rs if (present and r.layer == present[0]) or r.layer == "stdio"]
            io += self._per_rank(top, lambda r: r.time)
        if self.climio:
            io = self._per_rank(self.recs, lambda r: r.time_top)
        by_layer = {}
        for name in OFFSET_LAYERS + ("netcdf", "hdf5"):
            rs = [r for r in self.recs if r.layer == name and (r.bytes_read or r.bytes_written)]
            if rs:
                by_layer[name] = [int(round(b)) for b in self._per_rank(rs, lambda r: r.bytes_read + r.bytes_written)]
        return {"units": self.units, "io_time_s": io.tolist(), "bytes_by_layer": by_layer,
                "io_imbalance": imbalance(io.tolist()), "main": main}

    def shared_files(self) -> list:
        out = []
        for r in self.recs:
            if r.rank >= 0 or not r.slowest or r.slowest["time_s"] <= 0:
                continue
            mean = r.time / max(self.nprocs, 1)
            out.append({"file": r.name, "module": r.module, "layer": r.layer, "ranks": self.nprocs,
                        "fastest_rank": r.fastest["rank"], "fastest_time_s": r.fastest["time_s"],
                        "fastest_bytes": r.fastest["bytes"], "slowest_rank": r.slowest["rank"],
                        "slowest_time_s": r.slowest["time_s"], "slowest_bytes": r.slowest["bytes"],
                        "mean_time_s": mean, "variance_time": r.variance_time,
                        "max_over_mean": r.slowest["time_s"] / mean if mean > 0 else None})
        out.sort(key=lambda s: -s["slowest_time_s"])
        return out

    def classify(self, rs, kind) -> dict:
        """Darshan-counter classification of the `kind` accesses of records `rs` (one file, one layer)."""
        n = sum(r.reads if kind == "read" else r.writes for r in rs)
        out = {"accesses": n, "unknown_offset": 0, "transitions": 0, "consecutive": 0, "sequential": 0,
               "classification": "unknown", "stride": None, "streams": {}, "source": "darshan counters"}
        if self.climio:
            return self._classify_streams(rs, out)
        if any(r.consec_reads is None for r in rs):
            out["unknown_offset"] = n
            return out
        streams, strides = Counter(), Counter()
        for r in rs:
            ops = r.reads if kind == "read" else r.writes
            if not ops:
                continue
            k = self.nprocs if r.rank < 0 else 1
            t = max(ops - k, 0)
            c = min(r.consec_reads if kind == "read" else r.consec_writes, t)
            q = min(r.seq_reads if kind == "read" else r.seq_writes, t)
            gap, gap_n = max(((g, m) for g, m in r.gaps if g > 0), key=lambda x: x[1], default=(0, 0))
            cls = _stream_class(t, c, q, gap_n, "strided")
            if cls == "strided":
                size = max(r.access, key=lambda a: a[1])[0] if r.access else 0
                strides[gap + size] += ops
            _tally(out, streams, cls, ops, t, c, q)
        return _conclude(out, streams, strides)

    def _classify_streams(self, rs, out) -> dict:
        """climio counters: each stream classified as analysis.Analysis.classify does from events."""
        out["source"] = "climio counters"
        out["unknown_offset"] = sum(r.unknown_offset for r in rs)
        classes, strides = Counter(), Counter()
        for r in rs:
            s = r.stream
            if not s:
                continue
            t, c, q = s["transitions"], s["consecutive"], s["sequential"]
            dom, dom_n = max(((v, k) for v, k in s["strides"]), key=lambda x: (x[1], -abs(x[0])), default=(0, 0))
            cls = _stream_class(t, c, q, dom_n, "repeated" if dom == 0 else "strided")
            if cls == "strided":
                strides[dom] += s["accesses"]
            _tally(out, classes, cls, s["accesses"], t, c, q)
        return _conclude(out, classes, strides)

    def files(self) -> list:
        dxt_access = {}
        if self.dxt_facts is not None and not self.climio:
            for e in self.dxt_facts["files"]:
                for a in e["access"]:
                    dxt_access[(e["file"], a["layer"], a["kind"])] = (a, e)
        out = []
        for f, rs in self.files_of.items():
            entry = {"file": f, "calls": sum(r.reads + r.writes + r.meta_ops for r in rs),
                     "time_s": self._top_time(rs), "ranks": [self.units[i] for i in sorted(self._ranks_of(rs))
                                                             if i < self.nprocs],
                     "modules": sorted({r.module for r in rs}), "access": []}
            lowest = None
            for lname in OFFSET_LAYERS:
                lr = [r for r in rs if r.layer == lname]
                for kind in ("read", "write"):
                    kr = [r for r in lr if (r.reads if kind == "read" else r.writes)]
                    if not kr:
                        continue
                    lowest = lowest or lname
                    count = sum(r.reads if kind == "read" else r.writes for r in kr)
                    nbytes = sum(r.bytes_read if kind == "read" else r.bytes_written for r in kr)
                    hists = [r.hist_read if kind == "read" else r.hist_write for r in kr]
                    hist = np.sum([h for h in hists if h is not None], axis=0).tolist() if any(
                        h is not None for h in hists) else [0] * len(SIZE_BUCKETS)
                    sizes = Counter()
                    for r in kr:
                        for s, c in r.access:
                            sizes[s] += c
                    acc = {"layer": lname, "kind": kind, "count": count, "bytes": nbytes,
                           "time_s": sum(r.read_time if kind == "read" else r.write_time for r in kr),
                           "histogram": dict(zip(SIZE_BUCKETS, map(int, hist))),
                           "histogram_known": any(h is not None for h in hists),
                           "top_sizes": [[int(s), int(c)] for s, c in sizes.most_common(4)],
                           **self.classify(kr, kind)}
                    d = dxt_access.get((f, lname, kind))
                    if d is not None:
                        a, e = d
                        acc.update({k: a[k] for k in ("accesses", "unknown_offset", "transitions", "consecutive",
                                                      "sequential", "classification", "stride", "streams")})
                        acc["source"] = "DXT events"
                        acc["dxt_count"] = a["count"]
                    entry["access"].append(acc)
            base = [r for r in rs if r.layer == lowest] if lowest else []
            entry["bytes_read"] = sum(r.bytes_read for r in base) if base else sum(
                r.bytes_read for r in rs if r.layer == max((r.layer for r in rs), key=CHAIN_RANK))
            entry["bytes_written"] = sum(r.bytes_written for r in base) if base else sum(
                r.bytes_written for r in rs if r.layer == max((r.layer for r in rs), key=CHAIN_RANK))
            entry["timeline_layer"] = lowest
            dx = next((e for (ff, l, _), (_, e) in dxt_access.items() if ff == f and l == lowest), None)
            if dx is not None and dx.get("timeline_layer") == lowest and dx.get("timeline"):
                entry["timeline"] = dx["timeline"]
            out.append(entry)
        out.sort(key=lambda e: -(e["bytes_read"] + e["bytes_written"]))
        return out

    def file_per_process(self) -> dict:
        """As Analysis.file_per_process, from the POSIX and STDIO records (else all) of files one rank used."""
        recs = [r for r in self.recs if not pseudo_file(r.file) and (r.reads or r.writes)]
        data = [r for r in recs if r.layer in ("posix", "stdio")] or recs
        users = {}
        for r in data:
            users.setdefault(r.file, set()).update(self._ranks_of([r]))
        own = {f for f, u in users.items() if len(u) == 1}
        if not users:
            return {"files": 0, "ranks": 0}
        rs = [r for r in data if r.file in own]
        per_t, per_b = {}, {}
        for r in rs:
            per_t[r.rank] = per_t.get(r.rank, 0.0) + r.time
            per_b[r.rank] = per_b.get(r.rank, 0) + r.bytes_read + r.bytes_written
        ranks = sorted(per_t)
        return {"files": len(own), "shared_files": len(users) - len(own), "ranks": len(ranks),
                "time": imbalance([per_t[k] for k in ranks]), "bytes": imbalance([per_b[k] for k in ranks]),
                "per_rank": [{"rank": self.units[k] if 0 <= k < self.nprocs else f"rank {k}", "time_s": per_t[k],
                              "bytes": int(per_b[k])} for k in ranks]}

    def facts(self):
        """The one facts type the rules judge (climio.rules.facts.Facts), from these counters."""
        return counters_facts.facts(self)

    def to_dict(self) -> dict:
        return self.facts().to_dict()


def CHAIN_RANK(layer):
    return -CHAIN.index(layer) if layer in CHAIN else -99


def analyse_log(log) -> CountersAnalysis:
    return CountersAnalysis(log)
