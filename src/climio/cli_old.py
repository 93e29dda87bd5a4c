"""The `climio` command. Subcommands parse options and delegate; no study logic lives here."""

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

import typer

from .errors import ClimioError, InputError
from .options import parse_shape
from .progressbar import err_line, info

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Measure, explain and fix the I/O performance of climate data work "
                       "(netCDF-4/HDF5, MPI-IO, parallel file systems). Results are JSON lines "
                       "(records.jsonl) plus an HTML report in a run directory.")
bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Run a benchmark study and write its records and report.")
app.add_typer(bench_app, name="bench")
trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="Trace a program's netCDF, HDF5, MPI-IO and POSIX calls (LD_PRELOAD) and explain them.")
app.add_typer(trace_app, name="trace")
tune_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Sweep tuning knobs and report the best configuration.")
app.add_typer(tune_app, name="tune")


@app.command("make-data")
def make_data_cmd(
    outdir: Path = typer.Argument(..., help="Directory for the files (created if missing)."),
    size: str = typer.Option("256MiB", help="Bytes of data per file, e.g. 512MiB, 4GiB (larger than RAM is fine: written in blocks)."),
    kind: str = typer.Option("1d", help="Which files: 1d (data1d.nc + data1d.bin, float64 contiguous), 4d (field4d.nc), or 1d,4d."),
    shape: Optional[str] = typer.Option(None, help="4-D shape T,Z,Y,X (default: derived from --size)."),
    chunks: Optional[str] = typer.Option(None, help="4-D chunk shape: contiguous, default, or T,Z,Y,X."),
    deflate: int = typer.Option(0, min=0, max=9, help="Deflate level for the 4-D variable (0 = none)."),
    shuffle: bool = typer.Option(False, help="Byte-shuffle filter before deflate."),
    dtype: str = typer.Option("f8", help="4-D variable type: f4 or f8."),
    random: bool = typer.Option(False, "--random", help="Incompressible uniform random numbers (as the thesis's files) instead of smooth waves + noise."),
    seed: int = typer.Option(0, help="Seed: the same seed gives the same bytes."),
):
    """Write synthetic test files with CF metadata, streaming in bounded memory."""
    from .data import make_data
    from .data.chunks import parse_chunks
    from .progressbar import BytesProgress
    from .rundir import writable_dir
    from .units import format_size, parse_size

    kinds = tuple(k.strip() for k in kind.split(",") if k.strip())
    if not kinds or any(k not in ("1d", "4d") for k in kinds):
        raise InputError(f"unknown --kind '{kind}': use 1d, 4d or 1d,4d")
    shape4d = parse_shape(shape) if shape else None
    nbytes = parse_size(size)
    out = writable_dir(outdir)
    total = nbytes * (2 if "1d" in kinds else 0) + (nbytes if "4d" in kinds else 0)
    with BytesProgress(total, "make-data") as bar:
        made = make_data(out, size=nbytes, kinds=kinds, shape4d=shape4d, chunks=parse_chunks(chunks) if chunks else None,
                         deflate=deflate, shuffle=shuffle, dtype=dtype, random=random, seed=seed, progress=bar.callback)
    for key, path in made.items():
        if key != "bytes":
            info(f"{key}: {path}")
    info(f"wrote {format_size(made['bytes'])}")


