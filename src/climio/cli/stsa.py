"""`climio stsa`: space-time spectral analysis of CF netCDF/HDF5 files on Dask distributed."""

from pathlib import Path
from typing import Optional

import typer

from climio.base.errors import InputError, disk_full_error
from ..measure.progress import info
from . import app

HPC_HELP = """
Where it runs: by default a Dask LocalCluster with one worker process per core (one compute thread
and one reading thread each; --workers N for another number); --scheduler ADDRESS uses a cluster that is already running,
whose workers must see FILES under the same paths.

On an HPC system start the workers with the batch system and pass the scheduler's address:

\b
  dask-jobqueue (pip install dask-jobqueue), from a login node:
    python -c "from dask_jobqueue import SLURMCluster; c = SLURMCluster(cores=1, processes=1, memory='8GB'); c.scale(jobs=16); print(c.scheduler_address); input()"
    climio stsa 'u_*.nc' --var u --scheduler tcp://10.0.0.5:8786 -o out

\b
  dask-mpi (pip install dask-mpi mpi4py), inside one batch job:
    srun -n 18 dask-mpi --scheduler-file sched.json --nthreads 1 &
    climio stsa 'u_*.nc' --var u --scheduler "$(python -c 'import json; print(json.load(open("sched.json"))["address"])')" -o out

Reading overlaps computing on workers started with a reading thread besides their compute
threads, as climio's LocalCluster starts them: dask worker ADDRESS --nthreads 2 --resources
"stsa-read=1,stsa-compute=1" (dask-jobqueue: cores=2, worker_extra_args=["--resources",
"stsa-read=1,stsa-compute=1"]). Other workers read and then compute each task.

In Python: climio.stsa.wk(da, ...) / climio.stsa.hayashi(da, ...) take client=, workers= or scheduler=.
"""


