"""The HTML report of a run directory. The first screen answers "what did we learn about this
platform": one small table of each study's headline numbers (with the page-cache state behind
each) beside one headline figure; then the findings grouped by verdict (those this run cannot
decide collapsed, one line per study); then one section per study, each leading with its figure;
provenance last.

    render_report(run_dir, out=None) -> Path of the written report.html

Reads RUN_DIR/records.jsonl (and platform.json when present) only. Each study's section,
findings and headline come from the study registry (climio.bench.base): a study registered
anywhere, even from a test, appears without this module knowing it. Records of a study nobody
registered are listed in a generic table (cells.generic_section).
"""

import datetime as _dt
import json
from pathlib import Path

from climio.present import render
from ..bench import registry
from climio.present.cells import generic_section
from climio.base.errors import DataError
from climio.runs.records import atomic_write_text, read_records
from climio.present.sections import Details, Figure, Heading, Lead, Link, Note, Paragraph, Table
from climio.present.stats import by_study
from climio.base.units import format_size

_PLATFORM_FIRST = ("host", "os", "kernel", "machine", "cpu", "ram_bytes", "filesystem", "versions", "platform_id")


def read_platform(run_dir: Path):
    """(platform dict or None, a note for the reader when it is missing or unreadable)."""
    p = run_dir / "platform.json"
    if not p.is_file():
        return None, f"No platform.json in {run_dir}: the platform these records ran on is not recorded."
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"platform.json is unreadable ({exc}); provenance not shown."
    if not isinstance(data, dict):
        return None, "platform.json does not hold an object; provenance not shown."
    return data, None


def flatten(d, prefix="") -> list:
    out = []
    keys = list(d)
    if not prefix:
        keys = [k for k in _PLATFORM_FIRST if k in d] + [k for k in keys if k not in _PLATFORM_FIRST]
    for k in keys:
        v, name = d[k], f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out += flatten(v, name + ".")
        else:
            out.append((name, v))
    return out


def provenance_blocks(platform, platform_error, records) -> list:
    """The platform table, collapsed, with warnings (missing platform.json, foreign records) outside."""
    blocks = []
    if platform_error:
        blocks.append(Note(platform_error))
    if platform:
        rows = []
        for key, value in flatten(platform):
            if key == "ram_bytes" and isinstance(value, (int, float)):
                value = f"{format_size(value)} ({value} B)"
            elif isinstance(value, list):
                value = ", ".join(map(str, value))
            elif value is None:
                value = "— (not available)"
            rows.append([key, value])
        pid = platform.get("platform_id")
        other = sorted({r.get("platform_id", "") for r in records} - {pid})
        if pid and other:
            blocks.append(Note(f"Records from other platforms than platform.json describes ({pid}): "
                               f"{', '.join(o or '(none)' for o in other)}."))
        fs = platform.get("filesystem") or {}
        blocks.append(Details(f"Platform {platform.get('host', '?')}, {fs.get('type', '?')} at "
                              f"{fs.get('mount_point', '?')}, id {pid} ({len(rows)} items)",
                              [Table(["item", "value"], rows, numeric=False)]))
    return blocks


def sections_and_findings(records) -> tuple:
    """([Section], [Finding]) of every study in the records, in order of first appearance."""
    sections, findings = [], []
    for study, recs in by_study(records).items():
        st = registry.find(study)
        if st is None:
            sections.append(generic_section(study, recs))
            continue
        try:
            sections.append(st.section(recs))
            findings += st.findings(recs)
        except Exception as exc:  # noqa: BLE001  (a broken section must not cost the reader the report)
            sec = generic_section(study, recs)
            sec.blocks.insert(0, Note(f"The {study} section could not be built from these records "
                                      f"({type(exc).__name__}: {exc}); every configuration is listed instead."))
            sections.append(sec)
    return sections, findings


def lead_with_figure(sec):
    """The section with its first figure moved to the top (a study's key plot leads its section);
    a heading that titled only that figure goes with it (the caption says what it shows)."""
    blocks = sec.blocks
    i = next((i for i, b in enumerate(blocks) if isinstance(b, Figure)), None)
    if not i:
        return sec
    fig = blocks.pop(i)
    after = blocks[i] if i < len(blocks) else None
    if isinstance(blocks[i - 1], Heading) and (after is None or isinstance(after, (Heading, Details))):
        blocks.pop(i - 1)
    blocks.insert(0, fig)
    return sec


