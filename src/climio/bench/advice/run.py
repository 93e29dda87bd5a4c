"""The advice study's run: the tas file in each layout, then per job x layout the three climio
commands a user runs, each in its own process as the user would run it:

    climio trace run -o DIR -- python JOB.py FILE     (the file evicted first: a cold first run)
    climio trace report DIR --json                    (the item ranked first, before anything is tried)
    climio rechunk FILE ... --dry-run --json          (the planner's conversion time, for a layout item)
    climio trace try DIR --reps N --json              (every item's fixes, cold, baseline in the same rounds)

One record per case (kind=case): outcome.outcome's fields; a command that fails makes the case an
error record with its last stderr line. The converted copies are deleted after each case.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from climio.base.errors import ClimioError
from climio.machine import cache
from climio.runs.records import make_record
from ...data.writer import check_room
from ...measure.procs import failure_line, kill_group
from ...measure.progress import info
from . import STUDY
from .data import layout_chunks, write_tas
from .jobs import JOBS
from .outcome import outcome


def _climio(args, cwd, timeout) -> str:
    """One climio command's stdout; in its own session, so that a stop (--max-s, Ctrl-C) ends the
    traced job and trace try's runs beneath it too, not only the command."""
    exe = Path(sys.executable).with_name("climio")
    proc = subprocess.Popen([str(exe), *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
        raise ClimioError(f"climio {' '.join(map(str, args[:2]))} ran past --max-s {timeout:g} s") from None
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise
    if proc.returncode != 0:
        raise ClimioError(f"climio {' '.join(map(str, args[:2]))} failed: {failure_line(err, 'climio')}")
    return out


def predicted_conversion(file, var, chunks, scratch, timeout):
    """The rechunk planner's predicted seconds for the whole command (start-up once, every
    variable's passes), as `climio rechunk --dry-run` prints it; None when it cannot say."""
    try:
        plan = json.loads(_climio(["rechunk", file, Path(scratch) / "planned.nc", "-c",
                                   f"{var}:{','.join(map(str, chunks))}", "--dry-run", "--json"], scratch, timeout))
    except (ClimioError, ValueError):
        return None
    plans = list(plan.get("plans", {}).values())
    if not plans:
        return None
    start = plans[0].get("start_s") or 0.0
    return start + sum(p["predicted_s"] - (p.get("start_s") or 0.0) for p in plans)


def run_case(job, layout, file, work, grid, say) -> dict:
    """Trace, report and try one job on one layout; the case's record fields."""
    script, _ = JOBS[job]
    d = Path(work) / f"{job}-{layout}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("jobs") / script, d / script)
    tr = d / "trace"
    cache.evict(file)
    t0 = time.perf_counter()
    _climio(["trace", "run", "-o", tr, "--force", "--", sys.executable, script, file], d, grid.max_s)
    trace_s = time.perf_counter() - t0
    report = json.loads(_climio(["trace", "report", tr, "--json"], d, grid.max_s))
    findings = report.get("findings") or []
    say(f"advice: {job} on {layout}: item 1 before trying: "
        + (f"[{findings[0]['severity']}] {findings[0]['title']}" if findings else "none (no rule fired)"))
    conv = None
    if findings and findings[0]["rule"] == "partial-chunk-compressed":
        ev = findings[0]["evidence"]
        conv = predicted_conversion(ev["file"], ev["var"], ev["target_chunks"], d, grid.max_s)
    t0 = time.perf_counter()
    try:
        tried = json.loads(_climio(["trace", "try", tr, "--reps", grid.reps, "--json"], d, grid.max_s))
    except ClimioError as exc:
        if "no advice item to try" not in str(exc):
            raise
        tried = {"results": [], "baseline_s": None, "notes": ["nothing to try: no advice item"]}
    try_s = time.perf_counter() - t0
    shutil.rmtree(tr / "try" / "copies", ignore_errors=True)   # the converted copies: disk, not evidence
    out = outcome(report, tried, conv)
    out.update(trace_command_s=trace_s, try_command_s=try_s)
    return out


def _record(grid, job, layout, chunks, fields, status, pid, error="") -> dict:
    params = {"kind": "case", "job": job, "what": JOBS[job][1], "layout": layout, "chunks": list(chunks),
              "days": grid.days, "lat": grid.lat, "lon": grid.lon, "reps": grid.reps, "seed": grid.seed,
              **{k: v for k, v in fields.items() if k not in ("baseline_s", "baseline_cpu_s", "trace_command_s",
                                                               "try_command_s")}}
    if error:
        params["error"] = error
    metrics = {"wall_s": fields.get("baseline_s") or 0.0, "baseline_s": fields.get("baseline_s"),
               "cpu_s": fields.get("baseline_cpu_s"),
               "trace_command_s": fields.get("trace_command_s"), "try_command_s": fields.get("try_command_s")}
    return make_record(STUDY, params, metrics, {"state": "cold", "note": "every run evicted and checked by trace try"},
                       0, status, pid)


def run_advice(ctx, grid) -> int:
    pid = ctx.run.platform_id
    say = info if ctx.progress else (lambda *_: None)
    work = Path(ctx.data_dir) / "advice"
    work.mkdir(parents=True, exist_ok=True)
    n = 0
    for layout in grid.layouts:
        chunks = layout_chunks(layout, grid.days, grid.lat, grid.lon)
        file = str(work / f"tas_day_{layout}.nc")
        t0 = time.perf_counter()
        write_tas(file, grid.days, grid.lat, grid.lon, chunks, grid.seed)
        say(f"advice: {file} ({os.path.getsize(file) / 2**20:.0f} MiB, chunks {list(chunks)}) written in "
            f"{time.perf_counter() - t0:.0f} s")
        for job in grid.jobs:
            t0 = time.perf_counter()
            try:
                rec = _record(grid, job, layout, chunks, run_case(job, layout, file, work, grid, say), "ok", pid)
            except ClimioError as exc:
                say(f"advice: {job} on {layout}: {exc}")
                rec = _record(grid, job, layout, chunks, {}, "error", pid, str(exc))
            ctx.run.writer.write(rec)
            n += 1
            say(f"advice: {job} on {layout} done in {time.perf_counter() - t0:.0f} s")
        os.remove(file)
    return n


def check_space(grid, data_dir) -> None:
    """The file, one converted copy and the jobs' scratch: four times the raw variable."""
    check_room(data_dir, 4 * 4 * grid.days * grid.lat * grid.lon, "use fewer --days or a smaller grid")
