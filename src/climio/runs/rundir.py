"""A run directory: records.jsonl, platform.json and the report, in one place per run."""

import datetime as _dt
import json
import os
from pathlib import Path

from climio.machine import platform
from climio.base.errors import DataError
from climio.runs.records import RecordWriter, atomic_write_text


def writable_dir(path, create=True) -> Path:
    """`path` as a directory we can write, or a one-line DataError."""
    p = Path(path).expanduser()
    if create:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(f"cannot create directory {p}: {exc.strerror}") from None
    if not p.is_dir():
        raise DataError(f"directory {p} does not exist")
    if not os.access(p, os.W_OK | os.X_OK):
        raise DataError(f"directory {p} is not writable")
    return p


def claim_dir(path, append=False, force=False, marks=("records.jsonl", "platform.json"), what="run",
              options="--append (append=True) to add to it, or --force (force=True) to replace it") -> None:
    """An output directory that already holds output is refused before anything runs (a second run
    added to the first, and the report mixed the two): `append` adds to it, `force` replaces it
    whole; only a directory holding one of `marks` (climio's own output: a `what`) is either."""
    import shutil
    from climio.base.errors import InputError
    p = Path(path)
    if append and force:
        raise InputError("--append and --force contradict each other: give one")
    if not p.is_dir() or not any(p.iterdir()):
        return
    ours = any((p / m).is_file() for m in marks)
    if append and ours:
        return
    if force and ours:
        shutil.rmtree(p)
        return
    held = f"a {what}" if ours else f"files that are not a climio {what}"
    raise InputError(f"{p} already holds {held}: choose another output directory" + (f", {options}" if ours else ""))


def discard_empty_run(path) -> bool:
    """Remove a run directory that holds no record (platform.json and an empty records.jsonl, as
    a run that failed before measuring leaves them): it would refuse the retry as "already holds a
    run". A directory with anything else in it is left as it is. True when removed."""
    p = Path(path)
    records = p / "records.jsonl"
    if not p.is_dir() or (records.is_file() and records.stat().st_size):
        return False
    if {f.name for f in p.iterdir()} - {"records.jsonl", "platform.json"}:
        return False
    for name in ("records.jsonl", "platform.json"):
        (p / name).unlink(missing_ok=True)
    p.rmdir()
    return True


def default_run_dir(study: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("climio-runs") / f"{study}-{stamp}"


class RunDir:
    """Opens a run directory, records the platform of `data_dir` and appends records."""

    def __init__(self, path, data_dir):
        self.path = writable_dir(path)
        self.platform = platform.collect(data_dir)
        atomic_write_text(self.path / "platform.json", json.dumps(self.platform, indent=2, sort_keys=True))
        self.platform_id = self.platform["platform_id"]
        self.writer = RecordWriter(self.path / "records.jsonl")

    def close(self):
        self.writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
