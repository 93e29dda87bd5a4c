"""The one facts type every advice rule reads, and the trace vocabulary its sources share.

A climio trace's events (climio.trace.analysis), a counters-mode trace and a Darshan log
(climio.trace.counters) and a workflow with the model's predictions (climio.advice) each produce
a Facts; the rules (climio.rules) judge it, whatever produced it. A fact a source cannot give is
None, with the reason in `missing`: the rules that need it are listed as not checked.
"""

import os
import re
import shlex
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Callable, Optional

# Top of the stack first: the order of the flow figure's rows and of every layer table.
TRACE_LAYER_ORDER = ("netcdf", "hdf5", "mpiio", "stdio", "posix")
# Layers whose data calls carry file offsets, lowest (closest to storage) first.
OFFSET_LAYERS = ("posix", "stdio", "mpiio")
LIBRARY_LAYERS = ("netcdf", "hdf5")
# Kinds of a call (climio.trace.analysis.op_kind).
OTHER, READ, WRITE = 0, 1, 2
KIND_NAMES = ("other", "read", "write")

# Where facts come from, and the rule input each one is judged as.
INPUT_OF = {"trace": "trace", "climio-counters": "trace", "darshan": "darshan", "workflow": "workflow",
            "object-store": "object-store"}
INPUTS = ("workflow", "trace", "darshan", "object-store")

# The facts a rule can name in `needs`: Facts fields.
FACT_NAMES = ("run", "files", "netcdf", "small_requests", "library_reads", "shared_writes", "truncation",
              "file_per_process", "workflow", "objects", "object_store")


@dataclass
class Facts:
    """What one input says, as the rules read it.

    source          trace | climio-counters | darshan | workflow
    run             the run as measured: io_time_s (traced I/O), process_time_s, wall_s, io_share,
                    command, ... (the report's "trace" section)
    stack           the program's own software stack (program_stack): the fixes are said in it
    files           per file: access entries per offset layer and kind (classification, counts, time)
    netcdf          {"variables": [...]}: per netCDF variable read, bytes decoded vs requested, cache fit
    small_requests  {"read"|"write": counts of the requests at each file's lowest offset layer,
                    the small ones, their time, sizes, files and who issued them (MPI-IO or not)}
    library_reads   small library reads of unchunked data and the POSIX bytes beneath them
    shared_writes   independent same-offset writes by several ranks, per file
    truncation      MPI_File_set_size / ftruncate under the libraries
    file_per_process  per-rank time and bytes on files one rank used
    workflow        WorkflowFacts: a workflow's reads with the model's predictions (advise computes them)
    objects         a job's object-store requests, store ops and wire requests (climio.trace.objects_facts)
    object_store    ObjectStoreFacts: reads of data in S3 with the object-store model's what-if
    profile         the platform profile the caller predicts with (duck-typed; None: none)
    tasks           ranks / processes / tasks of the run
    missing         fact name -> why this input cannot give it
    shown           sections the report shows that no rule reads (layers, functions, flow, ranks, ...)
    """
    source: str
    run: dict = field(default_factory=dict)
    stack: Optional[str] = None
    files: Optional[list] = None
    netcdf: Optional[dict] = None
    small_requests: Optional[dict] = None
    library_reads: Optional[dict] = None
    shared_writes: Optional[list] = None
    truncation: Optional[dict] = None
    file_per_process: Optional[dict] = None
    workflow: Optional["WorkflowFacts"] = None
    objects: Optional[dict] = None
    object_store: Optional["ObjectStoreFacts"] = None
    profile: object = None
    tasks: int = 1
    missing: dict = field(default_factory=dict)
    shown: dict = field(default_factory=dict)

    @property
    def input(self) -> str:
        return INPUT_OF[self.source]

    def has(self, name) -> bool:
        return getattr(self, name) is not None

    def why_missing(self, name) -> str:
        return self.missing.get(name) or f"no {name.replace('_', ' ')} in this input"

    def to_dict(self) -> dict:
        """The JSON-able summary the trace report renders (keys as before this type existed)."""
        return {"source": self.source, "trace": self.run, **self.shown, "program_stack": self.stack,
                "files": self.files or [],
                "netcdf": self.netcdf or {"variables": [], "reads": [], "reads_total": 0, "reads_without_geometry": 0},
                "requests": {"small": self.small_requests, "library_reads": self.library_reads},
                "shared_writes": self.shared_writes or [],
                "truncation": self.truncation or {"calls": 0, "time_s": 0.0, "share_of_io": 0.0, "under_close": 0,
                                                  "max_rank_time_s": 0.0, "close_time_s": 0.0, "functions": []},
                "file_per_process": self.file_per_process or {"files": 0, "ranks": 0},
                "objects": self.objects,
                "missing": dict(self.missing)}


# One read of a workflow as the model predicted it (climio.model): spec (.read, .passes), the
# variable's Layout, its codec, the Prediction (.seconds, .io_s, .decode_s, .counts), the file,
# the variable and the read hyperslabs.
# desc: the variable's climio.dataset.description.Description (dimension names and roles)
WorkflowItem = namedtuple("WorkflowItem", "spec layout codec prediction path var reads desc", defaults=(None,))


