"""`climio report` and `climio survey`."""

from pathlib import Path
from typing import Optional

import typer

from ..api import DataDir, run_studies
from ..measure.progress import info
from . import app


SCREENSHOT_HELP = ("Also keep a PNG of the report's first screen (headless Chromium, 1400 x 900 px) as "
                   "RUN_DIR/report-first-screen.png.")


def keep_screenshot(report_html) -> None:
    """The --screenshot of `climio report`, `survey`, `bench STUDY`, `trace report` and `stsa`: the page's
    first screen as a PNG beside it (NAME-first-screen.png)."""
    from ..report.browser import screenshot
    info(f"first screen: {screenshot(report_html)}")


@app.command("report")
def report_cmd(run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A run directory holding records.jsonl."),
               shot: bool = typer.Option(False, "--screenshot", help=SCREENSHOT_HELP)):
    """Render RUN_DIR/report.html from the records (figures, summary tables, provenance)."""
    from ..report import render_report
    out = render_report(run_dir)
    info(f"report: {out}")
    if shot:
        keep_screenshot(out)


@app.command("survey")
def survey_cmd(
    quick: bool = typer.Option(False, "--quick", help="Finish within about 2 minutes (smaller files, fewer sizes)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Run directory (default climio-runs/survey-TIMESTAMP)."),
    data_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="Where to generate the data (default: a temporary directory on local disk). Put it on the file system you want to measure."),
    shot: bool = typer.Option(False, "--screenshot", help=SCREENSHOT_HELP),
    append: bool = typer.Option(False, "--append", help="Add to the run directory -o names when it already holds a run."),
    force: bool = typer.Option(False, "--force", help="Replace the run directory -o names, whole, when it already holds a run."),
):
    """Run every study at a laptop-sized default and write one report."""
    from ..api import results_table
    from ..runs.rundir import claim_dir
    from ..bench.survey import survey_steps
    from climio.runs.rundir import default_run_dir

    run_dir = out or default_run_dir("survey")
    claim_dir(run_dir, append, force)   # before any data are generated
    with DataDir(data_dir) as ddir:
        run_studies(run_dir, ddir, survey_steps(quick), True, measured_dir=data_dir, append=True)
    table = results_table(run_dir)
    if table:
        print(table)
    if shot:
        keep_screenshot(Path(run_dir) / "report.html")


