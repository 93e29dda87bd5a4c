"""`climio tune write`: sweep the write knobs of a model run and print the best configuration."""

from pathlib import Path
from typing import Optional

import typer

from ..measure.progress import info
from . import CONTEXT, app
from ..api import DataDir, run_studies

tune_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, context_settings=CONTEXT,
                       help="Sweep tuning knobs and report the best configuration.")
app.add_typer(tune_app, name="tune")


class _ParallelWriteOptions:
    """The options `bench parallel-write` and `tune write` share (typer declares them per command)."""

    ranks = typer.Option(None, help="Rank counts, comma separated, e.g. 1,2,4,8 (default 1,2,4; --quick 2,4).")
    backends = typer.Option(None, help="Comma list of mpiio, hdf5, netcdf4, pnetcdf (default all).")
    hint = typer.Option(None, "--hint", help="MPI-IO hint KEY=VALUE (cb_nodes, cb_buffer_size, cb_config_list, romio_cb_write, romio_ds_write, striping_factor, striping_unit, ...); repeatable.")
    hints_file = typer.Option(None, "--hints-file", help="File of hints, one KEY=VALUE (or ROMIO's 'KEY VALUE') per line.")
    reps = typer.Option(None, min=1, help="Repetitions per configuration (default 10 as benchio; --quick 3).")
    hostfile = typer.Option(None, help="mpirun --hostfile for a multi-node run.")
    launcher = typer.Option(None, help="Launch command template instead of mpirun, e.g. 'srun -n {ranks}'.")
    timeout = typer.Option(3600.0, help="Seconds before a launch is killed and reported as failed.")
    mpi_io = typer.Option("default", "--mpi-io", help="Open MPI's MPI-IO implementation: default, romio or ompio (Open MPI 4 defaults to OMPIO, which ignores ROMIO hints such as cb_nodes).")
    data_dir = typer.Option(None, help="Where the files are written (default: a temporary directory on local disk). Put it on the file system you want to measure.")
    out = typer.Option(None, help="Run directory for records.jsonl and report.html.")


def _launcher(hostfile, launcher, timeout, mpi_io="default"):
    from ..measure.mpi import Launcher
    lau = Launcher(hostfile=str(hostfile) if hostfile else None, template=launcher, timeout_s=timeout, mpi_io=mpi_io)
    lau.io_component()   # a bad --mpi-io fails here, before anything runs
    return lau


@tune_app.command("write")
def tune_write_cmd(
    ranks: int = typer.Option(4, min=1, help="Ranks of the model run being tuned."),
    backends: Optional[str] = typer.Option("netcdf4,pnetcdf", help="Comma list of mpiio, hdf5, netcdf4, pnetcdf."),
    grid: Optional[str] = typer.Option(None, help="nx,ny,nz, or mom5 / roms (default 192,128,20)."),
    nt: Optional[int] = typer.Option(None, min=1, help="Records appended (default 4)."),
    decomposition: Optional[str] = typer.Option(None, help="px,py (default MPI_Dims_create)."),
    stripe_counts: Optional[str] = typer.Option(None, help="Lustre stripe counts to sweep, e.g. 1,4,16 (only where lfs exists)."),
    hint: Optional[list[str]] = _ParallelWriteOptions.hint,
    hints_file: Optional[Path] = _ParallelWriteOptions.hints_file,
    reps: Optional[int] = _ParallelWriteOptions.reps,
    hostfile: Optional[Path] = _ParallelWriteOptions.hostfile,
    launcher: Optional[str] = _ParallelWriteOptions.launcher,
    timeout: float = _ParallelWriteOptions.timeout,
    mpi_io: str = typer.Option("romio", "--mpi-io", help="Open MPI's MPI-IO implementation: romio (default here: the sweep's cb_nodes is a ROMIO hint), ompio or default."),
    quick: bool = typer.Option(False, "--quick", help="Small grid and 3 repetitions."),
    data_dir: Optional[Path] = _ParallelWriteOptions.data_dir,
    out: Optional[Path] = _ParallelWriteOptions.out,
    report: bool = typer.Option(True, help="Render report.html at the end."),
):
    """Sweep io_layout x aggregators (cb_nodes) x stripe count x backend for a model run's output
    and print the best configuration and its speed-up over the serial single-file write (MOM5 paper, 4.2)."""
    from ..bench.parallel_write import run as pw
    from ..bench.parallel_write import tune as tw
    from ..rundir import default_run_dir

    base = pw.build_grid("model", str(ranks), backends, "shared", reps, pw.parse_hints(hint or (), hints_file),
                         grid=grid, nt=nt, decomposition=decomposition, preset="quick" if quick else "full")
    stripes_ = pw.parse_int_list(stripe_counts, "--stripe-counts") if stripe_counts else [None]
    lau = _launcher(hostfile, launcher, timeout, mpi_io)
    run_dir = out or default_run_dir("tune-write")
    result = {}
    with DataDir(data_dir) as ddir:
        run_studies(run_dir, ddir, [lambda ctx: result.update(tw.run_sweep(ctx.run, base, ranks, ddir, lau, stripes_, say=info))],
                     report)
    print(tw.format_table(result))


