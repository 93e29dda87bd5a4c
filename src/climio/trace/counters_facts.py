"""The Facts of a Darshan log or a counters-mode climio trace (climio.trace.counters): the same
facts type the events give (climio.trace.event_facts), from counters, with what counters cannot
say left out and the reason in Facts.missing (the rules that need it are listed as not checked).

    facts(ca) -> Facts
    small_requests(ca)   per kind, from the size histograms (Darshan's buckets, climio's counters)
    library_reads(ca)    small H5D reads of unchunked datasets against their files' POSIX reads (Darshan)
"""

from collections import Counter

from climio.runs.records import iso_utc
from ..rules import Facts, not_checked
from ..rules.facts import OFFSET_LAYERS, TRACE_LAYER_ORDER, program_stack
from ..rules.measured import LIBRARY_MIN_READ_BYTES, SMALL_REQUEST_BYTES
from .analysis import DEFINITIONS
from .event_facts import shared_writes

KiB = 1024
SMALL_CERTAIN_BUCKETS = 3      # 0-100, 100-1K, 1K-10K: wholly below SMALL_REQUEST_BYTES
SMALL_SPLIT_BUCKET = 3         # 10K-100K: straddles it; split by the common access sizes


DEFINITIONS_DARSHAN = {
    "calls (Darshan)": "Darshan's operation counts per class: reads, writes and metadata operations "
                       "(opens, seeks, stats, syncs, set_view); Darshan does not name the functions.",
    "inclusive time (Darshan)": "the cumulative read, write and metadata time Darshan recorded for the layer.",
    "exclusive time (Darshan)": "estimated: a layer's time on a file minus the time of the next lower layer "
                                "recorded on that file (Darshan records no nesting).",
    "traced I/O time (Darshan)": "over files, the time of the top layer recorded on the file, plus STDIO time.",
    "process time (Darshan)": "number of processes x the job's run time.",
    "access classes (Darshan)": "POSIX only, from Darshan's counters: transitions = operations - ranks, "
                                "consecutive / sequential from CONSEC_ / SEQ_, strided when one of the four most "
                                "common strides (gap after the previous access) covers the threshold share; "
                                "the stride shown is that gap plus the most common request size. MPI-IO and "
                                "STDIO: unknown unless DXT recorded the offsets.",
    "small requests (Darshan)": "requests in the buckets up to 10 KiB, plus those of the 10-100 KiB bucket "
                                "that Darshan's four most common access sizes place below the threshold; "
                                "STDIO has no histogram: all its operations count as small when their mean "
                                "size is below the threshold.",
    "shared files (Darshan)": "a file opened by all ranks has one record summed over them; per-rank tables "
                              "spread it evenly, and its fastest and slowest rank times are listed separately.",
}


DEFINITIONS_CLIMIO = {
    "calls (climio counters)": "every traced call, counted per process, file, function and layer.",
    "inclusive time (climio counters)": "the summed duration of a function's calls.",
    "exclusive time (climio counters)": "estimated: a function's time on a file minus the time of the next lower "
                                        "layer's calls of the same kind on that file (counters record no nesting).",
    "traced I/O time (climio counters)": "the summed duration of the outermost traced calls (depth 0), exact.",
    "access classes (climio counters)": "per stream (process, file, layer, kind) as for events: transitions, "
                                        "consecutive and sequential counts, and the four most common strides "
                                        "(offset - previous offset) kept by the tracer.",
}


def pseudo_file(name) -> bool:
    """Darshan's names for the standard streams (<STDIN>, <STDOUT>, <STDERR>): terminal I/O, not files."""
    return name.startswith("<") and name.endswith(">")


