"""What else a layout fix slows (issue 35 item 3, predicted): the canonical reads of the variable (one
map, one full series, a box over all time, the whole field) and the other traced jobs on the same
file (`--with DIR`), priced by the model before and after the fix (climio.model.layout_effects),
with a warning for each read that becomes more than 2x slower. `trace report` shows it under a
layout item, `trace try` under each layout fix (tried or not), both in their JSON.

    predicted_effects(file, var, chunks, stack, others=()) -> {"rows", "warnings", "profile", "chunks", "note"}
    conversion_s(file, var, chunks) -> seconds `climio rechunk` is predicted to take (None: unknown)
    others_of(with_dirs, file, var) -> ([(name, reads)], notes)
    effect_lines(effects) -> text lines
"""

import functools
import os

from climio.base.errors import ClimioError, InputError
from climio.dataset.description import describe
from climio.dataset.stack_names import MODEL_STACK
from climio import profiles
from ..model import convert, layout_effects
from .job_reads import job_reads


def _profile(path):
    """The profile climio advise takes for the file (climio.profiles.for_data); (Profile, its source
    said in a word)."""
    prof, _ = profiles.for_data(path)
    return prof, "built-in default rates" if prof.source == "defaults" else f"profile {prof.platform_id}"


@functools.lru_cache(maxsize=16)
def _described(file, var, mtime_ns):
    """One description per file version: trace report prices a layout item's effects and its
    conversion from the same file (two opens before)."""
    return describe(file, var)


def _describe(file, var):
    return _described(str(file), str(var).lstrip("/"), os.stat(file).st_mtime_ns)


def predicted_effects(file, var, chunks, stack, others=()) -> dict:
    """The canonical reads of `var` and `others` ([(name, [(start, count)])]: other traced jobs'
    reads of it), priced on the file's layout and in `chunks`, one pass each, by the model."""
    try:
        desc = _describe(file, var)
    except (ClimioError, OSError) as exc:
        return {"rows": [], "warnings": [], "profile": "", "note": f"not predicted: {str(exc).splitlines()[0]}"}
    prof, source = _profile(file)
    named = layout_effects.canonical_reads(desc.shape, desc.roles) + list(others)
    rows = layout_effects.effects(desc.layout, desc.codecs, chunks, named, MODEL_STACK.get(stack, "netcdf4-python"),
                                  prof)
    return {"rows": rows, "warnings": layout_effects.warnings(rows), "profile": source,
            "chunks": [int(c) for c in chunks], "note": ""}


def conversion_s(file, var, chunks):
    """The one-off cost of the layout fix: `climio rechunk FILE --var VAR -c chunks` as its own
    planner prices it (the command's defaults for memory and workers, the same codec), or None."""
    try:
        desc = _describe(file, var)
        prof, _ = _profile(file)
        dst = convert.Layout(desc.shape, desc.itemsize, tuple(int(c) for c in chunks), desc.layout.compressed,
                             desc.layout.stored_bytes)
        from climio.machine.memory import here
        return float(convert.conversion_plan(desc.layout, dst, prof, desc.codecs, machine=here()).predicted_s)
    except (ClimioError, OSError, ValueError):
        return None


def effect_lines(eff, indent="      ") -> list:
    """The predicted rows as text: one line for all, then a warning per read >SLOWER_WARN x slower."""
    if not eff:
        return []
    if not eff.get("rows"):
        return [f"{indent}what else it slows: {eff.get('note') or 'no canonical read for this variable'}"]
    out = [f"{indent}predicted per read, now -> in {eff['chunks']} ({eff['profile']}): " + "; ".join(
        f"{r['read']} {r['before_s']:.3g} -> {r['after_s']:.3g} s" for r in eff["rows"])]
    return out + [f"{indent}warning: {w}" for w in eff["warnings"]]


def others_of(with_dirs, file, var) -> tuple:
    """([(name, reads)] of the traced jobs in `with_dirs` that read `var` of `file`, [notes on those
    that did not]): the other jobs on the same file a layout fix is priced for."""
    named, notes = [], []
    for d in with_dirs or ():
        try:
            j = job_reads(d, file, var)
        except InputError as exc:
            notes.append(str(exc))
            continue
        named.append((j.name, j.reads))
    return named, notes
