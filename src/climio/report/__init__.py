"""The HTML report of a run directory: provenance, then one section per study.

    render_report(run_dir, out=None) -> Path of the written report.html

Reads RUN_DIR/records.jsonl (and platform.json when present) only. Sections come from a
registry (html.SECTIONS, filled with @html.section("study")); every module of this package is
imported before rendering, so a study's section module registers itself by existing. Records of
a study without a section are listed in a generic table.
"""

import importlib
import json
import pkgutil
from pathlib import Path

from ..errors import DataError
from ..records import atomic_write_text, read_records
from . import html
from .html import SECTIONS, section  # noqa: F401  (the registry, for section modules)

_CORE = {"html", "summary", "figures"}


def load_sections() -> dict:
    """Import every section module of climio.report; return the registry."""
    for mod in pkgutil.iter_modules(__path__):
        if mod.name not in _CORE and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    return SECTIONS


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


def render_report(run_dir, out=None) -> Path:
    """Write the report of `run_dir` to `out` (default RUN_DIR/report.html); return its path."""
    run_dir = Path(run_dir).expanduser()
    records = read_records(run_dir)
    if not records:
        raise DataError(f"no records in {run_dir / 'records.jsonl'}: nothing to report")
    load_sections()
    platform, note = read_platform(run_dir)
    ctx = {"run_dir": run_dir, "platform": platform}
    text = html.page(run_dir.resolve(), records, platform, note, html.render_sections(records, ctx))
    out = Path(out) if out else run_dir / "report.html"
    try:
        atomic_write_text(out, text)
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
