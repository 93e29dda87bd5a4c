"""What a trace says, layer by layer, without judging it (climio.rules judges its Facts).

    analyse(trace) -> Analysis;  Analysis.to_dict() -> the JSON-able summary the report renders

Sections (DEFINITIONS states each term as the report shows it):
  layers, functions   calls, inclusive and exclusive time, share of process time, bytes requested
  flow                call-path edges parent function -> child function (netCDF -> HDF5 -> MPI-IO -> POSIX),
                      with count, bytes, total time, max time of one rank and number of ranks (MOM5 Figs 10-12)
  ranks               per-rank time of the main functions of each layer, min / mean / max, imbalance (Fig. 13)
  files               per file and layer: access classification, Darshan's request-size histogram,
                      top request sizes, timeline
  netcdf              per netCDF read: bytes decoded vs bytes requested from the chunk shape
                      (climio.dataset.layout), chunks touched, whether the chunk cache holds them
  facts()             the Facts the rules judge (event_facts: small requests, library reads, shared
                      writes, truncation, file per process, the program's stack)

Nesting: the tracer writes a call's depth (0 = outermost traced call) and its times; the parent of
an event at depth d > 0 is the event at depth d - 1 of the same process and thread that started
last at or before it and ended at or after it.

"Rank" below means an MPI rank; a process without one (a serial program, a launcher) is its own
unit, labelled by pid. Times are in seconds, bytes are bytes requested (the `size` field).
"""

import math
from collections import Counter
from functools import cached_property

import numpy as np

from climio.dataset import layout
from climio.base.errors import DataError, InputError
from ..rules.facts import KIND_NAMES, LIBRARY_LAYERS, OFFSET_LAYERS, READ, TRACE_LAYER_ORDER, WRITE  # noqa: F401
from .reader import FLAG_FAILED, LAYER_IDS, LAYER_NAMES


from .events import (  # noqa: F401  (the vocabulary of events; re-exported for the modules that take it from here)
    SIZE_EDGES, SIZE_BUCKETS, ACCESS_SHARE, MAIN_PER_LAYER, TOP_SIZES, TIMELINE_MAX, NETCDF_READS_SHOWN, DEFINITIONS, op_kind, is_collective, size_bucket, _s, imbalance, parents, ancestor,
)


