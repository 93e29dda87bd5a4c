"""Where a rechunk command's wall time goes: mark(name) at the end of each phase; report() gives
[(name, seconds)] from the process's start (the kernel's record of it, 10 ms resolution), so the
first phase is the interpreter and the imports before the command ran. The --json summary of a
rechunk to object storage carries it as "phases" (bench/rechunk_s3_vs_peers.py prints it)."""

import os
import time

_marks = []   # (name, time.time() at the phase's end)


def process_start() -> float:
    """This process's start in epoch seconds, else now: its start in ticks after boot
    (/proc/self/stat) against the time since boot (/proc/uptime; btime is whole seconds)."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            up = float(fh.read().split()[0])
        return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def mark(name: str) -> None:
    _marks.append((name, time.time()))


def report() -> list:
    """[[name, seconds]] in order; a name marked twice (two variables, two passes) adds up."""
    out, last = {}, process_start()
    for name, t in _marks:
        out[name] = out.get(name, 0.0) + max(0.0, t - last)
        last = t
    return [[k, round(v, 3)] for k, v in out.items()]
