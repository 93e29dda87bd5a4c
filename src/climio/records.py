"""The result record: one JSON object per line, the same from Python and native probes.

A record is a plain dict so that native programs, pandas and jq read it as is:

    study        what is measured ("read-stack", "chunking", ...)
    params       the Layout / Access / Stack values of the configuration
    metrics      bytes, wall_s, user_s, sys_s, cpu_s, ops, rate_MBps (+ study extras)
    cache        {"state": "cold"|"warm", "method": ..., "resident_fraction": ..., ...}
    rep          repetition index (0-based)
    status       "ok", "dnf" (did not finish within the time budget) or "error"
    time         ISO-8601 UTC timestamp of the measurement
    platform_id  key of the platform.json the run directory holds
"""

import datetime as _dt
import json
import os
from pathlib import Path

from .errors import DataError
from .units import rate_MBps

REQUIRED_KEYS = ("study", "params", "metrics", "cache", "rep", "status", "time", "platform_id")
STATUSES = ("ok", "dnf", "error")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def complete_metrics(metrics: dict) -> dict:
    """Fill derived metrics (cpu_s, rate_MBps) from the measured ones."""
    m = dict(metrics)
    if "user_s" in m and "sys_s" in m:
        m.setdefault("cpu_s", m["user_s"] + m["sys_s"])
    if m.get("wall_s") and "bytes" in m:
        m.setdefault("rate_MBps", rate_MBps(m["bytes"], m["wall_s"]))
    return m


def make_record(study, params, metrics, cache, rep=0, status="ok", platform_id="", time=None) -> dict:
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    return {
        "study": study,
        "params": dict(params),
        "metrics": complete_metrics(metrics),
        "cache": dict(cache),
        "rep": rep,
        "status": status,
        "time": time or now_iso(),
        "platform_id": platform_id,
    }


def validate(rec: dict) -> dict:
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise ValueError(f"record lacks {', '.join(missing)}: {json.dumps(rec)[:200]}")
    if rec["status"] not in STATUSES:
        raise ValueError(f"record has unknown status {rec['status']!r}")
    if rec["cache"].get("state") not in ("cold", "warm"):
        raise ValueError("record does not say which cache state was measured")
    return rec


def parse_line(line: str) -> dict:
    """One record from a line of a native program's or worker's stdout."""
    return validate(json.loads(line))


class RecordWriter:
    """Appends records to RUN_DIR/records.jsonl, flushing each line so a killed run keeps its data."""

    def __init__(self, path):
        self.path = Path(path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, rec: dict) -> None:
        self._fh.write(json.dumps(validate(rec), sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_records(path) -> list:
    """All records of a records.jsonl file, or of RUN_DIR/records.jsonl."""
    p = Path(path)
    if p.is_dir():
        p = p / "records.jsonl"
    if not p.is_file():
        raise DataError(f"no records at {p}")
    out = []
    with open(p, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(validate(json.loads(line)))
                except (ValueError, json.JSONDecodeError) as exc:
                    raise DataError(f"{p}:{n}: not a climio record ({exc})") from None
    return out


def atomic_write_text(path, text: str) -> None:
    """Write to a temporary name beside `path`, then rename: readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
