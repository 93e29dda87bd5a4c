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
    schema       version of this layout (SCHEMA_VERSION); records without it are version 1

`to_frame(records)` flattens records into one pandas DataFrame: `params.*`, `metrics.*` and
`cache.*` columns, plus the shared nouns under the same column in every study (SHARED_KEYS:
`stack`, `chunks`, `compression`, `ranks`), which is what summaries group by.
"""

import datetime as _dt
import json
from pathlib import Path

from climio.runs import stopping
from climio.base.errors import DataError
from climio.runs.staging import staged
from climio.base.units import rate_MBps

SCHEMA_VERSION = 2
REQUIRED_KEYS = ("study", "params", "metrics", "cache", "rep", "status", "time", "platform_id")
# The design's shared nouns, and the params key each study has used for them (first found wins):
# the software stack (read studies: layer; parallel-write: backend), the chunk shape, the
# compression setting and the number of MPI ranks or tasks.
SHARED_KEYS = {
    "stack": ("stack", "layer", "backend"),
    "chunks": ("chunks", "chunking"),
    "compression": ("compression",),
    "ranks": ("ranks", "tasks"),
}
STATUSES = ("ok", "dnf", "error")


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def iso_utc(epoch_s, timespec: str = "seconds"):
    """ISO-8601 UTC text of a Unix time in seconds (None for none or 0: a time not recorded)."""
    if not epoch_s:
        return None
    return _dt.datetime.fromtimestamp(epoch_s, _dt.timezone.utc).isoformat(timespec=timespec)


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
        "schema": SCHEMA_VERSION,
    }


def validate(rec: dict) -> dict:
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise ValueError(f"record lacks {', '.join(missing)}: {json.dumps(rec)[:200]}")
    if rec["status"] not in STATUSES:
        raise ValueError(f"record has unknown status {rec['status']!r}")
    if rec["cache"].get("state") not in ("cold", "warm"):
        raise ValueError("record does not say which cache state was measured")
    schema = rec.get("schema", 1)
    if not isinstance(schema, int) or schema > SCHEMA_VERSION:
        raise ValueError(f"record has schema {schema!r}; this climio reads up to {SCHEMA_VERSION}")
    return rec


def parse_line(line: str) -> dict:
    """One record from a line of a native program's or worker's stdout."""
    return validate(json.loads(line))


class RecordWriter:
    """Appends records to RUN_DIR/records.jsonl, flushing each line so a killed run keeps its data."""

    def __init__(self, path):
        self.path = Path(path)
        self._fh = open(self.path, "ab", buffering=0)

    def write(self, rec: dict) -> None:
        stopping.check()     # a stop swallowed by library code while this record was measured
        data = (json.dumps(validate(rec), sort_keys=True) + "\n").encode("utf-8")
        start = self._fh.seek(0, 2)
        try:
            view = memoryview(data)
            while view:
                view = view[self._fh.write(view):]
        except OSError:
            self._fh.truncate(start)   # a full disk: no half record line is left behind
            raise

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
    with open(p, "rb") as fh:   # bytes: a line that is not UTF-8 is one bad record, not a decode traceback
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(validate(json.loads(line.decode("utf-8"))))
                except (ValueError, TypeError, AttributeError, RecursionError) as exc:
                    raise DataError(f"{p}:{n}: not a climio record ({str(exc)[:120]})") from None
    return out


def atomic_write_text(path, text: str) -> None:
    """Write to a temporary name beside `path`, then rename: readers never see half a file."""
    with staged(path) as (tmp,):
        Path(tmp).write_text(text, encoding="utf-8")


def shared_value(params: dict, noun: str):
    """The value of a shared noun (SHARED_KEYS) in a record's params, or None."""
    for key in SHARED_KEYS[noun]:
        if key in params:
            return params[key]
    return None


def _is_histogram(d) -> bool:
    """A dict keyed by values (sizes, counts), not by names: {"4096": 12, "65536": 3}."""
    return any(not str(k)[:1].isalpha() for k in d)


def _flat(prefix, d, out, flat=False) -> None:
    """Nested dicts as dotted columns. flat: every dict (metrics.syscalls too) except histograms,
    and histograms and lists as one JSON string column each (a frame of scalars only)."""
    for k, v in d.items():
        if isinstance(v, dict) and v and (flat or prefix != "metrics.syscalls") and not (flat and _is_histogram(v)):
            _flat(f"{prefix}.{k}", v, out, flat)
        elif flat and isinstance(v, (dict, list, tuple)):
            out[f"{prefix}.{k}"] = json.dumps(v, sort_keys=True, default=str)
        else:
            out[f"{prefix}.{k}"] = v


def to_frame(records, flat=False):
    """A flat pandas DataFrame of records, one row each.

    Columns: study, rep, status, time (UTC timestamps), platform_id, schema; `params.*`,
    `metrics.*` and `cache.*` (nested dicts flattened with dots, lists kept as lists); and the
    shared nouns `stack`, `chunks`, `compression`, `ranks`. Records of schema 1 (no version)
    read the same way. flat=True (climio.load_records): only scalar columns, metrics.syscalls.*
    flattened too, a histogram or a list one JSON string column."""
    import pandas as pd

    rows = []
    for rec in records:
        row = {k: rec.get(k) for k in ("study", "rep", "status", "time", "platform_id")}
        row["schema"] = rec.get("schema", 1)
        params = rec.get("params", {})
        for noun in SHARED_KEYS:
            row[noun] = shared_value(params, noun)
            if flat and isinstance(row[noun], (list, tuple, dict)):
                row[noun] = json.dumps(row[noun], default=str)
        for part in ("params", "metrics", "cache"):
            _flat(part, rec.get(part, {}) or {}, row, flat)
        rows.append(row)
    df = pd.DataFrame(rows)
    if "time" in df and len(df):
        df["time"] = pd.to_datetime(df["time"], utc=True, errors="coerce", format="ISO8601")
    return df
