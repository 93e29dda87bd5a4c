"""One request, from the command line, a workflow file or a Python call, to the model.

    make_request(target, var=, read=, passes=, tasks=, stack=, chunk_cache=, ...) -> Request
    predict(request, warn) -> WorkflowPrediction (a file, a local Zarr store, a Dataset) or
                              StorePrediction (data in S3)
    advise(request, warn)  -> Advice (every kind of data: files, local Zarr, S3)

`climio predict` / `climio advise` build the Request from their flags and call climio.predict /
climio.advise with it (climio.api), so the command and the Python API are one path:

    flags / YAML / Python -> make_request -> Request -> predict | advise
        -> climio.dataset.describe (once per variable) -> climio.dataset.reads (the one --read parser)
        -> climio.model (workflow.predict_workflow on files, object_store on S3)

Every option is honoured on every kind of data or refused in one line: --chunk-cache on Zarr
(zarr-python keeps no chunk cache), --check on a local Zarr store (climio measures it through the
netCDF stacks only).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from climio.base.errors import DataError, InputError, no_such_file
from climio.dataset.description import describe
from climio.stores.endpoint import is_s3_url, typed_url
from ..model import workflow as wfmod
from .loading import describe_workflow, load_workflow, profile_for

ZARR_PRICED_AS = "h5py"     # a local Zarr store: Python over a C decoder per chunk, as h5py reads


@dataclass
class Request:
    target: object = None                 # a path, an s3:// URL, an xarray/netCDF4 Dataset
    var: Optional[str] = None
    reads: list = field(default_factory=list)     # [ReadSpec]
    tasks: Optional[int] = None           # None: the workflow file's, else 1
    stack: Optional[str] = None           # None: the workflow file's, else the data's default
    chunk_cache: Optional[int] = None     # bytes per variable; None: the stack's
    profile: object = None                # a Profile, a path to one, or None (this platform's)
    endpoint_url: Optional[str] = None
    workflow: Optional[str] = None        # a YAML/JSON workflow file
    check: bool = False
    reps: int = 3
    keep_codec: bool = False

    @property
    def in_s3(self) -> bool:
        return isinstance(self.target, (str, Path)) and is_s3_url(typed_url(self.target))


def _is_workflow_file(target) -> bool:
    if not isinstance(target, (str, Path)):
        return False
    p = Path(target)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return True
    if suffix != ".json" or not p.is_file():
        return False
    try:     # a kerchunk reference is JSON too: it has "refs"
        return "refs" not in json.loads(p.read_text())
    except (OSError, ValueError):
        return True


def _size(value):
    if value is None or isinstance(value, int):
        return value
    from climio.dataset.options import parse_size
    return parse_size(str(value))


def make_request(target=None, var=None, read=None, passes=None, tasks=None, stack=None, chunk_cache=None,
                 profile=None, endpoint_url=None, workflow=None, check=False, reps=3, keep_codec=False) -> Request:
    """The Request of a command or a Python call; one-line InputErrors for what does not fit."""
    if target is not None and workflow is None and _is_workflow_file(target):
        target, workflow = None, target
    if workflow is not None and (target is not None or read):
        raise InputError("give a --workflow file or FILE --read ..., not both")
    if workflow is None and target is None:
        raise InputError("give a FILE and --read (xt, xy, xyt or a template), or --workflow FILE.yaml")
    if workflow is None and not read:
        raise InputError("say how the workflow reads: --read xt|xy|xyt|TEMPLATE (repeatable)")
    if tasks is not None and (isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1):
        raise InputError(f"--tasks {tasks!r} must be a positive integer")
    reads = wfmod.read_specs(read, passes if passes not in (None, []) else 1) if read else []
    if isinstance(target, (str, Path)):
        target = typed_url(target)
    return Request(target, var, reads, tasks, stack, _size(chunk_cache), profile, endpoint_url,
                   str(workflow) if workflow else None, check, reps, keep_codec)


def _no_chunk_cache(req, desc) -> None:
    if req.chunk_cache is not None and desc.is_zarr:
        raise InputError(f"--chunk-cache: {desc.location} is Zarr, which keeps no chunk cache (zarr-python "
                         "decodes every chunk a read touches); leave --chunk-cache out")


def _has_values(desc) -> None:
    """A variable with a 0-length dimension (a record variable with no record yet) has nothing to
    read: said of the file (exit 3), not as a read shape "must be positive" (exit 2, before)."""
    empty = [d for d, n in zip(desc.dims, desc.shape) if int(n) == 0]
    if empty:
        raise DataError(f"{desc.location or 'the dataset'}: {desc.var} has no values (dimension {empty[0]} has "
                        "length 0): nothing to read")


def workflow_of(req: Request):
    """(Workflow, the first read's Description) of a request on a file, a local Zarr store or a Dataset."""
    from .predict import workflow_checked
    if req.workflow:
        wf = load_workflow(req.workflow)
        wf.tasks = req.tasks or wf.tasks
        wf.stack = req.stack or wf.stack
        wf.chunk_cache = req.chunk_cache if req.chunk_cache is not None else wf.chunk_cache
    else:
        is_data = not isinstance(req.target, str)
        if isinstance(req.target, str) and not Path(req.target).exists():
            raise no_such_file(req.target)
        wf = wfmod.Workflow(None if is_data else req.target, req.var, list(req.reads), req.tasks or 1,
                            req.stack or wfmod.DEFAULT_STACK, req.chunk_cache, dataset=req.target if is_data else None,
                            endpoint_url=req.endpoint_url)
    desc = wfmod.resolve(describe_workflow(wf), wf.reads[0])
    _no_chunk_cache(req, desc)
    _has_values(desc)
    if desc.is_zarr:
        if req.check:
            raise InputError(f"--check: {desc.location} is a local Zarr store; climio measures reads through the "
                             "netCDF stacks (--check works on netCDF-4 files and on Zarr in S3)")
        wf.stack, wf.chunk_cache = ZARR_PRICED_AS, 0
        return wf, desc
    return workflow_checked(wf), desc


def _profile(req, wf, warn):
    path = wf.file
    if path is None and wf.dataset is not None:
        path = getattr(wf.dataset, "encoding", {}).get("source")
    return profile_for(path, str(req.profile) if isinstance(req.profile, Path) else req.profile, warn)


def predict(req: Request, warn=None):
    """The model's prediction of the request (and with req.check, the reads run cold beside it)."""
    if req.in_s3:
        return _store_predict(req, warn)
    from .predict import check_workflow, stack_cache
    wf, desc = workflow_of(req)
    prof = _profile(req, wf, warn)
    wp = wfmod.predict_workflow(wf, prof, cache_of=None if desc.is_zarr else stack_cache)
    if desc.is_zarr:
        what = "a kerchunk reference" if desc.store == "reference" else "a local Zarr store"
        wp.notes = [f"{what}: priced as {ZARR_PRICED_AS} reads of whole chunks with no chunk cache "
                    "(zarr-python keeps none)"]
    if req.check:
        wp.checks = check_workflow(wf, wp, req.reps)
    return wp


def _store_desc(req):
    if req.workflow:
        raise InputError("a workflow file names local files; give the s3:// URL with --read instead")
    desc = describe(req.target, req.var, req.endpoint_url)
    _no_chunk_cache(req, desc)
    return desc


def _store_predict(req, warn):
    from .object_store import predict_store
    desc = _store_desc(req)
    if desc.store != "zarr-s3":
        raise InputError(f"{desc.location}: {desc.store} in S3 is predicted by `climio advise` (a reference or a "
                         "Zarr copy against downloading it); `climio predict` takes a Zarr store in S3")
    return predict_store(req.target, req.reads, stack=req.stack, endpoint_url=req.endpoint_url, check=req.check,
                         reps=req.reps, warn=warn, tasks=req.tasks or 1, desc=desc)


def advise(req: Request, warn=None):
    """Ranked advice for the request."""
    from .recommend import advise_workflow
    if req.in_s3:
        return _store_advice(req, warn)
    wf, desc = workflow_of(req)
    prof = _profile(req, wf, warn)
    return advise_workflow(wf, prof, str(req.workflow or desc.location or "the Dataset"), req.keep_codec)


def _store_advice(req, warn):
    """The object-store rules (climio.rules.object_store) judging the reads' Facts."""
    from climio import rules
    from .object_store import predict_store, store_facts
    from .recommend import Advice
    desc = _store_desc(req)
    kw = dict(endpoint_url=req.endpoint_url, warn=warn, tasks=req.tasks or 1, desc=desc)
    facts = store_facts(req.target, req.reads, stack=req.stack, **kw)
    if desc.store == "zarr-s3":
        now, notes = predict_store(req.target, req.reads, stack=req.stack, **kw), []
    else:
        now = None
        notes = [f"'now' is downloading the whole object first, then reading it: {facts.object_store.now_s:.3g} s "
                 "predicted"]
    return Advice(str(desc.location), "object-store", rules.judge(facts), now, f"rates of {desc.endpoint_url}", notes)