class Analysis:
    """Derived per-event arrays (parent, exclusive time, kind, unit) and the report's sections."""

    def __init__(self, trace):
        self.trace = trace
        ev = trace.events
        self.n = len(ev)
        self.t0 = ev["t_start_ns"].astype(np.int64)
        self.t1 = ev["t_end_ns"].astype(np.int64)
        self.dur = self.t1 - self.t0
        self.layer = ev["layer"].astype(np.int64)
        self.func = ev["func_id"].astype(np.int64)
        self.file = ev["file_id"].astype(np.int64)
        self.var = ev["var_id"].astype(np.int64)
        self.offset = ev["offset"]
        self.size = ev["size"]
        self.proc = ev["proc"].astype(np.int64)
        names = trace.strings
        self.kind_of = np.array([op_kind(s) for s in names], dtype=np.int64)
        self.coll_of = np.array([is_collective(s) for s in names], dtype=bool)
        self.kind = self.kind_of[self.func]
        self.failed = (ev["flags"] & FLAG_FAILED) > 0
        self.nbytes = np.where((self.kind > 0) & (self.size > 0), self.size, 0)
        # Units: one per MPI rank, else one per process.
        keys, labels = {}, []
        unit_of_proc = []
        for p in trace.procs:
            key = ("rank", p.rank) if p.rank >= 0 else ("pid", p.host, p.pid)
            if key not in keys:
                keys[key] = len(labels)
                hosts = {q.host for q in trace.procs}
                labels.append(p.label if p.rank >= 0 or len(hosts) == 1 else f"{p.label}@{p.host}")
            unit_of_proc.append(keys[key])
        order = sorted(range(len(labels)), key=lambda i: (0, int(labels[i].split()[1])) if labels[i].startswith("rank")
                       else (1, labels[i]))
        renum = np.empty(len(labels), dtype=np.int64)
        renum[order] = np.arange(len(labels))
        self.units = [labels[i] for i in order]
        self.unit = renum[np.asarray(unit_of_proc, dtype=np.int64)][self.proc] if self.n else self.proc
        self.parent = parents(self.proc, ev["tid"].astype(np.int64), ev["depth"].astype(np.int64), self.t0, self.t1)
        has = self.parent >= 0
        self.excl = self.dur - np.bincount(self.parent[has], weights=self.dur[has], minlength=self.n).astype(np.int64)
        self.excl = np.maximum(self.excl, 0)
        # Outermost call of its own layer: a layer's time sums these, so nesting within a layer
        # (nc_get_var calling nc_get_vara) is not counted twice.
        self.outer_in_layer = np.ones(self.n, dtype=bool)
        for lay in np.unique(self.layer):
            m = self.layer == lay
            self.outer_in_layer[m] = ancestor(self.parent, m)[m] < 0
        self._walls()

    # --- helpers ---

    @cached_property
    def mpi_parent(self) -> np.ndarray:
        """Each event's nearest enclosing MPI-IO call (-1: none), for the rules that ask whether
        POSIX I/O was made on an MPI-IO call's behalf."""
        return ancestor(self.parent, self.layer == LAYER_IDS["mpiio"])

    def name(self, sid) -> str:
        return self.trace.strings[int(sid)]

    def layer_name(self, lid) -> str:
        return LAYER_NAMES.get(int(lid), str(lid))

    def _walls(self):
        """Per process wall time (see DEFINITIONS["process time"])."""
        meta = self.trace.meta or {}
        meta_end = meta.get("end_ns") if isinstance(meta.get("end_ns"), int) else None
        meta_start = meta.get("start_ns") if isinstance(meta.get("start_ns"), int) else None
        walls = []
        for i, p in enumerate(self.trace.procs):
            m = self.proc == i
            if not m.any():
                walls.append(0)
                continue
            first, last = int(self.t0[m].min()), int(self.t1[m].max())
            start = min(p.t0_ns or first, first)
            end_done = (p.done or {}).get("t_end_ns")
            end = max(last, end_done if isinstance(end_done, int) else (meta_end or last))
            walls.append(end - start)
        if any(not -2**63 <= w < 2**63 for w in walls):   # a damaged log's clock fields: not a duration
            raise DataError(f"{getattr(self.trace, 'path', 'the trace')}: a process's timestamps span more than "
                            "2^63 ns (damaged start or end time)")
        self.proc_wall = np.asarray(walls, dtype=np.int64)
        self.process_time = int(self.proc_wall.sum())
        self.io_time = int(self.dur[self.parent < 0].sum())
        if meta_start and meta_end:
            self.wall = meta_end - meta_start
        else:
            self.wall = int(self.t1.max() - self.t0.min()) if self.n else 0

    def share(self, ns) -> float:
        return float(ns) / self.process_time if self.process_time > 0 else 0.0

    def per_unit(self, mask, weights=None) -> np.ndarray:
        w = self.dur[mask] if weights is None else weights[mask]
        return np.bincount(self.unit[mask], weights=w, minlength=len(self.units))

    # --- (1) layers and functions ---

    def layers(self) -> list:
        rows = []
        for name in TRACE_LAYER_ORDER:
            lid = LAYER_IDS[name]
            m = self.layer == lid
            if not m.any():
                continue
            incl = int(self.dur[m & self.outer_in_layer].sum())
            excl = int(self.excl[m].sum())
            rows.append({"layer": name, "calls": int(m.sum()), "time_incl_s": _s(incl), "time_excl_s": _s(excl),
                         "share_incl": self.share(incl), "share_excl": self.share(excl),
                         "bytes_read": int(self.nbytes[m & (self.kind == READ)].sum()),
                         "bytes_written": int(self.nbytes[m & (self.kind == WRITE)].sum()),
                         "ranks": int(len(np.unique(self.unit[m])))})
        return rows

    def functions(self) -> list:
        rows = []
        width = len(self.trace.strings) + 1
        for key in np.unique(self.layer * width + self.func):
            lid, fid = divmod(int(key), width)
            m = (self.layer == lid) & (self.func == fid)
            incl, excl = int(self.dur[m].sum()), int(self.excl[m].sum())
            per = self.per_unit(m)
            data = self.nbytes[m]
            rows.append({"layer": self.layer_name(lid), "function": self.name(fid), "calls": int(m.sum()),
                         "failed": int(self.failed[m].sum()), "time_incl_s": _s(incl), "time_excl_s": _s(excl),
                         "share_incl": self.share(incl), "share_excl": self.share(excl),
                         "bytes": int(data.sum()), "kind": KIND_NAMES[self.kind_of[fid]],
                         "mean_request": float(data[data > 0].mean()) if (data > 0).any() else None,
                         "ranks": int(len(np.unique(self.unit[m]))),
                         "max_rank_time_s": _s(per.max())})
        rows.sort(key=lambda r: (TRACE_LAYER_ORDER.index(r["layer"]) if r["layer"] in TRACE_LAYER_ORDER else 9,
                                 -r["time_incl_s"]))
        return rows

    # --- (2) call-path flow ---

    def flow(self) -> dict:
        """Nodes (layer, function) and edges parent -> child. An edge's time is the inclusive time
        of the child calls made from that parent; max_rank_time_s the largest sum over one rank."""
        node_key = self.layer * (len(self.trace.strings) + 1) + self.func
        uniq, node = np.unique(node_key, return_inverse=True)
        nodes = []
        for i, k in enumerate(uniq):
            m = node == i
            per = self.per_unit(m)
            lid, fid = divmod(int(k), len(self.trace.strings) + 1)
            nodes.append({"id": i, "layer": self.layer_name(lid), "function": self.name(fid), "calls": int(m.sum()),
                          "time_s": _s(self.dur[m].sum()), "max_rank_time_s": _s(per.max()),
                          "ranks": int(len(np.unique(self.unit[m]))), "bytes": int(self.nbytes[m].sum())})
        ch = np.flatnonzero(self.parent >= 0)
        edges = []
        if len(ch):
            ekey = node[self.parent[ch]] * len(uniq) + node[ch]
            eu, einv = np.unique(ekey, return_inverse=True)
            nu = len(self.units)
            per = np.zeros((len(eu), nu))
            np.add.at(per, (einv, self.unit[ch]), self.dur[ch])
            called = np.zeros((len(eu), nu), dtype=bool)
            called[einv, self.unit[ch]] = True
            for j, k in enumerate(eu):
                a, b = divmod(int(k), len(uniq))
                m = einv == j
                edges.append({"parent": a, "child": b, "parent_function": nodes[a]["function"],
                              "child_function": nodes[b]["function"], "parent_layer": nodes[a]["layer"],
                              "child_layer": nodes[b]["layer"], "count": int(m.sum()),
                              "time_s": _s(self.dur[ch][m].sum()), "bytes": int(self.nbytes[ch][m].sum()),
                              "max_rank_time_s": _s(per[j].max()), "ranks": int(called[j].sum())})
            edges.sort(key=lambda e: -e["max_rank_time_s"])
        return {"nodes": nodes, "edges": edges}

    # --- (3) per rank ---

    def ranks(self) -> dict:
        main = []
        for name in TRACE_LAYER_ORDER:
            m_l = self.layer == LAYER_IDS[name]
            if not m_l.any():
                continue
            fids = np.unique(self.func[m_l])
            tot = sorted(((int(self.dur[m_l & (self.func == f)].sum()), int(f)) for f in fids), reverse=True)
            for _, fid in tot[:MAIN_PER_LAYER]:
                m = m_l & (self.func == fid)
                per = self.per_unit(m)
                called = np.bincount(self.unit[m], minlength=len(self.units)) > 0
                times = [_s(t) if c else None for t, c in zip(per, called)]
                main.append({"layer": name, "function": self.name(fid), "per_rank_s": times,
                             "ranks_calling": int(called.sum()), **imbalance(times)})
        io = self.per_unit(self.parent < 0)
        by_layer = {}
        for name in OFFSET_LAYERS + LIBRARY_LAYERS:
            m = (self.layer == LAYER_IDS[name]) & (self.nbytes > 0)
            if m.any():
                by_layer[name] = [int(b) for b in self.per_unit(m, self.nbytes.astype(float))]
        return {"units": self.units, "io_time_s": [_s(t) for t in io], "bytes_by_layer": by_layer,
                "io_imbalance": imbalance([_s(t) for t in io]), "main": main}

    # --- (4) files ---

    def data_mask(self, layers=OFFSET_LAYERS) -> np.ndarray:
        return (self.kind > 0) & (self.file > 0) & np.isin(self.layer, [LAYER_IDS[l] for l in layers])

    def classify(self, idx) -> dict:
        """Darshan-like classification of the accesses `idx` (one file, layer and kind), stream by
        stream (one stream per process), with the counts it rests on. Vectorised over streams:
        a shared file read by thousands of ranks is one call."""
        known = idx[self.offset[idx] >= 0]
        out = {"accesses": int(len(idx)), "unknown_offset": int(len(idx) - len(known)), "transitions": 0,
               "consecutive": 0, "sequential": 0, "classification": "unknown", "stride": None, "streams": {}}
        if not len(known):
            return out
        order = known[np.lexsort((self.t0[known], self.proc[known]))]
        key, off, sz = self.proc[order], self.offset[order], np.maximum(self.size[order], 0)
        _, sid = np.unique(key, return_inverse=True)
        ns = int(sid.max()) + 1
        same = key[1:] == key[:-1]
        prev_end = off[:-1] + sz[:-1]
        to = sid[1:]
        count = lambda m: np.bincount(to[m], minlength=ns)
        n, t = np.bincount(sid, minlength=ns), count(same)
        c, q = count(same & (off[1:] == prev_end)), count(same & (off[1:] >= prev_end))
        # Dominant stride per stream: the longest run of equal (stream, stride) pairs after sorting.
        ts, st = to[same], (off[1:] - off[:-1])[same]
        dom, dom_n = np.zeros(ns, dtype=np.int64), np.zeros(ns, dtype=np.int64)
        if len(ts):
            o = np.lexsort((st, ts))
            ts, st = ts[o], st[o]
            new = np.r_[True, (ts[1:] != ts[:-1]) | (st[1:] != st[:-1])]
            run_len = np.bincount(np.cumsum(new) - 1)
            run_s, run_v = ts[new], st[new]
            best = np.lexsort((np.abs(run_v), -run_len, run_s))
            first = best[np.r_[True, run_s[best][1:] != run_s[best][:-1]]]
            dom[run_s[first]], dom_n[run_s[first]] = run_v[first], run_len[first]
        cls = np.select([t == 0, c >= ACCESS_SHARE * t, (dom_n >= ACCESS_SHARE * t) & (dom == 0),
                         dom_n >= ACCESS_SHARE * t, q >= ACCESS_SHARE * t],
                        ["single", "consecutive", "repeated", "strided", "sequential"], "random")
        streams = Counter()
        for k, w in zip(cls.tolist(), n.tolist()):
            streams[k] += w
        out.update(transitions=int(t.sum()), consecutive=int(c.sum()), sequential=int(q.sum()), streams=dict(streams))
        worse = ("single", "consecutive", "sequential", "strided", "repeated", "random")
        out["classification"] = max(streams, key=lambda k: (streams[k], worse.index(k)))
        if out["classification"] == "strided":
            strides = Counter()
            for v, w in zip(dom[cls == "strided"].tolist(), n[cls == "strided"].tolist()):
                strides[v] += w
            out["stride"] = strides.most_common(1)[0][0]
        return out

    def files(self) -> list:
        dm = self.data_mask()
        sel = np.flatnonzero(self.file > 0)
        order = sel[np.argsort(self.file[sel], kind="stable")]
        cuts = np.flatnonzero(self.file[order][1:] != self.file[order][:-1]) + 1
        # A call on this file whose parent is on the same file is already inside its parent's time.
        pfile = np.where(self.parent >= 0, self.file[np.maximum(self.parent, 0)], -1)
        out = []
        for g in (np.split(order, cuts) if len(order) else []):
            fid = self.file[g[0]]
            top = g[pfile[g] != fid]
            entry = {"file": self.name(fid), "calls": int(len(g)), "time_s": _s(self.dur[top].sum()),
                     "ranks": [self.units[u] for u in np.unique(self.unit[g])], "access": []}
            lowest, gd = None, g[dm[g]]
            for lname in OFFSET_LAYERS:
                for kind in (READ, WRITE):
                    idx = gd[(self.layer[gd] == LAYER_IDS[lname]) & (self.kind[gd] == kind)]
                    if not len(idx):
                        continue
                    lowest = lowest or lname
                    sizes = np.maximum(self.size[idx], 0)
                    hist = np.bincount(size_bucket(sizes), minlength=len(SIZE_BUCKETS))
                    top_sizes = Counter(sizes.tolist()).most_common(TOP_SIZES)
                    entry["access"].append({"layer": lname, "kind": KIND_NAMES[kind], "count": int(len(idx)),
                                            "bytes": int(sizes.sum()), "time_s": _s(self.dur[idx].sum()),
                                            "histogram": dict(zip(SIZE_BUCKETS, map(int, hist))),
                                            "top_sizes": [[int(s), int(c)] for s, c in top_sizes],
                                            **self.classify(idx)})
            # Bytes as the lowest traced layer with offsets saw them, else as the outermost calls asked.
            base = gd[self.layer[gd] == LAYER_IDS[lowest]] if lowest else top
            for kind, key in ((READ, "bytes_read"), (WRITE, "bytes_written")):
                entry[key] = int(self.nbytes[base[self.kind[base] == kind]].sum())
            entry["timeline_layer"] = lowest
            if lowest:
                entry["timeline"] = self.timeline(gd[self.layer[gd] == LAYER_IDS[lowest]])
            out.append(entry)
        out.sort(key=lambda e: -(e["bytes_read"] + e["bytes_written"]))
        return out

    def timeline(self, idx) -> dict:
        idx = idx[np.argsort(self.t0[idx], kind="stable")]
        sampled = len(idx) > TIMELINE_MAX
        if sampled:
            idx = idx[np.linspace(0, len(idx) - 1, TIMELINE_MAX).astype(np.int64)]
        base = int(self.t0.min())
        return {"t_s": ((self.t0[idx] - base) / 1e9).tolist(), "dur_s": (self.dur[idx] / 1e9).tolist(),
                "offset": self.offset[idx].tolist(), "size": self.size[idx].tolist(),
                "rank": self.unit[idx].tolist(), "kind": [KIND_NAMES[k] for k in self.kind[idx]],
                "sampled": bool(sampled)}

    # --- (5) netCDF reads against the chunk layout ---

    def netcdf_reads(self) -> tuple:
        """(reads, skipped): one dict per netCDF read with geometry in its aux record."""
        if getattr(self, "_nc_reads", None) is None:
            self._nc_reads = self._netcdf_reads()
        return self._nc_reads

    def _netcdf_reads(self) -> tuple:
        reads, skipped = [], 0
        idx = np.flatnonzero((self.layer == LAYER_IDS["netcdf"]) & (self.kind == READ))
        idx = idx[np.lexsort((self.t0[idx], self.proc[idx]))]
        last_box = {}
        for i in idx:
            a = self.trace.aux.get(int(i))
            try:
                r = _read_geometry(a)
            except (InputError, KeyError, TypeError, ValueError):
                skipped += 1
                continue
            key = (int(self.proc[i]), int(self.file[i]), int(self.var[i]))
            prev = last_box.get(key)
            r["reuses_chunks"] = bool(prev is not None and r["box"] is not None and _boxes_overlap(prev, r["box"]))
            last_box[key] = r["box"]
            r.update({"ev": int(i), "rank": self.units[self.unit[i]], "file": self.name(self.file[i]),
                      "var": self.name(self.var[i]) or f"varid {a.get('varid')}", "function": self.name(self.func[i]),
                      "time_s": _s(self.dur[i])})
            reads.append(r)
        return reads, skipped

    def netcdf(self) -> dict:
        """Per variable: reads, bytes requested and decoded, the cache's verdicts, the typical read and
        the axis successive reads walk along (walk_axis)."""
        reads, skipped = self.netcdf_reads()
        groups = {}
        for r in reads:
            groups.setdefault((r["file"], r["var"]), []).append(r)
        variables = []
        for (f, v), rs in groups.items():
            req, dec = sum(r["requested"] for r in rs), sum(r["decoded"] for r in rs)
            verdicts = Counter(r["cache"] for r in rs)
            # A read that reuses the previous read's chunks while the cache holds them decodes nothing new.
            dec_c = sum(r["decoded"] for r in rs if not (r["reuses_chunks"] and r["cache"] == "fits"))
            misfit = [r for r in rs if r["reuses_chunks"] and r["cache"] in ("does not fit", "chunk larger than cache")]
            variables.append({"file": f, "var": v, "dims": _dims(f, v), "reads": len(rs), "requested": req, "decoded": dec,
                              "ratio": dec / req if req else 1.0, "chunks": rs[-1]["chunks"], "shape": rs[-1]["shape"],
                              "itemsize": rs[-1]["itemsize"], "compressed": any(r["compressed"] for r in rs),
                              "filters": rs[-1]["filters"], "cache_bytes": max((r["cache_bytes"] or 0) for r in rs),
                              "partial_reads": sum(r["partial_chunks"] > 0 for r in rs),
                              "max_touched_bytes": max(r["touched_bytes"] for r in rs),
                              "cache": dict(verdicts), "reuse_reads": sum(r["reuses_chunks"] for r in rs),
                              "decoded_after_cache": dec_c, "misfit_reuse_reads": len(misfit),
                              "misfit_reuse_time_s": sum(r["time_s"] for r in misfit),
                              "typical_count": list(Counter(tuple(r["count"]) for r in rs).most_common(1)[0][0]),
                              "walk_axis": walk_axis(rs)[0], "walk_reads": walk_axis(rs)[1],
                              "time_s": sum(r["time_s"] for r in rs)})
        variables.sort(key=lambda v: -v["decoded"])
        shown = [{k: v for k, v in r.items() if k != "box"} for r in reads[:NETCDF_READS_SHOWN]]
        return {"variables": variables, "reads": shown, "reads_total": len(reads), "reads_without_geometry": skipped}

    # --- everything ---

    def facts(self):
        """The one facts type the rules judge (climio.rules.facts.Facts), from these events."""
        from .event_facts import facts
        return facts(self)

    def to_dict(self) -> dict:
        return self.facts().to_dict()