def headlines(records, sections=(), findings=()) -> list:
    """[Headline] of every registered study in the records, in order of appearance. A study without
    a headline of its own is summed up by its findings without a verdict and its section's first
    figure (fallback_headline), so a new study still shows on the first screen."""
    out = []
    for study, recs in by_study(records).items():
        st = registry.find(study)
        if st is None:
            continue
        try:
            head = st.headline(recs)
        except Exception as exc:  # noqa: BLE001  (a broken headline must not cost the reader the report)
            out.append(_broken_headline(study, exc))
            continue
        if head is None:
            head = fallback_headline(study, sections, findings)
        if head is not None and head.rows:
            out.append(head)
    return out


FALLBACK_ROWS = 2


def fallback_headline(study, sections, findings):
    """A Headline from what every study has: its findings without a verdict (the numbers it
    measured) and the first figure of its section; None when it has neither."""
    from climio.present.sections import Headline, HeadlineRow
    rows = [HeadlineRow("measured", f.text) for f in findings if f.study == study and f.verdict is None]
    sec = next((s for s in sections if s.id == f"study-{study}"), None)
    fig = next((b for b in sec.blocks if isinstance(b, Figure)), None) if sec else None
    return Headline(study, rows[:FALLBACK_ROWS], fig) if rows or fig else None


def _broken_headline(study, exc):
    from climio.present.sections import Headline, HeadlineRow
    return Headline(study, [HeadlineRow("summary", f"could not be built ({type(exc).__name__}: {exc})")])


def lead_of(heads, platform, sections):
    """The first screen: the headline rows of every study in one table (the study links to its
    section) beside the first study's key figure; None without headlines."""
    if not heads:
        return None
    ids = {s.id for s in sections}
    rows = []
    for h in heads:
        name = Link(h.study, f"#study-{h.study}") if f"study-{h.study}" in ids else h.study
        for i, r in enumerate(h.rows):
            rows.append([name if i == 0 else "", r.question, r.answer, r.state or "—"])
    where = ""
    if platform:
        fs = platform.get("filesystem") or {}
        dev = (fs.get("device") or {}).get("block_device") if isinstance(fs.get("device"), dict) else fs.get("device")
        where = (f" on {platform.get('host', '?')} ({fs.get('type', '?')} at {fs.get('mount_point', '?')}"
                 f"{', device ' + str(dev) if dev else ''})")
    text = (f"Measured{where}. MB/s = 10⁶ B/s; page cache: cold = the file evicted before each repetition, warm = "
            "not, effectively warm = evicted yet served by the page cache.")
    figure = next((h.figure for h in heads if h.figure is not None), None)
    return Lead("This platform", [Paragraph(text), Table(["study", "question", "answer", "page cache"], rows,
                                                         numeric=False)], figure)


def render_report(run_dir, out=None) -> Path:
    """Write the report of `run_dir` to `out` (default RUN_DIR/report.html); return its path."""
    run_dir = Path(run_dir).expanduser()
    if run_dir.is_file() and run_dir.suffix == ".darshan":
        raise DataError(f"{run_dir} is a Darshan log: use `climio trace report {run_dir}`")
    if run_dir.is_dir() and not (run_dir / "records.jsonl").is_file() and (
            (run_dir / "meta.json").is_file()
            or any(next(run_dir.glob(f"*-*.{kind}"), None) for kind in ("events", "counters", "aux.jsonl"))):
        raise DataError(f"{run_dir} is a trace directory: use `climio trace report {run_dir}`")
    records = read_records(run_dir)
    if not records:
        raise DataError(f"no records in {run_dir / 'records.jsonl'}: nothing to report")
    platform, note = read_platform(run_dir)
    sections, findings = sections_and_findings(records)
    sections = [lead_with_figure(s) for s in sections]
    heads = headlines(records, sections, findings)
    times = sorted(str(r.get("time")) for r in records if r.get("time"))
    studies = list(by_study(records))
    meta = [("run directory", str(run_dir.resolve())),
            ("report generated", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")),
            ("records", f"{len(records)} ({', '.join(studies)})")]
    if times:
        meta.append(("measured", f"{times[0]} … {times[-1]}"))
    text = render.page(f"climio report — {run_dir.resolve().name}", meta, sections, findings,
                       provenance=provenance_blocks(platform, note, records), lead=lead_of(heads, platform, sections),
                       decide={h.study: h.decide for h in heads if h.decide})
    out = Path(out) if out else run_dir / "report.html"
    try:
        atomic_write_text(out, text)
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
