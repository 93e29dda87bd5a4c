"""Ranked recommendations for a workflow (and, through advise/measured.py, for the Facts of a
climio trace or a Darshan log), by the rules of the one registry (climio.rules).

    (the request, from flags, a workflow file or Python, is built in advise/request.py)
    advise_workflow(wf, profile) -> Advice   the workflow's Facts (the model's predictions and a
                                       what-if predictor) judged by the registry
    Advice.lines() / Advice.to_dict()

Every recommendation carries its evidence, the predicted time before and after (seconds over
all passes), the one-off cost (the rechunk planner's prediction with this platform's rates, or
nothing), the break-even number of passes and, where it is a command, the exact command. They
are ranked by predicted gain; rules that predict nothing (trace facts without a file to model,
collective MPI-IO without the profile's MPI-IO records) follow, by the share of I/O time they concern.
"""

from dataclasses import dataclass, field
from pathlib import Path

from ..model import workflow as wfmod
from ..model import layout_search
from ..model.convert import rechunk_cost
from climio.machine.memory import here
from ..model.layout_search import Pattern
from ..model.predict import DATASET_PER_READ, SHARED_FS_KEY, cache_spec, predict, simulate
from ..model.profile import Profile
from .. import rules
from ..rules.facts import Facts, WorkflowFacts, WorkflowItem
from .loading import describe_workflow
from .predict import stack_cache



class Recommendation(dict):
    """One recommendation: the dict `climio advise --json` prints, read as attributes too
    (.rule, .title, .before_s, .after_s, .gain_s, .command, .evidence), with to_dict() as
    climio.predict's items have."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def to_dict(self) -> dict:
        return dict(self)


@dataclass
class Advice:
    source: str
    kind: str                         # workflow | trace | darshan | object-store
    recommendations: list
    prediction: object = None         # WorkflowPrediction for a workflow, StorePrediction for Zarr in S3
    platform_id: str = ""
    notes: list = field(default_factory=list)
    verdict: str = ""                 # measured inputs: is I/O the bottleneck of the run (rules.verdict)
    layout: dict = None               # several read patterns of one variable: the layout search's answer

    def __str__(self) -> str:
        return "\n".join(self.lines())

    @property
    def predicted_s(self):
        """The workflow's predicted time now (all passes, with the opens), or None for a trace."""
        return self.prediction.total_s if self.prediction is not None else None

    @property
    def best(self):
        """The first-ranked Recommendation (rule, title, before_s, after_s, gain_s, command, evidence,
        ... as attributes and keys; to_dict()), or None when no rule fired."""
        r = self.ranked()
        return r[0] if r else None

    def ranked(self) -> list:
        def key(r):
            if r.get("gain_s") is not None:
                return (0, -r["gain_s"])
            return (1, rules.SEVERITY_ORDER.get(r.get("severity"), 3), -(r.get("evidence", {}).get("share_of_io_time") or 0))
        return [Recommendation(r) for r in sorted(self.recommendations, key=key)]

    def to_dict(self) -> dict:
        return {"source": self.source, "kind": self.kind, "platform_id": self.platform_id, "notes": self.notes,
                "recommendations": self.ranked(),
                "prediction": self.prediction.to_dict() if self.prediction is not None else None,
                "verdict": self.verdict, "rules": rules.table(self.kind), "layout_search": self.layout}

    def lines(self) -> list:
        out = [f"advice for {self.source} ({self.kind}" + (f"; profile {self.platform_id})" if self.platform_id else ")")]
        out += [f"note: {n}" for n in self.notes]
        if self.verdict:
            out.append(self.verdict)
        if self.prediction is not None:
            out.append(f"predicted now: {self.prediction.total_s:.3g} s ({self.prediction.tasks} task(s), "
                       f"{self.prediction.stack})")
        out += layout_lines(self.layout)
        recs = self.ranked()
        if not recs and not (self.layout or {}).get("per_job"):     # several jobs: the layout is the advice
            n = len(rules.table(self.kind))
            out.append(f"no rule fired ({n} rules checked)")
        for i, r in enumerate(recs, 1):
            head = f"{i}. [{r['rule']}] {r['title']}"
            if r.get("gain_s") is not None:
                head += f": {r['before_s']:.3g} s -> {r['after_s']:.3g} s (saves {r['gain_s']:.3g} s)"
            if r.get("severity"):
                head += f" ({r['severity']}: could save {100 * (r['evidence'].get('share_of_run') or 0):.1f}% of the run)"
            out.append(head)
            out.append(f"   {r['message']}")
            if r.get("gain_s") is not None and r["gain_s"] <= 0:
                out.append("   no change predicted")
            elif r.get("gain_s") is not None and "one_off_s" in r and r["one_off_s"] is not None:
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
    describe_workflow(wf)
    wp = wfmod.predict_workflow(wf, prof, cache_of=stack_cache)
    items = []
    for spec, lay, codec, p in wp.items:
        desc = wfmod.resolve(wf, spec)
        items.append(WorkflowItem(spec, lay, codec, p, desc.location or None, desc.var,
                                  wfmod.reads_for(desc, spec.read, desc.var), desc))
    return wp, items


