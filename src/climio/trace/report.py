"""`climio trace report DIR [--format text|json|html] [-o FILE]`.

    build(trace_dir) -> (facts, findings)     the analysis summary and the advice
    text(facts, findings) -> str              the terminal summary
    to_json(facts, findings) -> str           everything, machine-readable
    html_page(facts, findings) -> str         self-contained page with figures: html_sections() as
                                              climio.present.sections objects, rendered by climio.present.render
    render(trace_dir, fmt, out, say)          the command: text/json to stdout or FILE, html to FILE
                                              (default DIR/report.html, or LOG.darshan.html for a Darshan log)
"""

import json
from pathlib import Path

from climio.present.cells import num, text_columns as _cols
from climio.base.errors import InputError
from climio.runs.records import atomic_write_text
from climio.present.sections import Cell, Details, Figure, Finding, Heading, Paragraph, ParamList, Section, Table
from climio.base.units import format_size
from .. import rules
from . import figures
from .analysis import DEFINITIONS, SIZE_BUCKETS, analyse
from .objects_report import html_section as objects_section, text_lines as object_lines
from .inputs import read_input
from .reader import Trace
from .effects import effect_lines

REPORT_FORMATS = ("text", "json", "html")
TOP_FUNCTIONS = 20
TOP_EDGES = 25
TOP_FILES = 8


def measured_facts(trace_dir) -> rules.Facts:
    """The Facts of a trace directory (events, or counters) or a Darshan log (climio.trace.counters)."""
    src = read_input(trace_dir)
    if not isinstance(src, Trace):
        from . import counters
        f = counters.analyse_log(src).facts()
    else:
        f = analyse(src).facts()
    if Path(trace_dir).expanduser().is_dir():
        from . import objects_report
        objects_report.attach(f, Path(trace_dir).expanduser(), src)
    return f


def build(trace_dir, with_dirs=()):
    """(facts as a dict, findings) of a trace directory or a Darshan log (see `judged`)."""
    f = measured_facts(trace_dir)
    return f.to_dict(), judged(f, with_dirs)


def judged(f, with_dirs=()) -> list:
    """The registry's rules on the Facts `f`, ranked; a layout fix (rechunk) carries what the model
    predicts it does to the variable's canonical reads and to the other traced jobs on the file
    (`with_dirs`): finding["layout_effects"], and is ranked net of its predicted conversion. `trace
    try` numbers its items from this same list."""
    findings = rules.judge(f)
    for x in findings:
        ev = x.get("evidence") or {}
        if x["rule"] == "partial-chunk-compressed" and ev.get("target_chunks") and Path(str(ev["file"])).is_file():
            from .effects import conversion_s, others_of, predicted_effects
            others, notes = others_of(with_dirs, ev["file"], ev["var"])
            x["layout_effects"] = {**predicted_effects(ev["file"], ev["var"], ev["target_chunks"], f.stack, others),
                                   "with_notes": notes}
            _net_of_conversion(f, x, conversion_s(ev["file"], ev["var"], ev["target_chunks"]))
    return rules.rank(findings)


# A layout fix is ranked by what it saves net of its one-off conversion spread over this many runs
# of the job (issue 35: reports show P = 1 and P = 10): a conversion that costs more than ten runs
# save never comes first (`climio bench advice` found 12.6 s conversions ranked first for 0.1 s saved).
RANK_PASSES = 10


def _net_of_conversion(facts, finding, conv_s) -> None:
    """Charge a layout finding its predicted conversion / RANK_PASSES: its could-save, share of the run
    and severity become net ones (the gross saving is kept as `could_save_gross_s`)."""
    if conv_s is None:
        return
    ev = finding["evidence"]
    gross = ev["could_save_s"]
    net = gross - conv_s / RANK_PASSES
    run = facts.run.get("process_time_s") or 0.0
    share = max(net, 0.0) / run if run > 0 else 0.0
    ev.update(conversion_s=conv_s, could_save_gross_s=gross, could_save_s=max(net, 0.0), share_of_run=share)
    finding["severity"] = rules.severity(share)
    if net <= 0:
        finding["message"] += (f" The conversion (predicted {conv_s:.3g} s) costs more than the {gross:.3g} s it "
                               f"saves per run repays in {RANK_PASSES} runs of this job.")


