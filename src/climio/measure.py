"""Timing one repetition, and running the processes that measure (native probes, Python workers).

Wall time is monotonic; CPU time is user + system from getrusage, next to wall time in every
record, because the gap between them is how the thesis told I/O-bound from CPU-bound reads.
"""

import os
import resource
import subprocess
import time
from pathlib import Path

from .errors import NativeError
from .records import parse_line

MARKER_PREFIX = "climio-mark"


class Timer:
    """Wall, user and system seconds of the enclosed block (this process, all threads)."""

    def __enter__(self):
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

    def metrics(self) -> dict:
        return {"wall_s": self.wall_s, "user_s": self.user_s, "sys_s": self.sys_s,
                "cpu_s": self.user_s + self.sys_s}


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
    name = Path(cmd[0]).name if cmd[0] != os.sys.executable else " ".join(cmd[1:3])
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=cwd, bufsize=1)
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