def _out_name(path) -> str:
    p = Path(path or "data.nc")
    return str(p.with_name(p.stem + "-rechunked" + (p.suffix or ".nc")))


def what_if(wf, profile: Profile, items):
    """again(layout=, tasks=, stack=, cache=, codec_of=, nodes=) -> (total s, s per pass): the
    workflow's reads predicted by the model with one thing changed (WorkflowFacts.again). The
    rules ask for the same simulation more than once (another stack with the same cache, the
    current layout): each one is simulated once (`memo`), the workflow's own counts included; the
    same reads on the same layout and cache (other task counts) take the prediction's own counts."""
    memo = {}

    def counts(k, it, lay, stack, spec, tasks):
        sr = profile.stack(stack)
        key = (k, lay, spec, stack in DATASET_PER_READ, sr.direct_sieve, min(tasks, max(len(it.reads), 1)))
        if key not in memo:
            memo[key] = simulate(lay, it.reads, spec, profile, tasks=key[-1], cache_per_read=key[3],
                                 direct_sieve=key[4])
        return memo[key]

    for k, it in enumerate(items):
        sr = profile.stack(wf.stack)
        memo[(k, it.layout, cache_spec(it.prediction.chunk_cache, sr), wf.stack in DATASET_PER_READ,
              sr.direct_sieve, min(wf.tasks, max(len(it.reads), 1)))] = it.prediction.counts

    def again(layout=None, tasks=None, stack=None, cache=None, codec_of=None, nodes=1):
        t = tp = 0.0
        st = stack or wf.stack
        for k, it in enumerate(items):
            lay2 = layout(it.layout) if layout else it.layout
            c2 = codec_of(it.codec) if codec_of else it.codec
            # the cache the stack really has for the variable (another stack: its own), `cache` bytes
            # with the same slots when a bigger cache is what-iffed
            real = (stack_cache(stack, it.path, it.var, wf.chunk_cache) if stack and stack != wf.stack
                    else it.prediction.chunk_cache)
            if real and cache is not None:
                real = {**real, "nbytes": int(cache)}
            size = cache if cache is not None else wf.chunk_cache
            spec = cache_spec({k2: real[k2] for k2 in ("nbytes", "nslots", "w0")} if real else
                              int(size if size is not None else profile.stack(st).chunk_cache_bytes), profile.stack(st))
            q = predict(lay2, it.reads, st, profile, tasks=tasks or wf.tasks, codec=c2 if lay2.compressed else "",
                        chunk_cache=spec if real else None, chunk_cache_bytes=None if real else int(spec.nbytes),
                        passes=it.spec.passes, nodes=nodes,
                        counts=it.prediction.counts if layout is None and stack is None and cache is None
                        else counts(k, it, lay2, st, spec, tasks or wf.tasks))
            t += q.seconds
            tp += q.seconds / it.spec.passes
        return t, tp
    return again


def workflow_facts(wf, profile: Profile) -> tuple:
    """(WorkflowPrediction, Facts) of a workflow: the model's predictions, the what-if predictor and
    the rechunk planner's cost, for the registry's workflow rules."""
    wp, items = _items(wf, profile)
    wff = WorkflowFacts(wf.stack, wf.tasks, wf.chunk_cache, items, what_if(wf, profile, items), rechunk_cost(profile, here()),
                        _out_name(items[0].path), cores=int(profile.parallel.get("cores") or 1),
                        shared_fs_Bps=profile.parallel.get(SHARED_FS_KEY))
    return wp, Facts("workflow", workflow=wff, profile=profile, tasks=wf.tasks)


class Progress:
    """What a long advise is doing, as plain lines on stderr (a terminal and a batch log alike): said
    only once the advise has run AFTER_S seconds, at most one line a second (issue 34: an advise
    that printed nothing for minutes). Called with a short text per step."""
    AFTER_S = 2.0

    def __init__(self, write=None):
        import sys
        import time
        self._clock = time.monotonic
        self._t0 = self._last = self._clock()
        self._write = write or (lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush()))
        self._pending = ""

    def __call__(self, text: str) -> None:
        now = self._clock()
        self._pending = text
        if now - self._t0 >= self.AFTER_S and now - self._last >= 1.0:
            self._last = now
            self._write(f"advise: {text} ({now - self._t0:.0f} s)")