def rules_table(input_name="trace") -> list:
    return [{"rule": r["id"], "title": r["title"], "looks_for": r["looks_for"], "thresholds": r["thresholds"],
             "needs": r["needs"], "evidence": r["evidence"]} for r in rules.table(input_name)]


def _input_of(facts) -> str:
    return "darshan" if facts.get("source") == "darshan" else "trace"


def verdict(facts) -> str:
    """rules.verdict on the facts as a dict: is I/O the bottleneck of the run?"""
    return rules.verdict(rules.Facts(facts.get("source") or "trace", facts["trace"]))


def to_json(facts, findings) -> str:
    return json.dumps({**facts, "verdict": verdict(facts), "findings": findings, "rules": rules_table(_input_of(facts))},
                      indent=1, default=_plain)


def _plain(o):
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


# --- text -----------------------------------------------------------------------------------------------

def _t(s) -> str:
    return num(s) if s is not None else "—"


def _pct(x) -> str:
    return f"{100 * x:.1f}%" if x is not None else "—"


def _threshold(name, v) -> str:
    return format_size(v) if name.endswith("_BYTES") else str(v)


def _weight(f) -> str:
    """What a finding weighs: its calls' time, and the share of the run it could save (its severity)."""
    ev = f["evidence"]
    conv = (f" net of the conversion ({_t(ev['conversion_s'])} s predicted) over {RANK_PASSES} runs"
            if ev.get("conversion_s") is not None else "")
    return (f"time {_t(ev['time_s'])} s = {_pct(ev['share_of_io_time'])} of traced I/O time; could save at most "
            f"{_t(ev['could_save_s'])} s = {_pct(ev['share_of_run'])} of the run{conv}")


