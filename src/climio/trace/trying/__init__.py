"""`climio trace try DIR [--items LIST | --top K] [--reps N] [--passes P] [--with T2 ...] [--json]`: re-run the traced
command (its argv and working directory from DIR/meta.json, in the environment `trace try` runs in)
with each candidate fix applied, without editing the script or touching the file, and rank the fixes
by what they measured.

    try_fixes(trace_dir, items=, top=, reps=, passes=, scratch=, allow_writes=, compare=, say=) -> summary

Modules: candidates (the fixes an advice item can be tried as), conversion (the copies), runs (one
cold traced run), compare (same result?), rank (gains, verdicts, the table). Scratch space:
DIR/try (or --scratch): the converted copies, one directory per run with its trace, stdout and the
files the job wrote; records.jsonl (one record per run) and try.json (the summary).
"""

import json
import os
import re
from pathlib import Path

import numpy as np

from climio.base.errors import InputError
from climio.runs.records import atomic_write_text, make_record
from ..reader import LAYER_IDS, read_trace
from ..report import judged, measured_facts
from ..run import default_excludes
from . import rank
from ..effects import others_of, predicted_effects
from .canonical import canonical_reads, warnings as canonical_warnings
from .candidates import ENV_SETTING, candidates, env_command, reads_hdf5_directly, select
from .compare import same_result
from .conversion import convert_copy
from .runs import TracedJob, run_job
from ..inject import install, python_path

DEFAULT_REPS = 2


def _python_flags(argv) -> str:
    """The interpreter flags that keep sitecustomize/PYTHONPATH out (-I, -E, -S), '' when none."""
    i = next((k for k, a in enumerate(argv) if re.match(r"python[0-9.]*$", os.path.basename(a))), None)
    if i is None:
        return ""
    bad = set()
    for a in argv[i + 1:]:
        if a in ("-c", "-m") or not a.startswith("-") or a.startswith("--"):
            break
        bad |= set(a[1:]) & set("IES")
    return "".join(sorted(bad))


def _job(tr, facts, allow_writes) -> TracedJob:
    meta = tr.meta or {}
    if not meta.get("command") or not meta.get("cwd"):
        raise InputError(f"{tr.path} has no meta.json with the command and its directory: trace the job with "
                         "`climio trace run -o DIR -- COMMAND` first")
    if not os.path.isdir(meta["cwd"]):
        raise InputError(f"the traced job's directory {meta['cwd']} no longer exists")
    read = {f["file"] for f in facts.files if f.get("bytes_read")}
    # an unlinked temporary (its descriptor resolved to "... (deleted)") has no path to redirect
    writes = sorted(f["file"] for f in facts.files if f.get("bytes_written") and not f["file"].endswith(" (deleted)"))
    in_place = sorted(set(writes) & read)
    if in_place and not allow_writes:
        raise InputError(f"the job writes a file it also reads ({in_place[0]}): a scratch copy cannot stand in "
                         "for it; run with --allow-writes to let every run write it in place")
    writes = [w for w in writes if w not in in_place]
    return TracedJob(list(meta["command"]), meta["cwd"], writes, meta.get("exclude") or default_excludes())


def _h5_datasets(tr) -> list:
    """The HDF5 datasets the trace's H5Dread calls read, with their size, chunks and filters (h5py)."""
    seen = {}
    names = tr.text(tr.events["func_id"]) if len(tr.events) else []
    for i in (k for k, n in enumerate(names) if n == "H5Dread"):
        ds = (tr.aux.get(i) or {}).get("dataset")
        file = tr.strings[int(tr.events["file_id"][i])]
        if ds and file and (file, ds) not in seen:
            seen[(file, ds)] = None
    out = []
    for file, ds in seen:
        try:
            import h5py
            with h5py.File(file, "r") as f:
                d = f[ds]
                out.append({"file": file, "dataset": ds, "nbytes": d.size * d.dtype.itemsize, "chunks": d.chunks,
                            "compressed": bool(d.compression or d.shuffle)})
        except (OSError, KeyError, ImportError):
            continue
    return out


