"""`climio tune write`: sweep the write knobs of a model run and print the best configuration."""

from pathlib import Path
from typing import Optional

import typer

from ..api import DataDir, run_studies
from ..measure.progress import info
from . import CONTEXT, app

tune_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, context_settings=CONTEXT,
                       help="Sweep tuning knobs and report the best configuration.")
app.add_typer(tune_app, name="tune")


@tune_app.command("write", context_settings=CONTEXT)
def tune_write_cmd(
    ranks: int = typer.Option(4, min=1, metavar="N", help="Ranks of the model run being tuned."),
    backends: Optional[str] = typer.Option("netcdf4,pnetcdf", metavar="LIST", help="Comma list of mpiio, hdf5, netcdf4, pnetcdf."),
    grid: Optional[str] = typer.Option(None, metavar="nx,ny,nz", help="nx,ny,nz, or mom5 / roms (default 192,128,20)."),
    nt: Optional[int] = typer.Option(None, min=1, metavar="N", help="Records appended (default 4)."),
    decomposition: Optional[str] = typer.Option(None, metavar="px,py", help="px,py (default MPI_Dims_create)."),
    stripe_counts: Optional[str] = typer.Option(None, metavar="LIST", help="Lustre stripe counts to sweep, e.g. 1,4,16 (only where lfs exists)."),
    hint: Optional[list[str]] = typer.Option(None, "--hint", metavar="KEY=VALUE", help="MPI-IO hint KEY=VALUE; repeatable."),
    hints_file: Optional[Path] = typer.Option(None, "--hints-file", metavar="FILE", help="File of hints, one KEY=VALUE (or ROMIO's 'KEY VALUE') per line."),
    reps: Optional[int] = typer.Option(None, min=1, metavar="N", help="Repetitions per configuration (default 10 as benchio; --quick 3)."),
    hostfile: Optional[Path] = typer.Option(None, metavar="FILE", help="mpirun --hostfile for a multi-node run."),
    launcher: Optional[str] = typer.Option(None, metavar="TEMPLATE", help="Launch command template instead of mpirun, e.g. 'srun -n {ranks}'."),
    timeout: float = typer.Option(3600.0, metavar="SECONDS", help="Seconds before a launch is killed and reported as failed."),
    mpi_io: str = typer.Option("romio", "--mpi-io", metavar="romio|ompio|default", help="Open MPI's MPI-IO implementation: romio (default here: the sweep's cb_nodes is a ROMIO hint), ompio or default."),
    quick: bool = typer.Option(False, "--quick", help="Small grid and 3 repetitions."),
    data_dir: Optional[Path] = typer.Option(None, metavar="DIR", help="Where the files are written (default: a temporary directory on local disk)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="DIR", help="Run directory for records.jsonl and report.html."),
    report: bool = typer.Option(True, help="Render report.html at the end."),
):
    """Sweep io_layout x aggregators (cb_nodes) x stripe count x backend for a model run's output
    and print the best configuration and its speed-up over the serial single-file write (MOM5 paper, 4.2)."""
    from ..bench.parallel_write import tune as tw
    from climio.dataset.options import parse_int_list
    from climio.runs.rundir import default_run_dir

    base = tw.base_grid(ranks, "quick" if quick else "full", backends=backends, model_grid=grid, nt=nt,
                        decomposition=decomposition, hint=hint, hints_file=hints_file, reps=reps, hostfile=hostfile,
                        launcher=launcher, timeout=timeout, mpi_io=mpi_io)
    stripes_ = parse_int_list(stripe_counts, "--stripe-counts") if stripe_counts else [None]
    run_dir = out or default_run_dir("tune-write")
    result = {}
    with DataDir(data_dir) as ddir:
        from ..bench.parallel_write import PARALLEL_WRITE
        PARALLEL_WRITE.check(base, ddir)
        run_studies(run_dir, ddir, [lambda ctx: result.update(
            tw.run_sweep(ctx.run, base, ranks, ddir, stripe_counts=stripes_, say=info))], report)
    print(tw.format_table(result))
