"""Ranked recommendations for a workflow, a climio trace directory or a Darshan log.

    advise(target, ...) -> Advice      target: a netCDF file (+ reads), a workflow YAML/JSON, a
                                       trace directory or a Darshan log
    Advice.lines() / Advice.to_dict()

Every recommendation carries its evidence, the predicted time before and after (seconds over
all passes), the one-off cost (the rechunk planner's prediction with this platform's rates, or
nothing), the break-even number of passes and, where it is a command, the exact command. They
are ranked by predicted gain; rules that predict nothing (trace facts without a file to model,
collective MPI-IO without the profile's MPI-IO records) follow, by the share of I/O time they concern.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..layout import Layout
from ..model import workflow as wfmod
from ..model.convert import conversion_plan
from ..model.profile import Profile
from . import rules
from .predict import workflow_checked

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


def rechunk_cost(profile: Profile, max_mem=None, workers=None):
    """(src Layout, dst Layout, codec) -> predicted seconds of the `climio rechunk` command the advice
    prints (the target keeps the source's codec when it is compressed): the conversion planner's plan
    with the profile's rates and the command's default memory and workers (climio.model.convert),
    the very number `climio rechunk --dry-run` predicts."""

    def cost(src: Layout, dst: Layout, codec: str) -> float:
        try:
            return conversion_plan(src, dst, profile, codec, codec if dst.compressed else "none", max_mem,
                                   workers).predicted_s
        except InputError:
            return float("nan")
    return cost


@dataclass
class Advice:
    source: str
    kind: str                         # workflow | trace | darshan
    recommendations: list
    prediction: object = None         # WorkflowPrediction for a workflow
    platform_id: str = ""
    notes: list = field(default_factory=list)

    def ranked(self) -> list:
        def key(r):
            if r.get("gain_s") is not None:
                return (0, -r["gain_s"])
            return (1, SEVERITY_ORDER.get(r.get("severity"), 3), -(r.get("evidence", {}).get("share_of_io_time") or 0))
        return sorted(self.recommendations, key=key)

    def to_dict(self) -> dict:
        return {"source": self.source, "kind": self.kind, "platform_id": self.platform_id, "notes": self.notes,
                "recommendations": self.ranked(),
                "prediction": self.prediction.to_dict() if self.prediction is not None else None,
                "rules": rules.REGISTRY}

    def lines(self) -> list:
        out = [f"advice for {self.source} ({self.kind}; profile {self.platform_id})"]
        out += [f"note: {n}" for n in self.notes]
        if self.prediction is not None:
            out.append(f"predicted now: {self.prediction.total_s:.3g} s ({self.prediction.tasks} task(s), "
                       f"{self.prediction.stack})")
        recs = self.ranked()
        if not recs:
            n = len([r for r in rules.REGISTRY if self.kind in r["inputs"]])
            out.append(f"no rule fired ({n} rules checked)")
        for i, r in enumerate(recs, 1):
            head = f"{i}. [{r['rule']}] {r['title']}"
            if r.get("gain_s") is not None:
                head += f": {r['before_s']:.3g} s -> {r['after_s']:.3g} s (saves {r['gain_s']:.3g} s)"
            elif r.get("severity"):
                head += f" ({r['severity']})"
            out.append(head)
            out.append(f"   {r['message']}")
            if r.get("gain_s") is not None and r["gain_s"] <= 0:
                out.append("   no change predicted")
            elif r.get("gain_s") is not None:
                be = r.get("break_even_passes")
                if r.get("one_off_s"):
                    out.append(f"   one-off cost {r['one_off_s']:.3g} s (climio rechunk, predicted with this platform's "
                               "rates)" + (f"; pays back after {be:.2f} passes" if be is not None else ""))
                else:
                    out.append("   no one-off cost: pays back from the first pass")
            if r.get("command"):
                out.append(f"   command: {r['command']}")
            if r.get("advice"):
                out.append(f"   -> {r['advice']}")
        return out


def _items(wf, prof):
    wp = wfmod.predict_workflow(wf, prof)
    items = []
    for spec, lay, codec, p in wp.items:
        _, _, path, var = wfmod.resolve(wf, spec)
        items.append((spec, lay, codec, p, path, var, wfmod.reads_for(lay, spec.read, var)))
    return wp, items


def _out_name(path) -> str:
    p = Path(path or "data.nc")
    return str(p.with_name(p.stem + "-rechunked" + (p.suffix or ".nc")))


def advise_workflow(wf, profile: Profile, source="") -> Advice:
    wp, items = _items(wf, profile)
    recs = rules.workflow_rules(wf, profile, items, rechunk_cost(profile), _out_name(items[0][4]))
    return Advice(source or str(wf.file), "workflow", recs, wp, profile.platform_id)


def _is_darshan(path: Path) -> bool:
    return path.is_file() and (path.suffix == ".darshan" or ".darshan" in path.name)


def advise_trace(path, profile: Profile = None, warn=None) -> Advice:
    """Advice for a climio trace directory or a Darshan log, through the same registry as a
    workflow: the trace rules' findings; collective-vs-independent on their small requests made in
    MPI-IO calls; and for each netCDF variable read whose file is on this machine, the workflow
    rules on its traced reads (the typical read tiled over the variable, as many tasks as the trace
    has ranks or processes). A workflow rule backed by a trace finding (a compressed variable read
    in partial chunks, a small chunk cache) gives that finding its predicted before/after, one-off
    cost and command; the others (tasks, stack, compression, chunk shape, ...) are added as they are."""
    from ..trace.report import build
    p = Path(path)
    facts, findings = build(p)
    kind = "darshan" if _is_darshan(p) else "trace"
    tasks = max(1, len((facts.get("ranks") or {}).get("units") or []))
    recs, notes = [], []
    variables = (facts.get("netcdf") or {}).get("variables") or []
    counts = {(v["file"], v["var"]): v.get("typical_count") for v in variables}
    modeled = {}

    def model(file, var, count=None):
        """The workflow advice of one traced variable, once (None where the model cannot say)."""
        if (file, var) not in modeled:
            try:
                modeled[(file, var)] = _traced_workflow(file, var, counts.get((file, var)) or count, tasks,
                                                        profile, warn)
            except Exception as exc:  # noqa: BLE001  (the trace findings stand without a prediction)
                notes.append(f"{var} of {file}: no prediction: {str(exc).splitlines()[0]}")
                modeled[(file, var)] = None
        return modeled[(file, var)]
    merged = set()      # (file, var, workflow rule) already told through a trace finding
    for f in findings:
        rec = {**f, "before_s": None, "after_s": None, "gain_s": None, "one_off_s": 0.0,
               "break_even_passes": None, "command": ""}
        ev = f.get("evidence", {})
        if f["rule"] in rules.MODEL_BACKED and ev.get("file") and ev.get("var") and os.path.exists(ev["file"]):
            want = rules.MODEL_BACKED[f["rule"]]
            adv = model(ev["file"], ev["var"], ev.get("typical_count"))
            modeled_rec = next((r for r in adv.recommendations if r["rule"] == want), None) if adv else None
            if modeled_rec:
                merged.add((ev["file"], ev["var"], want))
                rec.update({k: modeled_rec[k] for k in ("before_s", "after_s", "gain_s", "one_off_s",
                                                        "break_even_passes", "command")})
                rec["message"] += " " + modeled_rec["message"]
                # scale the prediction to the traced time of these reads
                traced = ev.get("time_s") or 0
                if traced and modeled_rec["before_s"]:
                    k = traced / modeled_rec["before_s"]
                    rec["evidence"] = {**ev, "model_scale_to_traced": k}
        elif f["rule"] in rules.MODEL_BACKED and ev.get("file"):
            notes.append(f"{f['rule']}: {ev['file']} is not on this machine: no predicted before/after")
        recs.append(rec)
    recs += rules.collective_findings(findings, profile, tasks)
    told = {r["rule"] for r in recs}
    for v in variables:
        if not os.path.exists(v["file"]):
            continue
        adv = model(v["file"], v["var"])
        for r in (adv.recommendations if adv else []):
            if (v["file"], v["var"], r["rule"]) in merged or (r["rule"] == "collective-vs-independent" and r["rule"] in told):
                continue
            recs.append({**r, "message": f"{v['var']} of {v['file']}, its traced reads of {list(v['typical_count'])} "
                                         f"by {tasks} task{'s' if tasks != 1 else ''}: {r['message']}"})
    prof_id = profile.platform_id if profile is not None else ""
    return Advice(str(path), kind, recs, None, prof_id, notes)


def _traced_workflow(file, var, count, tasks, profile, warn):
    """Advice of a traced variable read as a workflow: its typical read (count) tiling it."""
    if not count:
        return None
    template = ",".join(str(int(c)) for c in count)
    wf = wfmod.Workflow(file, var.lstrip("/"), [wfmod.ReadSpec(template)], tasks)
    return advise_workflow(wf, profile or wfmod.profile_for(file, None, warn))


def advise(target, var=None, reads=None, passes=1, tasks=None, stack=None, chunk_cache=None, profile=None,
           warn=None) -> Advice:
    """Advice for a target: a trace directory or Darshan log, a workflow file, or a netCDF file
    with its reads."""
    p = Path(target)
    if p.is_dir():
        return advise_trace(p, _profile_or_none(profile, None, warn), warn)
    if _is_darshan(p):
        return advise_trace(p, _profile_or_none(profile, None, warn), warn)
    if p.suffix.lower() in (".yaml", ".yml", ".json"):
        wf = wfmod.load(p)
        if tasks:
            wf.tasks = tasks
        if stack:
            wf.stack = stack
    else:
        if not reads:
            raise InputError("say how the workflow reads the file: --read xt|xy|xyt|TEMPLATE (repeatable)")
        wf = wfmod.Workflow(str(p), var, [wfmod.ReadSpec(r, passes) for r in reads], tasks or 1,
                            stack or wfmod.DEFAULT_STACK, chunk_cache)
    workflow_checked(wf)
    prof = wfmod.profile_for(wf.file, profile, warn)
    return advise_workflow(wf, prof, str(target))


def _profile_or_none(profile, path, warn):
    if profile is None:
        return None
    return wfmod.profile_for(path, profile, warn)
