"""`climio report` and `climio survey`."""

from pathlib import Path
from typing import Optional

import typer

from ..api import DataDir, run_studies
from ..measure.progress import info
from . import app


@app.command("report")
def report_cmd(run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A run directory holding records.jsonl.")):
    """Render RUN_DIR/report.html from the records (figures, summary tables, provenance)."""
    from ..report import render_report
    info(f"report: {render_report(run_dir)}")


@app.command("survey")
def survey_cmd(
    quick: bool = typer.Option(False, "--quick", help="Finish within about 2 minutes (smaller files, fewer sizes)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Run directory (default climio-runs/survey-TIMESTAMP)."),
    data_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="Where to generate the data (default: a temporary directory on local disk). Put it on the file system you want to measure."),
):
    """Run every study at a laptop-sized default and write one report."""
    from ..api import results_table
    from ..bench.survey import survey_steps
    from ..rundir import default_run_dir

    run_dir = out or default_run_dir("survey")
    with DataDir(data_dir) as ddir:
        run_studies(run_dir, ddir, survey_steps(quick), True, measured_dir=data_dir)
    table = results_table(run_dir)
    if table:
        print(table)


