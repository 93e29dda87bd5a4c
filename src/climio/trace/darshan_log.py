"""Read a Darshan log (https://www.mcs.anl.gov/research/projects/darshan/) through pydarshan into
what climio's trace analysis consumes.

    read_darshan(path) -> DarshanLog

A Darshan log holds two kinds of data, and this module keeps them apart rather than faking one
from the other:
  - counters: one record per (module, file, rank) -- or one per file with rank -1 when all ranks
    shared it and Darshan reduced their records -- with operation counts, bytes, cumulative read /
    write / metadata time, Darshan's request-size histogram, consecutive / sequential counts, the
    four most common access sizes and strides, and for shared files the fastest and slowest rank.
    They become `CounterRecord`s, normalised across the modules POSIX, MPI-IO, STDIO, H5F, H5D,
    PNETCDF_FILE and PNETCDF_VAR (climio.trace.counters analyses them).
  - DXT (Darshan eXtended Tracing), when the run enabled it: every POSIX and MPI-IO read and write
    with offset, length, start and end time and rank. These are real events and become a
    climio.trace.reader.Trace (DarshanLog.dxt), which climio.trace.analysis analyses as it does a
    climio trace.

What a Darshan log cannot show is listed in DarshanLog.limits (the report prints it): the netCDF-4
layer (Darshan has no netCDF-4 module; PnetCDF has one), call nesting (each module counts on its
own: an MPI-IO write and the POSIX writes it makes are counted separately; DXT events are nested
here only by time containment on the same rank and file, an inference), per-call timing and
offsets without DXT, which function was called (counts per operation class only), and truncation
or close costs (no ftruncate / MPI_File_set_size counters).
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .analysis import SIZE_BUCKETS
from .reader import EVENTS_DTYPE, LAYER_IDS, Proc, Trace, TraceError

# Darshan's bucket suffixes, in the order of analysis.SIZE_BUCKETS (same edges).
BUCKET_SUFFIXES = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
                   "100M_1G", "1G_PLUS")
assert len(BUCKET_SUFFIXES) == len(SIZE_BUCKETS)

# module -> (climio layer, counter prefix, read-op counters, write-op counters, metadata-op counters,
#            read histogram prefix or None, write histogram prefix or None)
MODULES = {
    "POSIX": ("posix", "POSIX_", ("READS",), ("WRITES",),
              ("OPENS", "FILENOS", "DUPS", "SEEKS", "STATS", "FSYNCS", "FDSYNCS", "RENAME_SOURCES"),
              "SIZE_READ_", "SIZE_WRITE_"),
    "MPI-IO": ("mpiio", "MPIIO_", ("INDEP_READS", "COLL_READS", "SPLIT_READS", "NB_READS"),
               ("INDEP_WRITES", "COLL_WRITES", "SPLIT_WRITES", "NB_WRITES"),
               ("INDEP_OPENS", "COLL_OPENS", "SYNCS", "HINTS", "VIEWS"), "SIZE_READ_AGG_", "SIZE_WRITE_AGG_"),
    "STDIO": ("stdio", "STDIO_", ("READS",), ("WRITES",), ("OPENS", "FDOPENS", "SEEKS", "FLUSHES"), None, None),
    "H5F": ("hdf5", "H5F_", (), (), ("OPENS", "FLUSHES"), None, None),
    "H5D": ("hdf5", "H5D_", ("READS",), ("WRITES",), ("OPENS", "FLUSHES"), "SIZE_READ_AGG_", "SIZE_WRITE_AGG_"),
    "PNETCDF_FILE": ("netcdf", "PNETCDF_FILE_", (), (), ("CREATES", "OPENS", "REDEFS", "SYNCS", "INDEP_WAITS",
                                                        "COLL_WAITS"), None, None),
    "PNETCDF_VAR": ("netcdf", "PNETCDF_VAR_", ("INDEP_READS", "COLL_READS", "NB_READS"),
                    ("INDEP_WRITES", "COLL_WRITES", "NB_WRITES"), ("OPENS",), "SIZE_READ_AGG_", "SIZE_WRITE_AGG_"),
}
# Function-class names shown per module (Darshan counts operation classes, not functions).
FUNCTION_NAMES = {
    "POSIX": ("read", "write", "open/seek/stat/sync"),
    "MPI-IO": ("MPI_File_read*", "MPI_File_write*", "MPI_File_open/sync/set_view/set_info"),
    "STDIO": ("fread/fgets/...", "fwrite/fprintf/...", "fopen/fseek/fflush"),
    "H5F": (None, None, "H5Fopen/H5Fcreate/H5Fflush"),
    "H5D": ("H5Dread", "H5Dwrite", "H5Dopen/H5Dcreate/H5Dflush"),
    "PNETCDF_FILE": (None, None, "ncmpi_open/create/redef/sync/wait"),
    "PNETCDF_VAR": ("ncmpi_get_var*", "ncmpi_put_var*", "ncmpi_inq_varid/def_var"),
}
DXT_MODULES = {"DXT_POSIX": "posix", "DXT_MPIIO": "mpiio"}

LIMITS = (
    "Darshan log: the netCDF-4 layer is not recorded (Darshan has no netCDF-4 module; its HDF5 H5F/H5D "
    "and PnetCDF modules are shown as the hdf5 and netcdf layers), so chunk-layout, chunk-cache and "
    "decompression findings (partial-chunk-compressed, chunk-cache-small) cannot be checked.",
    "Darshan log: no call nesting. Each module counts its own calls, so an MPI-IO write and the POSIX "
    "writes it makes are both counted; exclusive time is estimated as a layer's time minus the time of "
    "the layer below on the same files and ranks, and the traced I/O time sums the top layer of each file.",
    "Darshan log: counts per operation class (reads, writes, metadata) rather than per function, "
    "cumulative times per file and rank, no ftruncate / MPI_File_set_size (close-truncate cannot be "
    "checked) and, for files shared by all ranks, only the fastest and slowest rank's time.",
)
NO_DXT = ("Darshan log without DXT: no per-call timing, offsets or timelines; access classes come from "
          "Darshan's consecutive / sequential / stride counters, and same-offset independent writes "
          "(independent-shared-writes) cannot be checked. Enable DXT (DXT_ENABLE_IO_TRACE=1) to get them.")
WITH_DXT = ("Darshan log with DXT: per-call offsets and times of POSIX and MPI-IO reads and writes are real "
            "events (access classes, timelines and shared-offset writes come from them); a POSIX call is "
            "placed under an MPI-IO call of the same rank and file when its time lies inside that call's "
            "(inferred, Darshan does not record nesting).")


class DarshanLogError(TraceError):
    """A file that pydarshan cannot read as a Darshan log (not a log, corrupt, unsupported version)."""


@dataclass
class CounterRecord:
    """One Darshan record, normalised. rank -1: a file shared by all ranks, counters summed over them."""
    module: str
    layer: str
    file: str                  # the file's path (H5D / PNETCDF_VAR: the file of the dataset / variable)
    name: str                  # the record's own name (dataset or variable for H5D / PNETCDF_VAR)
    rank: int
    reads: int
    writes: int
    meta_ops: int
    bytes_read: int
    bytes_written: int
    read_time: float
    write_time: float
    meta_time: float
    hist_read: list = None     # counts per analysis.SIZE_BUCKETS, None when the module has none
    hist_write: list = None
    consec_reads: int = None   # POSIX only
    consec_writes: int = None
    seq_reads: int = None
    seq_writes: int = None
    gaps: list = field(default_factory=list)     # POSIX: [[gap bytes, count]] (Darshan's STRIDE counters)
    access: list = field(default_factory=list)   # [[size, count]] (Darshan's ACCESS counters, reads and writes)
    coll_reads: int = 0        # MPI-IO / PnetCDF: collective operations
    coll_writes: int = 0
    chunked: bool = None       # H5D: a chunk size is recorded
    fastest: dict = None       # shared records: {"rank", "bytes", "time_s"}
    slowest: dict = None
    variance_time: float = None
    start_s: float = None      # first and last timestamp (s since the job start), where recorded
    end_s: float = None

    @property
    def time(self) -> float:
        return self.read_time + self.write_time + self.meta_time


@dataclass
class DarshanLog:
    path: Path
    job: dict                  # nprocs, run_time_s, start / end (ISO), jobid, exe, lib_ver, hints
    modules: list              # module names present
    records: list              # CounterRecord
    dxt: Trace = None          # DXT events as a climio Trace, None without DXT
    limits: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # "partial: ..." when Darshan ran out of record memory


def _in_child(path: Path) -> "DarshanLog":
    """Read the log in a forked child and return what it read. darshan-util reads past the end of a
    truncated log and may crash the process (SIGSEGV), abort it, or believe a count claiming
    billions of records, which no Python handler can catch; and a DarshanReport left to the garbage
    collector closes its handle in whichever thread collects it. So no darshan-util handle ever
    lives in this process: the child (climio.dataset.isolate: under RLIMIT_AS and a timeout) reads,
    closes and sends back the DarshanLog (pickled), or the one-line reason it could not."""
    import darshan  # noqa: F401  (imported once here, not in every child)
    from climio.base.errors import DataError
    from climio.dataset.isolate import run_isolated
    try:
        kind, value = run_isolated(_answer, path, what=f"{path} is not a readable Darshan log")
    except DataError as exc:   # a signal, a hang or memory: darshan-util's, said as a log problem
        raise DarshanLogError(str(exc)) from None
    if kind == "error":
        raise DarshanLogError(f"{path} is not a readable Darshan log ({value})")
    kind, value = value
    if kind == "error":
        raise DarshanLogError(value)
    return value


def _answer(path: Path):
    """In the child: ("log", the DarshanLog) or ("error", the one-line reason)."""
    try:
        return "log", _read_here(path)
    except DarshanLogError as exc:
        return "error", str(exc)


def _open(path: Path):
    try:
        import darshan
    except ImportError as exc:  # pragma: no cover - a dependency of climio
        raise DarshanLogError(f"reading {path} needs pydarshan (pip install darshan): {exc}") from None
    # darshan-util prints its complaints on stderr and returns a NULL handle for a corrupt log, which
    # pydarshan keeps and later closes (an assertion that aborts the process): open it once here, quietly,
    # and refuse a NULL handle before a DarshanReport holds it.
    from darshan.backend import cffi_backend as backend
    with _CapturedStderr() as err:
        log = backend.log_open(str(path))
    if log["handle"] == backend.ffi.NULL:
        raise DarshanLogError(f"{path} is not a readable Darshan log ({err.first_line() or 'darshan-util refused it'})")
    backend.log_close(log)
    try:
        with _CapturedStderr():
            return darshan.DarshanReport(str(path), read_all=False)
    except Exception as exc:  # pydarshan raises RuntimeError / ValueError / KeyError for bad logs
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DarshanLogError(f"{path} is not a readable Darshan log ({msg})") from None


class _CapturedStderr:
    """Redirect file descriptor 2 (where darshan-util's C code writes) to a temporary file."""

    def __enter__(self):
        import tempfile
        sys.stderr.flush()
        self._tmp = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode("utf-8", "replace")
        self._tmp.close()
        return False

    def first_line(self) -> str:
        lines = [l.strip() for l in getattr(self, "text", "").splitlines() if l.strip()]
        return lines[0].removeprefix("Error: ").rstrip(".") if lines else ""


def read_darshan(path) -> DarshanLog:
    path = Path(path).expanduser()
    if not path.is_file():
        raise DarshanLogError(f"no Darshan log at {path}")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise DarshanLogError(f"cannot read {path}: {exc.strerror or exc}") from None
    # A Darshan log starts with its version string ("3.41\0..."); anything else is not one, and is
    # refused before the C library sees it.
    if len(head) < 4 or not head[:1].isdigit() or b"." not in head[:4]:
        raise DarshanLogError(f"{path} is not a Darshan log (nor a trace directory)")
    return _in_child(path)


def _read_here(path: Path) -> DarshanLog:
    """What read_darshan returns, read in this process: the child of _in_child, which leaves with
    os._exit, so no handle is closed (or left to close) after it."""
    rep = _open(path)
    err = _CapturedStderr()
    try:
        with err:
            meta = rep.metadata
            job = meta.get("job", {})
            start = int(job.get("start_time_sec", 0)) + int(job.get("start_time_nsec", 0)) / 1e9
            end = int(job.get("end_time_sec", 0)) + int(job.get("end_time_nsec", 0)) / 1e9
            info = {"nprocs": int(job.get("nprocs", 0)), "run_time_s": float(job.get("run_time", 0.0) or 0.0),
                    "start_epoch_s": start, "end_epoch_s": end, "jobid": job.get("jobid"), "uid": job.get("uid"),
                    "exe": (meta.get("exe") or "").strip(), "log_ver": job.get("log_ver"),
                    "lib_ver": (job.get("metadata") or {}).get("lib_ver"),
                    "hints": (job.get("metadata") or {}).get("h")}
            modules = list(rep.modules)
            notes = []
            for m, desc in rep.modules.items():
                if desc.get("partial_flag"):
                    notes.append(f"partial: Darshan ran out of memory for {m} records; files beyond are missing")
            rep.read_name_records()
            names = dict(rep.name_records)
            records = []
            for mod in MODULES:
                if mod not in rep.modules:
                    continue
                rep.mod_read_all_records(mod)
                records += _records(mod, rep.records[mod].to_df(), names)
            dxt = None
            present = [m for m in DXT_MODULES if m in rep.modules]
            for m in present:
                rep.mod_read_all_dxt_records(m)
            if present:
                dxt = _dxt_trace(path, rep, present, names, records, info)
    except Exception as exc:
        # darshan-util may have freed the handle's state after a read error; closing it then aborts
        # the process (an assertion), so pydarshan must not close it.
        rep.log = None
        why = err.first_line() or f"{type(exc).__name__}: {exc}"
        raise DarshanLogError(f"{path} is not a readable Darshan log (pydarshan could not read its records: {why})") from None
    limits = list(LIMITS) + [WITH_DXT if dxt is not None else NO_DXT]
    if dxt is not None:
        notes += dxt.notes
    return DarshanLog(path=path, job=info, modules=modules, records=records, dxt=dxt, limits=limits, notes=notes)


def _records(mod, frames, names) -> list:
    layer, pre, rd, wr, md, hr, hw = MODULES[mod]
    c, fc = frames["counters"], frames["fcounters"]
    cols = set(c.columns)
    fcols = set(fc.columns)

    def col(name, frame=c, have=cols):
        return frame[name].to_numpy() if name in have else np.zeros(len(frame))

    def total(keys):
        return sum((col(pre + k) for k in keys), np.zeros(len(c))).astype(np.int64)

    reads, writes = total(rd), total(wr)
    meta = np.maximum(total(md), 0)
    br, bw = col(pre + "BYTES_READ").astype(np.int64), col(pre + "BYTES_WRITTEN").astype(np.int64)
    rt, wt, mt = (col(pre + "F_" + k, fc, fcols).astype(float) for k in ("READ_TIME", "WRITE_TIME", "META_TIME"))
    if mod == "PNETCDF_FILE":  # waits on non-blocking calls are metadata-like time too
        mt = mt + col(pre + "F_WAIT_TIME", fc, fcols).astype(float)
    hist_r = np.stack([col(pre + hr + b) for b in BUCKET_SUFFIXES], 1).astype(np.int64) if hr else None
    hist_w = np.stack([col(pre + hw + b) for b in BUCKET_SUFFIXES], 1).astype(np.int64) if hw else None
    starts = [k for k in fcols if k.endswith("_START_TIMESTAMP")]
    ends = [k for k in fcols if k.endswith("_END_TIMESTAMP")]
    t_start = np.stack([col(k, fc, fcols) for k in starts], 1) if starts else None
    t_end = np.stack([col(k, fc, fcols) for k in ends], 1) if ends else None
    ranks, ids = c["rank"].to_numpy().astype(np.int64), c["id"].to_numpy()
    out = []
    for i in range(len(c)):
        name = names.get(int(ids[i]), f"<record {int(ids[i])}>")
        fname = name
        if mod in ("H5D", "PNETCDF_VAR") and ":" in name:
            fname = name.rsplit(":", 1)[0] if mod == "PNETCDF_VAR" else name.split(":/", 1)[0]
        r = CounterRecord(module=mod, layer=layer, file=fname, name=name, rank=int(ranks[i]),
                          reads=int(reads[i]), writes=int(writes[i]), meta_ops=int(meta[i]),
                          bytes_read=max(int(br[i]), 0), bytes_written=max(int(bw[i]), 0),
                          read_time=max(float(rt[i]), 0.0), write_time=max(float(wt[i]), 0.0),
                          meta_time=max(float(mt[i]), 0.0),
                          hist_read=hist_r[i].tolist() if hist_r is not None else None,
                          hist_write=hist_w[i].tolist() if hist_w is not None else None)
        if mod == "POSIX":
            r.consec_reads, r.consec_writes = int(col(pre + "CONSEC_READS")[i]), int(col(pre + "CONSEC_WRITES")[i])
            r.seq_reads, r.seq_writes = int(col(pre + "SEQ_READS")[i]), int(col(pre + "SEQ_WRITES")[i])
            r.gaps = [[int(col(f"{pre}STRIDE{k}_STRIDE")[i]), int(col(f"{pre}STRIDE{k}_COUNT")[i])] for k in range(1, 5)]
            r.gaps = [g for g in r.gaps if g[1] > 0]
        if f"{pre}ACCESS1_ACCESS" in cols:
            r.access = [[int(col(f"{pre}ACCESS{k}_ACCESS")[i]), int(col(f"{pre}ACCESS{k}_COUNT")[i])] for k in range(1, 5)]
            r.access = [a for a in r.access if a[1] > 0]
        if mod in ("MPI-IO", "PNETCDF_VAR"):
            r.coll_reads, r.coll_writes = int(col(pre + "COLL_READS")[i]), int(col(pre + "COLL_WRITES")[i])
        if mod == "H5D":
            r.coll_reads = r.reads if col(pre + "USE_MPIIO_COLLECTIVE")[i] > 0 else 0
            r.coll_writes = r.writes if col(pre + "USE_MPIIO_COLLECTIVE")[i] > 0 else 0
            r.chunked = bool(any(col(f"{pre}CHUNK_SIZE_D{k}")[i] > 0 for k in range(1, 6)))
        if r.rank < 0 and f"{pre}FASTEST_RANK" in cols:
            r.fastest = {"rank": int(col(pre + "FASTEST_RANK")[i]), "bytes": int(col(pre + "FASTEST_RANK_BYTES")[i]),
                         "time_s": float(col(pre + "F_FASTEST_RANK_TIME", fc, fcols)[i])}
            r.slowest = {"rank": int(col(pre + "SLOWEST_RANK")[i]), "bytes": int(col(pre + "SLOWEST_RANK_BYTES")[i]),
                         "time_s": float(col(pre + "F_SLOWEST_RANK_TIME", fc, fcols)[i])}
            r.variance_time = float(col(pre + "F_VARIANCE_RANK_TIME", fc, fcols)[i])
        if t_start is not None:
            s = t_start[i][t_start[i] > 0]
            r.start_s = float(s.min()) if len(s) else None
        if t_end is not None:
            e = t_end[i][t_end[i] > 0]
            r.end_s = float(e.max()) if len(e) else None
        out.append(r)
    return out


def _mpiio_names(records) -> dict:
    """(rank, file, kind) -> the MPI-IO function name a DXT segment gets: collective when Darshan's
    counters for that rank (or the shared record) and file count only collective operations of that kind."""
    out = {}
    for r in records:
        if r.module != "MPI-IO":
            continue
        for kind, n, coll in (("read", r.reads, r.coll_reads), ("write", r.writes, r.coll_writes)):
            if not n:
                continue
            base = f"MPI_File_{kind}*"
            out[(r.rank, r.file, kind)] = base + "_all" if coll == n else base if coll == 0 else base + " (coll+indep)"
    return out


def _dxt_trace(path, rep, present, names, records, info) -> Trace:
    """DXT segments as climio events: one Proc per rank, one thread, depth 1 for a POSIX segment
    lying inside an MPI-IO segment of the same rank and file."""
    strings, index = [""], {"": 0}

    def sid(text):
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    mpi_names = _mpiio_names(records)
    t0 = int(round(info["start_epoch_s"] * 1e9))
    cols = {k: [] for k in ("t0", "t1", "off", "size", "file", "func", "rank", "layer")}
    hosts = {}
    for mod in present:
        layer = DXT_MODULES[mod]
        for rec in rep.records[mod].to_df():
            rank, fname = int(rec["rank"]), names.get(int(rec["id"]), f"<record {int(rec['id'])}>")
            hosts.setdefault(rank, rec.get("hostname") or "")
            for kind in ("read", "write"):
                seg = rec.get(f"{kind}_segments")
                if seg is None or not len(seg):
                    continue
                if layer == "posix":
                    func = kind
                else:
                    func = mpi_names.get((rank, fname, kind)) or mpi_names.get((-1, fname, kind)) or f"MPI_File_{kind}*"
                n = len(seg)
                cols["t0"].append(t0 + np.round(seg["start_time"].to_numpy(float) * 1e9).astype(np.int64))
                cols["t1"].append(t0 + np.round(seg["end_time"].to_numpy(float) * 1e9).astype(np.int64))
                cols["off"].append(seg["offset"].to_numpy().astype(np.int64))
                cols["size"].append(seg["length"].to_numpy().astype(np.int64))
                cols["file"].append(np.full(n, sid(fname), np.uint32))
                cols["func"].append(np.full(n, sid(func), np.uint32))
                cols["rank"].append(np.full(n, rank, np.int64))
                cols["layer"].append(np.full(n, LAYER_IDS[layer], np.uint8))
    if not cols["t0"]:
        return None
    c = {k: np.concatenate(v) for k, v in cols.items()}
    c["t1"] = np.maximum(c["t1"], c["t0"])
    depth = _infer_depth(c)
    ranks = sorted(set(c["rank"].tolist()))
    procs = [Proc(host=hosts.get(r, ""), pid=-1, rank=r, n_events=int((c["rank"] == r).sum()),
                  done={"t0_ns": t0, "t_end_ns": t0 + int(round(info["run_time_s"] * 1e9)), "end": "exit"})
             for r in ranks]
    proc_of = {r: i for i, r in enumerate(ranks)}
    order = np.lexsort((c["t1"], c["rank"]))
    ev = np.zeros(len(order), EVENTS_DTYPE)
    ev["t_start_ns"], ev["t_end_ns"] = c["t0"][order], c["t1"][order]
    ev["offset"], ev["size"], ev["ret"] = c["off"][order], c["size"][order], c["size"][order]
    ev["file_id"], ev["func_id"], ev["rank"] = c["file"][order], c["func"][order], c["rank"][order]
    ev["layer"], ev["depth"] = c["layer"][order], depth[order]
    ev["proc"] = np.array([proc_of[r] for r in c["rank"][order].tolist()], dtype=np.uint32)
    ev["index"] = np.arange(len(order))
    notes = []
    # DXT keeps a bounded buffer per process: fewer segments than the counters' operations means it
    # stopped recording (the report then says the events are partial).
    for layer, module in (("posix", "POSIX"), ("mpiio", "MPI-IO")):
        if not any(DXT_MODULES[m] == layer for m in present):
            continue
        ops = sum(r.reads + r.writes for r in records if r.module == module)
        segs = int((c["layer"] == LAYER_IDS[layer]).sum())
        if segs < ops:
            notes.append(f"partial: DXT holds {segs} {module} segments, Darshan's counters {ops} operations "
                         "(DXT's trace buffer filled up); event-based numbers are lower bounds")
    meta = {"command": info["exe"].split() if info["exe"] else None, "start_ns": t0,
            "end_ns": t0 + int(round(info["run_time_s"] * 1e9))}
    return Trace(path=path, events=ev, strings=strings, aux={}, procs=procs, meta=meta, notes=notes)


def _infer_depth(c) -> np.ndarray:
    depth = np.zeros(len(c["t0"]), np.uint16)
    mpi = c["layer"] == LAYER_IDS["mpiio"]
    if not mpi.any():
        return depth
    posix = np.flatnonzero(~mpi)
    for (rank, fid) in set(zip(c["rank"][mpi].tolist(), c["file"][mpi].tolist())):
        m = np.flatnonzero(mpi & (c["rank"] == rank) & (c["file"] == fid))
        m = m[np.argsort(c["t0"][m], kind="stable")]
        p = posix[(c["rank"][posix] == rank) & (c["file"][posix] == fid)]
        if not len(p):
            continue
        pos = np.searchsorted(c["t0"][m], c["t0"][p], side="right") - 1
        cand = m[np.maximum(pos, 0)]
        inside = (pos >= 0) & (c["t1"][cand] >= c["t1"][p])
        depth[p[inside]] = 1
    return depth
