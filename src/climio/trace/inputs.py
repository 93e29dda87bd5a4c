"""What `climio trace report PATH` reads, chosen by what PATH holds: a trace directory of events,
one of counters, or a Darshan log. Above the three readers, so that none imports another back."""

from pathlib import Path

from .reader import TraceError, read_trace


def is_measured_input(path) -> bool:
    """A trace directory or a Darshan log (what read_input reads). Here, not in trace.report, so
    that `climio advise FILE` asks without importing the report's figures (matplotlib)."""
    p = Path(path)
    if p.is_dir():   # a local Zarr store is data, not a trace
        from climio.dataset.description import is_local_zarr
        return not is_local_zarr(p)
    return p.is_file() and (p.suffix == ".darshan" or ".darshan" in p.name)


def read_input(path):
    """What `climio trace report PATH` reads: a trace directory -> Trace (or, when it holds counters, a
    climio.trace.counters_log.CountersTrace, analysed like a Darshan log); a file -> a Darshan log
    (climio.trace.darshan_log.DarshanLog, read through pydarshan). Anything else is a TraceError."""
    p = Path(path).expanduser()
    if p.is_dir():
        from .counters_log import has_counters, read_counters_trace
        if has_counters(p):   # counters mode, or a full trace that reached its event cap
            return read_counters_trace(p)
        return read_trace(p)
    if p.is_file():
        from .darshan_log import read_darshan
        return read_darshan(p)
    raise TraceError(f"no trace directory or Darshan log at {p}")
