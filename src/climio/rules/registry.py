"""One registry of advice rules, below the studies: a trace's events, a counters-mode trace, a
Darshan log and a workflow all produce one Facts (climio.rules.facts), and every rule is written
once, on Facts.

    @rule(id, title, inputs=, needs=, thresholds=, evidence=, looks_for=)   registers a rule:
        inputs      which inputs it judges ("workflow", "trace", "darshan")
        needs       the Facts fields it reads; a rule whose needs an input lacks is "not checked"
        thresholds  its named thresholds, shown with every finding and in the rules table
        evidence    the keys of the evidence it prints (each finding's evidence has exactly these,
                    plus the time it concerns and its shares)
    judge(facts) -> findings, ranked: severity (the share of the run the item could save), then share
    not_checked(facts) -> [(rule id, why)]
    verdict(facts) -> one plain line: is I/O the bottleneck of the measured run?
    table(input=None) -> the registry as rows {id, title, inputs, needs, thresholds, evidence, looks_for}
    REGISTRY: {id: Rule}

Severity of a finding on measured facts: the share of the run's process time it could save
(high >= 20 %, medium >= 5 %, low below); no finding claims more than the traced I/O time.
"""

from dataclasses import dataclass
from typing import Callable

from .facts import INPUTS, FACT_NAMES, Facts  # noqa: F401  (the facts type is part of this face)

HIGH_SHARE, MEDIUM_SHARE = 0.20, 0.05
# Traced I/O below this share of the run's process time: I/O is not what makes the run slow.
IO_BOTTLENECK_SHARE = 0.10
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    inputs: tuple
    needs: tuple
    thresholds: dict
    evidence: tuple
    looks_for: str
    judge: Callable

    def row(self) -> dict:
        return {"id": self.id, "title": self.title, "inputs": list(self.inputs), "needs": list(self.needs),
                "thresholds": dict(self.thresholds), "evidence": list(self.evidence), "looks_for": self.looks_for}


REGISTRY = {}


def rule(id, title, *, inputs, needs, thresholds, evidence, looks_for):
    """Register the decorated function(facts) -> [finding] as rule `id`."""
    bad = [i for i in inputs if i not in INPUTS] + [n for n in needs if n not in FACT_NAMES]
    if bad or id in REGISTRY:
        raise ValueError(f"rule {id}: unknown inputs/needs {bad} or registered twice")

    def register(fn):
        REGISTRY[id] = Rule(id, title, tuple(inputs), tuple(needs), dict(thresholds), tuple(evidence), looks_for, fn)
        return fn
    return register


def rules_for(input_name) -> list:
    return [r for r in REGISTRY.values() if input_name in r.inputs]


def table(input_name=None) -> list:
    return [r.row() for r in REGISTRY.values() if input_name is None or input_name in r.inputs]


def _needs_of(r, facts) -> tuple:
    """collective-vs-independent reads a workflow or small requests, whichever the input has."""
    if facts.input == "workflow":
        return tuple(n for n in r.needs if n == "workflow") or r.needs
    return tuple(n for n in r.needs if n != "workflow")


def not_checked(facts) -> list:
    out = []
    for r in rules_for(facts.input):
        lacking = [n for n in _needs_of(r, facts) if not facts.has(n)]
        if lacking:
            out.append((r.id, "; ".join(dict.fromkeys(facts.why_missing(n) for n in lacking))))
    return out


def judge(facts: Facts) -> list:
    """Every rule of the facts' input whose needs the facts have, ranked."""
    out = []
    for r in rules_for(facts.input):
        if all(facts.has(n) for n in _needs_of(r, facts)):
            out.extend(r.judge(facts))
    return rank(out)


def rank(findings) -> list:
    def key(f):
        ev = f.get("evidence") or {}
        return (SEVERITY_ORDER.get(f.get("severity"), 3), -(ev.get("share_of_run") or 0),
                -(ev.get("share_of_io_time") or 0))
    return sorted(findings, key=key)


def severity(share_of_run) -> str:
    return "high" if share_of_run >= HIGH_SHARE else "medium" if share_of_run >= MEDIUM_SHARE else "low"


def saving_share(facts, saves_s) -> tuple:
    """(seconds the item could save, capped at the traced I/O time; that as a share of the run)."""
    io = facts.run.get("io_time_s") or 0.0
    run = facts.run.get("process_time_s") or 0.0
    saves = max(0.0, min(saves_s or 0.0, io)) if io > 0 else max(0.0, saves_s or 0.0)
    return saves, (saves / run if run > 0 else 0.0)


def finding(rule_id, facts, time_s, message, evidence, advice, saves_s=None) -> dict:
    """One finding of rule `rule_id` on measured facts: the time its calls took, the share of the
    traced I/O time and of the run, and the severity from the share of the run it could save
    (saves_s, default the calls' whole time; never more than the traced I/O time)."""
    r = REGISTRY[rule_id]
    if set(evidence) != set(r.evidence):
        raise ValueError(f"rule {rule_id}: evidence {sorted(evidence)} is not the declared {sorted(r.evidence)}")
    io = facts.run.get("io_time_s") or 0.0
    saves, share_run = saving_share(facts, time_s if saves_s is None else saves_s)
    return {"rule": rule_id, "title": r.title, "severity": severity(share_run), "message": message,
            "evidence": {**evidence, "time_s": time_s, "share_of_io_time": time_s / io if io > 0 else 0.0,
                         "could_save_s": saves, "share_of_run": share_run},
            "advice": advice, "thresholds": dict(r.thresholds)}


def verdict(facts) -> str:
    """Whether I/O is what makes the measured run slow, in one plain line ("" for a workflow)."""
    if facts.input == "workflow":
        return ""
    io, run = facts.run.get("io_time_s") or 0.0, facts.run.get("process_time_s") or 0.0
    if run <= 0:
        return ""
    share = io / run
    if share < IO_BOTTLENECK_SHARE:
        return (f"I/O is not the bottleneck: the traced I/O took {_secs(io)} of {_secs(run)} of process time "
                f"({100 * share:.1f}%); no I/O change can save more than that, so look at the computation first.")
    return (f"I/O took {_secs(io)} of {_secs(run)} of process time ({100 * share:.0f}%): the items below could "
            "save at most that.")


def _secs(s) -> str:
    return f"{1e3 * s:.3g} ms" if s < 1 else f"{s:.3g} s"
