"""`climio predict` and `climio.predict(...)`: the model's prediction of a workflow and, with
--check, the same reads run cold here and compared with it (the measuring half the pure
climio.model.workflow leaves to its caller).

    workflow_checked(wf)              the workflow's stack is one climio measures (InputError if not)
    check_workflow(wf, prediction)    [Check] per read: predicted against the median cold run
    stack_cache(stack, path, var, bytes)  the chunk cache the stack really opens the variable with
"""

import functools
import os

from climio.base.errors import InputError
from ..model.workflow import Check, Workflow, WorkflowPrediction, reads_for, resolve
from ..measure.tasks import check_stack


def workflow_checked(wf: Workflow) -> Workflow:
    """`wf`, once its stack is one of the stacks climio reads with (one line otherwise)."""
    check_stack(wf.stack)
    return wf


def stack_cache(stack, path, var, chunk_cache_bytes=None):
    """{nbytes, nslots, w0}: the chunk cache `stack` reads `var` of `path` with, read from the
    library (climio.measure.stacks.chunk_cache_of), with `chunk_cache_bytes` asked as --check and the
    studies ask it (measure.probes.chunk_cache_spec); None when the library cannot say (netCDF-3,
    the native probe not built: the model then takes the profile's)."""
    if not path or not os.path.exists(str(path)):
        return None
    st = os.stat(str(path))
    return _stack_cache(stack, os.path.abspath(str(path)), var, chunk_cache_bytes, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _stack_cache(stack, path, var, chunk_cache_bytes, _mtime, _size):
    from climio.base.errors import ClimioError
    from ..measure.probes import chunk_cache_spec
    from climio.measure.stacks import chunk_cache_of
    try:
        return chunk_cache_of(stack, path, var, chunk_cache_spec(chunk_cache_bytes))
    except (ClimioError, OSError, KeyError):
        return None


def check_workflow(wf: Workflow, wp: WorkflowPrediction, reps=3) -> list:
    """Run every read of the workflow cold (one pass) and compare with its prediction per pass."""
    from ..measure.tasks import measure, median_wall
    if wf.dataset is not None and not any(resolve(wf, s).location for s in wf.reads):
        raise InputError("--check needs a file: the Dataset has no source on disk")
    out = []
    for spec, lay, codec, p in wp.items:
        desc = resolve(wf, spec)
        path, var = desc.location, desc.var
        reads = reads_for(desc, spec.read, var)
        needed = p.counts.cold_bytes()
        recs = measure(path, var, reads, wf.stack, wf.tasks, reps, wf.chunk_cache, platform_id=p.platform_id,
                       params={"read": spec.read}, needed_bytes=int(needed))
        walls = [r["metrics"]["wall_s"] for r in recs]
        out.append(Check(spec.read, p.seconds / spec.passes, median_wall(recs), walls))
    return out