def analyse(trace) -> Analysis:
    return Analysis(without_wrappers(trace))


def without_wrappers(trace):
    """The trace without the processes that have no MPI rank when others have one: the launcher
    (mpirun) and shell wrappers around the ranks are not ranks, and their I/O (configuration files,
    the script itself) is not the program's. They are named in a note."""
    import dataclasses
    ranked = [p.rank >= 0 for p in trace.procs]
    if not any(ranked) or all(ranked) or not len(trace.events):
        return trace
    keep = np.asarray(ranked, dtype=bool)[trace.events["proc"].astype(np.int64)]
    new_index = np.cumsum(keep) - 1
    aux = {int(new_index[k]): v for k, v in trace.aux.items() if k < len(keep) and keep[k]}
    proc_index = np.cumsum(ranked) - 1                   # old process number -> new
    events = trace.events[keep].copy()
    events["proc"] = proc_index[events["proc"].astype(np.int64)]
    left = [p.label for p, r in zip(trace.procs, ranked) if not r]
    note = (f"left out: {len(left)} process(es) without an MPI rank ({', '.join(left[:5])}"
            f"{', ...' if len(left) > 5 else ''}): the launcher or a shell wrapper, not ranks of the program")
    return dataclasses.replace(trace, events=events, aux=aux, procs=[p for p, r in zip(trace.procs, ranked) if r],
                               notes=[*trace.notes, note])