@bench_app.command("read-stack")
def read_stack_cmd(
    file: Optional[Path] = typer.Option(None, help="netCDF-4 file with a 1-D float64 variable (see --var)."),
    bin_file: Optional[Path] = typer.Option(None, help="Plain binary file for the c-posix, py-file and numpy layers."),
    var: str = typer.Option("data", help="Variable to read from --file."),
    size: Optional[str] = typer.Option(None, help="Generate files of this size instead (e.g. 1GiB) in --data-dir or a temporary directory."),
    data_dir: Optional[Path] = typer.Option(None, help="Keep generated files here (default: a temporary directory, removed afterwards)."),
    layers: Optional[str] = typer.Option(None, help="Comma list of c-posix, c-netcdf, py-file, numpy, netcdf4-python, h5py, h5netcdf, xarray (default all)."),
    patterns: Optional[str] = typer.Option(None, help="Comma list of sequential, strided, random (default all)."),
    buffers: Optional[str] = typer.Option(None, help="Buffer sizes: 512B,4KiB,1MiB or a range 512B..1GiB (doubling) or 512B..1GiB:4."),
    reps: Optional[int] = typer.Option(None, min=1, help="Repetitions per configuration (default 3)."),
    cache: str = typer.Option("cold", help="cold (evict with posix_fadvise, verified with mincore) or warm."),
    budget: Optional[float] = typer.Option(None, min=0, help="Seconds per configuration before it is recorded as did-not-finish (0 = none)."),
    odirect: bool = typer.Option(False, help="c-posix layer opens with O_DIRECT."),
    c_api: str = typer.Option("read", help="c-posix layer reads with read (lseek + read(2)) or fread (unbuffered stdio, as the thesis's appendix C)."),
    syscalls: bool = typer.Option(True, help="Count the read syscalls of every layer in an untimed strace pass."),
    quick: bool = typer.Option(False, "--quick", help="A small grid that finishes in about a minute."),
    full: bool = typer.Option(False, "--full", help="The thesis's grid: 512 B to 1 GiB on a 1 GiB file."),
    seed: int = typer.Option(1, help="Seed of the random read offsets."),
    out: Optional[Path] = typer.Option(None, help="Run directory (default climio-runs/read-stack-TIMESTAMP)."),
    report: bool = typer.Option(True, help="Render report.html at the end."),
):
    """Serial read rate through the software stack (thesis ch. 3): layers x patterns x buffer sizes."""
    from .bench import read_stack as rs
    from .rundir import default_run_dir

    preset = rs.PRESETS["quick" if quick else "full" if full else "survey"]
    if cache not in ("cold", "warm"):
        raise InputError(f"unknown --cache '{cache}': use cold or warm")
    if c_api not in ("read", "fread"):
        raise InputError(f"unknown --c-api '{c_api}': use read or fread")
    run_dir = out or default_run_dir("read-stack")
    with _data_dir(data_dir) as ddir:
        files = rs.prepare_files(str(file) if file else None, str(bin_file) if bin_file else None,
                                 size or preset["size"], ddir)
        grid = rs.grid_from_options(files, layers, patterns, buffers or preset["buffers"], reps or preset["reps"],
                                    cache, preset["budget_s"] if budget is None else budget, variable=var,
                                    seed=seed, odirect=odirect, c_api=c_api, trace_syscalls=syscalls)
        _run_studies(run_dir, ddir, [lambda run: rs.run_study(run, files, grid)], report)