def text(facts, findings) -> str:
    tr = facts["trace"]
    out = [f"climio trace report — {tr['path']}"]
    cmd = " ".join(tr["command"]) if tr.get("command") else "(no meta.json: command unknown)"
    out.append(f"command: {cmd}" + (f"   exit status {tr['exit_status']}" if tr.get("exit_status") is not None else ""))
    out.append(f"processes: {len(tr['processes'])} ({tr['units']} rank(s)/units)   events: {tr['events']}   "
               f"layers: {', '.join(tr['layers_present'])}")
    if tr["partial"]:
        out.append("PARTIAL TRACE — some events are missing; numbers are lower bounds:")
        out += [f"  ! {n}" for n in tr["notes"] if n.startswith("partial:")]
    out += [f"  note: {n}" for n in tr["notes"] if not n.startswith("partial:")]
    out.append(f"wall {_t(tr['wall_s'])} s; traced I/O time {_t(tr['io_time_s'])} s = {_pct(tr['io_share'])} of "
               f"process time ({_t(tr['process_time_s'])} s summed over processes)")

    checked = rules_table(_input_of(facts))
    out += _advice_lines(facts, findings, checked)

    out += object_lines(facts.get("objects")) + ["", "Layers (incl = with the traced calls beneath; excl = own time; share of process time)"]
    out += _cols(["layer", "calls", "incl [s]", "incl %", "excl [s]", "excl %", "read", "written", "ranks"],
                 [[l["layer"], l["calls"], _t(l["time_incl_s"]), _pct(l["share_incl"]), _t(l["time_excl_s"]),
                   _pct(l["share_excl"]), format_size(l["bytes_read"]), format_size(l["bytes_written"]), l["ranks"]]
                  for l in facts["layers"]])
    funcs = sorted(facts["functions"], key=lambda r: -r["time_incl_s"])[:TOP_FUNCTIONS]
    out += ["", f"Functions (top {len(funcs)} by inclusive time)"]
    out += _cols(["function", "layer", "calls", "incl [s]", "incl %", "excl [s]", "bytes", "max rank [s]", "ranks"],
                 [[r["function"], r["layer"], r["calls"], _t(r["time_incl_s"]), _pct(r["share_incl"]),
                   _t(r["time_excl_s"]), format_size(r["bytes"]), _t(r["max_rank_time_s"]), r["ranks"]] for r in funcs])
    edges = facts["flow"]["edges"][:TOP_EDGES]
    if edges:
        out += ["", "Call paths (parent -> child; time of the child calls: max of one rank [ranks])"]
        out += _cols(["path", "calls", "max rank [s]", "ranks", "total [s]", "bytes"],
                     [[f"{e['parent_function']} -> {e['child_function']}", e["count"], _t(e["max_rank_time_s"]),
                       e["ranks"], _t(e["time_s"]), format_size(e["bytes"])] for e in edges])
    rk = facts["ranks"]
    if rk["main"]:
        out += ["", f"Per rank ({len(rk['units'])}): main functions of each layer, over the ranks calling them"]
        out += _cols(["function", "layer", "ranks", "min [s]", "mean [s]", "max [s]", "imbalance (max/mean)", "idle share"],
                     [[m["function"], m["layer"], m["ranks_calling"], _t(m["min"]), _t(m["mean"]), _t(m["max"]),
                       _t(m["imbalance"]), _pct(m["idle_share"])] for m in rk["main"]])
    if facts["files"]:
        out += ["", "Files (access at each traced layer with offsets)"]
        for f in facts["files"][:TOP_FILES]:
            out.append(f"  {f['file']}: read {format_size(f['bytes_read'])}, written {format_size(f['bytes_written'])}, "
                       f"{_t(f['time_s'])} s, {len(f['ranks'])} rank(s)")
            for a in f["access"]:
                stride = f" {a['stride']} B" if a["stride"] is not None else ""
                hist = ", ".join(f"{b}:{a['histogram'][b]}" for b in SIZE_BUCKETS if a["histogram"][b])
                top = ", ".join(f"{s} B x{c}" for s, c in a["top_sizes"])
                out.append(f"    {a['layer']} {a['kind']}s: {a['count']} ({format_size(a['bytes'])}), "
                           f"{a['classification']}{stride}; consecutive {a['consecutive']}, sequential "
                           f"{a['sequential']} of {a['transitions']}; sizes {hist}; top {top}")
        if len(facts["files"]) > TOP_FILES:
            out.append(f"  ... and {len(facts['files']) - TOP_FILES} more files (see --format json)")
    nc = facts["netcdf"]
    if nc["variables"]:
        out += ["", "netCDF reads: bytes decoded (whole chunks touched) vs requested"]
        out += _cols(["variable", "reads", "requested", "decoded", "ratio", "after cache", "chunks", "compressed",
                      "cache", "cache fit"],
                     [[f"{v['var']} ({Path(v['file']).name})", v["reads"], format_size(v["requested"]),
                       format_size(v["decoded"]), f"{v['ratio']:.2f}x", format_size(v["decoded_after_cache"]),
                       _chunks(v["chunks"]), "yes" if v["compressed"] else "no", format_size(v["cache_bytes"]),
                       ", ".join(f"{k} {n}" for k, n in v["cache"].items())] for v in nc["variables"]])
    if nc["reads_without_geometry"]:
        out.append(f"  ({nc['reads_without_geometry']} netCDF reads without start/count/shape details skipped)")
    out += ["", "Rules and thresholds"]
    for r in checked:
        out.append(f"  {r['rule']}: {r['looks_for']} ({', '.join(f'{k}={_threshold(k, v)}' for k, v in r['thresholds'].items())})")
    for r in facts.get("rules_not_checked") or []:
        out.append(f"  not checked: {r['rule']} ({r['why']})")
    return "\n".join(out) + "\n"


