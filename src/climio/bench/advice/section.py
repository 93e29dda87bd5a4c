"""The advice study in the report: the three targets as pass/fail lines, the table (baseline, the
first-ranked item's measured time, the best tried item's, conversions, predicted gain beside
measured at P = 1 and P = 10), then every fix `trace try` tried on each case; and text() for the
terminal (the same first screen)."""

from climio.present.sections import Figure, Finding, Paragraph, Section, Table
from .summary import cpu_line, summarise, target_lines

HEADERS = ["job", "layout", "baseline [s]", "item 1 (report, before trying)", "item 1 [s]", "conv [s]",
           "best tried", "best [s]", "best conv [s]", "P=1 pred / meas", "P=10 pred / meas", "best P=10"]


def _s(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _x(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _cpu_s(x) -> str:
    """' (CPU c)' beside a wall time: user + system seconds of the same run."""
    return "" if x is None else f" (CPU {x:.3g})"


def _fix(f) -> str:
    return "-" if not f else f"{f['id']} {f['kind']}: {f['title']}"


def table_rows(s) -> list:
    rows = []
    for r in s["rows"]:
        f, b = r["first"] or {}, r["best"]
        rep = r["report_first"]
        item = "no item" if not rep else f"[{rep['severity']}] {_fix(f) if f else rep['title']}"
        if f and f.get("after_s") is None:
            item += " (not tried)"
        rows.append([r["job"], r["layout"], _s(r["baseline_s"]) + _cpu_s(r.get("baseline_cpu_s")), item,
                     _s(f.get("after_s")) + _cpu_s(f.get("after_cpu_s")),
                     _s(f.get("conversion_s")) + _cpu_s(f.get("conversion_cpu_s")),
                     _fix(b) if b else "nothing advised", _s(b["after_s"]) + _cpu_s(b.get("after_cpu_s")) if b else "-",
                     _s(b.get("conversion_s")) + _cpu_s(b.get("conversion_cpu_s")) if b else "-",
                     f"{_x(r['predicted_gain'].get('1'))} / {_x(r['first_gain']['1'])}",
                     f"{_x(r['predicted_gain'].get('10'))} / {_x(r['first_gain']['10'])}", _x(r["best_gain"]["10"])])
    return rows


CAPTION = ("Cold runs, medians of the repetitions, the baseline re-measured in the same rounds; wall seconds, "
           "(CPU c) = user + system seconds of the same runs. Item 1 is the fix "
           "`climio trace report` names first (its first way when the item has several), recorded before anything "
           "was tried; best tried = the advised fix with the largest measured gain at P=10 (gain = baseline / "
           "(after + conversion / P)). Predicted = what the report claims before trying: the run without what item 1 "
           "could save, plus the conversion `climio rechunk --dry-run` predicts, over P.")


def section(records) -> Section:
    s = summarise(records)
    sec = Section("study-advice", "Advice tried on real analysis jobs")
    if not s["rows"] and not s["errors"]:
        return sec.add(Paragraph("No case was run."))
    fig = key_figure(records, s)
    if fig is not None:
        sec.add(fig)
    for line in target_lines(s) + [l for l in [cpu_line(s)] if l]:
        sec.add(Paragraph(line))
    sec.add(Table(HEADERS, table_rows(s), CAPTION, numeric=False))
    for e in s["errors"]:
        sec.add(Paragraph(f"{e['job']} on {e['layout']}: not measured: {e['error']}"))
    fixes = [[r["job"], r["layout"], f["id"], f["kind"], f["title"], _s(f.get("after_s")), _s(f.get("conversion_s")),
              _x((f.get("gain") or {}).get("1")), _x((f.get("gain") or {}).get("10")), f.get("status") or "",
              "; ".join(f.get("also_slows") or [])] for r in s["rows"] for f in r["fixes"]]
    sec.add(Table(["job", "layout", "id", "kind", "fix", "after [s]", "conv [s]", "gain P=1", "gain P=10", "status",
                   "also slows"], fixes, "Every fix `climio trace try` listed, in its ranking.", numeric=False))
    return sec


def key_figure(records, s=None):
    s = s or summarise(records)
    if not s["rows"]:
        return None
    from . import figures
    return Figure(lambda: figures.gains(s), "measured gain per case at P = 10",
                  "Per job and layout, the measured gain over ten runs of the fix the report ranked first beside "
                  "the best tried fix's gain, so a dark bar shorter than its light one is advice that missed.")


def text(records) -> str:
    """The first screen on a terminal: the targets, then the table."""
    s = summarise(records)
    rows = [HEADERS] + table_rows(s)
    w = [max(len(str(r[i])) for r in rows) for i in range(len(HEADERS))]
    out = target_lines(s) + [l for l in [cpu_line(s)] if l] + [""] + ["  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    out += [f"{e['job']} on {e['layout']}: not measured: {e['error']}" for e in s["errors"]]
    return "\n".join(out) + "\n"


def findings(records) -> list:
    s = summarise(records)
    if not s["rows"]:
        return []
    return [Finding("advice", line[6:], verdict="met" if line.startswith("PASS") else "not met")
            for line in target_lines(s)]
