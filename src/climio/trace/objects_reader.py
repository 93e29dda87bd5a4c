"""Read the object-store records a traced job wrote (climio.trace.inject.objects): DIR/objects-<host>-<pid>.jsonl.

    has_objects(dir) -> bool
    read_objects(dir) -> ObjectTrace      store ops and wire requests of every process, times in ns

Each file: a header line {"schema": "climio-objects/1", "pid", "host", "mode", "t0_ns", "t1_ns",
"settings"} and one record per line. The preload (csrc/trace/wire.c) writes the wire requests it sees below
Python (netCDF-C's libcurl, obstore's sockets) to objects-<host>-<pid>.wire.jsonl in the same format (header
"source": "preload"; records add t_done, the end of the response body); a process's files are one process. A full-mode record: level ("store" | "wire"), lib, op, key,
range [start, end) or null, bytes, t0 and t1 (ns since the epoch), tid; store records add id, kind
("chunk" | "meta" | "other"), array, chunk (indices), arrays (layouts read from metadata); wire records
add method, status, attempt, retries, parent (the id of the store op they served, same process).
A counters-mode record: level, op, key, count, bytes, time_ns, retries.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from climio.base.errors import DataError
from .inject.objects import OBJECTS_SCHEMA   # the writer's header, one definition



@dataclass
class ObjectTrace:
    path: Path
    processes: list                      # the headers
    store: list = field(default_factory=list)     # full mode: store records (each with "proc")
    wire: list = field(default_factory=list)
    counters: list = field(default_factory=list)  # counters mode: per-key totals
    notes: list = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "counters" if self.counters and not (self.store or self.wire) else "full"


def files_of(path) -> list:
    return sorted(Path(path).glob("objects-*.jsonl"))


def has_objects(path) -> bool:
    p = Path(path)
    return p.is_dir() and bool(files_of(p))


# the header's fields and the types they hold (None allowed): the reader keys processes by (host, pid)
_HEADER_TYPES = {"pid": int, "host": str, "t0_ns": (int, float), "t1_ns": (int, float), "settings": dict,
                 "argv": list, "mode": str, "source": str}


def _header_ok(head) -> bool:
    return all(head.get(k) is None or (isinstance(head[k], t) and not isinstance(head[k], bool))
               for k, t in _HEADER_TYPES.items())


def read_objects(path) -> ObjectTrace:
    p = Path(path).expanduser()
    out = ObjectTrace(path=p, processes=[])
    procs = {}   # (host, pid) -> index: the Python tracer's file and the preload's of one process
    for f in files_of(p):
        try:
            lines = f.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read {f}: {exc}") from None
        try:
            head = json.loads(lines[0]) if lines else {}
        except ValueError:
            head = {}
        if not isinstance(head, dict) or head.get("schema") != OBJECTS_SCHEMA:
            raise DataError(f"{f} is not an object-store trace (no {OBJECTS_SCHEMA} header)")
        if not _header_ok(head):
            raise DataError(f"{f}: its header's fields have the wrong types (a damaged object-store trace)")
        n = procs.setdefault((head.get("host"), head.get("pid")), len(out.processes))
        if n == len(out.processes):
            out.processes.append({**head, "sources": [head.get("source", "python")]})
        else:
            first = out.processes[n]
            first["sources"].append(head.get("source", "python"))
            first["settings"] = {**(head.get("settings") or {}), **(first.get("settings") or {})}
        for i, line in enumerate(lines[1:], 2):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict):   # damaged: not JSON, or JSON that is no record (a bare number)
                out.notes.append(f"{f.name}: line {i} unreadable, skipped")
                continue
            rec["proc"] = n
            if "count" in rec:
                out.counters.append(rec)
            elif rec.get("level") == "wire":
                out.wire.append(rec)
            else:
                out.store.append(rec)
    return out