def _threaded_reads(tr) -> int:
    """netCDF / HDF5 calls made off each process's main thread (the thread of its first traced call):
    Dask's threaded scheduler runs every task on a pool thread, even a single one."""
    ev = tr.events
    if not len(ev):
        return 0
    n = 0
    for p in np.unique(ev["proc"]):
        e = ev[ev["proc"] == p]
        main = e["tid"][np.argmin(e["t_start_ns"])]
        n += int(np.count_nonzero(np.isin(e["layer"], [LAYER_IDS["netcdf"], LAYER_IDS["hdf5"]]) & (e["tid"] != main)))
    return n


def _env_of(c, copy, inject_dir, run_dir) -> dict:
    """What the preload and the job's libraries read for candidate `c` in one run."""
    env = dict(c.env)
    if c.kind == "layout":
        st = os.stat(c.file)
        env["CLIMIO_TRY_REDIRECT"] = f"{st.st_dev}:{st.st_ino}:{copy}"
    if c.python:
        st = os.stat(c.file)
        env["PYTHONPATH"] = python_path(inject_dir, os.environ.get("PYTHONPATH"))
        env["CLIMIO_INJECT_XARRAY"] = json.dumps({"files": [[st.st_dev, st.st_ino]], "kwargs": c.python,
                                                  "report": str(Path(run_dir) / "injected.jsonl")})
    return env


def _applied(c, runs, copy) -> tuple:
    """(applied, why not): checked in each run's own trace / injection report."""
    for r in runs:
        if c.kind == "layout" and (copy not in r["read_files"] or c.file in r["read_files"]):
            return False, "the job did not read the converted copy (its trace shows the original read)"
        if "CLIMIO_TRY_NC_CACHE" in c.env:
            want = int(c.env["CLIMIO_TRY_NC_CACHE"].split(":")[0])
            got = [v for k, v in r["nc_cache"].items() if k.endswith(f":{c.var}")]
            if not got or any(v != want for v in got):
                return False, f"the variable's chunk cache in the run's trace is {got or 'unknown'}, not {want} B"
        if "CLIMIO_TRY_H5_CACHE" in c.env:
            want = int(c.env["CLIMIO_TRY_H5_CACHE"].split(":")[0])
            if not r["h5_cache"] or any(v != want for v in r["h5_cache"]):
                return False, f"the file's chunk cache in the run's trace is {r['h5_cache'] or 'unknown'}, not {want} B"
        if c.python and not r["python_injected"]:
            return False, "the job never called xarray.open_dataset/open_mfdataset on the file"
        if c.kind == "env":
            why = _env_took(c.env, r.get("settings"))
            if why:
                return False, why
    return True, ""


def _env_took(env, settings) -> str:
    """'' when every library variable of `env` is the setting the run's trace recorded at exit."""
    if settings is None:     # -I/-E/-S: the variables still reach the libraries, but nothing records them
        return "the run recorded no library settings (python -I/-E/-S skips climio's sitecustomize)"
    for k, v in env.items():
        got = settings.get(ENV_SETTING[k])
        if got is None or str(got) != str(v):
            return f"the run's {ENV_SETTING[k]} was {got!r}, not {v!r} (does the library read {k}?)"
    return ""


# A round whose every fix ran at least DECISIVE times faster or slower than the baseline of the same
# round settles every verdict: the cold runs of one job on these shared cores spread by up to 2.2x
# (climio bench advice, load 15 on 2 cores), so a further round could not turn such a fix's "faster"
# into "slower" or the reverse; the remaining rounds are skipped (a slow baseline, such as a job
# whose chunk cache thrashes, then costs one run, not --reps).
DECISIVE = 3.0


def decisive(runs) -> bool:
    """Every fix's every run at least DECISIVE x faster or slower than its round's baseline run."""
    base = [x["wall_s"] for x in runs["baseline"]]
    return all(b / x["wall_s"] >= DECISIVE or x["wall_s"] / b >= DECISIVE
               for n, rs in runs.items() if n != "baseline" for b, x in zip(base, rs))