@bench_app.command("chunking")
def chunking_cmd(
    shape: Optional[str] = typer.Option(None, help="Variable shape T,Z,Y,X (default 64,8,128,256; the thesis used 430,430,430,430)."),
    chunks: Optional[str] = typer.Option(None, help="Chunk shapes: letters A-G as in the thesis (A contiguous, B hypercube 1/10, C ~16 KB tiles, D ~16.2 KB tiles, E xy, F xt, G xyt), default, balanced, or [t,z,y,x]; comma separated."),
    read: Optional[str] = typer.Option(None, "--read", help="Read shapes: xy, xt, xyt, or templates such as 1,1,Y,X (separate templates with ';')."),
    compression: Optional[str] = typer.Option(None, help="Settings, comma separated: none, deflate1..9, +shuffle, zstdN, bitgroomN/granularbrN (digits), bitroundN (bits), e.g. bitround12+deflate4+shuffle."),
    compress_chunks: Optional[str] = typer.Option(None, help="Chunk labels that get the compressed settings (default: default,E as in the thesis; 'all' for every chunked shape)."),
    layers: str = typer.Option("netcdf4-python", help="Comma list of netcdf4-python, h5py, c-netcdf."),
    caches: Optional[str] = typer.Option(None, help="Chunk-cache settings: default (the library's) and/or fit (sized to hold every chunk one read touches)."),
    reps: Optional[int] = typer.Option(None, min=1, help="Cold repetitions per cell (default 3)."),
    budget: Optional[float] = typer.Option(None, min=0, help="Seconds per repetition; a cell cut short reads a sample, one that reads almost nothing is did-not-finish."),
    sample: Optional[int] = typer.Option(None, min=0, help="Read a random sample of this many slices per cell, in file order (default 48; 0 = all slices)."),
    dtype: str = typer.Option("f8", help="Type of the generated variable: f4 or f8."),
    source: Optional[str] = typer.Option(None, help="Use a real 4-D variable FILE:VAR instead of generated data (its values, shape and type)."),
    data_dir: Optional[Path] = typer.Option(None, help="Keep the layout files here (default: a temporary directory, removed afterwards)."),
    quick: bool = typer.Option(False, "--quick", help="A small grid that finishes in about a minute."),
    out: Optional[Path] = typer.Option(None, help="Run directory (default climio-runs/chunking-TIMESTAMP)."),
    report: bool = typer.Option(True, help="Render report.html at the end."),
):
    """Read rate of xy / xt / xyt reads for chunk shapes x compression x chunk cache (thesis ch. 4)."""
    from .bench import chunking as ck
    from .rundir import default_run_dir

    grid = ck.build_grid(shape, chunks, read, compression, compress_chunks, layers, caches, reps, budget, sample,
                         dtype, source or "", preset="quick" if quick else "full")
    run_dir = out or default_run_dir("chunking")
    with _data_dir(data_dir) as ddir:
        ck.check_space(grid, ddir)
        _run_studies(run_dir, ddir, [lambda run: ck.run_study(run, grid, ddir)], report)


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
    from .launcher import Launcher
    lau = Launcher(hostfile=str(hostfile) if hostfile else None, template=launcher, timeout_s=timeout, mpi_io=mpi_io)
    lau.io_component()   # a bad --mpi-io fails here, before anything runs
    return lau


