"""What this machine gives a process: the cores it may run on, and for a conversion `climio rechunk`'s
default memory budget and workers, and the memory an intermediate file just written can stay cached
in. The planner (climio.model.convert) is pure and takes these as numbers (`here()`); they are asked
of the kernel only here.

    cores() -> int                  the cores this process may run on (one answer for MPI, Dask, the studies)
    core_counts() -> [1, 2, 4, ..., cores()]   the counts a scaling sweep takes
    here() -> Resources(max_mem, workers, page_cache_bytes)
    default_max_mem(), available_memory()
"""

import os
from dataclasses import dataclass

# Default memory budget (--max-mem): a quarter of the RAM, and no more than half of what is
# available now, so the converter shares a node politely.
DEFAULT_MEM_FRACTION = 0.25


@dataclass(frozen=True)
class Resources:
    max_mem: int                 # bytes: `climio rechunk`'s budget when --max-mem is not given
    workers: int                 # processes when --workers is not given
    page_cache_bytes: int        # what the kernel says is available now (MemAvailable)


def _meminfo() -> dict:
    info = {}
    with open("/proc/meminfo") as fh:
        for line in fh:
            key, val = line.split(":", 1)
            info[key] = int(val.split()[0]) * 1024
    return info


def default_max_mem() -> int:
    """`climio rechunk`'s memory budget when none is given (see DEFAULT_MEM_FRACTION)."""
    info = _meminfo()
    return int(min(info["MemTotal"] * DEFAULT_MEM_FRACTION, info.get("MemAvailable", info["MemTotal"]) / 2))


def available_memory() -> int:
    """Bytes the kernel says are available now (MemAvailable): what an intermediate file just
    written can stay cached in."""
    return _meminfo().get("MemAvailable", 0)


def cores() -> int:
    """The cores this process may run on: its CPU affinity (every logical CPU where the OS keeps none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def core_counts() -> list:
    """1, 2, 4, ... below cores(), then cores(): the task or worker counts a scaling sweep takes."""
    n, out, k = cores(), [], 1
    while k < n:
        out.append(k)
        k *= 2
    return out + [n]


def here() -> Resources:
    return Resources(default_max_mem(), cores(), available_memory())   # workers: one per core
