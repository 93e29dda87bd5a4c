"""Workflow descriptions: which variable of which file is read how, how often, by how many tasks.

From the command line (`--read xt --passes 3 --tasks 4`), or a small YAML/JSON file:

    file: run1/ta.nc          # or a list under `reads` per read: file/var may differ per read
    var: ta
    stack: netcdf4-python     # netcdf4-python | h5py | h5netcdf | xarray | c-netcdf
    tasks: 4
    reads:
      - read: xt              # xy | xt | xyt | a count template such as 24,1,Y,X
        passes: 3             # times the workflow goes over the data this way
      - read: 1,1,Y,X

A read tiles the variable with hyperslabs of its count (access.slice_starts), in C order of the
starts, as the thesis's loops did. Pure: the caller loads the file (climio.advice.loading.load_workflow),
describes its data (describe_workflow: climio.dataset.describe) and finds the profile (profile_for);
this module takes the descriptions and the profile and returns numbers.
"""

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Optional

from climio.dataset.access import slice_starts
from climio.dataset.reads import read_count
from climio.base.errors import InputError
from climio.dataset.layout import Layout, format_chunks
from .predict import Prediction, predict
from .profile import Profile

DEFAULT_STACK = "netcdf4-python"


@dataclass
class ReadSpec:
    read: str                       # xy | xt | xyt | template
    passes: int = 1
    file: Optional[str] = None      # default: the workflow's
    var: Optional[str] = None


@dataclass
class Workflow:
    file: Optional[str]
    var: Optional[str]
    reads: list
    tasks: int = 1
    stack: str = DEFAULT_STACK
    chunk_cache: Optional[int] = None
    dataset: object = field(default=None, repr=False)   # an xarray Dataset instead of a file
    endpoint_url: Optional[str] = None                   # the S3 endpoint of an s3:// file
    described: dict = field(default_factory=dict, repr=False)   # (file, var) -> Description, opened once

    def __post_init__(self):
        # the stack's name is checked by the caller (climio.advice), which knows the stacks that
        # measure; an unknown one also fails in predict (the profile has no rates for it)
        if not isinstance(self.tasks, int) or isinstance(self.tasks, bool) or self.tasks < 1:
            raise InputError(f"tasks {self.tasks!r} must be a positive integer")
        if not self.reads:
            raise InputError("a workflow needs at least one read (--read xt|xy|xyt|TEMPLATE)")
        for r in self.reads:
            if not isinstance(r.passes, int) or r.passes < 1:
                raise InputError(f"passes {r.passes!r} of read {r.read} must be a positive integer")


def read_specs(reads, passes=1) -> list:
    """[ReadSpec] of read shapes and their passes: one count for every read, or one per read in
    the same order (`--read xy --passes 30 --read xt --passes 5`)."""
    reads = [reads] if isinstance(reads, str) else list(reads or [])
    if isinstance(passes, (list, tuple)):
        if len(passes) == 1:
            passes = list(passes) * len(reads)
        if len(passes) != len(reads):
            raise InputError(f"{len(passes)} --passes for {len(reads)} --read: give one --passes, or one per --read "
                             "in the same order")
    else:
        passes = [passes] * len(reads)
    return [ReadSpec(str(r), _int(n, "passes")) for r, n in zip(reads, passes)]


def _int(v, what):
    try:
        if isinstance(v, bool):
            raise ValueError
        return int(v)
    except (TypeError, ValueError):
        raise InputError(f"{what} {v!r} must be an integer") from None


def from_mapping(d: dict, base_dir=".") -> Workflow:
    if not isinstance(d, dict):
        raise InputError("a workflow file holds a mapping: file, var, stack, tasks, reads")
    unknown = set(d) - {"file", "var", "stack", "tasks", "reads", "chunk_cache", "passes", "read"}
    if unknown:
        raise InputError(f"unknown workflow key(s) {', '.join(sorted(unknown))}: use file, var, stack, tasks, reads")

    def path(p):
        return None if p is None else str(Path(base_dir, os.path.expanduser(str(p))))
    reads = d.get("reads")
    if reads is None and "read" in d:
        reads = [{"read": d["read"], "passes": d.get("passes", 1)}]
    if not isinstance(reads, list):
        raise InputError("workflow 'reads' must be a list of {read: xt, passes: N}")
    specs = []
    for r in reads:
        if isinstance(r, str):
            r = {"read": r}
        if not isinstance(r, dict) or "read" not in r:
            raise InputError(f"workflow read {r!r} needs a 'read' (xy, xt, xyt or a count template)")
        specs.append(ReadSpec(str(r["read"]), _int(r.get("passes", 1), "passes"), path(r.get("file")), r.get("var")))
    from climio.dataset.options import parse_size
    cc = d.get("chunk_cache")
    return Workflow(path(d.get("file")), d.get("var"), specs, _int(d.get("tasks", 1), "tasks"),
                    str(d.get("stack", DEFAULT_STACK)), parse_size(str(cc)) if cc is not None else None)


# --- layouts ---------------------------------------------------------------------------------------

def reads_for(layout, spec: str, var: str = "") -> list:
    """The (start, count) hyperslabs tiling the variable with the read `spec` (climio.dataset.reads,
    by the dimensions' roles when `layout` is a Description; a bare Layout takes the fallback roles);
    InputError (one line) for a read bigger than the variable or one that does not fit it."""
    shape = layout.shape
    if str(spec).strip().lower() == "stsa":
        return stsa_reads(shape)
    try:
        count = read_count(spec, shape, getattr(layout, "dims", None), getattr(layout, "roles", None),
                           getattr(layout, "var", var))
    except InputError as exc:
        msg = str(exc)
        if "outside 1.." in msg:
            raise InputError(f"read '{spec}' is bigger than variable {var or ''} of shape {format_chunks(shape)}: "
                             f"{msg.split(': ', 1)[-1]}") from None
        raise
    return slice_starts(shape, count)


