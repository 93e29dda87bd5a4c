"""Wall seconds of reading hyperslabs of an array in object storage through an object-store stack
(`climio predict --check` for an s3:// store, `climio bench predict --store`). The store is not
evicted: a remote store's caches are not climio's.

What is timed is the hyperslab reads: the stack's client and the array's metadata (zarr.json) are
made and read first, untimed by the read (`phased_read` times them apart as open_s), the same for
every configuration; the read-time model predicts the hyperslab reads only."""

import time

from climio.measure.stacks_s3 import OBJECT_STACKS
from .series import timed_requests

SPIN_S = 0.05


def slab_walls(endpoint, url: str, var: str, slabs, stack: str, reps: int) -> list:
    """Per repetition, the wall seconds of reading every (start, count) of `slabs` of `url`'s `var`
    through `stack` (opened untimed, once per repetition)."""
    return [phased_read(endpoint, url, var, slabs, stack, timed_gets=False)["wall_s"] for _ in range(reps)]


def cpu_share(seconds: float = SPIN_S) -> float:
    """The share of one core this process gets now: CPU seconds over wall seconds of a busy loop
    (1.0 on an idle core; 0.2 when ten runnable threads share two cores)."""
    c0, t0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass
    wall = time.perf_counter() - t0
    return min(1.0, (time.process_time() - c0) / wall) if wall > 0 else 1.0


def phased_read(endpoint, url: str, var: str, slabs, stack: str, timed_gets: bool = True) -> dict:
    """One repetition with its phases timed apart: open_s (the stack's client made, the array's
    metadata read), wall_s and cpu_s (the hyperslab reads: what is predicted), and with
    `timed_gets` the data GETs inside them (gets, first_get_s, max_get_s, get_sum_s: a slow
    repetition's time in one GET is the store's, spread over its CPU the client's)."""
    from climio.stores.timing import timed_store
    times = []
    t0 = time.perf_counter()
    reader = OBJECT_STACKS[stack](endpoint, wrap=(lambda st: timed_store(st, times)) if timed_gets else None)
    reader.open(url, var)
    open_s = time.perf_counter() - t0
    times.clear()
    try:
        c0 = time.process_time()
        t, _, _ = timed_requests(slabs, lambda slab: reader.read_slab(*slab))
        cpu = time.process_time() - c0
    finally:
        reader.close()
    out = {"open_s": open_s, "wall_s": t.wall_s, "cpu_s": cpu}
    if timed_gets:
        out.update(gets=len(times), first_get_s=times[0] if times else 0.0, max_get_s=max(times, default=0.0),
                   get_sum_s=sum(times))
    return out
