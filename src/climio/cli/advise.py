"""`climio calibrate`, `climio predict` and `climio advise`: the calibrated read-time model."""

import json
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from climio.base.errors import DataError, InputError, no_such_file
from ..measure.progress import err_line, info
from . import app


@app.command("calibrate")
def calibrate_cmd(
    quick: bool = typer.Option(False, "--quick", help="About a minute instead of about five."),
    from_runs: Optional[List[Path]] = typer.Option(None, "--from", metavar="RUN_DIR",
                                                   help="Build the profile from existing run directories (calibrate and "
                                                        "read-stack records) instead of measuring; repeatable."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", metavar="DIR",
                                            help="Where the calibration files go: put it on the file system of your "
                                                 "data (default: a temporary directory on local disk)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Run directory (default climio-runs/calibrate-TIMESTAMP)."),
    stacks: Optional[str] = typer.Option(None, "--stacks", metavar="LIST", help="Stacks: netcdf4-python,h5py,h5netcdf,xarray,c-netcdf."),
    report: bool = typer.Option(True, "--report/--no-report", help="Render report.html (the profile is shown there)."),
    append: bool = typer.Option(False, "--append", help="Add to the run directory -o names when it already holds a run."),
    force: bool = typer.Option(False, "--force", help="Replace the run directory -o names, whole, when it already holds a run."),
    store: Optional[str] = typer.Option(None, "--store", metavar="s3://BUCKET/PREFIX",
                                        help="Calibrate an object store instead (written under PREFIX, removed after; "
                                             "credentials from the AWS_* variables): kept in this platform's profile "
                                             "under the endpoint's URL."),
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint of --store (else AWS_ENDPOINT_URL)."),
):
    """Measure the rates the read-time model needs on the data's file system and save the profile
    (~/.cache/climio/profiles/PLATFORM_ID.json and RUN_DIR/profile.json)."""
    from ..model import profile as profmod
    if store or endpoint_url:
        return _calibrate_store(store, endpoint_url, quick, out, append, force)
    if from_runs:
        from ..bench.calibrate.summary import profile_from_records
        from climio.runs.records import read_records
        records, platform = [], None
        for d in from_runs:
            if not (Path(d) / "records.jsonl").is_file():
                raise (no_such_file(d) if not Path(d).exists() else DataError(f"--from {d}: not a run directory (no records.jsonl)"))
            records += read_records(d)
            pj = Path(d) / "platform.json"
            if platform is None and pj.is_file():
                platform = json.loads(pj.read_text())
        usable = [r for r in records if r.get("study") in ("calibrate", "read-stack")]
        if not usable:
            raise InputError("--from: no calibrate or read-stack records in " + ", ".join(map(str, from_runs)))
        pid = (platform or {}).get("platform_id") or usable[0].get("platform_id") or "unknown"
        prof = profile_from_records(usable, pid, platform, source="runs")
        written = profmod.save(prof, *([Path(out) / profmod.PROFILE_NAME] if out else []))
        info(f"profile from {len(usable)} records of {len(from_runs)} run director{'ies' if len(from_runs) != 1 else 'y'}: "
             + ", ".join(map(str, written)))
        for line in prof.summary_lines() + _defaults_line(prof):
            print(line)
        return
    from ..api import run_study
    from ..bench import base
    preset = "quick" if quick else "full"
    base.get("calibrate").grid(preset, **({"stacks": stacks} if stacks else {}))   # bad options fail here, before the warning
    if data_dir is None:
        _warn(["no --data-dir: this measures a temporary directory on local disk, not the file system of your "
               "data, and the profile is keyed by that file system; run `climio calibrate --data-dir DIR` with DIR "
               "on the data's file system (e.g. beside the data)"])
    run_dir = run_study("calibrate", preset=preset, out=out, data_dir=data_dir, report=report, stacks=stacks,
                        append=append, force=force)
    path = Path(run_dir) / profmod.PROFILE_NAME
    info(f"profile: {path}")
    if path.is_file():
        for line in _defaults_line(profmod.load(path)):
            info(line)