@bench_app.command("parallel-write")
def parallel_write_cmd(
    mode: str = typer.Option("benchio", help="benchio (ARCHER benchio: 3-D float64 blocks with halo) or model (FMS/ROMS output: records of 3-D/2-D fields, small variables, restart)."),
    ranks: Optional[str] = _ParallelWriteOptions.ranks,
    backends: Optional[str] = _ParallelWriteOptions.backends,
    strategies: Optional[str] = typer.Option(None, help="Comma list of shared, file-per-process, file-per-node, serial (model mode: shared, file-per-process = one file per I/O domain, serial)."),
    hint: Optional[list[str]] = _ParallelWriteOptions.hint,
    hints_file: Optional[Path] = _ParallelWriteOptions.hints_file,
    reps: Optional[int] = _ParallelWriteOptions.reps,
    local: Optional[str] = typer.Option(None, help="benchio weak scaling: local array n1,n2,n3 per rank (default 128,128,128)."),
    global_: Optional[str] = typer.Option(None, "--global", help="benchio strong scaling: global array N1,N2,N3 split over the ranks."),
    grid: Optional[str] = typer.Option(None, help="model: nx,ny,nz, or mom5 (1440,1080,50) / roms (899,629,40) (default 192,128,20)."),
    nt: Optional[int] = typer.Option(None, min=1, help="model: records appended (default 4)."),
    decomposition: Optional[str] = typer.Option(None, help="model: px,py ranks (default MPI_Dims_create)."),
    io_layout: Optional[str] = typer.Option(None, help="model: FMS io_layout ix,iy; each I/O domain gathers to one writing rank (default px,py: every rank writes)."),
    small: str = typer.Option("collective", help="model: small non-tiled variables written collectively (one rank's data) or independently by every rank (ROMS)."),
    chunk: str = typer.Option("default", help="model: netCDF-4/HDF5 chunks: default, contiguous, or CKX,CKY (the MOM5 chunk study)."),
    vars_: Optional[str] = typer.Option(None, "--vars", help="model: numbers of 3-D, 2-D and restart variables (default 4,3,2)."),
    select: float = typer.Option(0.0, help="model: ROMS selective writing; skip a 3-D record whose RMS change since the last written one is below this (0 = write all)."),
    independent: bool = typer.Option(False, "--independent", help="Independent instead of collective writes of the big arrays to a shared file."),
    fsync: bool = typer.Option(False, "--fsync", help="fsync before close, timed as its own phase."),
    verify: bool = typer.Option(True, help="Read every file back (outside the timed region) and check every value."),
    stripe_count: Optional[int] = typer.Option(None, help="Lustre stripe count for the output directory (lfs setstripe; recorded as not applicable elsewhere)."),
    stripe_size: Optional[str] = typer.Option(None, help="Lustre stripe size, e.g. 1MiB."),
    instances: int = typer.Option(0, min=0, help="Load test (benchio Fig. 14): also run this many instances at once at the largest rank count and report their aggregate bandwidth."),
    hostfile: Optional[Path] = _ParallelWriteOptions.hostfile,
    launcher: Optional[str] = _ParallelWriteOptions.launcher,
    timeout: float = _ParallelWriteOptions.timeout,
    mpi_io: str = _ParallelWriteOptions.mpi_io,
    quick: bool = typer.Option(False, "--quick", help="Small sizes, 2 and 4 ranks, 3 repetitions: about a minute."),
    data_dir: Optional[Path] = _ParallelWriteOptions.data_dir,
    out: Optional[Path] = _ParallelWriteOptions.out,
    report: bool = typer.Option(True, help="Render report.html at the end."),
):
    """Parallel write bandwidth (benchio, MOM5/FMS, ROMS): backends x strategies x ranks, per-rank phase times."""
    from .bench import parallel_write as pw
    from .rundir import default_run_dir
    from .units import parse_size

    grid_ = pw.build_grid(mode, ranks, backends, strategies, reps, pw.parse_hints(hint or (), hints_file), fsync, verify,
                          independent, local, global_, grid, nt, decomposition, io_layout, small, chunk, vars_, select,
                          stripe_count, parse_size(stripe_size) if stripe_size else None,
                          preset="quick" if quick else "full")
    lau = _launcher(hostfile, launcher, timeout, mpi_io)
    note = pw.default_ranks_note(grid_)
    if note:
        info(f"note: {note}")

    def load_test(run, ddir):
        for s in pw.load_test(run, grid_, ddir, lau, instances):
            info(f"load test {s['instances']} x {grid_.ranks[-1]} ranks, {s['backend']} {s['strategy']} rep {s['rep']}: "
                 f"{s['aggregate_MBps']:.1f} MB/s aggregate")

    run_dir = out or default_run_dir("parallel-write")
    with _data_dir(data_dir) as ddir:
        steps = [lambda run: pw.run_study(run, grid_, ddir, lau)] + ([lambda run: load_test(run, ddir)] if instances else [])
        _run_studies(run_dir, ddir, steps, report)


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
    from .bench import parallel_write as pw
    from .bench import tune_write as tw
    from .rundir import default_run_dir

    base = pw.build_grid("model", str(ranks), backends, "shared", reps, pw.parse_hints(hint or (), hints_file),
                         grid=grid, nt=nt, decomposition=decomposition, preset="quick" if quick else "full")
    stripes_ = pw.parse_int_list(stripe_counts, "--stripe-counts") if stripe_counts else [None]
    lau = _launcher(hostfile, launcher, timeout, mpi_io)
    run_dir = out or default_run_dir("tune-write")
    result = {}
    with _data_dir(data_dir) as ddir:
        _run_studies(run_dir, ddir, [lambda run: result.update(tw.run_sweep(run, base, ranks, ddir, lau, stripes_, say=info))],
                     report)
    print(tw.format_table(result))