def _advice_lines(facts, findings, checked) -> list:
    """The advice items; one that `climio trace try` measured shows what it measured instead."""
    out = ["", "Advice"]
    if verdict(facts):
        out.append(f"  {verdict(facts)}")
    tried = tried_items(facts["trace"]["path"])
    for i, f in enumerate(findings, 1):
        out.append(f"  [{f['severity']}] {f['title']}: {f['message']}")
        out.append("      " + _weight(f) + "; thresholds: "
                   + ", ".join(f"{k}={_threshold(k, v)}" for k, v in f["thresholds"].items()))
        out += _tried_lines(tried[i]) if i in tried else [f"      -> {f['advice']}"]
        out += effect_lines(f.get("layout_effects"))
    if not findings:
        out.append(f"  no rule fired ({len(checked)} rules checked: {', '.join(r['rule'] for r in checked)})")
    return out


def tried_items(trace_path) -> dict:
    """What `climio trace try` measured for each advice item (DIR/try/try.json): {item: [results]}."""
    p = Path(str(trace_path)) / "try" / "try.json"
    if not p.is_file():
        return {}
    try:
        results = json.loads(p.read_text())["results"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {}
    for r in results:
        if r.get("label") == "measured":
            out.setdefault(r["item"], []).append(r)
    return out


def _tried_lines(results) -> list:
    """An item tried on the job: its advised fixes with their measured gain; none advised: say why."""
    good = [r for r in results if r.get("advised")]
    if not good:
        return ["      tried (climio trace try): not advised: "
                + "; ".join(f"{r['title']}: {r['status']}" for r in results)]
    return [f"      -> measured {r['gain']['1']:.2f}x at P=1, {r['gain']['10']:.2f}x at P=10 ({r['title']}): "
            + (r["advice"].get("shell") or r["advice"].get("python") or "").replace("\n", "; ") for r in good]


def _chunks(c) -> str:
    return "contiguous" if not c else "[" + ",".join(map(str, c)) + "]"


# --- html -----------------------------------------------------------------------------------------------

KEY_FINDINGS = 3      # the top advice items shown as the page's key findings


def _v(v) -> str:
    return "—" if v is None else str(v)


def html_page(facts, findings) -> str:
    """The page: html_sections() rendered by the one report template (climio.present.render)."""
    from climio.present.render import page
    tr = facts["trace"]
    meta = [("trace directory" if facts.get("source") != "darshan" else "Darshan log", tr["path"]),
            ("command", " ".join(tr["command"]) if tr.get("command") else "—"),
            ("exit status", _v(tr.get("exit_status"))),
            ("start / end", f"{tr.get('start') or '—'} / {tr.get('end') or '—'}"),
            ("processes", f"{len(tr['processes'])} ({tr['units']} ranks/units)"), ("events", _v(tr["events"])),
            ("layers traced", ", ".join(tr["layers_present"])),
            ("wall time", f"{_t(tr['wall_s'])} s"),
            ("traced I/O time", f"{_t(tr['io_time_s'])} s = {_pct(tr['io_share'])} of process time "
                                f"({_t(tr['process_time_s'])} s over all processes)")]
    notes = []
    if tr["partial"]:
        partial = [n for n in tr["notes"] if n.startswith("partial:")]
        notes.append("Partial trace: some processes did not finish tracing or dropped events; counts and times are "
                     "lower bounds. " + " ".join(partial))
    notes += [n for n in tr["notes"] if not n.startswith("partial:")]
    key = ([Finding("trace", verdict(facts))] if verdict(facts) else []) + \
        [Finding("trace", f"[{f['severity']}] {f['title']}: {f['message']}") for f in findings[:KEY_FINDINGS]]
    title = f"climio trace report — {Path(tr['path']).name}"
    return page(title, meta, html_sections(facts, findings), key, notes=notes, lead=html_lead(facts, findings),
                measured="This run: the verdict and the top advice",
                       provenance=[Details("Processes", [_processes_table(tr)])],
                       footer="climio trace — times in seconds; sizes in B/KiB/MiB/GiB = 2^10/2^20/2^30 B.")


def html_sections(facts, findings) -> list:
    """The trace report as climio.present.sections objects: advice, layers and functions, call-path flow,
    balance per rank, files, netCDF reads, rules, definitions."""
    return [s for s in (_advice_section(facts, findings), objects_section(facts.get("objects")),
                        _layers_section(facts), _flow_section(facts),
                        _ranks_section(facts), _files_section(facts), _netcdf_section(facts),
                        _rules_section(facts, findings), _definitions_section(facts)) if s is not None]


def _advice_section(facts, findings) -> Section:
    sec = Section("advice", "Advice")
    if verdict(facts):
        sec.add(Paragraph(verdict(facts)))
    if not findings:
        return sec.add(Paragraph(f"No rule fired ({len(rules_table(_input_of(facts)))} rules checked, listed with "
                                 "their thresholds at the end)."))
    for f in findings:
        th = ", ".join(f"{k} = {_threshold(k, v)}" for k, v in f["thresholds"].items())
        sec.add(Heading(f"[{f['severity']}] {f['title']}"), Paragraph(f["message"]),
                Paragraph(_weight(f) + "."), Paragraph(f"Advice: {f['advice']}"),
                *[Paragraph(line) for line in effect_lines(f.get("layout_effects"), indent="")],
                Details(f"Evidence (thresholds: {th})",
                        [ParamList("Measured:", [(k, _ev(k, v)) for k, v in f["evidence"].items()])]))
    return sec


def _layers_section(facts) -> Section:
    return Section("layers", "Time and bytes per layer and function").add(
        Paragraph(f"Inclusive: {DEFINITIONS['inclusive time']} Exclusive: {DEFINITIONS['exclusive time']} Shares are "
                  f"of the process time ({DEFINITIONS['process time']})"),
        Table(["layer", "calls", "inclusive [s]", "incl. share", "exclusive [s]", "excl. share", "bytes read",
               "bytes written", "ranks"],
              [[l["layer"], l["calls"], _t(l["time_incl_s"]), _pct(l["share_incl"]), _t(l["time_excl_s"]),
                _pct(l["share_excl"]), format_size(l["bytes_read"]), format_size(l["bytes_written"]), l["ranks"]]
               for l in facts["layers"]]),
        Table(["function", "layer", "calls", "failed", "inclusive [s]", "incl. share", "exclusive [s]", "excl. share",
               "bytes", "mean request", "max rank [s]", "ranks"],
              [[r["function"], r["layer"], r["calls"], r["failed"], _t(r["time_incl_s"]), _pct(r["share_incl"]),
                _t(r["time_excl_s"]), _pct(r["share_excl"]), format_size(r["bytes"]),
                format_size(r["mean_request"]) if r["mean_request"] else "—", _t(r["max_rank_time_s"]), r["ranks"]]
               for r in facts["functions"]]))


def _flow_section(facts) -> Section:
    _, _, omitted = figures.flow_selection(facts)
    return Section("flow", "Call-path flow across layers").add(
        Figure(lambda: figures.flow(facts), "call-path flow",
               f"As MOM5's Figs 10-12: the maximum time of one rank in each function (box) and on each parent -> "
               f"child path (arrow), the number of ranks in brackets. At most {figures.FLOW_NODES_PER_LAYER} "
               f"functions per layer; {omitted} paths below {figures.FLOW_MIN_SHARE:.0%} of the largest function's "
               f"time omitted."),
        Table(["parent", "child", "calls", "max rank [s]", "ranks", "total [s]", "bytes"],
              [[f"{x['parent_function']} ({x['parent_layer']})", f"{x['child_function']} ({x['child_layer']})",
                x["count"], _t(x["max_rank_time_s"]), x["ranks"], _t(x["time_s"]), format_size(x["bytes"])]
               for x in facts["flow"]["edges"][:60]]))


def _ranks_section(facts) -> Section:
    rk = facts["ranks"]
    return Section("ranks", "Load balance per rank").add(
        Figure(lambda: figures.ranks(facts), "time per rank",
               "As MOM5's Fig. 13: the largest function of each layer, time per rank. " + DEFINITIONS["imbalance"]),
        Table(["function", "layer", "ranks calling", "min [s]", "mean [s]", "max [s]", "max/mean", "idle share"],
              [[m["function"], m["layer"], m["ranks_calling"], _t(m["min"]), _t(m["mean"]), _t(m["max"]),
                _t(m["imbalance"]), _pct(m["idle_share"])] for m in rk["main"]]))


def _files_section(facts) -> Section:
    units = facts["ranks"]["units"]
    sec = Section("files", "Files").add(Paragraph(f"{DEFINITIONS['classification']} {DEFINITIONS['size buckets']}"))
    for f in facts["files"][:TOP_FILES]:
        sec.add(Heading(f["file"]),
                Paragraph(f"read {format_size(f['bytes_read'])}, written {format_size(f['bytes_written'])}, "
                          f"{_t(f['time_s'])} s, ranks: {', '.join(map(str, f['ranks']))}"),
                Table(["layer", "kind", "requests", "bytes", "time [s]", "class", "stride", "consecutive",
                       "sequential", "transitions", "top sizes"],
                      [[a["layer"], a["kind"], a["count"], format_size(a["bytes"]), _t(a["time_s"]),
                        a["classification"], "—" if a["stride"] is None else f"{a['stride']} B", a["consecutive"],
                        a["sequential"], a["transitions"], ", ".join(f"{s} B ×{c}" for s, c in a["top_sizes"])]
                       for a in f["access"]]),
                Figure(lambda f=f: figures.size_histogram(f), "request sizes", "Requests per size bucket."),
                Figure(lambda f=f: figures.timeline(f, units), "timeline",
                       "Each access: a dot at its start, a line as long as it took."))
    if len(facts["files"]) > TOP_FILES:
        sec.add(Paragraph(f"{len(facts['files']) - TOP_FILES} more files are in the JSON output."))
    return sec


def _netcdf_section(facts):
    nc = facts["netcdf"]
    if not nc["variables"]:
        return None
    return Section("netcdf", "netCDF reads against the chunk layout").add(
        Paragraph(f"Bytes decoded: {DEFINITIONS['bytes decoded']} After cache: {DEFINITIONS['decoded after cache']} "
                  f"Cache fit: {DEFINITIONS['cache fit']}"),
        Table(["file", "variable", "reads", "requested", "decoded", "ratio", "after cache", "chunks", "shape",
               "compressed", "partial-chunk reads", "cache", "max touched", "cache fit", "reuse prev."],
              [[Path(v["file"]).name, v["var"], v["reads"], format_size(v["requested"]), format_size(v["decoded"]),
                f"{v['ratio']:.2f}×", format_size(v["decoded_after_cache"]), _chunks(v["chunks"]),
                _chunks(v["shape"]), "yes" if v["compressed"] else "no", v["partial_reads"],
                format_size(v["cache_bytes"]), format_size(v["max_touched_bytes"]),
                ", ".join(f"{k}: {n}" for k, n in v["cache"].items()), v["reuse_reads"]]
               for v in nc["variables"]]))


def _rules_section(facts, findings) -> Section:
    fired = {f["rule"] for f in findings}
    missing = {r["rule"]: r["why"] for r in facts.get("rules_not_checked") or []}
    return Section("rules", "Rules and thresholds").add(
        Table(["rule", "looks for", "thresholds", "fired"],
              [[f"{r['title']} ({r['rule']})", r["looks_for"],
                ", ".join(f"{k} = {_threshold(k, v)}" for k, v in r["thresholds"].items()),
                Cell("yes", "warm") if r["rule"] in fired else f"not checked: {missing[r['rule']]}"
                if r["rule"] in missing else "no"] for r in rules_table(_input_of(facts))],
              numeric=False))


def _definitions_section(facts) -> Section:
    defs = facts.get("definitions") or DEFINITIONS
    return Section("definitions", "Definitions").add(
        Table(["term", "definition"], [[k, v] for k, v in defs.items()], numeric=False))


def _processes_table(tr) -> Table:
    return Table(["unit", "host", "pid", "events", "end", "dropped", "partial", "notes"],
                 [[p["label"], _v(p["host"]), _v(p["pid"]), p["events"], p["end"] or "—", p["dropped"],
                   "yes" if p["partial"] else "no", "; ".join(p["notes"])] for p in tr["processes"]],
                 caption="Processes of the trace.")


def _ev(k, v) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and (k.endswith("bytes") or k in ("requested", "decoded")):
        return f"{format_size(v)} ({v} B)"
    if isinstance(v, float):
        return num(v)
    if isinstance(v, dict):
        return ", ".join(f"{a}={_ev(a, b)}" for a, b in v.items())
    return json.dumps(v) if isinstance(v, (list, bool)) or v is None else str(v)


# --- the command ------------------------------------------------------------------------------------------

def render(trace_dir, fmt="text", out=None, say=print, with_dirs=()):
    """Write the report; text and json go to stdout unless `out`, html to `out` or DIR/report.html."""
    if fmt not in REPORT_FORMATS:
        raise InputError(f"unknown --format '{fmt}': use {', '.join(REPORT_FORMATS)}")
    facts, found = build(trace_dir, with_dirs)
    if fmt == "text":
        body = text(facts, found)
    elif fmt == "json":
        body = to_json(facts, found) + "\n"
    else:
        body = html_page(facts, found)
        src = Path(trace_dir).expanduser()
        out = Path(out) if out else src / "report.html" if src.is_dir() else src.with_name(src.name + ".html")
    if out is None:
        print(body, end="")
        return None
    from climio.base.errors import DataError
    try:
        atomic_write_text(Path(out), body)
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}") from None
    say(f"trace report: {out}")
    return Path(out)