@app.command("stsa", epilog=HPC_HELP)
def stsa_cmd(
    files: list[str] = typer.Argument(..., metavar="FILE...", help="netCDF/HDF5 files or glob patterns ('u_*.nc'); several files are combined by their coordinates (xarray.open_mfdataset)."),
    var: Optional[str] = typer.Option(None, "--var", metavar="NAME", help="Variable to analyse (default: the only one with 3 or more dimensions)."),
    method: str = typer.Option("wk", "--method", "-m", metavar="wk|hayashi", help="wk: Wheeler-Kiladis (1999) as NCL's wkSpaceTime (symmetric/antisymmetric, background, ratios); hayashi: Hayashi (1971) eastward/westward power as the thesis ran it."),
    level: Optional[float] = typer.Option(None, "--level", metavar="VALUE", help="Value of the vertical coordinate to analyse (the nearest level). Hayashi without --level stacks all levels as pseudo-time, as the thesis did."),
    lat_band: Optional[str] = typer.Option(None, "--lat-band", metavar="SOUTH,NORTH", help="Latitudes SOUTH,NORTH in degrees (default -15,15 for wk, all for hayashi; 'all' for every latitude)."),
    ndaywin: int = typer.Option(96, "--ndaywin", metavar="DAYS", help="WK segment length in days (NCL nDayWin)."),
    ndayskip: int = typer.Option(-65, "--ndayskip", metavar="DAYS", help="Days between segments; negative overlaps (NCL nDaySkip)."),
    spd: Optional[float] = typer.Option(None, "--spd", metavar="N", help="Samples per day (default: from the time coordinate)."),
    tasks: int = typer.Option(16, "--lat-tasks", metavar="N", help="Latitude tasks: the pieces of work the latitudes are split into (the thesis used 16); fewer when there are fewer latitudes (pairs for wk). Processes are --workers."),
    tasks_old: Optional[int] = typer.Option(None, "--tasks", hidden=True, help="Old name of --lat-tasks (--tasks means processes elsewhere)."),
    read_plan: str = typer.Option("runs", "--read-plan", metavar="runs|latitude", help="How a task reads: runs (one read per run of adjacent rows, the HDF5 chunk cache sized to hold every chunk the task touches) or latitude (the thesis's one (time, lon) slab per latitude and level)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", metavar="N", help="Worker processes of the LocalCluster (default: one per core)."),
    threads: int = typer.Option(1, "--threads", metavar="N", help="Compute threads per LocalCluster worker (1: the thesis's one computing task per worker). Each worker also has one thread that reads the next task while these compute, so reading and computing overlap; a worker holds at most two tasks' data per compute thread."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", help="Address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (instead of a LocalCluster)."),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", metavar="SECONDS", help="Seconds to wait for --scheduler."),
    engine: Optional[str] = typer.Option(None, "--engine", metavar="netcdf4|h5netcdf", help="xarray engine: netcdf4 or h5netcdf (default: xarray's choice)."),
    out: Path = typer.Option(Path("stsa-out"), "--out", "-o", metavar="DIR", help="Output directory: spectra.nc (CF netCDF), PNG figures, stsa.html, tasks.json."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Write the PNG and HTML plots."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty output directory whole (else it is refused)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Dask's progress bar on a terminal, a line per task otherwise."),
    shot: bool = typer.Option(False, "--screenshot", help="Also keep a PNG of stsa.html's first screen (headless "
                              "Chromium, 1400 x 900 px) as DIR/stsa-first-screen.png."),
):
    """Wavenumber-frequency spectra of a (time, [level,] lat, lon) variable, split into latitude tasks
    that each read and compute (timed separately) on Dask workers."""
    from climio.dataset.options import renamed
    from climio.runs.staging import check_output_dir, staged_dir
    from climio.runs.rundir import writable_dir
    from ..stsa import workflow

    # renamed: --tasks means processes in predict, advise and calibrate
    tasks = renamed("--tasks", "--lat-tasks", tasks_old, tasks, new_given=tasks != 16)

    if method not in workflow.METHODS:
        raise InputError(f"unknown --method '{method}': choose from {', '.join(workflow.METHODS)}")
    if workers is not None and scheduler:
        raise InputError("give --workers or --scheduler, not both")
    if threads < 1:
        raise InputError(f"--threads {threads} must be at least 1")
    if threads != 1 and scheduler:
        raise InputError("--threads applies to the LocalCluster; a --scheduler's workers have their own (dask worker --nthreads)")
    if shot and not plots:
        raise InputError("--screenshot is of stsa.html: not with --no-plots")
    if read_plan not in workflow.readplan.READ_PLANS:
        raise InputError(f"unknown --read-plan '{read_plan}': choose from {', '.join(workflow.readplan.READ_PLANS)}")
    check_output_dir(out, force)      # an earlier run's outputs are never mixed with this one's
    writable_dir(Path(out).resolve().parent)
    da, paths = workflow.open_input(files, var, engine)
    inp = workflow.prepare_input(da, method, level=level, lat_band="default" if lat_band is None else lat_band,
                                 spd=spd, ndaywin=ndaywin, ndayskip=ndayskip, paths=paths)
    with workflow.StsaCluster(workers, scheduler, timeout_s=connect_timeout, threads=threads) as cl:
        info(f"stsa: {method} of '{inp.description['variable']}' ({inp.n_time} steps x {inp.n_lev} level(s) x "
             f"{inp.n_lat} latitudes x {inp.n_lon} longitudes, {inp.spd:g}/day) on {cl.where}")
        result = workflow.analyse(inp, ndaywin, ndayskip, tasks, client=cl.client, progress=progress,
                                  read_plan=read_plan)
        result.where = cl.where
    t = result.timings()
    outdir = Path(out)
    try:
        with staged_dir(outdir, force, say=info, what="climio stsa") as stage:   # all at once, or nothing
            written = _write_outputs(result, stage, plots, f"climio stsa — {method} of {inp.description['variable']}")
        written = [outdir / Path(p).name for p in written]
    except Exception as exc:   # a full disk: netCDF-C says "HDF error" or "Permission denied", not ENOSPC
        full = disk_full_error(exc, outdir.parent, f"writing the spectra to {outdir}")
        if full is None:
            raise
        raise full from None
    info(f"stsa: {t['n_tasks']} tasks, job {t['job_wall_s']:.2f} s wall; per task summed: read "
         f"{t['sum_read_wall_s']:.2f} s wall / {t['sum_read_cpu_s']:.2f} s CPU, compute {t['sum_compute_wall_s']:.2f} s "
         f"wall / {t['sum_compute_cpu_s']:.2f} s CPU; {t['bytes'] / 1e6:.1f} MB, equivalent read rate "
         f"{t['equivalent_rate_MBps']:.1f} MB/s")
    for p in written:
        info(f"wrote {p}")
    if shot:
        from .report import keep_screenshot
        keep_screenshot(outdir / "stsa.html")


def _write_outputs(result, outdir, plots, title) -> list:
    """spectra.nc, tasks.json and (with plots) the PNG figures and stsa.html; the paths written."""
    from ..stsa import output
    written = [output.write_netcdf(result.spectra, outdir / "spectra.nc", result.description),
               output.write_tasks(result, outdir / "tasks.json")]
    if plots:
        from ..stsa import plots as stsa_plots
        pngs = stsa_plots.figures(result.spectra)
        for name, png in pngs.items():
            written.append(output.write_bytes(outdir / f"{name}.png", png))
        written.append(output.write_text(outdir / "stsa.html", stsa_plots.html_page(
            result.spectra, pngs, result, title=title)))
    return written
