"""`climio advise T1 T2 ...`: one layout for several traced jobs on the same variable (issue 35 item
3). Each job's traced reads are one read pattern of the mixed-read search (model.layout_search),
weighted by how often the job runs (`--passes` per trace, in trace order). Each job's own best
layout is searched too and priced on the whole mix in the same final stage, so the layout chosen
is never predicted worse on the mix than a layout chosen for any one job; the advice says what the
chosen layout does to each job and to the variable's canonical reads (one map, one full series, a
box over all time, the whole field), before -> after, and warns for each it makes >2x slower.

    WeightedJob(name, reads, passes, stack)
    advise_jobs(file, var, jobs, profile=None, keep_codec=False, warn=None, source="") -> Advice
"""

from dataclasses import dataclass

from climio.base.errors import InputError
from climio.dataset.description import describe
from climio.dataset.stack_names import MODEL_STACK
from ..model import layout_search
from ..model.convert import rechunk_cost
from climio.machine.memory import here
from ..model import layout_effects
from ..model.layout_effects import SLOWER_WARN
from ..model.layout_search import Pattern
from .loading import profile_for
from .predict import stack_cache
from .recommend import Advice, _out_name


@dataclass
class WeightedJob:
    name: str          # how the advice names it (the trace directory's name)
    reads: list        # [(start, count)] as traced
    passes: int = 1    # how often it runs
    stack: str = ""    # the program's stack (Facts.stack)


def _search(desc, codec, mix, stack, prof, cache, keep_codec, also=()):
    return layout_search.search(desc.layout, codec, mix, stack, prof, rechunk_cost(prof, here()), chunk_cache=cache,
                                keep_codec=keep_codec, contiguous_ok=not any(desc.unlimited), also=also)


def _chunks(c):
    return tuple(c.chunks) if c.chunks else None


def advise_jobs(file, var, jobs, profile=None, keep_codec=False, warn=None, source="") -> Advice:
    if len(jobs) < 2:
        raise InputError("one layout for several jobs needs at least two traces")
    desc = describe(str(file), var)
    if len(desc.shape) < 2:
        raise InputError(f"{var} of {file} has {len(desc.shape)} dimension(s): no layout to choose")
    prof = profile_for(file, profile, warn)
    stacks = {MODEL_STACK.get(j.stack, "netcdf4-python") for j in jobs}
    stack = sorted(stacks)[0]
    notes = [] if len(stacks) == 1 else [f"the jobs read through {', '.join(sorted(stacks))}: priced through {stack}"]
    cache = stack_cache(stack, desc.location, desc.var)
    cache = {k: cache[k] for k in ("nbytes", "nslots", "w0")} if cache else None
    codec = desc.codecs if desc.compressed else ""
    mix = [Pattern(j.name, j.reads, j.passes) for j in jobs]
    own = {j.name: _chunks(_search(desc, codec, [p], stack, prof, cache, keep_codec).best) for j, p in zip(jobs, mix)}
    res = _search(desc, codec, mix, stack, prof, cache, keep_codec, also=list(own.values()))
    d = res.to_dict()
    priced = {_chunks(c): c for c in [*res.ranked, res.current]}
    d["per_job"] = [{"job": j.name, "passes": j.passes, "own_chunks": list(own[j.name]) if own[j.name] else "contiguous",
                     "own_on_mix_s": priced[own[j.name]].total_s if own[j.name] in priced else None,
                     "before_s": res.current.per_pattern[j.name], "after_s": res.best.per_pattern[j.name]}
                    for j in jobs]
    d["warnings"] = [f"{r['job']}: {r['after_s'] / r['before_s']:.1f}x slower in the chosen layout (predicted "
                     f"{r['before_s']:.3g} s -> {r['after_s']:.3g} s over its {r['passes']} pass(es))"
                     for r in d["per_job"] if r["before_s"] > 0 and r["after_s"] > SLOWER_WARN * r["before_s"]]
    if res.best is not res.current and res.best.chunks:     # what else the chosen layout slows
        rows = layout_effects.effects(desc.layout, codec, res.best.chunks,
                                      layout_effects.canonical_reads(desc.shape, desc.roles), stack, prof, cache)
        d["canonical"] = rows
        d["warnings"] += layout_effects.warnings(rows)
    if res.best is not res.current:
        target = ("--contiguous" + (" --compression none" if desc.compressed else "") if res.best.chunks is None
                  else f"-c {desc.var}:{','.join(map(str, res.best.chunks))}")
        d["command"] = f"climio rechunk {desc.location} {_out_name(desc.location)} {target}"
    return Advice(source, "trace", [], None, prof.platform_id, notes, layout=d)

