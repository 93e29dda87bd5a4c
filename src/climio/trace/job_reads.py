"""A traced job's reads of one netCDF variable, as the model takes them: [(start, count)] in the
order the job made them (a strided read as the box it spans), for pricing the job on another
layout (what else a layout fix slows; `climio advise T1 T2 ...` choosing one layout for several
jobs).

    main_variable(facts) -> (file, var) the variable the job decoded most of (None when none)
    job_reads(trace_dir, file=None, var=None) -> JobReads
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from climio.base.errors import InputError
from .analysis import analyse
from .reader import read_trace


@dataclass
class JobReads:
    trace: str
    file: str
    var: str
    stack: str                          # Facts.stack: the program's stack
    reads: list = field(default_factory=list)     # [(start, count)]
    time_s: float = 0.0                 # the traced time of these reads

    @property
    def name(self) -> str:
        return f"job {Path(self.trace).name}"


def main_variable(facts):
    """(file, var) of the multi-dimensional variable the job decoded most of, or None."""
    vs = [v for v in ((facts.netcdf or {}).get("variables") or []) if len(v.get("shape") or ()) >= 2]
    return (vs[0]["file"], vs[0]["var"]) if vs else None     # analysis sorts by bytes decoded


def same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def job_reads(trace_dir, file=None, var=None) -> JobReads:
    """The reads of `var` of `file` (default: the job's main variable) in a climio trace directory;
    InputError (one line) when the trace has no netCDF reads of it."""
    an = analyse(read_trace(trace_dir))
    facts = an.facts()
    if file is None or var is None:
        main = main_variable(facts)
        if main is None:
            raise InputError(f"{trace_dir}: the trace has no netCDF reads of a multi-dimensional variable "
                             "(trace the job with the netcdf layer)")
        file, var = file or main[0], var or main[1]
    want = str(var).lstrip("/")
    reads, time_s = [], 0.0
    for r in an.netcdf_reads()[0]:
        if str(r["var"]).lstrip("/") != want or not same_file(r["file"], file):
            continue
        stride = r.get("stride") or [1] * len(r["count"])
        span = [(n - 1) * int(s) + 1 if n else 0 for n, s in zip(r["count"], stride)]
        reads.append((tuple(r["start"]), tuple(span)))
        time_s += r["time_s"]
    if not reads:
        raise InputError(f"{trace_dir}: the job made no traced netCDF read of {want} in {file}")
    return JobReads(str(trace_dir), str(file), want, facts.stack or "", reads, time_s)