def facts(ca) -> Facts:
    """Every fact of a counters analysis: the run, the report's sections and what the rules read."""
    log, job = ca.log, ca.log.job
    functions = ca.functions()
    events = len(log.dxt.events) if log.dxt is not None else 0
    dxt_ranks = [p.rank for p in log.dxt.procs] if log.dxt is not None else []
    procs = [{"host": log.dxt.procs[dxt_ranks.index(i)].host if i in dxt_ranks else None,
              "pid": None, "rank": i, "label": ca.units[i],
              "events": int((log.dxt.events["rank"] == i).sum()) if log.dxt is not None else 0,
              "end": None, "dropped": 0, "partial": False, "notes": []} for i in range(ca.nprocs)]
    run = {"path": str(log.path), "partial": any(n.startswith("partial:") for n in log.notes),
           "notes": list(log.notes) + list(log.limits), "command": job["exe"].split() if job["exe"] else None,
           "exit_status": None, "start": iso_utc(job["start_epoch_s"]), "end": iso_utc(job["end_epoch_s"]), "host": None,
           "events": events, "processes": procs, "units": ca.nprocs, "wall_s": job["run_time_s"],
           "process_time_s": ca.process_time, "io_time_s": ca.io_time, "io_share": ca.share(ca.io_time),
           "layers_present": [l for l in TRACE_LAYER_ORDER if any(r.layer == l for r in ca.recs)]}
    f = Facts("darshan", run, files=ca.files(), small_requests=small_requests(ca),
              file_per_process=ca.file_per_process(), tasks=max(1, ca.nprocs),
              shown={"definitions": {**DEFINITIONS, **DEFINITIONS_DARSHAN}, "layers": ca.layers(),
                     "functions": functions, "flow": ca.flow(functions), "ranks": ca.ranks()})
    if ca.climio:
        _climio(ca, f, functions, DEFINITIONS_CLIMIO)
    else:
        _darshan(ca, f, events)
    nd = not_checked(f)
    f.shown["rules_not_checked"] = [{"rule": r, "why": w} for r, w in nd]
    f.shown["darshan" if f.source == "darshan" else "counters"]["rules_not_checked"] = f.shown["rules_not_checked"]
    what = "Darshan log" if f.source == "darshan" else "climio counters"
    if nd:
        run["notes"].append(f"{what}: rules not checked: " + "; ".join(f"{r} ({why})" for r, why in nd))
    return f


def _darshan(ca, f, events) -> None:
    log, run = ca.log, f.run
    f.stack = program_stack(log.job["exe"])
    if ca.io_time > ca.process_time > 0:
        run["notes"].append("Darshan log: the I/O time summed over files exceeds the process time: the program "
                            "overlapped I/O on several files (threads or non-blocking calls); shares are over 100%.")
    f.library_reads = library_reads(ca)
    f.missing.update(netcdf="needs the netCDF layer", truncation="Darshan does not record ftruncate / MPI_File_set_size")
    if ca.dxt is not None:
        f.shared_writes = shared_writes(ca.dxt)
    else:
        f.missing["shared_writes"] = "needs per-call offsets (DXT)"
    f.shown["darshan"] = {"job": log.job, "modules": log.modules, "dxt": log.dxt is not None, "dxt_events": events,
                          "limits": log.limits, "shared_files": ca.shared_files(), "records": len(log.records)}


def _climio(ca, f, functions, definitions) -> None:
    """A climio counters trace: its processes, notes and the parts the kept events give."""
    log, run = ca.log, f.run
    f.source = "climio-counters"
    f.shown["definitions"] = {**DEFINITIONS, **definitions}
    if ca.io_time > ca.process_time > 0:
        run["notes"].append("the traced I/O time exceeds the process time: I/O overlapped in several threads; "
                            "shares are over 100%.")
    meta = log.meta or {}
    run.update(exit_status=log.job.get("exit_status"), command=meta.get("command") or run["command"],
               host=meta.get("host"), calls=sum(x["calls"] for x in functions))
    run["processes"] = [{"host": p.host, "pid": p.pid, "rank": p.rank, "label": p.label, "events": p.n_events,
                         "end": (p.done or {}).get("end"), "dropped": (p.done or {}).get("dropped", 0),
                         "counted": (p.done or {}).get("counted"), "mode": (p.done or {}).get("mode"),
                         "partial": p.partial, "notes": list(p.notes)} for p in log.procs]
    f.stack = program_stack(run["command"], meta.get("cwd"))
    f.shown["counters"] = {"mode": sorted({p["mode"] for p in run["processes"] if p["mode"]}),
                           "sample": log.sample, "capped": log.capped, "records": len(log.records)}
    if ca.dxt is not None and not log.sample:   # the events before the cap: every netCDF read and write
        f.netcdf = ca.dxt_facts["netcdf"]
        f.shared_writes = ca.dxt_facts["shared_writes"]
    else:
        f.missing.update(netcdf="needs netCDF request geometry (events)",
                         shared_writes="needs per-call offsets of every write (events)")
    f.missing["library_reads"] = "needs the POSIX reads under each library read (nesting)"
    set_size = [r for r in ca.recs if r.function == "MPI_File_set_size"]
    t = sum(r.time for r in set_size)
    per = ca._per_rank(set_size, lambda r: r.time)
    f.truncation = {"calls": sum(r.meta_ops for r in set_size), "time_s": t,
                    "share_of_io": t / ca.io_time if ca.io_time else 0.0, "under_close": 0,
                    "max_rank_time_s": float(per.max()) if len(per) else 0.0, "close_time_s": 0.0,
                    "functions": ["MPI_File_set_size"] if set_size else []}