def _rounds(job, tried, copies, envs, reps, scratch, evict, say) -> dict:
    """reps rounds of the baseline and every tried candidate, the order reversed every other round;
    fewer when a round already settled every verdict (decisive)."""
    names = ["baseline", *[c.id for c in tried]]
    runs = {n: [] for n in names}
    for rep in range(reps):
        for n in (names if rep % 2 == 0 else names[::-1]):
            d = scratch / "runs" / f"{n}-{rep}"
            env = envs[n](d) if n != "baseline" else {}
            runs[n].append({**run_job(job, env, d, evict), "injected_env": env})
            if say:
                say(f"  round {rep + 1}/{reps}: {n} {runs[n][-1]['wall_s']:.3g} s")
        if rep + 1 < reps and decisive(runs):
            if say:
                say(f"  round {rep + 1} settled every verdict (each fix >= {DECISIVE:g}x faster or slower): "
                    f"{reps - rep - 1} round(s) skipped")
            break
    return runs


def _result(c, runs, base_runs, base_s, conv, copy, passes, compare) -> dict:
    r = {**c.to_dict(), "conversion_s": conv.get(c.id), "copy": copy, "runs_s": [x["wall_s"] for x in runs]}
    r["after_s"] = rank.median(r["runs_s"])
    r["io_share"] = rank.median([x["io_share"] for x in runs if x["io_share"] is not None])
    r["applied"], r["applied_why"] = _applied(c, runs, copy)
    checks = [same_result(base_runs[0], x, compare_cmd=compare) for x in runs]
    r["same_result"] = all(ok for ok, _ in checks)
    r["result_why"] = next((why for ok, why in checks if not ok), "")
    r["gain"] = {str(p): rank.gain(base_s, r["after_s"], r["conversion_s"], p) for p in {*rank.SHOWN_PASSES, passes}}
    r["injected"] = {"env": runs[0]["injected_env"], "python": runs[0]["python_injected"]}
    r["cache_states"] = [x["cache"]["state"] for x in runs]
    if c.kind == "layout" and copy:
        try:
            r["canonical"] = canonical_reads(c.file, copy, c.var)
        except (OSError, RuntimeError, KeyError, IndexError) as exc:
            r["canonical"], r["canonical_note"] = [], f"canonical reads not measured: {exc}"
        r["also_slows"] = canonical_warnings(r["canonical"])
    return r


def _cpu_gains(results, runs, base, conv_cpu, passes) -> None:
    """Each tried fix's CPU seconds (user + system of the job's process tree, median of its runs; of
    its conversion) and its gain in CPU seconds, beside the wall-time ones: on shared cores a run's
    wall time also holds the time it waited for a core, which the CPU time does not."""
    base_cpu = rank.median([x["cpu_s"] for x in base])
    for r in results:
        r["after_cpu_s"] = rank.median([x["cpu_s"] for x in runs[r["id"]]])
        r["conversion_cpu_s"] = conv_cpu.get(r["id"])
        r["cpu_gain"] = {str(p): rank.gain(base_cpu, r["after_cpu_s"], r["conversion_cpu_s"], p) if r["after_cpu_s"]
                         else None for p in {*rank.SHOWN_PASSES, passes}}


def _untried(c, facts) -> dict:
    r = {**c.to_dict(), "after_s": None, "gain": {}, "applied": False, "applied_why": "", "same_result": None}
    r["predicted_gain"] = rank.predicted_gain(facts.run.get("process_time_s"), c.saves_s)
    return r


def _effects(results, stack, with_dirs) -> None:
    """Every layout fix, tried or not: what the model predicts it does to the canonical reads and
    to the other traced jobs on the same file (`--with`), warned when >2x slower."""
    for r in results:
        if r["kind"] == "layout" and r.get("convert"):
            others, notes = others_of(with_dirs, r["file"], r["var"])
            r["predicted_effects"] = predicted_effects(r["file"], r["var"], r["convert"]["chunks"], stack, others)
            r["predicted_effects"]["with_notes"] = notes