def _calibrate_store(store, endpoint_url, quick, out, append, force) -> None:
    """`climio calibrate --store`: the object-read calibration grid on the store, the GETs each
    stack keeps in flight, the fitted rates kept for this platform under the endpoint's URL
    (profiles/object-stores/PLATFORM_ID.json: `climio calibrate` replaces the file-system profile
    whole, these stay)."""
    from ..api import run_study
    from ..bench.object_read.calibrate_store import CALIBRATE_GRID, QUICK_GRID, store_rates
    from climio.runs.records import read_records
    from ..stores.endpoint import Endpoint
    if not store:
        raise InputError("--endpoint-url is where --store is: give --store s3://BUCKET/PREFIX too")
    from ..stores.errors import reach
    endpoint = Endpoint.from_env(endpoint_url)
    reach(endpoint)   # nobody answering there: one line within the connect timeout, before the run starts
    run_dir = run_study("object-read", preset="survey", out=out, report=False, append=append, force=force,
                        store=store, endpoint_url=endpoint_url, latency="0", **(QUICK_GRID if quick else CALIBRATE_GRID))
    records = [r for r in read_records(run_dir) if r.get("study") == "object-read"]
    key, rates = store_rates(records, endpoint, store)
    from ..model.object_store import save_rates
    from ..model.workflow import platform_id_of
    written = save_rates(platform_id_of(None), key, rates, Path(run_dir) / "object-stores.json")
    info(f"object store {key}: profile " + ", ".join(map(str, written)))
    print(f"  GET latency {rates.latency_s * 1e3:.2f} ms, {rates.per_connection_Bps / 1e6:.0f} MB/s per connection, "
          f"{rates.aggregate_Bps / 1e6:.0f} MB/s aggregate")
    for name, s in sorted(rates.stacks.items()):
        print(f"  {name}: GET {s.latency_s * 1e3:.2f} ms + size / {s.per_connection_Bps / 1e6:.0f} MB/s, "
              f"{s.concurrency:.1f} GETs in flight (measured)")


def _defaults_line(prof) -> list:
    """The profile's stacks that no record measured (their rates are the built-in laptop defaults,
    e.g. h5netcdf under --quick), as one line, or none."""
    measured = {(r.get("params") or {}).get("stack") for r in prof.records
                if str((r.get("params") or {}).get("kind", "")).startswith("stack-")}
    defaults = sorted(set(prof.stacks) - measured)
    if not defaults:
        return []
    return [f"  stacks at built-in default rates (not measured here): {', '.join(defaults)}"]


def _workflow(file, var, reads, passes, tasks, stack, chunk_cache, workflow):
    from ..advise.predict import workflow_checked
    from ..model import workflow as wfmod
    from climio.dataset.options import parse_size
    if workflow:
        if file or reads:
            raise InputError("give a --workflow file or FILE --read ..., not both")
        wf = wfmod.load(workflow)
        if tasks is not None:
            wf.tasks = tasks
        if stack is not None:
            wf.stack = stack
        return workflow_checked(wf)
    if not file:
        raise InputError("give a FILE and --read (xt, xy, xyt or a template), or --workflow FILE.yaml")
    if not reads:
        raise InputError("say how the workflow reads: --read xt|xy|xyt|TEMPLATE (repeatable)")
    return workflow_checked(wfmod.Workflow(str(file), var, wfmod.read_specs(reads, passes or [1]), tasks or 1,
                                           stack or wfmod.DEFAULT_STACK, parse_size(chunk_cache) if chunk_cache else None))


def _warn(lines) -> None:
    """Warnings (another platform's profile, built-in defaults) once the command has succeeded,
    so that an error stays the only line."""
    for line in dict.fromkeys(lines):
        err_line(f"climio: warning: {line}")


