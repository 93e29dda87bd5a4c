"""`climio report` and `climio survey`."""

from pathlib import Path
from typing import Optional

import typer

from ..api import DataDir, run_studies
from ..measure.progress import info
from . import app


@app.command("report")
def report_cmd(run_dir: Path = typer.Argument(..., help="A run directory holding records.jsonl.")):
    """Render RUN_DIR/report.html from the records (figures, summary tables, provenance)."""
    from ..report import render_report
    info(f"report: {render_report(run_dir)}")


@app.command("survey")
def survey_cmd(
    quick: bool = typer.Option(False, "--quick", help="Finish within about 2 minutes (smaller files, fewer sizes)."),
    out: Optional[Path] = typer.Option(None, help="Run directory (default climio-runs/survey-TIMESTAMP)."),
    data_dir: Optional[Path] = typer.Option(None, help="Where to generate the data (default: a temporary directory on local disk)."),
):
    """Run every study at a laptop-sized default and write one report."""
    from ..rundir import default_run_dir
    from ..bench.survey import survey_steps

    run_dir = out or default_run_dir("survey")
    with DataDir(data_dir) as ddir:
        run_studies(run_dir, ddir, survey_steps(quick), True)


