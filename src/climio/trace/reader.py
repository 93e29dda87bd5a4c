"""Load a trace directory (csrc/trace/FORMAT.md, version 1) into one table of events.

    read_trace(path) -> Trace

Every process of the traced program wrote its own file set <host>-<pid>.{events,strings,aux.jsonl,
done.json}. The reader concatenates the processes' events into one numpy structured array
(EVENTS_DTYPE: the on-disk fields plus `proc`, the index of the process in Trace.procs, and `index`,
the event's position in its own file, counted from 0 as the aux records' "ev"), remaps each process's private string ids to one global
table (Trace.strings), and joins the aux records by global event number (Trace.aux).

A trace is *partial* (Trace.partial, with the reasons in Trace.notes) when any process left no
.done.json (killed), says "partial": true or dropped events, when an events file ends in a torn
record or invalid records (dropped), or when an event names a string its table lacks. A partial trace is still analysed; the
report says it is partial. A missing, empty or unreadable directory is a TraceError (one line).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from climio.base.errors import DataError

RECORD_DTYPE = np.dtype([("t_start_ns", "<u8"), ("t_end_ns", "<u8"), ("offset", "<i8"), ("size", "<i8"),
                         ("ret", "<i8"), ("file_id", "<u4"), ("func_id", "<u4"), ("var_id", "<u4"),
                         ("rank", "<i4"), ("tid", "<u4"), ("depth", "<u2"), ("layer", "u1"), ("flags", "u1")])
assert RECORD_DTYPE.itemsize == 64
EVENTS_DTYPE = np.dtype(RECORD_DTYPE.descr + [("proc", "<u4"), ("index", "<u4")])

LAYER_NAMES = {1: "posix", 2: "stdio", 3: "mpiio", 4: "netcdf", 5: "hdf5"}
LAYER_IDS = {v: k for k, v in LAYER_NAMES.items()}
FLAG_AUX, FLAG_FAILED = 1, 2

_EVENTS_RE = re.compile(r"^(?P<host>.+)-(?P<pid>\d+)\.events$")


class TraceError(DataError):
    """A trace directory that is missing, empty or unreadable."""


@dataclass
class Proc:
    """One traced process (one file set)."""
    host: str
    pid: int
    rank: int                 # from .done.json, else the largest rank its events carry, else -1
    n_events: int             # events read from its file
    done: dict = None         # its .done.json, None when it left none
    partial: bool = False
    notes: list = field(default_factory=list)

    @property
    def label(self) -> str:
        """'rank 3' for an MPI rank; 'pid 1234' (plus host on several hosts) otherwise."""
        return f"rank {self.rank}" if self.rank >= 0 else f"pid {self.pid}"

    @property
    def t0_ns(self):
        t0 = (self.done or {}).get("t0_ns")
        return int(t0) if isinstance(t0, int) and t0 > 0 else None


@dataclass
class Trace:
    path: Path
    events: np.ndarray        # EVENTS_DTYPE, processes one after the other, each in file (= end) order
    strings: list             # global string id -> text; strings[0] == ""
    aux: dict                 # global event number -> aux record (without "ev")
    procs: list               # Proc, indexed by events["proc"]
    meta: dict = None         # meta.json written by `climio trace run`, None if absent
    notes: list = field(default_factory=list)   # why the trace is partial, and other warnings

    @property
    def partial(self) -> bool:
        return any(p.partial for p in self.procs) or any(n.startswith("partial:") for n in self.notes)

    def text(self, ids) -> np.ndarray:
        """Strings of an array of global ids (object array)."""
        return np.asarray(self.strings, dtype=object)[np.asarray(ids, dtype=np.int64)]

    def id_of(self, text) -> int:
        """Global id of a string (0 when the trace never names it)."""
        try:
            return self.strings.index(text)
        except ValueError:
            return 0


def read_trace(path) -> Trace:
    path = Path(path).expanduser()
    if not path.is_dir():
        raise TraceError(f"no trace directory at {path}")
    sets = sorted((m.group("host"), int(m.group("pid")), f) for f in path.iterdir()
                  if (m := _EVENTS_RE.match(f.name)))
    if not sets:
        raise TraceError(f"{path} holds no trace (no <host>-<pid>.events files): was the command run "
                         "with `climio trace run -o DIR -- ...` and did it do any traced I/O?")
    strings, index = [""], {"": 0}
    parts, procs, aux, notes = [], [], {}, []
    base = 0
    for host, pid, ev_file in sets:
        stem = ev_file.name[:-len(".events")]
        proc = Proc(host=host, pid=pid, rank=-1, n_events=0)
        recs, where = _read_events(ev_file, proc)
        local = _read_strings(path / f"{stem}.strings", proc)
        remap = merge_strings(local, strings, index)
        ev = np.zeros(len(recs), dtype=EVENTS_DTYPE)
        for name in RECORD_DTYPE.names:
            ev[name] = recs[name]
        for col in ("file_id", "func_id", "var_id"):
            ids = recs[col].astype(np.int64)
            known = (ids < len(remap)) & ((ids == 0) | (remap[np.minimum(ids, len(remap) - 1)] > 0))
            extra = {}
            if not known.all():
                missing = sorted(set(ids[~known].tolist()))
                proc.partial = True
                proc.notes.append(f"string ids {missing[:5]} missing from {stem}.strings")
                for lid in missing:  # keep the events, under a visible placeholder name
                    text = f"<string {lid} of {stem}>"
                    gid = index.setdefault(text, len(strings))
                    if gid == len(strings):
                        strings.append(text)
                    extra[lid] = gid   # not grown into remap: a damaged id may be 2^31
            out = np.zeros(len(ids), np.uint32)
            out[known] = remap[ids[known]]
            for lid, gid in extra.items():
                out[ids == lid] = gid
            ev[col] = out
        ev["proc"] = len(procs)
        ev["index"] = where
        for k, rec in _read_aux(path / f"{stem}.aux.jsonl", proc).items():
            j = int(np.searchsorted(where, k))
            if j < len(where) and where[j] == k:
                aux[base + j] = rec
        _read_done(path / f"{stem}.done.json", proc, len(recs))
        if proc.rank < 0 and len(recs) and recs["rank"].max() >= 0:
            proc.rank = int(recs["rank"].max())
        proc.n_events = len(recs)
        parts.append(ev)
        procs.append(proc)
        base += len(recs)
    events = np.concatenate(parts) if parts else np.zeros(0, EVENTS_DTYPE)
    meta = None
    if (path / "meta.json").is_file():
        try:
            meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            notes.append(f"meta.json unreadable ({exc}); command and wall time unknown")
    if len(events) == 0:
        raise TraceError(f"{path} holds trace files but no events: nothing was traced")
    for p in procs:
        if p.partial:
            notes.append(f"partial: {p.host}-{p.pid} ({p.label}): {'; '.join(p.notes)}")
    return Trace(path=path, events=events, strings=strings, aux=aux, procs=procs, meta=meta, notes=notes)


def _read_events(f: Path, proc: Proc) -> tuple:
    """(valid records, their positions in the file: aux records refer to those)."""
    try:
        raw = f.read_bytes()
    except OSError as exc:
        raise TraceError(f"cannot read {f}: {exc.strerror or exc}") from None
    whole = len(raw) // RECORD_DTYPE.itemsize * RECORD_DTYPE.itemsize
    if whole != len(raw):  # a process killed mid-write leaves a torn last record
        proc.partial = True
        proc.notes.append(f"{len(raw) - whole} trailing bytes of a torn record ignored")
    recs = np.frombuffer(raw[:whole], dtype=RECORD_DTYPE)
    bad = ~np.isin(recs["layer"], list(LAYER_NAMES)) | (recs["t_end_ns"] < recs["t_start_ns"])
    if len(recs) and bad.all():
        raise TraceError(f"{f} is corrupt: none of its {len(recs)} records is an event (layer "
                         f"{recs['layer'][0]} in the first)")
    if bad.any():  # e.g. a zero-filled tail left by a crash: keep the rest, say so
        proc.partial = True
        proc.notes.append(f"{int(bad.sum())} invalid records ignored (first at {int(np.argmax(bad))})")
    return recs[~bad], np.flatnonzero(~bad)


def merge_strings(local: dict, strings: list, index: dict) -> np.ndarray:
    """One process's string table {local id: text} merged into the run's (`strings`, `index`:
    text -> id, both extended in place); returns local id -> run id."""
    remap = np.zeros(max([0, *local]) + 1, dtype=np.uint32)
    for lid, text in local.items():
        remap[lid] = index.setdefault(text, len(strings))
        if remap[lid] == len(strings):
            strings.append(text)
    return remap


def _read_strings(f: Path, proc: Proc) -> dict:
    out = {}
    if not f.is_file():
        return out
    try:
        text = f.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise TraceError(f"cannot read {f}: {exc.strerror or exc}") from None
    for n, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        sid, tab, s = line.partition("\t")
        if not tab or not sid.isdigit():
            if n == text.count("\n") + 1:  # an unterminated last line: the writer was killed
                proc.partial = True
                proc.notes.append(f"torn last line in {f.name}")
                continue
            raise TraceError(f"{f} is corrupt at line {n}: expected '<id>\\t<text>'")
        out[int(sid)] = s
    return out


def _read_aux(f: Path, proc: Proc) -> dict:
    out = {}
    if not f.is_file():
        return out
    try:
        lines = f.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read {f}: {exc}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            k = int(rec.pop("ev"))
        except (ValueError, KeyError, TypeError, AttributeError):
            if n == len(lines):  # torn last line
                proc.partial = True
                proc.notes.append(f"torn last line in {f.name}")
                continue
            raise TraceError(f"{f} is corrupt at line {n}: expected a JSON object with \"ev\"") from None
        out.setdefault(k, {}).update(rec)  # several aux lines for one event merge
    return out


def _read_done(f: Path, proc: Proc, n_events: int) -> None:
    if not f.is_file():
        proc.partial = True
        proc.notes.append("no .done.json (the process was killed or has not finished)")
        return
    try:
        done = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(done, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        proc.partial = True
        proc.notes.append(f"unreadable .done.json ({exc})")
        return
    proc.done = done
    if isinstance(done.get("rank"), int):
        proc.rank = done["rank"]
    if done.get("partial"):
        proc.partial = True
        proc.notes.append(f"the tracer marked it partial (end: {done.get('end')}, "
                          f"dropped {done.get('dropped', 0)} events)")
    elif done.get("dropped"):
        proc.partial = True
        proc.notes.append(f"dropped {done['dropped']} events")
    if isinstance(done.get("events"), int) and done["events"] > n_events and not done.get("dropped"):
        proc.partial = True
        proc.notes.append(f".done.json counts {done['events']} events, the file holds {n_events}")
