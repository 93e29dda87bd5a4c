"""Advice for a measured run (the Facts of a climio trace or a Darshan log, climio.rules.facts),
starting from what was measured.

    advise_measured(facts, profile=None, warn=None, source="") -> Advice

The registry's rules judge the facts (with the profile, collective-vs-independent predicts from
its MPI-IO records). For each netCDF variable read whose file is on this machine, the workflow
rules judge its traced reads (the typical read tiled over the variable, as many tasks as the run
had ranks or processes) through the model, and every predicted time is scaled to the trace: the
baseline is the traced time of that variable's reads, the model's prediction of the same number
of reads is scaled to it (and the item says so when the two are more than DISAGREE_FACTOR apart),
and no item claims more than the traced I/O time. A workflow rule backed by a trace finding
(partial-chunk reads of compressed data, a small chunk cache) gives that finding its before/after,
one-off cost and command; the others (tasks, stack, compression, ...) are added as they are.
"""

import os

from climio.dataset.stack_names import MODEL_STACK
from .. import rules
from ..model import workflow as wfmod
from .loading import profile_for
from .recommend import Advice, advise_workflow

DISAGREE_FACTOR = 2.0
# the trace rules whose findings the model can turn into a predicted before/after (file and variable known)
MODEL_BACKED = {"partial-chunk-compressed": "chunk-shape", "chunk-cache-small": "chunk-cache"}
SCALED = ("before_s", "after_s", "gain_s", "one_off_s", "break_even_passes", "command")
# stacks a program can switch to without leaving its own: xarray through its engines
REACHABLE = {"xarray": {"netcdf4-python": "engine='netcdf4'", "h5netcdf": "engine='h5netcdf'"}}


def advise_measured(facts, profile=None, warn=None, source="") -> Advice:
    facts.profile = profile
    findings = rules.judge(facts)
    notes = []
    models = {}

    def model(v):
        key = (v["file"], v["var"])
        if key not in models:
            try:
                models[key] = _scaled(v, facts, profile, warn)
            except Exception as exc:  # noqa: BLE001  (the trace findings stand without a prediction)
                notes.append(f"{v['var']} of {v['file']}: no prediction: {str(exc).splitlines()[0]}")
                models[key] = None
            if models[key] and models[key]["note"]:
                notes.append(models[key]["note"])
        return models[key]

    variables = {(v["file"], v["var"]): v for v in ((facts.netcdf or {}).get("variables") or [])}
    merged, recs = set(), []
    for f in findings:
        rec = {"before_s": None, "after_s": None, "gain_s": None, "one_off_s": 0.0, "break_even_passes": None,
               "command": _trace_command(f), **f}
        ev = f.get("evidence", {})
        v = variables.get((ev.get("file"), ev.get("var")))
        if f["rule"] in MODEL_BACKED and v is not None and os.path.exists(v["file"]):
            m = model(v)
            m = m if m and m["fits"] else None      # a model that does not fit this job: the trace ranks
            backed = next((r for r in m["recommendations"] if r["rule"] == MODEL_BACKED[f["rule"]]), None) if m else None
            if backed:
                merged.add((v["file"], v["var"], backed["rule"]))
                rec.update({k: backed[k] for k in SCALED}, severity=backed["severity"])
                rec["message"] += " " + backed["message"]
                rec["evidence"] = {**ev, **{k: backed["evidence"][k] for k in ("traced_s", "model_same_reads_s",
                                                                               "model_scale_to_traced", "could_save_s",
                                                                               "share_of_run")}}
        elif f["rule"] in MODEL_BACKED and ev.get("file"):
            notes.append(f"{f['rule']}: {ev['file']} is not on this machine: no predicted before/after")
        recs.append(rec)
    told = {r["rule"] for r in recs}
    for v in variables.values():
        if not os.path.exists(v["file"]) or len(v.get("shape") or ()) < 2:   # coordinates: read once, nothing to re-lay out
            continue
        m = model(v)
        for r in (m["recommendations"] if m and m["fits"] else []):
            if (v["file"], v["var"], r["rule"]) in merged or (r["rule"] == "collective-vs-independent" and r["rule"] in told):
                continue
            recs.append({**r, "message": f"{v['var']} of {v['file']}, its traced reads of {list(v['typical_count'])} "
                                         f"by {facts.tasks} task{'s' if facts.tasks != 1 else ''}: {r['message']}"})
    prof_id = profile.platform_id if profile is not None else ""
    return Advice(source or str(facts.run.get("path", "")), facts.input, recs, None, prof_id, notes,
                  verdict=rules.verdict(facts))