def try_fixes(trace_dir, items=None, top=None, reps=DEFAULT_REPS, passes=1, scratch=None, allow_writes=False,
              compare=None, say=None, with_dirs=()) -> dict:  # long: the command's steps in order, each a call
    if reps < 1 or passes < 1:
        raise InputError("--reps and --passes must be at least 1")
    if items and top:
        raise InputError("give --items or --top, not both")
    tr = read_trace(trace_dir)
    facts = measured_facts(trace_dir)
    findings = judged(facts)
    job = _job(tr, facts, allow_writes)
    cands = select(candidates(facts, findings, _h5_datasets(tr) if reads_hdf5_directly(facts) else (),
                              _threaded_reads(tr)), items, top)
    if not cands:
        raise InputError(f"no advice item to try in {trace_dir}" + (f" matches --items {items}" if items else ""))
    scratch = Path(scratch or Path(trace_dir) / "try").resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    notes = []
    flags = _python_flags(job.argv)
    for c in cands:
        if c.python and flags and not c.not_tried:
            c.not_tried = f"not applied: Python runs with -{flags} (no sitecustomize / PYTHONPATH)"
        if c.kind == "env":
            c.advice["shell"] = env_command(c.env, job.argv, job.cwd)
    copies, conv, conv_cpu = {}, {}, {}
    for c in cands:
        if c.kind == "layout" and not c.not_tried:
            copies[c.id], conv[c.id], conv_cpu[c.id], why = convert_copy(c, scratch / "copies", say)
            c.not_tried = why
    tried = [c for c in cands if not c.not_tried and c.kind != "none"]
    inject_dir = install(scratch / "inject") if any(c.python for c in tried) else None
    envs = {c.id: (lambda d, c=c: _env_of(c, copies.get(c.id), inject_dir, d)) for c in tried}
    data = [v["file"] for v in (facts.netcdf or {}).get("variables") or []]   # what an env fix's runs read too
    # the copies made (a conversion that failed or was refused has none: its item says why)
    evict = sorted({*[f for f in [*data, *(c.file for c in cands)] if f and os.path.isfile(f)],
                    *[p for p in copies.values() if p]})
    runs = _rounds(job, tried, copies, envs, reps, scratch, evict, say)
    base = runs["baseline"]
    base_s = rank.median([x["wall_s"] for x in base])
    if len(base) < reps:
        notes.append(f"{len(base)} of {reps} rounds run: every fix ran at least {DECISIVE:g}x faster or slower than "
                     "the baseline in the same round, which the spread of cold runs cannot turn round")
    same_base = all(same_result(base[0], x, compare_cmd=compare)[0] for x in base[1:])
    if not same_base:
        notes.append("the baseline's own runs printed different results: give --compare CMD to say what counts")
    results = [_result(c, runs[c.id], base, base_s, conv, copies.get(c.id), passes, compare) for c in tried]
    _cpu_gains(results, runs, base, conv_cpu, passes)
    if not same_base:
        for r in results:
            r["same_result"], r["result_why"] = False, "unchecked: the baseline's runs disagree"
    results += [_untried(c, facts) for c in cands if c not in tried]
    _effects(results, facts.stack, with_dirs)
    if any(x["cache"]["state"] != "cold" for rs in runs.values() for x in rs):
        notes.append("some runs could not be made cold (their files stayed in the page cache): marked warm")
    summary = {"trace": str(trace_dir), "command": job.argv, "cwd": job.cwd, "reps": reps, "passes": passes,
               "rounds": len(base),
               "baseline_s": base_s, "baseline_runs": [x["wall_s"] for x in base],
               "baseline_cpu_s": rank.median([x["cpu_s"] for x in base]),
               "baseline_io_share": rank.median([x["io_share"] for x in base if x["io_share"] is not None]),
               "writes_redirected": job.writes, "notes": notes, "results": rank.verdicts(results, passes)}
    _write(scratch, summary, runs)
    return summary


def _write(scratch, summary, runs) -> None:
    recs = []
    for name, rs in runs.items():
        r = next((x for x in summary["results"] if x["id"] == name), None)
        for k, x in enumerate(rs):
            params = {"trace": summary["trace"], "fix": name, "kind": r["kind"] if r else "baseline",
                      "injected": r["injected"]["env"] if r else {}, "python": r["python"] if r else {}}
            metrics = {"wall_s": x["wall_s"], "cpu_s": x["cpu_s"], "io_share": x["io_share"], "io_time_s": x["io_time_s"],
                       "conversion_s": r["conversion_s"] if r else None}
            recs.append(make_record("trace-try", params, metrics, x["cache"], rep=k))
    atomic_write_text(scratch / "records.jsonl", "".join(json.dumps(r) + "\n" for r in recs))
    atomic_write_text(scratch / "try.json", json.dumps(summary, indent=1, default=str))
