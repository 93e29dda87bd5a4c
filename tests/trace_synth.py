"""Synthetic trace directories in the exact format of csrc/trace/FORMAT.md, for tests that must
not wait for the C tracer.

    write_synthetic(dir, events, host=, pid=, rank=, done=, aux=) -> stem   one process's file set
    SynthProc: builds nested calls on a clock, as the tracer would see them:

        p = SynthProc(host="n1", pid=10, rank=0)
        with p.span("nc_get_vara_float", "netcdf", file="f.nc", var="v", size=800, aux={...}):
            p.leaf("pread64", "posix", dur=1000, file="f.nc", offset=0, size=800)
        p.write(trace_dir)
"""

import contextlib
import json
from pathlib import Path

import numpy as np

from climio.trace.reader import LAYER_IDS, RECORD_DTYPE

T0 = 1_700_000_000_000_000_000  # an arbitrary CLOCK_REALTIME origin (ns)


def write_synthetic(trace_dir, events, host="synth", pid=1000, rank=-1, done=True, aux=None, t0_ns=T0,
                    layers=("posix", "mpiio", "netcdf", "hdf5")):
    """Write one process's file set. `events`: dicts with func, layer (name or number), t_start,
    t_end (ns) and optional file, var, offset, size, ret, rank, tid, depth, flags, aux (dict).
    Events are written in the order of their end time, deeper first on ties (a parent ends with
    or after its children), as the tracer appends them. `done`: True (a normal .done.json),
    False (none: a killed process) or a dict merged into the default .done.json."""
    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    events = sorted(events, key=lambda e: (e["t_end"], -e.get("depth", 0)))
    ids = {}

    def sid(text):
        if not text:
            return 0
        return ids.setdefault(str(text), len(ids) + 1)

    recs = np.zeros(len(events), dtype=RECORD_DTYPE)
    aux_lines = []
    for i, e in enumerate(events):
        layer = e["layer"] if isinstance(e["layer"], int) else LAYER_IDS[e["layer"]]
        size = e.get("size", -1)
        flags = e.get("flags", 0) | (1 if e.get("aux") else 0)
        recs[i] = (e["t_start"], e["t_end"], e.get("offset", -1), size,
                   e.get("ret", size if layer in (1, 2) and size >= 0 else 0),
                   sid(e.get("file")), sid(e["func"]), sid(e.get("var")), e.get("rank", rank),
                   e.get("tid", pid), e.get("depth", 0), layer, flags)
        if e.get("aux"):
            aux_lines.append(json.dumps({"ev": i, **e["aux"]}))
    for k, rec in (aux or {}).items():
        aux_lines.append(json.dumps({"ev": k, **rec}))
    stem = f"{host}-{pid}"
    (trace_dir / f"{stem}.events").write_bytes(recs.tobytes())
    (trace_dir / f"{stem}.strings").write_text("".join(f"{i}\t{t}\n" for t, i in ids.items()))
    if aux_lines:
        (trace_dir / f"{stem}.aux.jsonl").write_text("\n".join(aux_lines) + "\n")
    if done is not False:
        info = {"pid": pid, "rank": rank, "host": host, "events": len(events), "dropped": 0, "partial": False,
                "end": "exit", "clock": "CLOCK_REALTIME", "t0_ns": t0_ns, "layers": list(layers)}
        if isinstance(done, dict):
            info.update(done)
        (trace_dir / f"{stem}.done.json").write_text(json.dumps(info))
    return stem


class SynthProc:
    """One process's calls on a clock in ns: leaf() for a call without traced children, span()
    for a call whose children are made inside the `with` block. Depth follows the nesting."""

    def __init__(self, host="synth", pid=1000, rank=-1, t0=T0):
        self.host, self.pid, self.rank, self.t0 = host, pid, rank, t0
        self.clock = t0 + 1000
        self.events, self.depth = [], 0

    def _event(self, func, layer, t_start, t_end, **kw):
        e = {"func": func, "layer": layer, "t_start": t_start, "t_end": t_end, "depth": self.depth,
             "rank": self.rank, "tid": kw.pop("tid", self.pid)}
        e.update({k: v for k, v in kw.items() if v is not None})
        self.events.append(e)
        return e

    def idle(self, ns):
        """Time outside traced calls (computation)."""
        self.clock += ns

    def leaf(self, func, layer, dur, **kw):
        t = self.clock
        self.clock += dur
        return self._event(func, layer, t, self.clock, **kw)

    @contextlib.contextmanager
    def span(self, func, layer, before=0, after=0, **kw):
        """A parent call: `before` ns of its own time, then its children, then `after` ns."""
        t = self.clock
        self.clock += before
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        self.clock += after
        self._event(func, layer, t, self.clock, **kw)

    def write(self, trace_dir, done=True):
        return write_synthetic(trace_dir, self.events, host=self.host, pid=self.pid, rank=self.rank, done=done,
                               t0_ns=self.t0)


def ranks_beside_a_wrapper():
    """Two ranks writing a shared file for 1 s and 3 s, and a process without a rank (a launcher or
    `sh -c` wrapper, pid 299) reading its script: ([rank 0, rank 1], wrapper)."""
    procs = []
    for r, secs in enumerate([1, 3]):
        p = SynthProc(pid=300 + r, rank=r)
        p.leaf("pwrite64", "posix", dur=secs * 10**9, file="/shared", offset=r * 10, size=10)
        procs.append(p)
    w = SynthProc(pid=299, rank=-1)
    w.leaf("read", "posix", dur=10**9, file="/home/u/run.sh", offset=0, size=100)
    return procs, w
