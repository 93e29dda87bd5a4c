"""`climio trace run|report|try`: the LD_PRELOAD tracer, its explanation, and its fixes tried on the job."""

import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..measure.progress import info
from . import CONTEXT, app

trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, context_settings=CONTEXT,
                        help="Trace a program's netCDF, HDF5, MPI-IO and POSIX calls (LD_PRELOAD) and explain them.")
app.add_typer(trace_app, name="trace")


@trace_app.command("run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def trace_run_cmd(
    command: Optional[list[str]] = typer.Argument(None, metavar="-- COMMAND [ARGS]...", help="The program to trace, after --; may be an mpirun command (see above)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", metavar="DIR", help="Trace directory (default climio-runs/trace-TIMESTAMP; required under mpirun)."),
    layers: Optional[str] = typer.Option(None, metavar="LIST", help="Comma list of posix, mpiio, netcdf, hdf5 (default all; stdio counts as posix)."),
    exclude: Optional[list[str]] = typer.Option(None, "--exclude", metavar="PATH", help="Do not trace files under this path prefix; repeatable (always excluded: /proc, /sys, /dev, Python's prefix)."),
    max_events: Optional[int] = typer.Option(None, "--max-events", metavar="N", help="Events kept per process; beyond, calls are counted in counters (the report says from when)."),
    force: bool = typer.Option(False, "--force", help="Replace the trace directory -o names, whole, when it already holds a trace."),
    append: bool = typer.Option(False, "--append", help="Add to the trace directory -o names when it already holds a trace (the traces merge into one report)."),
    mode: str = typer.Option("full", "--mode", metavar="full|counters[:N]", help="full (an event per call) or counters (Darshan-style counters per file, function and rank, bounded memory, any run length); counters:N also keeps every Nth call as an event."),
):
    """Run COMMAND with the tracer preloaded; exit with COMMAND's exit status.

    Under MPI either `climio trace run -o DIR -- mpirun -n 4 prog` (the variables are handed to the
    ranks with -x / -genv) or `mpirun -n 4 climio trace run -o DIR -- prog` (every rank traces itself)."""
    from ..trace.run import run_trace
    sys.exit(run_trace(command, out, layers, exclude or (), max_events, say=info, force=force, mode=mode,
                       append=append))


@trace_app.command("report")
def trace_report_cmd(
    trace_dir: Path = typer.Argument(..., metavar="DIR|LOG.darshan", help="A trace directory written by `climio trace run`, or a Darshan log (.darshan)."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object on stdout (as --json everywhere) instead of text."),
    html: bool = typer.Option(False, "--html", help="An HTML page, DIR/report.html (or -o FILE), instead of text."),
    format: Optional[str] = typer.Option(None, "--format", hidden=True, help="Old spelling: --format json|html is --json / --html."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", metavar="FILE", help="Write the report to this file instead."),
    with_dirs: Optional[List[Path]] = typer.Option(None, "--with", metavar="DIR", help="Another traced job on the same file (repeatable): a layout fix says what it predicts for that job's reads too."),
    shot: bool = typer.Option(False, "--screenshot", help="With --html: also keep a PNG of the page's first screen "
                              "(headless Chromium, 1400 x 900 px) beside it: DIR/report-first-screen.png, or FILE's name + -first-screen.png."),
):
    """Explain a trace or a Darshan log: time per layer and function, call paths, per-rank balance, file access, advice."""
    from climio.base.errors import InputError
    from ..trace.report import render
    fmt = _report_format(json_out, html, format)
    if shot and fmt != "html":
        raise InputError("--screenshot is of the HTML page: give --html")
    page = render(trace_dir, fmt, out, say=info, with_dirs=_traces(with_dirs))
    if shot:
        from .report import keep_screenshot
        keep_screenshot(page)


@trace_app.command("try")
def trace_try_cmd(
    trace_dir: Path = typer.Argument(..., metavar="DIR", help="A trace directory written by `climio trace run` (its meta.json names the command and its directory)."),
    items: Optional[str] = typer.Option(None, "--items", metavar="LIST", help="The advice items of `climio trace report DIR` to try, e.g. 1,3 (or ids such as 2b); default all."),
    top: Optional[int] = typer.Option(None, "--top", metavar="K", help="Try the first K advice items."),
    reps: int = typer.Option(2, "--reps", metavar="N", help="Cold runs of each fix and of the baseline (in the same rounds, alternating order)."),
    passes: int = typer.Option(1, "--passes", metavar="P", help="How often the job will run: a conversion's time counts 1/P (gain = baseline / (after + conversion / P))."),
    scratch: Optional[Path] = typer.Option(None, "--scratch", metavar="DIR", help="Where the converted copies and each run's outputs go (default DIR/try)."),
    allow_writes: bool = typer.Option(False, "--allow-writes", help="Run a job that writes a file it also reads (those writes go to the file itself)."),
    compare: Optional[str] = typer.Option(None, "--compare", metavar="CMD", help="Decide whether a fix changed the result with `CMD BASE_RUN_DIR RUN_DIR` (exit 0: the same) instead of comparing the printed numbers (rtol 1e-6) and written files."),
    with_dirs: Optional[List[Path]] = typer.Option(None, "--with", metavar="DIR", help="Another traced job on the same file (repeatable): a layout fix says what it predicts for that job's reads too."),
    json_out: bool = typer.Option(False, "--json", help="One JSON object on stdout instead of text."),
):
    """Re-run the traced job with each fix of its advice applied (a converted copy redirected in, a chunk
    cache or open_dataset arguments injected), cold, and rank the fixes by their measured gain. Never
    edits the script or touches the file; a fix that is slower or changes the result is never advised."""
    import json
    from ..trace.trying import rank, try_fixes
    summary = try_fixes(trace_dir, items=items, top=top, reps=reps, passes=passes, scratch=scratch,
                        allow_writes=allow_writes, compare=compare, say=None if json_out else info,
                        with_dirs=_traces(with_dirs))
    print(json.dumps(summary, indent=1, default=str) if json_out else rank.text(summary), end="\n" if json_out else "")


def _traces(dirs) -> list:
    """--with DIRs: each a trace directory (one line otherwise)."""
    from climio.base.errors import InputError, no_such_file
    for d in dirs or ():
        if not d.exists():
            raise no_such_file(d)
        if not d.is_dir():
            raise InputError(f"--with {d}: not a trace directory (`climio trace run -o DIR -- COMMAND` writes one)")
    return list(dirs or ())


def _report_format(json_out: bool, html: bool, old: Optional[str]) -> str:
    """--json / --html (the vocabulary of every command); the old --format spelling with a note."""
    from climio.base.errors import InputError
    from climio.dataset.options import renamed
    if json_out and html:
        raise InputError("--json and --html contradict each other: give one")
    if old is not None and old not in ("text", "json", "html"):
        raise InputError(f"unknown --format '{old}': use --json or --html (text is the default)")
    return renamed("--format", "--json / --html", old, "json" if json_out else "html" if html else "text",
                   new_given=json_out or html)