# --- the first screen of the html page ----------------------------------------------------------------

LEAD_ITEMS = 3        # advice items in the first screen's table


def html_lead(facts, findings):
    """The page's first screen (a sections.Lead): how much of the run is traced I/O, whether I/O is
    the bottleneck, the top advice item with what it could save, beside the I/O-share figure."""
    from climio.present.sections import Lead
    tr = facts["trace"]
    run, io = tr.get("process_time_s") or 0.0, tr.get("io_time_s") or 0.0
    blocks = [Paragraph(f"Traced I/O is {_pct(tr.get('io_share'))} of the run: {_t(io)} s of {_t(run)} s process time "
                        f"summed over {len(tr['processes'])} process(es); wall {_t(tr['wall_s'])} s.")]
    said = verdict(facts)
    if said:
        blocks.append(Paragraph(said))
    if findings:
        top = findings[0]
        blocks.append(Paragraph(f"Top item: [{top['severity']}] {top['title']}: {_saving(top)}. {top['advice']}"))
        blocks.append(Table(["", "item", "could save", "fix"],
                            [[f["severity"], f["title"], _saving(f), f["advice"]] for f in findings[:LEAD_ITEMS]],
                            numeric=False))
    else:
        blocks.append(Paragraph(f"No rule fired ({len(rules_table(_input_of(facts)))} rules checked)."))
    fig = Figure(lambda: figures.io_share(facts), "share of the run per traced layer",
                 "How much of the run each traced layer took: the grey bar is the time outside traced I/O, "
                 "which no I/O change can shorten.")
    if ((facts.get("objects") or {}).get("timeline") or {}).get("t_s"):   # a job that waits on an object store
        from .objects_report import figure as objects_figure
        fig = Figure(lambda: objects_figure(facts["objects"]), "object-store requests over time",
                     "Requests started per second and mean requests in flight (the dotted line: zarr's "
                     "async.concurrency); the Object storage section says which level each number comes from.")
    return Lead("Verdict", blocks, fig)


def _saving(f) -> str:
    """What an advice item could save: at most its calls' time, as a share of the run."""
    ev = f["evidence"]
    if ev.get("could_save_s") is not None:
        return f"at most {_t(ev['could_save_s'])} s ({_pct(ev.get('share_of_run'))} of the run)"
    return f"at most {_t(ev['time_s'])} s ({_pct(ev.get('share_of_io_time'))} of traced I/O time)"