# --- netCDF geometry ------------------------------------------------------------------------------------

def _read_geometry(a) -> dict:
    """Bytes requested / decoded, chunks touched and the cache verdict of one read from its aux
    record. A strided read (nc_get_vars) touches, along each dimension, the chunks holding one of
    its indices; the selection is a Cartesian product, so the chunks touched are the product."""
    shape, count, itemsize = [int(x) for x in a["shape"]], [int(x) for x in a["count"]], int(a["itemsize"])
    start = [int(x) for x in (a.get("start") or [0] * len(shape))]
    stride = [int(x) for x in (a.get("stride") or [1] * len(shape))]
    chunks = [int(x) for x in a["chunks"]] if a.get("chunks") else None
    if len(count) != len(shape) or len(start) != len(shape) or len(stride) != len(shape):
        raise ValueError("rank mismatch")
    span = [(n - 1) * s + 1 if n else 0 for n, s in zip(count, stride)]
    requested = layout.bytes_wanted(count, itemsize)
    out = {"shape": shape, "start": start, "count": count, "stride": a.get("stride"), "chunks": chunks,
           "itemsize": itemsize, "compressed": bool(a.get("compressed")), "filters": a.get("filters") or [],
           "cache_bytes": a.get("cache_bytes"), "requested": requested, "box": None}
    if chunks is None:
        layout.bytes_decoded(shape, None, start, span, itemsize)  # validates the hyperslab
        out.update(decoded=requested, chunks_touched=0, partial_chunks=0, chunk_bytes=0, touched_bytes=0,
                   cache="contiguous")
        return out
    cb = layout.chunk_bytes(chunks, itemsize)
    if all(s == 1 for s in stride):
        touched = layout.chunks_touched(shape, chunks, start, count)
        partial = layout.partial_chunks(shape, chunks, start, count)
    else:
        layout.chunks_touched(shape, chunks, start, span)  # validates
        touched = math.prod(len({(s0 + i * st) // c for i in range(n)})
                            for s0, n, st, c in zip(start, count, stride, chunks))
        partial = touched if touched * cb > requested else 0
    cache = a.get("cache_bytes")
    if not isinstance(cache, int):
        verdict = "unknown"
    elif cb > cache:
        verdict = "chunk larger than cache"
    elif touched * cb <= cache:
        verdict = "fits"
    else:
        verdict = "does not fit"
    box = None
    if touched:
        box = ([s // c for s, c in zip(start, chunks)], [(s + w - 1) // c for s, w, c in zip(start, span, chunks)])
    out.update(decoded=touched * cb, chunks_touched=touched, partial_chunks=partial, chunk_bytes=cb,
               touched_bytes=touched * cb, cache=verdict, box=box)
    return out


def walk_axis(rs):
    """(axis, reads per line) of the axis a variable's reads walk along: reads that differ only in
    their start on that axis (one line of it) come many to a line, as a series read step by step
    (one Dask task per time step) or a loop over levels does, in whatever order threads issue them;
    (None, 1) when no axis has two or more reads per line. A layout fix's chunks along it are shared by
    the reads of a line (climio.rules.measured.advised_chunks)."""
    best, per_best = None, 1.0
    for axis in range(len(rs[0]["start"]) if rs else 0):
        lines = Counter(tuple(x for i, x in enumerate(r["start"]) if i != axis) for r in rs)
        per = len(rs) / len(lines)
        if per >= 2 and per > per_best:
            best, per_best = axis, per
    return best, per_best


def _dims(path, var):
    """The variable's dimension names when its file is on this machine (fixes say chunks= by name), else None."""
    import os
    if not path or not os.path.isfile(path):
        return None
    try:
        import netCDF4
        with netCDF4.Dataset(path) as ds:
            return list(ds[str(var).lstrip("/")].dimensions)
    except (OSError, KeyError, IndexError, RuntimeError, ValueError):
        return None


def _boxes_overlap(a, b) -> bool:
    return all(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1, lo2, hi2 in zip(a[0], a[1], b[0], b[1]))
