"""climio from Python (notebooks, scripts); the CLI is a thin layer over these functions.

    climio.run_study("read-stack", preset="quick", out="runs/rs", stacks="numpy,h5py")
    climio.load_records("runs/rs")        -> a flat pandas DataFrame (records.to_frame)
"""

import os
import shutil
import tempfile
from pathlib import Path

from .bench import registry
from .bench.base import RunContext
from .measure.progress import info
from climio.runs.staging import pid_alive

DATA_PREFIX = "climio-data-"


class DataDir:
    """A user's data directory, or a temporary one on local disk removed afterwards (also on
    Ctrl-C and SIGTERM). A temporary directory left by a SIGKILLed run of this user is named
    and removed first."""

    def __init__(self, path):
        self.path, self.tmp = path, None

    def __enter__(self) -> str:
        from climio.runs.rundir import writable_dir
        if self.path:
            return str(writable_dir(self.path))
        remove_stale_data_dirs()
        self.tmp = tempfile.mkdtemp(prefix=f"{DATA_PREFIX}{os.getpid()}-")
        return self.tmp

    def __exit__(self, *exc):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def remove_stale_data_dirs() -> None:
    """Generated-data directories whose climio process no longer exists (a SIGKILLed run)."""
    base = Path(tempfile.gettempdir())
    for d in base.glob(f"{DATA_PREFIX}*"):
        pid = d.name[len(DATA_PREFIX):].split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and not pid_alive(int(pid)):
            info(f"removing {d}: generated data left by an earlier climio run that was killed")
            shutil.rmtree(d, ignore_errors=True)


def run_studies(run_dir, data_dir, steps, report: bool, progress=True, measured_dir=None, append=False,
                force=False) -> None:
    """Run `steps` (functions of a RunContext) into one run directory, then render the report.
    platform.json describes the file system of `measured_dir` (the user's files), else of
    `data_dir` (where the generated files go).
    On Ctrl-C or SIGTERM the records written so far stay (each line is flushed) and the report
    is rendered from them before the interruption goes on to the exit code."""
    from climio.runs.rundir import RunDir, claim_dir, discard_empty_run
    claim_dir(run_dir, append, force)
    fresh = not Path(run_dir).is_dir() or not any(Path(run_dir).iterdir())
    try:
        with RunDir(run_dir, measured_dir or data_dir) as run:
            ctx = RunContext(run, data_dir, progress)
            try:
                for step in steps:
                    step(ctx)
            except KeyboardInterrupt:
                run.close()
                _render_partial(run_dir, report)
                raise
    except BaseException:
        if fresh:   # a run that failed before its first record leaves nothing that refuses the retry
            discard_empty_run(run_dir)
        raise
    info(f"records: {Path(run_dir) / 'records.jsonl'}")
    if report:
        from .report import render_report
        info(f"report: {render_report(run_dir)}")


def _render_partial(run_dir, report: bool) -> None:
    from climio.base.errors import ClimioError
    from .measure.progress import err_line
    records = Path(run_dir) / "records.jsonl"
    if not report or not records.is_file() or records.stat().st_size == 0:
        return
    try:
        from .report import render_report
        err_line(f"climio: partial report of the records so far: {render_report(run_dir)}")
    except (ClimioError, OSError, ValueError):
        pass


def run_study(study, preset=None, out=None, data_dir=None, report=True, progress=True, append=False, force=False,
              **values):
    """Run a registered study (by name or object) with Grid values as keyword arguments; return the
    run directory. The CLI and notebooks both come here. An `out` that already holds a run is
    refused unless `append` (add to it) or `force` (replace it)."""
    from climio.runs.rundir import claim_dir, default_run_dir
    study = registry.get(study) if isinstance(study, str) else study
    grid = study.grid(preset or study.default_preset, **{k: v for k, v in values.items() if v is not None})
    run_dir = Path(out) if out else default_run_dir(study.name)
    claim_dir(run_dir, append, force)   # before any data are generated
    with DataDir(data_dir) as ddir:
        study.check(grid, ddir)
        run_studies(run_dir, ddir, [lambda ctx: study.run(ctx, grid)], report, progress,
                    measured_dir=study.data_location(grid, ddir), append=True)   # claimed above
    return run_dir


PLATFORM_TITLE = "This platform"


def results_table(run_dir) -> str:
    """The short results block a study or the survey prints on stdout at its end, as fio and IOR
    do, grouped as the report's first screen (render.finding_groups): what was measured on this
    platform first (peak rate per stack, best chunk shape per read shape ...), then what the run
    decided, one finding a line; the checks it could not decide, one line per study with a count."""
    from climio.runs.records import read_records
    from climio.present.render import finding_groups, undecided_groups
    from climio.present.stats import by_study
    findings = []
    for name, recs in by_study(read_records(run_dir)).items():
        st = registry.find(name)
        findings += st.findings(recs) if st else []
    groups = [(title, [f"{f.study}: {f.text}" for f in items])
              for title, items in sorted(finding_groups(findings, PLATFORM_TITLE), key=lambda g: g[0] != PLATFORM_TITLE)]
    undecided = [line for line, _ in undecided_groups(findings)]
    if undecided:
        groups.append(("Not decided by this run", undecided))
    return "\n".join(f"{title}:\n" + "\n".join(f"  {line}" for line in lines) for title, lines in groups)


