"""Which read system calls a layer really issues: strace, split per configuration by markers.

The measured process writes `climio-mark PATTERN BUFFER REP` to /dev/null before each
configuration's reads (measure.series.Marker); `strace -y` shows the path behind every fd, so read
calls on the data file are attributed to the last marker seen. This is a separate, untimed
pass: strace slows every syscall down, so it never runs during a timed repetition.
"""

import re
import shutil
import subprocess
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from climio.base.errors import NativeError
from climio.measure.series import MARKER_PREFIX
from climio.machine.native import child_env

READ_CALLS = ("read", "pread64", "readv", "preadv", "preadv2")
_CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((\d+)<([^>]*)>(.*)$")
_RESUMED = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+<\.\.\. (\w+) resumed>(.*)$")
_RESULT = re.compile(r"=\s+(-?\d+)")
_MARK = re.compile(re.escape(MARKER_PREFIX) + r" ([^\\\"]+)")


def strace_path() -> str:
    exe = shutil.which("strace")
    if not exe:
        raise NativeError("strace not found: it is needed to count read syscalls (install it with `make setup`)")
    return exe


def trace(cmd, data_path, env=None, timeout=None) -> dict:
    """Run `cmd` under strace; return {marker fields tuple: Counter(read size -> calls)}."""
    with tempfile.TemporaryDirectory(prefix="climio-strace-") as tmp:
        log = Path(tmp) / "strace.log"
        full = [strace_path(), "-f", "-qq", "-y", "-s", "96", "-e", "signal=none",
                "-e", "trace=" + ",".join(READ_CALLS + ("write",)), "-o", str(log), *cmd]
        proc = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env or child_env(), timeout=timeout)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise NativeError(f"traced run of {Path(cmd[0]).name} failed: {last}")
        with open(log, errors="replace") as fh:
            return parse(fh, str(Path(data_path).resolve()))


def parse(lines, data_path: str) -> dict:
    """Read sizes per marker from strace -f -y output lines (unfinished/resumed calls included)."""
    per_mark = defaultdict(Counter)
    current = None
    pending = {}  # pid -> (call, path) of an <unfinished ...> call
    for line in lines:
        m = _CALL.match(line)
        if m:
            pid, call, _fd, path, rest = m.groups()
            if "<unfinished ...>" in rest:
                pending[pid] = (call, path, rest)
                continue
        else:
            r = _RESUMED.match(line)
            if not r or r.group(1) not in pending:
                continue
            call, path, first = pending.pop(r.group(1))
            rest = first + r.group(3)
        if call == "write" and path == "/dev/null":
            mk = _MARK.search(rest)
            if mk:
                current = tuple(mk.group(1).split())
            continue
        if call in READ_CALLS and path == data_path and current is not None:
            res = _RESULT.search(rest.rsplit(")", 1)[-1])
            if res:
                per_mark[current][int(res.group(1))] += 1
    return dict(per_mark)


def summarise(sizes: Counter, requests: int, top=6) -> dict:
    """Per-request view: how many read calls and how many bytes each user request cost."""
    calls = sum(sizes.values())
    nbytes = sum(max(s, 0) * c for s, c in sizes.items())
    return {
        "tool": "strace",
        "requests": requests,
        "read_calls": calls,
        "read_bytes": nbytes,
        "calls_per_request": calls / requests if requests else None,
        "bytes_per_request": nbytes / requests if requests else None,
        "sizes": {str(s): c for s, c in sizes.most_common(top)},
        "max_call_bytes": max(sizes) if sizes else 0,
    }