def stsa_reads(shape, levels=None) -> list:
    """The STSA read pattern (thesis App. C.2): for each latitude, for each level, one x-t slab
    (T,1,1,X) at (0, z, y, 0): latitude outer, level inner (not C order of the starts)."""
    if len(shape) != 4:
        raise InputError(f"read 'stsa' needs a 4-D [t,z,y,x] variable, not shape {format_chunks(shape)}")
    t, z, y, x = shape
    return [((0, k, j, 0), (t, 1, 1, x)) for j in range(y) for k in range(levels or z)]


class ReadItem(NamedTuple):
    """One read of a workflow as predicted: unpacks as (spec, layout, codec, prediction), reads as
    attributes (.read, .passes, .seconds, ...), and to_dict() as `climio predict --json` prints it."""
    spec: ReadSpec
    layout: Layout
    codec: str
    prediction: Prediction

    @property
    def read(self) -> str:
        return self.spec.read

    @property
    def passes(self) -> int:
        return self.spec.passes

    @property
    def seconds(self) -> float:
        return self.prediction.seconds

    def to_dict(self) -> dict:
        return {"read": self.spec.read, "passes": self.spec.passes, "layout": self.layout.to_dict(),
                "codec": self.codec, "prediction": self.prediction.to_dict()}


@dataclass
class WorkflowPrediction:
    items: list            # [ReadItem]: (ReadSpec, Layout, codec, Prediction) with attributes and to_dict()
    tasks: int
    stack: str
    checks: list = field(default_factory=list)   # [Check] after --check
    notes: list = field(default_factory=list)    # how the data was priced, when not as asked

    def __str__(self) -> str:
        return "\n".join(self.lines())

    @property
    def seconds(self) -> float:
        return sum(p.seconds for _, _, _, p in self.items)

    @property
    def total_s(self) -> float:
        return sum(p.total_s for _, _, _, p in self.items)

    def lines(self) -> list:
        out = []
        for spec, lay, codec, p in self.items:
            out.append(f"read {spec.read} of {lay.label()} {format_chunks(lay.shape)}"
                       f"{' ' + codec if codec != 'none' else ''}, {spec.passes} pass{'es' if spec.passes != 1 else ''}:")
            out += ["  " + line for line in p.lines()]
        if len(self.items) > 1:
            out.append(f"workflow total: {self.total_s:.3g} s")
        out += [c.line() for c in self.checks]
        out += [f"note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "total_s": self.total_s, "tasks": self.tasks, "stack": self.stack,
                "notes": self.notes,
                "reads": [item.to_dict() for item in self.items],
                "checks": [{"read": c.read, "predicted_s": c.predicted_s, "measured_s": c.measured_s,
                            "measured_all": c.measured_all, "ratio": c.ratio} for c in self.checks]}


def resolve(wf: Workflow, spec: ReadSpec):
    """The Description of one read's variable, as the caller described it (wf.described, filled by
    climio.advice.loading.describe_workflow: the model opens nothing)."""
    key = workflow_key(wf, spec)
    if key not in wf.described:
        raise InputError(f"the workflow's data {key[0] or 'Dataset'}:{key[1] or ''} is not described: "
                         "describe it first (climio.advice.loading.describe_workflow)")
    return wf.described[key]


def workflow_key(wf: Workflow, spec: ReadSpec) -> tuple:
    """(file or None for the Dataset, var as asked) of one read: the key of wf.described."""
    src = spec.file or wf.file
    if src is None and wf.dataset is None:
        raise InputError("the workflow names no file")
    return (str(src) if src else None, spec.var or wf.var)


def predict_workflow(wf: Workflow, profile: Profile, layout_override=None, cache_of=None) -> WorkflowPrediction:
    """Every read of the workflow through the model; `layout_override(layout) -> Layout` predicts
    the same reads on another layout (what a rechunk would buy). `cache_of(stack, path, var,
    chunk_cache_bytes)` is the chunk cache the stack really opens the variable with (the caller
    reads it from the library: climio.measure.stacks.chunk_cache_of); without it, or without a file, the
    profile's for the stack. The libraries size it per file and stack, not per chunk shape, so a
    rechunked layout is predicted with the same cache."""
    items = []
    for spec in wf.reads:
        desc = resolve(wf, spec)
        lay, codec, path, var = desc.layout, desc.codecs, desc.location or None, desc.var
        reads = reads_for(desc, spec.read, var)
        cache = cache_of(wf.stack, path, var, wf.chunk_cache) if cache_of is not None and path else None
        if layout_override is not None:
            lay, codec = layout_override(lay, codec)
        p = predict(lay, reads, wf.stack, profile, tasks=wf.tasks, codec=codec if lay.compressed else "",
                    chunk_cache=cache, chunk_cache_bytes=wf.chunk_cache, passes=spec.passes)
        items.append(ReadItem(spec, lay, codec, p))
    return WorkflowPrediction(items, wf.tasks, wf.stack)


@dataclass
class Check:
    read: str
    predicted_s: float
    measured_s: float
    measured_all: list

    @property
    def ratio(self) -> float:
        return self.predicted_s / self.measured_s if self.measured_s else math.inf

    def line(self) -> str:
        return (f"check {self.read}: predicted {self.predicted_s:.3g} s, measured {self.measured_s:.3g} s (median of "
                f"{len(self.measured_all)} cold runs: {', '.join(f'{w:.3g}' for w in self.measured_all)}); "
                f"predicted/measured {self.ratio:.2f}")