def _small_count(r, kind) -> tuple:
    """(requests, small requests, small sizes Counter) of one record and kind."""
    n = r.reads if kind == "read" else r.writes
    hist = r.hist_read if kind == "read" else r.hist_write
    sizes = Counter({s: c for s, c in r.access if s < SMALL_REQUEST_BYTES})
    if hist is None:  # STDIO: only bytes and counts
        nb = r.bytes_read if kind == "read" else r.bytes_written
        return n, (n if n and nb / n < SMALL_REQUEST_BYTES else 0), sizes
    certain = sum(hist[:SMALL_CERTAIN_BUCKETS])
    split = min(hist[SMALL_SPLIT_BUCKET], sum(c for s, c in r.access if 10 * KiB < s < SMALL_REQUEST_BYTES))
    return n, certain + split, sizes


def small_requests(ca) -> dict:
    """Per kind, as event_facts.small_requests, from the size histograms: the time is the kind's
    time x the small share; who issued them is inferred per file from its MPI-IO records."""
    out = {}
    for kind in ("read", "write"):
        n = n_small = nbytes = 0
        t = 0.0
        sizes, per_file, issued, mpi_calls = Counter(), Counter(), Counter(), Counter()
        for f, rs in ca.files_of.items():
            if pseudo_file(f):
                continue
            low = next((l for l in OFFSET_LAYERS if any(r.layer == l and (r.reads if kind == "read" else r.writes)
                                                         for r in rs)), None)
            if low is None:
                continue
            fn = fs = 0
            for r in rs:
                if r.layer != low:
                    continue
                a, b, s = _small_count(r, kind)
                fn, fs = fn + a, fs + b
                sizes.update(s)
                if a:
                    moved = r.bytes_read if kind == "read" else r.bytes_written
                    t += (r.read_time if kind == "read" else r.write_time) * b / a
                    nbytes += int(moved * b / a) if b < a else moved
            n, n_small = n + fn, n_small + fs
            if fs:
                per_file[f] += fs
                mpi = [r for r in rs if r.module == "MPI-IO"]
                ops = sum(r.reads if kind == "read" else r.writes for r in mpi)
                coll = sum(r.coll_reads if kind == "read" else r.coll_writes for r in mpi)
                group = "no_mpiio" if not ops else "collective_mpiio" if coll * 2 >= ops else "independent_mpiio"
                issued[group] += fs
                if ops:
                    mpi_calls[(group, low == "mpiio")] += ops
        if not n:
            continue
        top = max(("collective_mpiio", "independent_mpiio"), key=lambda g: issued.get(g, 0))
        own = mpi_calls.get((top, True), 0) >= mpi_calls.get((top, False), 0)
        note = ("Darshan's MPI-IO counters" if own else
                "inferred from Darshan's MPI-IO counters of the same files: Darshan records no nesting")
        common = sizes.most_common(3)
        out[kind] = {"requests": n, "small_requests": n_small, "small_bytes": nbytes, "time_s": t,
                     "common_sizes": [[int(s), int(c)] for s, c in common], "files": len(per_file),
                     "top_files": [[f, int(c)] for f, c in per_file.most_common(5)],
                     "issued_by": {k: issued.get(k, 0) for k in ("collective_mpiio", "independent_mpiio", "no_mpiio")},
                     "issuer": {"own": own, "calls": None, "note": note},
                     "counted_by": ("the size histogram of climio counters" if ca.climio
                                    else "Darshan's size histogram; STDIO: mean size")
                                   + "; time estimated as the kind's time x the small share"}
    return out


def library_reads(ca) -> dict:
    """Small H5D reads of datasets not recorded as chunked, against the POSIX reads of their files
    (only files whose every H5D read is such a small read: the POSIX volume is theirs)."""
    n = req = got = 0
    t = 0.0
    typical = Counter()
    for f, rs in ca.files_of.items():
        h5 = [r for r in rs if r.module == "H5D" and r.reads and not r.chunked
              and r.bytes_read / r.reads < LIBRARY_MIN_READ_BYTES]
        px = [r for r in rs if r.layer == "posix"]
        if not h5 or not px or any(r.module == "H5D" and r.reads and r not in h5 for r in rs):
            continue
        n += sum(r.reads for r in h5)
        req += sum(r.bytes_read for r in h5)
        got += sum(r.bytes_read for r in px)
        t += sum(r.read_time for r in h5)
        for r in px:
            typical.update(dict(r.access))
    return {"reads": n, "requested": req, "posix_bytes": got, "time_s": t, "functions": ["H5Dread"] if n else [],
            "typical_posix_read": typical.most_common(1)[0][0] if typical else 0,
            "counted_by": "per file, from Darshan's counters"}
