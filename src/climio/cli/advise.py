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
    from climio import profiles
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
        written = profiles.save(prof, *([Path(out) / profiles.PROFILE_NAME] if out else []))
        info(f"profile from {len(usable)} records of {len(from_runs)} run director{'ies' if len(from_runs) != 1 else 'y'}: "
             + ", ".join(map(str, written)))
        for line in prof.summary_lines() + _defaults_line(prof):
            print(line)
        return
    from ..api import run_study
    from ..bench import registry
    preset = "quick" if quick else "full"
    registry.get("calibrate").grid(preset, **({"stacks": stacks} if stacks else {}))   # bad options fail here, before the warning
    if data_dir is None:
        _warn(["no --data-dir: this measures a temporary directory on local disk, not the file system of your "
               "data, and the profile is keyed by that file system; run `climio calibrate --data-dir DIR` with DIR "
               "on the data's file system (e.g. beside the data)"])
    run_dir = run_study("calibrate", preset=preset, out=out, data_dir=data_dir, report=report, stacks=stacks,
                        append=append, force=force)
    path = Path(run_dir) / profiles.PROFILE_NAME
    info(f"profile: {path}")
    if path.is_file():
        for line in _defaults_line(profiles.load(path)):
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
    key, rates = store_rates(records, endpoint, store, quick=quick)
    from ..profiles import save_rates
    from climio.machine.platform import platform_id_here
    written = save_rates(platform_id_here(None), key, rates, Path(run_dir) / "object-stores.json")
    info(f"object store {key}: profile " + ", ".join(map(str, written)))
    print(f"  GET latency {rates.latency_s * 1e3:.2f} ms, {rates.per_connection_Bps / 1e6:.0f} MB/s per connection, "
          f"{rates.aggregate_Bps / 1e6:.0f} MB/s aggregate; this process got {rates.cpu_share:.2f} of a core")
    for name, s in sorted(rates.stacks.items()):
        print(f"  {name}: GET {s.latency_s * 1e3:.2f} ms + size / {s.per_connection_Bps / 1e6:.0f} MB/s, "
              f"{s.concurrency:.1f} GETs in flight (measured), {s.gets_per_s:.0f} GETs/s at most; "
              f"CPU per GET {s.get_cpu_s * 1e3:.2f} ms, per chunk {s.chunk_cpu_s * 1e3:.2f} ms "
              f"(+{s.codec_chunk_s * 1e3:.2f} ms compressed), per MB {s.byte_cpu_s * 1e9:.2f} ms, "
              f"per hyperslab {s.slab_s * 1e3:.2f} ms")
        if s.decode_Bps:
            print("    decodes " + ", ".join(f"{k} {v / 1e6:.0f} MB/s" for k, v in sorted(s.decode_Bps.items())))


def _defaults_line(prof) -> list:
    """The profile's stacks that no record measured (their rates are the built-in laptop defaults,
    e.g. h5netcdf under --quick), as one line, or none."""
    measured = {(r.get("params") or {}).get("stack") for r in prof.records
                if str((r.get("params") or {}).get("kind", "")).startswith("stack-")}
    defaults = sorted(set(prof.stacks) - measured)
    if not defaults:
        return []
    return [f"  stacks at built-in default rates (not measured here): {', '.join(defaults)}"]


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


EndpointOpt = Annotated[Optional[str], typer.Option("--endpoint-url", metavar="URL", help="The S3 endpoint of an s3:// FILE (else AWS_ENDPOINT_URL).")]


def _target(file):
    """typer's Path keeps s3:// URLs as s3:/...: give the text back (make_request reads both)."""
    return None if file is None else str(file)


def _print(result, json_out) -> None:
    if json_out:
        print(json.dumps(result.to_dict(), default=str))
        return
    for line in result.lines():
        print(line)


@app.command("predict")
def predict_cmd(
    file: Optional[Path] = typer.Argument(None, help="netCDF file, local Zarr store or s3:// Zarr store."),
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
    endpoint_url: EndpointOpt = None,
):
    """Predict how long reading a variable takes here: the time, its breakdown (I/O, decode, CPU,
    parallel factor) and the path through the thesis's flowchart (Fig. 7.1). FILE may be a Zarr
    store in object storage, s3://BUCKET/STORE.zarr (rates from `climio calibrate --store`)."""
    from ..advice.request import make_request
    from ..api import predict
    req = make_request(_target(file), var, read, passes, tasks, stack, chunk_cache,
                       str(profile) if profile else None, endpoint_url, workflow, check, reps)
    warnings = []
    result = predict(req, warn=warnings.append)     # bad reads fail here, before any warning is shown
    _warn(warnings)
    _print(result, json_out)


@app.command("advise")
def advise_cmd(
    targets: List[Path] = typer.Argument(..., metavar="TARGET...", help="A netCDF file or Zarr store (with --read; s3:// too), a workflow "
                                            "YAML/JSON, a climio trace directory or a Darshan log; or several trace "
                                            "directories of jobs on the same data (one layout for all, --passes per trace)."),
    var: VarOpt = None,
    read: ReadOpt = None,
    passes: PassesOpt = None,
    tasks: TasksOpt = None,
    stack: StackOpt = None,
    chunk_cache: CacheOpt = None,
    profile: ProfileOpt = None,
    json_out: JsonOpt = False,
    endpoint_url: EndpointOpt = None,
    keep_codec: bool = typer.Option(False, "--keep-codec", help="With several --read patterns: search only layouts that keep the variable's compression (else contiguous, uncompressed storage is weighed too, with its disk size)."),
):
    """What to change, ranked by predicted gain: each with its evidence, the predicted time before
    and after, the one-off cost (the rechunk planner's conversion time) and the break-even passes,
    and the exact command (climio rechunk ..., a chunk cache, --tasks, --stack). TARGET may be a
    Zarr store in object storage, s3://BUCKET/STORE.zarr, or a netCDF-4 object there. Several trace
    directories (`climio advise T1 T2 --passes 10 --passes 1`): one layout for all the jobs, each
    weighted by how often it runs."""
    from ..stores.endpoint import is_s3_url, typed_url
    from ..advice.request import make_request
    from ..api import advise
    warnings = []
    if len(targets) > 1:
        if var or read or tasks or stack or chunk_cache or endpoint_url:
            raise InputError("several traces: the jobs' own reads are the patterns (no --var, --read, --tasks, "
                             "--stack, --chunk-cache or --endpoint-url)")
        adv = advise(list(targets), passes=passes or 1, profile=str(profile) if profile else None,
                     keep_codec=keep_codec, warn=warnings.append)
        _warn(warnings)
        return _print(adv, json_out)
    target = targets[0]
    if not is_s3_url(typed_url(target)):
        if not target.exists():
            raise no_such_file(target)
        from ..trace.inputs import is_measured_input
        if is_measured_input(target):   # a trace or Darshan log: the API reads its Facts with climio.trace
            adv = advise(str(target), profile=str(profile) if profile else None, warn=warnings.append)
            _warn(warnings)
            return _print(adv, json_out)
    req = make_request(_target(target), var, read, passes, tasks, stack, chunk_cache,
                       str(profile) if profile else None, endpoint_url, keep_codec=keep_codec)
    adv = advise(req, warn=warnings.append)
    _warn(warnings)
    _print(adv, json_out)
