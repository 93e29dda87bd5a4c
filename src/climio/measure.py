"""Timing one repetition, and running the processes that measure (native probes, Python workers).

Wall time is monotonic; CPU time is user + system from getrusage, next to wall time in every
record, because the gap between them is how the thesis told I/O-bound from CPU-bound reads.
"""

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from .errors import NativeError
from .native import child_env
from .records import parse_line

MARKER_PREFIX = "climio-mark"


def storage_read_bytes():
    """Bytes this process fetched from storage (/proc/self/io read_bytes; page-cache hits do
    not count), or None where the kernel does not account task I/O."""
    try:
        with open("/proc/self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Timer:
    """Wall, user and system seconds and storage bytes of the enclosed block (this process)."""

    def __enter__(self):
        self._io0 = storage_read_bytes()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self._u0, self._s0 = ru.ru_utime, ru.ru_stime
        self._w0 = time.perf_counter()
        return self

    def elapsed(self) -> float:
        return time.perf_counter() - self._w0

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self._w0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.user_s = ru.ru_utime - self._u0
        self.sys_s = ru.ru_stime - self._s0
        io1 = storage_read_bytes()
        self.storage_read_bytes = io1 - self._io0 if io1 is not None and self._io0 is not None else None

    def metrics(self) -> dict:
        m = {"wall_s": self.wall_s, "user_s": self.user_s, "sys_s": self.sys_s, "cpu_s": self.user_s + self.sys_s}
        if self.storage_read_bytes is not None:
            m["storage_read_bytes"] = self.storage_read_bytes
        return m


def nbytes_of(data) -> int:
    return data.nbytes if hasattr(data, "nbytes") else len(data)


def timed_requests(requests, read, budget_s=0.0, checksum=None):
    """Issue `read(request)` for each request inside one Timer, stopping once past `budget_s`.

    Returns (timer, bytes delivered, requests done). The budget is checked after each request:
    a request in flight cannot be interrupted, so the last one may overrun.
    """
    nbytes = ops = 0
    with Timer() as t:
        for req in requests:
            data = read(req)
            if checksum is not None:
                checksum.update(data)
            nbytes += nbytes_of(data)
            ops += 1
            if budget_s and t.elapsed() > budget_s:
                break
    return t, nbytes, ops


class Marker:
    """Writes `climio-mark ...` to /dev/null between configurations.

    Outside the timed region it costs one syscall; under `strace -y` it tells which
    configuration each traced read syscall belongs to.
    """

    def __init__(self):
        self.fd = os.open(os.devnull, os.O_WRONLY)

    def mark(self, *fields) -> None:
        os.write(self.fd, (" ".join([MARKER_PREFIX, *map(str, fields)]) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)


def stream_records(cmd, on_record, env=None, cwd=None) -> None:
    """Run `cmd`, passing each JSON record it prints to `on_record`; fail with its last stderr line."""
    name = Path(cmd[0]).name if cmd[0] != sys.executable else " ".join(cmd[1:3])
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env or child_env(), cwd=cwd, bufsize=1)
    except OSError as exc:
        raise NativeError(f"cannot start {name}: {exc.strerror}") from None
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                on_record(parse_line(line))
        stderr = proc.stderr.read()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.wait() != 0:
        lines = [l for l in stderr.strip().splitlines() if l.strip()]
        raise NativeError(f"{name} failed (exit {proc.returncode}): {lines[-1] if lines else 'no message'}")
