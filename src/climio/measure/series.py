"""The repetition loop every Python worker shares: the twin of csrc/common/series.c.

    run_series(Series(...), emit)

For each repetition: open the data (untimed: a netCDF/HDF5 open reads the header, and the
kernel reads ahead megabytes with it), THEN bring the page cache into the asked state and verify
it with mincore, mark the configuration for strace, time the requests (checksum, budget), close,
and emit one record. Evicting after the open is what makes a cold record cold: evicting before
it let the open's readahead serve the first reads (issue 17).

Every cold record also compares the bytes this process fetched from storage (/proc/self/io) with
the bytes the access needs; a record far below that is marked effectively warm, whatever the
eviction said (cache.effective, cache.storage_share).

Wall time is monotonic; CPU time is user + system from getrusage, next to wall time in every
record, because the gap between them is how the thesis told I/O-bound from CPU-bound reads.
"""

import os
import resource
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from climio.machine import cache
from climio.machine.cache import storage_read_bytes
from climio.runs.records import make_record

MARKER_PREFIX = "climio-mark"


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


class StreamChecksum:
    """sum_k w_k * (2k+1) mod 2**64 over the little-endian uint64 words of a byte stream.

    Position-weighted, so bytes delivered from a wrong offset or in a wrong order change it.
    """

    def __init__(self):
        self.k = 0
        self.value = np.uint64(0)

    def update(self, data) -> None:
        """Add the raw bytes of `data` (bytes, or any array, masked arrays included)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = np.ascontiguousarray(np.ma.getdata(data))
        words = np.frombuffer(memoryview(data).cast("B"), dtype="<u8")
        weights = np.arange(2 * self.k + 1, 2 * (self.k + len(words)) + 1, 2, dtype=np.uint64)
        with np.errstate(over="ignore"):
            self.value = np.uint64(self.value + np.sum(words * weights, dtype=np.uint64))
        self.k += len(words)

    def hexdigest(self) -> str:
        return f"{int(self.value):016x}"


# --- the loop -----------------------------------------------------------------------------------

# A cold repetition that fetched less than this share of the bytes it needs from storage was
# served by the page cache (or a library's own cache) and is marked effectively warm.
EFFECTIVELY_WARM_SHARE = 0.5
# Budget policy "sample": a cut repetition says nothing about the rate but an upper bound below
# this many requests and this share of them (series.h: SERIES_MIN_SAMPLE, SERIES_MIN_SHARE).
MIN_SAMPLE, MIN_SHARE = 3, 0.01
BUDGET_POLICIES = ("dnf", "sample")


@dataclass
class Series:
    """One configuration of a study, as the loop runs it.

    `open()` returns an object whose `read(request)` delivers the data of one request and whose
    `close()` ends the repetition. `needed_bytes(n)` is what a cold read of the first n requests
    must fetch from storage (distinct bytes; stored bytes for compressed data)."""

    study: str
    path: str
    params: dict
    requests: Sequence
    open: Callable
    needed_bytes: Callable
    planned_bytes: int
    reps: int = 3
    cache: str = "cold"
    budget_s: float = 0.0
    budget_policy: str = "dnf"
    mark: tuple = ("series", 0)
    verify: bool = False
    platform_id: str = ""
    extra_metrics: Optional[Callable] = None      # (reader) -> dict, e.g. the chunk cache in effect
    extra_params: Optional[Callable] = None       # (reader) -> dict
    checksum: Optional[Callable] = None           # () -> object with update(data) and hexdigest()
    marker: Optional["Marker"] = field(default=None, repr=False)


def total_storage_bytes(counts):
    """The storage bytes of several processes or tasks together (each its own /proc/self/io
    count), or None when any count is unknown."""
    counts = list(counts)
    return sum(counts) if all(c is not None for c in counts) else None


def storage_checked(state: dict, metrics: dict, needed) -> dict:
    """The cache field of a record after the storage-share check, with metrics.storage_needed_bytes
    set to `needed` (the keys every study's cold records carry)."""
    metrics["storage_needed_bytes"] = int(needed)
    return storage_check(state, metrics.get("storage_read_bytes"), int(needed))


def storage_check(state: dict, storage_bytes, needed: int) -> dict:
    """The cache field after the storage-share check: a cold state whose storage share is far
    below 1 becomes effective "effectively-warm"; unknown counters leave it "unverified"."""
    out = dict(state)
    if state.get("state") != "cold":
        out["effective"] = state.get("state")
        return out
    if storage_bytes is None or not needed:
        out["effective"] = "cold" if not needed else "unverified"
        return out
    share = storage_bytes / needed
    out["storage_share"] = round(share, 4)
    out["effective"] = "cold" if share >= EFFECTIVELY_WARM_SHARE else "effectively-warm"
    return out


def run_series(s: Series, emit) -> None:
    """All repetitions of `s`; a dnf record ends them. Emits records through `emit(record)`."""
    if s.budget_policy not in BUDGET_POLICIES:
        raise ValueError(f"unknown budget policy {s.budget_policy!r}")
    marker = s.marker or Marker()
    try:
        for rep in range(s.reps):
            marker.mark("open", 0, rep)           # header reads of the open go to a phase of their own
            with Timer() as t_open:
                reader = s.open()
            state = cache.prepare([s.path], s.cache)   # after the open: its readahead is evicted too
            marker.mark(s.mark[0], s.mark[1], rep)
            summer = s.checksum() if s.verify and s.checksum else None
            t, nbytes, ops = timed_requests(s.requests, reader.read, s.budget_s, summer)
            params = dict(s.params, **(s.extra_params(reader) if s.extra_params else {}))
            extra = s.extra_metrics(reader) if s.extra_metrics else {}
            reader.close()
            metrics = {"bytes": nbytes, "ops": ops, "open_s": t_open.wall_s, **t.metrics(), **extra}
            if summer is not None:
                metrics["checksum"] = summer.hexdigest()
            state = storage_checked(state, metrics, s.needed_bytes(ops))
            status = "ok"
            if ops < len(s.requests):
                if s.budget_policy == "dnf":
                    status = "dnf"
                    metrics.update(planned_bytes=s.planned_bytes, budget_s=s.budget_s,
                                   rate_bound_MBps=s.planned_bytes / s.budget_s / 1e6)
                else:
                    metrics["sampled"] = True
                    if ops < MIN_SAMPLE and ops < MIN_SHARE * len(s.requests):
                        status = "dnf"
                        metrics.update(planned_bytes=s.planned_bytes, budget_s=s.budget_s,
                                       rate_bound_MBps=nbytes / s.budget_s / 1e6)
            elif s.budget_policy == "sample":
                metrics["sampled"] = False
            emit(make_record(s.study, params, metrics, state, rep, status, s.platform_id))
            if status == "dnf":
                return
    finally:
        if s.marker is None:
            marker.close()


def distinct_bytes(ranges) -> int:
    """Bytes covered by (offset, length) ranges, overlaps counted once (the twin of rs_needed in
    csrc/common/series.c). Vectorised: a 512 B sequential plan of a large file has millions."""
    a = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    a = a[a[:, 1] > 0]
    if not len(a):
        return 0
    a = a[np.argsort(a[:, 0], kind="stable")]
    off, end = a[:, 0], a[:, 0] + a[:, 1]
    covered = np.concatenate(([off[0]], np.maximum.accumulate(end)[:-1]))  # end of the union so far
    return int(np.maximum(end - np.maximum(off, covered), 0).sum())