@app.command("rechunk")
def rechunk_cmd(
    input: Path = typer.Argument(..., help="netCDF-4, netCDF-3 or CDF-5 file (opened read-only, never modified)."),
    output: Path = typer.Argument(..., help="netCDF-4 file to write (under a temporary name, renamed when complete)."),
    chunk: Optional[list[str]] = typer.Option(None, "-c", "--chunk", help="nccopy-style chunk spec: time/100,lat/1,lon/360 (per dimension) or var:1,1,360 (per variable); repeatable."),
    for_axes: Optional[str] = typer.Option(None, "--for", help="Chunks that make reads along these axes fast: t, xt, xy, xyz, or dimension names (time,lon). Axis letters come from CF metadata."),
    balanced: bool = typer.Option(False, "--balanced", help="Rew's balanced chunks (N-D): equal cost for a series along any leading axis and a map."),
    chunk_bytes: Optional[str] = typer.Option(None, "--chunk-bytes", help="Target chunk size, e.g. 4MiB (for --for and --balanced; alone it means --balanced)."),
    contiguous: bool = typer.Option(False, "--contiguous", help="Contiguous layout (no chunks, no compression)."),
    compression: Optional[str] = typer.Option(None, help="New compression for the converted variables, e.g. deflate1+shuffle, zstd3, bitround12+deflate4, none (default: keep each variable's)."),
    var: Optional[list[str]] = typer.Option(None, "--var", "-v", help="Convert only this variable (name or /group/path); repeatable. Default: every numeric variable."),
    max_mem: Optional[str] = typer.Option(None, "--max-mem", help="Memory budget for data blocks, e.g. 2GiB (default: a quarter of the RAM)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="Processes that read, decode and encode blocks; the parent writes (default: one per core)."),
    tmp: Optional[Path] = typer.Option(None, "--tmp", help="Directory for the intermediate file of two-pass plans (default: next to OUTPUT)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (passes, block shape, bytes, peak memory, predicted time) and stop."),
    verify: bool = typer.Option(False, "--verify", help="Re-read the output and compare every value and all metadata before renaming it."),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan and the result as one JSON object on stdout."),
):
    """Change the chunk shape or compression of netCDF-4 variables fast and in bounded memory.

    Every source chunk is decoded once and every target chunk encoded and written once when the
    memory budget allows; otherwise the planner picks strided reads, bounded re-decoding or two
    passes through an intermediate file, whichever it predicts is cheapest."""
    import json

    from .mpi_site import activate, under_mpi
    if under_mpi():
        activate()  # the MPI h5py must be the first h5py this process imports
    from .progressbar import BytesProgress
    from .rechunk.command import Options, rechunk
    from .units import parse_size

    opts = Options(chunk_specs=tuple(chunk or ()), for_axes=for_axes, balanced=balanced,
                   chunk_bytes=parse_size(chunk_bytes) if chunk_bytes else None, contiguous=contiguous,
                   compression=compression, variables=tuple(var or ()),
                   max_mem=parse_size(max_mem) if max_mem else None,
                   workers=workers if workers is not None else len(os.sched_getaffinity(0)),
                   tmp_dir=str(tmp) if tmp else None, verify=verify, force=force)
    say = err_line if json_out else info
    if under_mpi() and not dry_run:
        from .rechunk.mpi_exec import rechunk_mpi
        summary = rechunk_mpi(input, output, opts, say=say)
    else:
        summary = rechunk(input, output, opts, dry_run=dry_run, say=say,
                          progress_factory=lambda total: BytesProgress(total, "rechunk"))
    if json_out and summary:
        print(json.dumps(summary))


@app.command("report")
def report_cmd(run_dir: Path = typer.Argument(..., help="A run directory holding records.jsonl.")):
    """Render RUN_DIR/report.html from the records (figures, summary tables, provenance)."""
    from .report import render_report
    info(f"report: {render_report(run_dir)}")


@app.command("survey")
def survey_cmd(
    quick: bool = typer.Option(False, "--quick", help="Finish within about 2 minutes (smaller files, fewer sizes)."),
    out: Optional[Path] = typer.Option(None, help="Run directory (default climio-runs/survey-TIMESTAMP)."),
    data_dir: Optional[Path] = typer.Option(None, help="Where to generate the data (default: a temporary directory on local disk)."),
):
    """Run every study at a laptop-sized default and write one report."""
    from .rundir import default_run_dir
    from .survey import survey_steps

    run_dir = out or default_run_dir("survey")
    with _data_dir(data_dir) as ddir:
        _run_studies(run_dir, ddir, survey_steps(ddir, quick), True)


@trace_app.command("run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def trace_run_cmd(
    command: Optional[list[str]] = typer.Argument(None, metavar="-- COMMAND [ARGS]...", help="The program to trace, after --; may be an mpirun command (see above)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Trace directory (default climio-runs/trace-TIMESTAMP; required under mpirun)."),
    layers: Optional[str] = typer.Option(None, help="Comma list of posix, mpiio, netcdf, hdf5 (default all; stdio counts as posix)."),
    exclude: Optional[list[str]] = typer.Option(None, "--exclude", help="Do not trace files under this path prefix; repeatable (always excluded: /proc, /sys, /dev, Python's prefix)."),
    max_events: Optional[int] = typer.Option(None, "--max-events", help="Events kept per process; beyond, events are counted as dropped and the trace is partial."),
):
    """Run COMMAND with the tracer preloaded; exit with COMMAND's exit status.

    Under MPI either `climio trace run -o DIR -- mpirun -n 4 prog` (the variables are handed to the
    ranks with -x / -genv) or `mpirun -n 4 climio trace run -o DIR -- prog` (every rank traces itself)."""
    from .trace.run import run_trace
    sys.exit(run_trace(command, out, layers, exclude or (), max_events, say=info))


@trace_app.command("report")
def trace_report_cmd(
    trace_dir: Path = typer.Argument(..., help="A trace directory written by `climio trace run`."),
    format: str = typer.Option("text", "--format", help="text (stdout), json (stdout) or html (DIR/report.html)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Write the report to this file instead."),
):
    """Explain a trace: time per layer and function, call paths, per-rank balance, file access, advice."""
    from .trace.report import render
    render(trace_dir, format, out, say=info)


class _data_dir:
    """A user's data directory, or a temporary one on local disk removed afterwards."""

    def __init__(self, path):
        self.path, self.tmp = path, None

    def __enter__(self):
        from .rundir import writable_dir
        if self.path:
            return str(writable_dir(self.path))
        self.tmp = tempfile.mkdtemp(prefix="climio-data-")
        return self.tmp

    def __exit__(self, *exc):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _run_studies(run_dir, data_dir, steps, report: bool) -> None:
    from .rundir import RunDir
    with RunDir(run_dir, data_dir) as run:
        for step in steps:
            step(run)
    info(f"records: {Path(run_dir) / 'records.jsonl'}")
    if report:
        from .report import render_report
        info(f"report: {render_report(run_dir)}")


def main(argv=None) -> None:
    """Entry point: ClimioError -> one line on stderr and its exit code; Ctrl-C -> exit 130."""
    try:
        app(args=argv, standalone_mode=False)
    except ClimioError as exc:
        if not getattr(exc, "quiet", False):  # under MPI, only rank 0 reports a shared failure
            err_line(f"climio: error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_line("climio: interrupted")
        sys.exit(130)
    except Exception as exc:
        # Usage errors of the option parser (typer ships its own copy of click, so match by shape).
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            err_line(f"climio: error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        if type(exc).__name__ == "Abort":
            err_line("climio: aborted")
            sys.exit(1)
        raise

if __name__ == "__main__":
    main()
