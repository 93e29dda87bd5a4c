"""One run of the traced job for `climio trace try`: cold, traced, with a fix's environment.

    run_job(job, env_extra, run_dir, evict) -> dict   wall and CPU seconds, exit status, stdout, cache state,
                                                      I/O share and what the run's own trace shows

Every run is traced (the same tracer for the baseline and the fixes): its trace gives the I/O share
and checks the fix took effect (the copy was read and the original was not; the injected cache is
the variable's). The files the job writes go to run_dir/out (CLIMIO_TRY_WRITES, by path).
"""

import json
import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from climio.machine import cache
from ..reader import read_trace
from ..report import measured_facts
from ..run import trace_vars, tracer_library

TRACED_LAYERS = ["posix", "netcdf", "hdf5"]


@dataclass
class TracedJob:
    argv: list           # the traced command
    cwd: str             # its working directory
    writes: list         # absolute paths it writes (from the baseline trace)
    excludes: list       # the trace's exclusions (interpreter, climio's own sources)


def _writes_env(job, out_dir) -> dict:
    if not job.writes:
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    moves = {w: str(out_dir / f"{k}-{os.path.basename(w)}") for k, w in enumerate(job.writes)}
    return {"CLIMIO_TRY_WRITES": ";".join(f"{a}={b}" for a, b in moves.items())}


def run_job(job, env_extra, run_dir, evict) -> dict:
    """Run the job once, cold: `evict` (the original and any copies) dropped from the page cache and
    checked; returns the run's record fields."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    state = cache.prepare([p for p in evict if os.path.exists(p)], "cold")
    env = dict(os.environ)
    env.update(trace_vars(tracer_library(), run_dir / "trace", TRACED_LAYERS, job.excludes, None,
                          env.get("LD_PRELOAD")))
    env.update(_writes_env(job, run_dir / "out"))
    env.update(env_extra)
    t0, c0 = time.perf_counter(), child_cpu_s()
    proc = subprocess.run(job.argv, cwd=job.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall, cpu = time.perf_counter() - t0, child_cpu_s() - c0
    (run_dir / "stdout.txt").write_bytes(proc.stdout)
    (run_dir / "stderr.txt").write_bytes(proc.stderr)
    rec = {"wall_s": wall, "cpu_s": cpu, "exit_status": proc.returncode, "cache": state, "dir": str(run_dir),
           "stdout": proc.stdout.decode(errors="replace"), "stderr_tail": proc.stderr.decode(errors="replace")[-2000:]}
    rec.update(_seen(run_dir / "trace"))
    report = run_dir / "injected.jsonl"
    rec["python_injected"] = [json.loads(l) for l in report.read_text().splitlines()] if report.exists() else []
    return rec


def child_cpu_s() -> float:
    """User + system seconds of this process's finished, waited-for children (and theirs): the delta
    around one child is its CPU time. Beside wall time because on shared cores the wall time also
    holds the time the job waited for a core (load 14 on 2 cores: 4x its CPU time)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _h5_cache(trace_dir) -> list:
    """The raw-data chunk cache of each file H5Fopen opened (its event's aux)."""
    tr = read_trace(trace_dir)
    names = tr.text(tr.events["func_id"]) if len(tr.events) else []
    return [tr.aux[i]["cache_bytes"] for i, n in enumerate(names) if n == "H5Fopen" and "cache_bytes" in tr.aux.get(i, {})]


def _seen(trace_dir) -> dict:
    """What the run's own trace shows: I/O share, files read, each netCDF variable's chunk cache, each
    HDF5 file's."""
    try:
        f = measured_facts(trace_dir)
    except Exception as exc:   # a job that did no traced I/O leaves no trace: say so, do not fail
        return {"io_share": None, "io_time_s": None, "read_files": [], "nc_cache": {}, "h5_cache": [],
                "settings": None, "trace_note": str(exc)}
    return {"h5_cache": _h5_cache(trace_dir), "io_share": f.run.get("io_share"), "io_time_s": f.run.get("io_time_s"),
            # the library settings in force at the job's exit (None: climio's sitecustomize did not run)
            "settings": (f.objects or {}).get("settings") if f.objects is not None else None,
            "read_files": sorted(e["file"] for e in f.files if e.get("bytes_read")),
            "nc_cache": {f"{v['file']}:{v['var']}": v["cache_bytes"] for v in (f.netcdf or {}).get("variables", [])}}
