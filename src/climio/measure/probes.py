"""The command lines of climio's native measuring programs, built in one place.

    slab_argv(path, var, slices_file, reps=1, cache="cold", ...)  climio-probe-netcdf-slab
    slab_options(...)                                             its options (the Python worker takes them too)
    pario_read_argv(mode, *args)                                  climio-pario --op read --mode MODE ...
    slab_records(path, var, reads, ...) -> [record]               one slab probe over a list of hyperslabs
    probe_records([argv, ...]) -> [[record], ...]                 several probes at once

A hyperslab is (start, count); the slab probe reads a slices file of one hyperslab a line (n starts
then n counts), written here to a temporary file and removed afterwards. Every launch goes through
the one streamer (measure.procs: timeout, process-group kill, one-line NativeError).
"""

import contextlib
import os
import tempfile
import threading

from climio.machine import native
from climio.base.errors import ClimioError, NativeError
from .procs import DEFAULT_TIMEOUT_S, kill_streaming, stream_records

SLAB = "climio-probe-netcdf-slab"
PARIO_READ = native.PARIO   # climio-pario --op read
# netCDF-C's chunk cache as the probes take it: SIZE,NELEMS,PREEMPTION (4133 slots, 0.75 preemption
# as the library's defaults; only the size is varied)
CACHE_NELEMS, CACHE_PREEMPTION = 4133, 0.75


def chunk_cache_text(size_bytes) -> str:
    """--chunk-cache value: "default" (None) or SIZE,4133,0.75."""
    return "default" if size_bytes is None else f"{int(size_bytes)},{CACHE_NELEMS},{CACHE_PREEMPTION}"


def chunk_cache_spec(size_bytes):
    """The same chunk cache as the Python readers take it: None or (size, nelems, preemption)."""
    return None if size_bytes is None else (int(size_bytes), CACHE_NELEMS, CACHE_PREEMPTION)


def slab_options(path, var, slices_file, reps=1, cache="cold", budget=0, chunk_cache="default",
                 platform_id=None) -> list:
    """The slab probe's options (climio.measure.worker's chunking mode takes the same);
    `chunk_cache` is a --chunk-cache text (chunk_cache_text)."""
    a = ["--file", str(path), "--var", var, "--slices", str(slices_file), "--reps", str(reps), "--cache", cache,
         "--budget", str(budget), "--chunk-cache", chunk_cache]
    return a + (["--platform-id", platform_id] if platform_id is not None else [])


def slab_argv(*args, **kwargs) -> list:
    """climio-probe-netcdf-slab with slab_options(*args, **kwargs)."""
    return [native.program(SLAB), *slab_options(*args, **kwargs)]


def pario_read_argv(mode, *args) -> list:
    """The parallel read program in `mode` (mpiio or tasks) with the mode's options."""
    return [*native.pario("read"), "--mode", mode, *map(str, args)]


def available(name=SLAB) -> bool:
    """Whether native program `name` is built (climio-probe-netcdf-slab by default)."""
    try:
        native.program(name)
        return True
    except ClimioError:
        return False


@contextlib.contextmanager
def slices_file(reads):
    """A temporary slices file of `reads` [(start, count)], removed on exit."""
    fd, name = tempfile.mkstemp(prefix="climio-slices-", suffix=".txt")
    try:
        with os.fdopen(fd, "w") as fh:
            for s, c in reads:
                fh.write(" ".join(map(str, [*s, *c])) + "\n")
        yield name
    finally:
        os.unlink(name)


def slab_records(path, var, reads, reps=1, cache="cold", chunk_cache=None, platform_id=None,
                 timeout_s=DEFAULT_TIMEOUT_S) -> list:
    """The records of one slab probe reading `reads` of `var`, `reps` times from a `cache` page cache,
    with a chunk cache of `chunk_cache` bytes (None: the library's default)."""
    with slices_file(reads) as name:
        out = []
        stream_records(slab_argv(path, var, name, reps, cache, 0, chunk_cache_text(chunk_cache), platform_id),
                       out.append, timeout_s=timeout_s)
        return out


def probe_records(argvs, timeout_s=DEFAULT_TIMEOUT_S) -> list:
    """[records of each argv]: the programs run at once, one in this thread and the others on
    threads, each streamer timing out on its own; the first failure is raised here, and a stop
    (Ctrl-C) kills every one of them."""
    recs = [[] for _ in argvs]
    errors = []

    def launch(i):
        try:
            stream_records(argvs[i], recs[i].append, timeout_s=timeout_s)
        except Exception as exc:  # noqa: BLE001  (re-raised below, in the caller's thread)
            errors.append(exc)
    threads = [threading.Thread(target=launch, args=(i,), daemon=True) for i in range(1, len(argvs))]
    for t in threads:
        t.start()
    try:
        if argvs:
            launch(0)
        for t in threads:
            t.join()
    except BaseException:       # e.g. Ctrl-C: the other threads' probes must not run on
        kill_streaming()
        raise
    if errors:
        raise errors[0]
    return recs


def slab_records_at_once(path, var, groups, chunk_cache=None, platform_id=None, timeout_s=DEFAULT_TIMEOUT_S) -> list:
    """The last record of one cold slab probe per group of reads, all probes at once."""
    with contextlib.ExitStack() as stack:
        names = [stack.enter_context(slices_file(g)) for g in groups]
        argvs = [slab_argv(path, var, n, 1, "cold", 0, chunk_cache_text(chunk_cache), platform_id or "")
                 for n in names]
        recs = probe_records(argvs, timeout_s)
    if not all(recs):
        raise NativeError(f"{SLAB} printed no record")
    return [r[-1] for r in recs]