def _trace_command(f) -> str:
    """The command a trace finding names by itself (the model may replace it): the rechunk line."""
    ev = f.get("evidence") or {}
    if f["rule"] == "partial-chunk-compressed" and ev.get("target_chunks"):
        return rules.fixes.rechunk_command(ev["file"], ev["var"], ev["target_chunks"])
    return ""


def _scaled(v, facts, profile, warn):
    """The workflow advice of one traced variable, its times scaled to the trace: {"recommendations",
    "note"} (None without a typical read)."""
    count = v.get("typical_count")
    if not count:
        return None
    template = ",".join(str(int(c)) for c in count)
    wf = wfmod.Workflow(v["file"], v["var"].lstrip("/"), [wfmod.ReadSpec(template)], facts.tasks,
                        MODEL_STACK.get(facts.stack, wfmod.DEFAULT_STACK))
    adv = advise_workflow(wf, profile or profile_for(v["file"], None, warn))
    wp = adv.prediction
    model_total = wp.seconds          # what the workflow rules call the total (WorkflowFacts.total_s)
    model_reads = sum(p.counts.calls * spec.passes for spec, _, _, p in wp.items)
    traced, reads = float(v["time_s"]), int(v["reads"])
    same = model_total * reads / model_reads if model_reads else model_total
    k = traced / model_total if model_total > 0 else 0.0
    apart = traced / same if same > 0 else float("inf")
    note = ""
    fits = 1 / DISAGREE_FACTOR <= apart <= DISAGREE_FACTOR
    if not fits:     # one line, no raw model time: a model this far off says nothing about this job
        note = (f"the model does not fit this job ({v['var']}: its traced reads took {traced:.3g} s, "
                f"{max(apart, 1 / apart) if apart > 0 else float('inf'):.0f}x from the model's): the items are "
                "ranked by the traced I/O time; `climio trace try` measures them")
    io = facts.run.get("io_time_s") or 0.0
    out = []
    for r in adv.recommendations:
        r = dict(r)
        if r["rule"] == "stack" and facts.stack in REACHABLE:     # say it in the program's own stack, or not at all
            engine = REACHABLE[facts.stack].get(r["evidence"]["stack"])
            if engine is None:
                continue
            r["command"] = f"xr.open_dataset(..., {engine})"
        elif r["rule"] == "stack" and facts.stack not in (None, "native") and r["evidence"]["stack"] == "c-netcdf":
            continue        # a Python program is not told to become a C one
        ev = {**r["evidence"], "traced_s": traced, "model_same_reads_s": same, "model_scale_to_traced": k}
        if r.get("before_s") is not None and r.get("after_s") is not None:
            before = r["before_s"] * k
            gain = max(0.0, r["before_s"] - r["after_s"]) * k
            if io > 0:      # no item claims more than the traced I/O time
                before, gain = min(before, io), min(gain, io)
            r.update(before_s=before, after_s=before - gain, gain_s=gain,
                     break_even_passes=(r["one_off_s"] / gain if gain > 0 and r.get("one_off_s") else None))
            r["message"] += f" (scaled to the traced {traced:.3g} s of these reads)"
        if str(r.get("command") or "").startswith("--") and facts.stack not in (None, "native"):
            r["command"] = ""       # a bare climio flag is no command a program's author can run
        saves, share = rules.saving_share(facts, r.get("gain_s") or 0.0)
        ev.update(could_save_s=saves, share_of_run=share)
        r.update(evidence=ev, severity=rules.severity(share))
        out.append(r)
    return {"recommendations": out, "note": note, "fits": fits}