@dataclass
class WorkflowFacts:
    """A workflow with its predictions. The core does not import the model: `again` and
    `rechunk_cost` are the caller's (climio.advice), predicting with the calibrated profile.

    again(layout=None, tasks=None, stack=None, cache=None, codec_of=None, nodes=1) -> (total s, s per pass)
        the same reads predicted with one thing changed (layout: Layout -> Layout; codec_of: codec -> codec)
    rechunk_cost(src Layout, dst Layout, codec) -> seconds of `climio rechunk` (the planner's prediction)
    """
    stack: str
    tasks: int
    chunk_cache: Optional[int]
    items: list
    again: Callable
    rechunk_cost: Callable
    out_name: str = "OUT.nc"
    cores: int = 1
    shared_fs_Bps: Optional[float] = None

    @property
    def total_s(self) -> float:
        return sum(it.prediction.seconds for it in self.items)

    @property
    def per_pass_s(self) -> float:
        return sum(it.prediction.seconds / it.spec.passes for it in self.items)

    @property
    def on_zarr(self) -> bool:
        """Some read is of a Zarr store or a reference (priced through a file stack as a proxy)."""
        return any(it.desc is not None and it.desc.is_zarr for it in self.items)

    def check_command(self, **change) -> str:
        """The workflow's reads with one thing changed (`tasks=2`, `stack=...`), as the `climio predict
        ... --check` line that predicts AND measures them (runnable as shown; --check measures files and
        S3 stores, so a local Zarr store's line predicts only); reads of several files
        or variables have no one such line: the flags, labelled."""
        flags = {"stack": self.stack, "tasks": self.tasks, **change}
        where = {(it.path, it.var) for it in self.items}
        if len(where) != 1 or not next(iter(where))[0]:
            return " ".join(f"--{k} {v}" for k, v in change.items()) + " (flags of climio predict/advise)"
        path, var = next(iter(where))
        reads = " ".join(f"--read {shlex.quote(it.spec.read)} --passes {it.spec.passes}" for it in self.items)
        return (f"climio predict {shlex.quote(path)} --var {shlex.quote(var)} {reads} "
                + " ".join(f"--{k} {v}" for k, v in flags.items()) + ("" if self.on_zarr else " --check"))


# --- the program's own stack -------------------------------------------------------------------------

# Python libraries a script may read through, the one it works in first (xarray drives netCDF4 or h5netcdf).
_PY_STACKS = (("xarray", "xarray"), ("h5netcdf", "h5netcdf"), ("netCDF4", "netcdf4-python"), ("h5py", "h5py"))
_LAUNCHERS = ("mpirun", "mpiexec", "srun", "aprun", "orterun", "prun")


def program_stack(command, cwd=None) -> Optional[str]:
    """The stack a traced program reads through, from its command line: for a Python interpreter,
    the first library of _PY_STACKS its script (or -c code) imports ("python" for none of them);
    "native" for another program (C, Fortran: the fixes are library calls); None when unknown.
    A launcher (mpirun -n 4 ...) is looked through."""
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError:
            command = command.split()
    argv = [str(a) for a in (command or [])]
    if not argv:
        return None
    py = next((i for i, a in enumerate(argv) if re.match(r"python[0-9.]*$", os.path.basename(a))), None)
    if py is None:
        launched = os.path.basename(argv[0]) in _LAUNCHERS
        return "native" if not launched or len(argv) > 1 else None
    rest = argv[py + 1:]
    code = ""
    for i, a in enumerate(rest):
        if a == "-c" and i + 1 < len(rest):
            code = rest[i + 1]
            break
        if a == "-m":
            break
        if not a.startswith("-"):
            path = a if os.path.isabs(a) or not cwd else os.path.join(cwd, a)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    code = fh.read(1 << 20)
            except OSError:
                pass
            break
    for module, stack in _PY_STACKS:
        # `import xarray`, `import numpy as np, xarray as xr`, `from xarray import ...`
        if re.search(rf"^\s*(import\s+([\w.]+(\s+as\s+\w+)?\s*,\s*)*|from\s+){module}\b", code, re.M):
            return stack
    return "python"


@dataclass
class ObjectStoreFacts:
    """Reads of a variable in object storage (a Zarr store or a netCDF-4 object) and the object-store
    model's what-if (climio.advice computes it; the core does not import the model).

    desc        the variable's climio.dataset.description.Description (store, chunks, shards, roles)
    url         where it is; stack: the stack that reads it; concurrency: GETs it keeps in flight
    now_s       the reads as they are, all passes (for a netCDF-4 object: downloading it first)
    again(chunks=, shards=, stack=, concurrency=) -> seconds of the same reads, all passes
    read_counts [(read name, its count)] of the workflow's reads
    reference_s the reads through a kerchunk reference (netCDF-4 objects), reference_command its command
    endpoint_url the S3 endpoint the store was reached at ("" for AWS): the advised commands name it
    """
    desc: object
    url: str
    stack: str
    concurrency: float
    now_s: float
    again: Callable
    read_counts: list
    reference_s: Optional[float] = None
    reference_command: str = ""
    endpoint_url: str = ""

    def rechunk_command(self, suffix: str, args: str) -> str:
        """`climio rechunk URL s3://BUCKET/STEM-SUFFIX.zarr ARGS [--endpoint-url E]`: the copy written back
        to object storage beside the input (streamed: nothing staged on local disk)."""
        import shlex
        base = self.url.rstrip("/")
        stem = base.rsplit("/", 1)[-1]
        stem = stem.rsplit(".", 1)[0] if "." in stem else stem
        out = f"{base.rsplit('/', 1)[0]}/{stem}-{suffix}.zarr"
        where = f" --endpoint-url {shlex.quote(self.endpoint_url)}" if self.endpoint_url else ""
        return f"climio rechunk {shlex.quote(base)} {shlex.quote(out)} {args}{where}"
