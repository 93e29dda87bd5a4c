"""The HTML report of a run directory: key findings first, one section per study, provenance last.

    render_report(run_dir, out=None) -> Path of the written report.html

Reads RUN_DIR/records.jsonl (and platform.json when present) only. Each study's section and
findings come from the study registry (climio.bench.base): a study registered anywhere, even
from a test, appears without this module knowing it. Records of a study nobody registered are
listed in a generic table (cells.generic_section).
"""

import datetime as _dt
import json
from pathlib import Path

from .. import render
from ..bench import base
from ..cells import generic_section
from ..errors import DataError
from ..records import atomic_write_text, read_records
from ..sections import Details, Note, Table
from ..stats import by_study
from ..units import format_size

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
        st = base.find(study)
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
    times = sorted(str(r.get("time")) for r in records if r.get("time"))
    studies = list(by_study(records))
    meta = [("run directory", str(run_dir.resolve())),
            ("report generated", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")),
            ("records", f"{len(records)} ({', '.join(studies)})")]
    if times:
        meta.append(("measured", f"{times[0]} … {times[-1]}"))
    text = render.page(f"climio report — {run_dir.resolve().name}", meta, sections, findings,
                       provenance=provenance_blocks(platform, note, records))
    out = Path(out) if out else run_dir / "report.html"
    try:
        atomic_write_text(out, text)
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