# The options `climio predict` and `climio advise` share, declared once.
VarOpt = Annotated[Optional[str], typer.Option("--var", metavar="NAME", help="Variable (default: the only multi-dimensional one).")]
ReadOpt = Annotated[Optional[List[str]], typer.Option("--read", metavar="SHAPE", help="Read shape: xt, xy, xyt or a count template such as 24,1,Y,X; repeatable (one entry per read).")]
PassesOpt = Annotated[Optional[List[int]], typer.Option("--passes", metavar="N", help="Times the workflow reads the data this way: once for every --read, or once per --read in the same order.")]
TasksOpt = Annotated[Optional[int], typer.Option("--tasks", metavar="N", help="Tasks (processes) sharing the reads (default 1).")]
StackOpt = Annotated[Optional[str], typer.Option("--stack", metavar="STACK", help="netcdf4-python (default), c-netcdf, h5py, h5netcdf or xarray.")]
CacheOpt = Annotated[Optional[str], typer.Option("--chunk-cache", metavar="SIZE", help="Chunk cache per variable (default: the stack's).")]
ProfileOpt = Annotated[Optional[Path], typer.Option("--profile", metavar="FILE", help="Profile to predict with (default: this platform's).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


@app.command("predict")
def predict_cmd(
    file: Optional[Path] = typer.Argument(None, help="netCDF-4/HDF5 file."),
    var: VarOpt = None,
    read: ReadOpt = None,
    passes: PassesOpt = None,
    tasks: TasksOpt = None,
    stack: StackOpt = None,
    chunk_cache: CacheOpt = None,
    workflow: Optional[Path] = typer.Option(None, "--workflow", metavar="FILE", help="A YAML/JSON workflow: file, var, stack, tasks, reads [{read, passes}]."),
    profile: ProfileOpt = None,
    check: bool = typer.Option(False, "--check", help="Also run each read cold and print predicted against measured."),
    reps: int = typer.Option(3, "--reps", metavar="N", help="Cold runs per read for --check."),
    json_out: JsonOpt = False,
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint of an s3:// FILE (else AWS_ENDPOINT_URL)."),
):
    """Predict how long reading a variable takes here: the time, its breakdown (I/O, decode, CPU,
    parallel factor) and the path through the thesis's flowchart (Fig. 7.1). FILE may be a Zarr
    store in object storage, s3://BUCKET/STORE.zarr (rates from `climio calibrate --store`)."""
    from ..advise.object_store import is_store_url
    if file is not None and is_store_url(file):
        return _predict_store(file, var, read, stack, endpoint_url, check, reps, json_out)
    from ..advise.predict import check_workflow, stack_cache
    from ..model import workflow as wfmod
    wf = _workflow(file, var, read, passes, tasks, stack, chunk_cache, workflow)
    warnings = []
    prof = wfmod.profile_for(wf.file, str(profile) if profile else None, warnings.append)
    # bad reads fail here, before any warning is shown; the chunk cache is the one the stack really has
    wp = wfmod.predict_workflow(wf, prof, cache_of=stack_cache)
    _warn(warnings)
    if check:
        wp.checks = check_workflow(wf, wp, reps)
    if json_out:
        print(json.dumps(wp.to_dict()))
        return
    for line in wp.lines():
        print(line)


def _predict_store(file, var, read, stack, endpoint_url, check, reps, json_out) -> None:
    from ..advise.object_store import predict_store
    warnings = []
    sp = predict_store(str(file), read, var=var, stack=stack, endpoint_url=endpoint_url, check=check, reps=reps,
                       warn=warnings.append)
    _warn(warnings)
    if json_out:
        print(json.dumps(sp.to_dict()))
        return
    for line in sp.lines():
        print(line)


def _advise_store(target, var, read, stack, endpoint_url) -> None:
    from ..advise.object_store import advise_netcdf, advise_store, store_url
    warnings = []
    if store_url(target).rstrip("/").endswith(".zarr"):
        rows = advise_store(str(target), read, var=var, stack=stack, endpoint_url=endpoint_url, warn=warnings.append)
    else:   # a netCDF-4 object: a reference file or a Zarr copy against downloading it
        rows = advise_netcdf(str(target), read, var=var, endpoint_url=endpoint_url, warn=warnings.append)
    _warn(warnings)
    if not rows:
        print("no change the object-store model predicts faster")
    elif not store_url(target).rstrip("/").endswith(".zarr"):
        print("ways to read it, fastest first ('now': downloading the whole object first):")
    for i, (text, before, after, cmd) in enumerate(rows, 1):
        print(f"{i}. {text}: {after:.3f} s predicted (now {before:.3f} s: {before / after:.2g}x)")
        print(f"   {cmd}")


@app.command("advise")
def advise_cmd(
    target: Path = typer.Argument(..., help="A netCDF file (with --read), a workflow YAML/JSON, a climio trace "
                                            "directory or a Darshan log."),
    var: VarOpt = None,
    read: ReadOpt = None,
    passes: PassesOpt = None,
    tasks: TasksOpt = None,
    stack: StackOpt = None,
    chunk_cache: CacheOpt = None,
    profile: ProfileOpt = None,
    json_out: JsonOpt = False,
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint of an s3:// TARGET (else AWS_ENDPOINT_URL)."),
    keep_codec: bool = typer.Option(False, "--keep-codec", help="With several --read patterns: search only layouts that keep the variable's compression (else contiguous, uncompressed storage is weighed too, with its disk size)."),
):
    """What to change, ranked by predicted gain: each with its evidence, the predicted time before
    and after, the one-off cost (the rechunk planner's conversion time) and the break-even passes,
    and the exact command (climio rechunk ..., a chunk cache, --tasks, --stack). TARGET may be a
    Zarr store in object storage, s3://BUCKET/STORE.zarr."""
    from ..advise.object_store import is_store_url
    if is_store_url(target):
        return _advise_store(target, var, read, stack, endpoint_url)
    from ..advise.recommend import advise
    from climio.dataset.options import parse_size
    if not target.exists():
        raise no_such_file(target)
    from ..trace.report import is_measured_input, measured_facts
    warnings = []
    if is_measured_input(target):   # a trace or Darshan log: climio.trace reads its Facts, the advisor judges them
        from ..advise.measured import advise_measured
        from ..model.workflow import profile_for
        prof = profile_for(None, str(profile), warnings.append) if profile else None
        adv = advise_measured(measured_facts(target), prof, warnings.append, str(target))
    else:
        adv = advise(target, var=var, reads=read, passes=passes or [1], tasks=tasks, stack=stack,
                     chunk_cache=parse_size(chunk_cache) if chunk_cache else None,
                     profile=str(profile) if profile else None, warn=warnings.append, keep_codec=keep_codec)
    _warn(warnings)
    if json_out:
        print(json.dumps(adv.to_dict(), default=str))
        return
    for line in adv.lines():
        print(line)
