"""`climio predict` and `climio.predict(...)`: the model's prediction of a workflow and, with
--check, the same reads run cold here and compared with it (the measuring half the pure
climio.model.workflow leaves to its caller).

    workflow_checked(wf)              the workflow's stack is one climio measures (InputError if not)
    check_workflow(wf, prediction)    [Check] per read: predicted against the median cold run
    stack_cache(stack, path, var, bytes)  the chunk cache the stack really opens the variable with
    predict_api(source, ...)          climio.predict: a path, a workflow file or an xarray Dataset
"""

import functools
import os
from pathlib import Path

from climio.base.errors import InputError
from ..model.workflow import (DEFAULT_STACK, Check, Workflow, WorkflowPrediction, load, predict_workflow, profile_for,
                              read_specs, reads_for, resolve)
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


def predict_api(source, var=None, read="xt", tasks=1, stack=DEFAULT_STACK, passes=1, profile=None,
                chunk_cache=None, check=False, reps=3, warn=None):
    """Predict (and with check=True also measure) reading `var` of `source` (a path, a workflow
    YAML/JSON file, or an xarray Dataset) with the read shape(s) `read` (xt, xy, xyt, a template,
    or a list of them, with `passes` one count or one per read), through `stack` with `tasks`
    tasks. The chunk cache is the one the stack really opens the variable with; `chunk_cache`
    (bytes or a size such as "64MiB") asks it for another.

        p = climio.predict("ta.nc", var="ta", read=["xy", "xt"], passes=[30, 5])
        print(p)                    # the breakdown and the flowchart path
        p.seconds, p.total_s        # the reads (all passes); with the opens
        p.items                     # [(ReadSpec, Layout, codec, Prediction)] per read: io_s, decode_s,
                                    #   cpu_s, counts (decodes, chunk_cache_hits, ...), chunk_cache, path
        p.to_dict()                 # the same numbers as `climio predict --json`
    """
    if chunk_cache is not None and not isinstance(chunk_cache, int):
        from climio.dataset.options import parse_size
        chunk_cache = parse_size(str(chunk_cache))
    import warnings
    warn = warn or (lambda line: warnings.warn(line, stacklevel=3))
    if isinstance(source, (str, Path)) and Path(source).suffix.lower() in (".yaml", ".yml", ".json"):
        wf = load(source)
    else:
        specs = read_specs(read, passes)
        is_path = isinstance(source, (str, Path))
        wf = Workflow(str(source) if is_path else None, var, specs, tasks, stack, chunk_cache,
                      dataset=None if is_path else source)
    workflow_checked(wf)
    path = wf.file
    if path is None and wf.dataset is not None:
        path = wf.dataset.encoding.get("source")
    prof = profile_for(path, profile, warn)
    wp = predict_workflow(wf, prof, cache_of=stack_cache)
    if check:
        wp.checks = check_workflow(wf, wp, reps)
    return wp