def advise_workflow(wf, profile: Profile, source="", keep_codec: bool = False, progress=None) -> Advice:
    """`progress(text)`: told each step (default: Progress(), lines on stderr past 2 s; False: quiet)."""
    say = (Progress() if progress is None else progress) or (lambda text: None)
    say("predicting the workflow's reads")
    wp, facts = workflow_facts(wf, profile)
    say("judging the rules (their what-ifs are predicted too)")
    adv = Advice(source or str(wf.file), "workflow", rules.judge(facts), wp, profile.platform_id)
    items = facts.workflow.items
    if len(items) > 1 and len({(it.path, it.var) for it in items}) == 1 and len(items[0].layout.shape) >= 2:
        say("searching one chunk shape for the read patterns")
        adv.layout = search_layout(wf, profile, items, keep_codec, say)
        one_layout(adv)
    return adv


def one_layout(adv) -> None:
    """One recommended layout per output: with the layout search's answer for all the reads, a
    chunk-shape item that names another shape is left out (a note says so)."""
    best = adv.layout["best"]["chunks"]
    other = [r for r in adv.recommendations if r["rule"] == "chunk-shape"
             and list(r["evidence"]["target_chunks"]) != list(best or [])]
    if other:
        adv.recommendations = [r for r in adv.recommendations if r not in other]
        adv.notes.append(f"one layout for this output: chunks {best if best else 'contiguous'} searched over all the "
                         f"reads (below); the chunk-shape item for {other[0]['evidence']['target_chunks']} is left out")


def search_layout(wf, profile: Profile, items, keep_codec: bool = False, progress=None) -> dict:
    """One chunk shape for the workflow's read patterns of one variable (model.layout_search):
    the searched shape with the least predicted reads plus conversion, each pattern's time under
    it and now, and the `climio rechunk` command."""
    it = items[0]
    mix = [Pattern(f"{x.spec.read} x{x.spec.passes}" if [y.spec.read for y in items].count(x.spec.read) > 1
                   else x.spec.read, x.reads, x.spec.passes) for x in items]
    cache = it.prediction.chunk_cache
    res = layout_search.search(it.layout, it.codec, mix, wf.stack, profile, rechunk_cost(profile, here()), tasks=wf.tasks,
                               chunk_cache={k: cache[k] for k in ("nbytes", "nslots", "w0")} if cache else None,
                               keep_codec=keep_codec, contiguous_ok=not any(it.desc.unlimited), progress=progress)
    d = res.to_dict()
    if res.best is not res.current:
        target = ("--contiguous" + (" --compression none" if it.layout.compressed else "") if res.best.chunks is None
                  else f"-c {it.var}:{','.join(map(str, res.best.chunks))}")
        d["command"] = f"climio rechunk {it.path} {_out_name(it.path)} {target}"
    return d


def layout_lines(d) -> list:
    if not d:
        return []
    b, now = d["best"], d["current"]
    out = [f"one layout for the {len(b['per_pattern_s'])} read patterns ({d['searched']} chunk shapes searched, "
           f"{d['chunk_bytes'][0] >> 10} KiB to {d['chunk_bytes'][1] >> 20} MiB a chunk): "
           f"chunks {b['chunks']}" + (f" ({b['codec']}, {b['stored_bytes'] / 2**20:.0f} MiB on disk)" if b.get('codec') else "")
           + f": "
           f"{b['reads_s']:.3g} s of reads + {b['convert_s']:.3g} s to convert = {b['total_s']:.3g} s "
           f"(now {now['reads_s']:.3g} s in {now['chunks']})"]
    out += [f"   {name}: {b['per_pattern_s'][name]:.3g} s (now {now['per_pattern_s'][name]:.3g} s)"
            for name in b["per_pattern_s"]]
    out += [f"   note: {n}" for n in d["notes"]]
    out += job_lines(d)
    if d.get("command"):
        out.append(f"   command: {d['command']}")
    return out


def job_lines(d) -> list:
    """`climio advise T1 T2 ...` (advice/jobs.py): each job under the chosen layout, and what the
    layout chosen for it alone costs on the mix."""
    out = []
    for r in d.get("per_job") or []:
        own = f"{r['own_on_mix_s']:.3g} s" if r["own_on_mix_s"] is not None else "not priced"
        out.append(f"   {r['job']} (x{r['passes']}): {r['before_s']:.3g} s -> {r['after_s']:.3g} s; the layout best for "
                   f"it alone, {r['own_chunks']}, would cost the mix {own} (reads + conversion)")
    if d.get("canonical"):
        out.append("   canonical reads, predicted now -> chosen: " + "; ".join(
            f"{r['read']} {r['before_s']:.3g} -> {r['after_s']:.3g} s" for r in d["canonical"]))
    out += [f"   warning: {w}" for w in d.get("warnings") or []]
    return out