def load_records(run_dir):
    """The records of a run directory (or records.jsonl) as a flat pandas DataFrame: one row per
    record, params.* / metrics.* / cache.* columns and the shared nouns (records.to_frame); nested
    dicts are dotted columns, a histogram or a list one JSON string column."""
    from climio.runs.records import read_records, to_frame
    return to_frame(read_records(run_dir), flat=True)



def _warn(warn):
    import warnings
    return warn or (lambda line: warnings.warn(line, stacklevel=3))


def predict(source, var=None, read="xt", passes=1, tasks=None, stack=None, chunk_cache=None, profile=None,
            check=False, reps=3, endpoint_url=None, warn=None):
    """Predict (and with check=True also measure) reading `var` of `source`: a path (netCDF, a local
    Zarr store, a workflow YAML/JSON), an s3:// URL (a Zarr store), an xarray/netCDF4 Dataset, or a
    climio.advice.request.Request (what `climio predict` builds from its flags). `read`: a read
    shape or a list (t, xy, xt, xyt, z, xz, yz, box, dimension names such as "lat,lon", a count
    template), `passes` one count or one per read, through `stack` with `tasks` tasks. The chunk
    cache is the one the stack really opens the variable with; `chunk_cache` (bytes or "64MiB")
    asks it for another (refused on Zarr).

        p = climio.predict("ta.nc", var="ta", read=["xy", "xt"], passes=[30, 5])
        print(p)                    # the breakdown and the flowchart path
        p.seconds, p.total_s        # the reads (all passes); with the opens
        p.items                     # [(ReadSpec, Layout, codec, Prediction)] per read (files)
        p.to_dict()                 # the same numbers as `climio predict --json`
    """
    from .advice.request import Request, make_request, predict as run
    req = source if isinstance(source, Request) else make_request(
        source, var, read, passes, tasks, stack, chunk_cache, profile, endpoint_url, check=check, reps=reps)
    return run(req, _warn(warn))


def advise(target, var=None, read=None, passes=1, tasks=None, stack=None, chunk_cache=None, profile=None,
           keep_codec=False, endpoint_url=None, warn=None):
    """Ranked advice, as `climio advise` gives it: for data with its reads (`read`, `passes` as
    climio.predict: a netCDF file, a local Zarr store, an s3:// URL, an open Dataset), a workflow
    YAML/JSON, a climio trace directory or a Darshan log, or a Request.

        a = climio.advise("ta.nc", var="ta", read=["xy", "xt"], passes=[30, 5])
        a.predicted_s              # the workflow's predicted time now
        a.best                     # the first recommendation: rule, before_s, after_s, gain_s, command
        a.ranked()                 # every recommendation, by predicted gain
        a.to_dict()                # the same as `climio advise --json`
    With several read patterns of one variable, a.layout is the one layout for all of them (the
    search also weighs contiguous, uncompressed storage unless `keep_codec`).
    Warnings (another platform's profile, the built-in defaults) go to `warn`, else warnings.warn.
    """
    from .advice.request import Request, make_request, advise as run
    warn = _warn(warn)
    if isinstance(target, (list, tuple)):
        return advise_jobs(target, passes, profile, keep_codec, warn)
    if isinstance(target, Request):
        return run(target, warn)
    if isinstance(target, (str, Path)) and not str(target).startswith("s3:"):
        from .trace.inputs import is_measured_input
        from climio.base.errors import no_such_file
        if not Path(target).exists():
            raise no_such_file(target)
        if is_measured_input(Path(target)):
            from .trace.report import measured_facts
            from .advice.measured import advise_measured
            from .advice.loading import profile_for
            prof = profile_for(None, str(profile), warn) if profile else None
            return advise_measured(measured_facts(Path(target)), prof, warn, str(target))
    req = make_request(target, var, [read] if isinstance(read, str) else read, passes, tasks, stack, chunk_cache,
                       profile, endpoint_url, keep_codec=keep_codec)
    return run(req, warn)


def advise_jobs(traces, passes=1, profile=None, keep_codec=False, warn=None):
    """One layout for several traced jobs on the same variable (`climio advise T1 T2 ...`): each
    trace's reads of the first trace's main variable are a read pattern, weighted by `passes` (one
    for all, or one per trace in the same order); climio.advice.jobs.advise_jobs."""
    from .advice.jobs import WeightedJob, advise_jobs as run
    from .trace.job_reads import job_reads
    from climio.base.errors import InputError, no_such_file
    traces = [Path(t) for t in traces]
    for t in traces:
        if not t.exists():
            raise no_such_file(t)
        if not t.is_dir():
            raise InputError(f"{t}: several targets are traced jobs: give climio trace directories")
    ps = list(passes) if isinstance(passes, (list, tuple)) else [passes or 1]
    ps = ps * len(traces) if len(ps) == 1 else ps
    if len(ps) != len(traces):
        raise InputError(f"{len(ps)} --passes for {len(traces)} traces: give one --passes, or one per trace in order")
    first = job_reads(traces[0])
    jobs = [first] + [job_reads(t, first.file, first.var) for t in traces[1:]]
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        names = [f"job {k + 1} ({t})" for k, t in enumerate(traces)]
    prof = str(profile) if profile else None
    return run(first.file, first.var, [WeightedJob(n, j.reads, int(p), j.stack) for n, j, p in zip(names, jobs, ps)],
               prof, keep_codec, _warn(warn), ", ".join(map(str, traces)))
