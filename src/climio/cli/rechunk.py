"""`climio rechunk`: change chunking and compression in bounded memory."""

from pathlib import Path
from typing import Optional

import typer

from ..measure.progress import err_line, info
from . import app


@app.command("rechunk")
def rechunk_cmd(
    inputs: list[str] = typer.Argument(..., metavar="IN...", help="netCDF-4, netCDF-3 or CDF-5 files or Zarr stores, or a quoted glob ('data/tas_*.nc'), or one Zarr store in object storage (s3://BUCKET/IN.zarr, read object by object) or one netCDF-4 object (s3://BUCKET/IN.nc, read through byte ranges); opened read-only, never modified."),
    output: str = typer.Argument(..., metavar="OUT", help="netCDF-4 file or Zarr store (OUT.zarr) to write (under a temporary name, renamed when complete); with several inputs or a glob, the directory that gets one output per input, of the same name with the output format's suffix (.nc, or .zarr with --format zarr)."),
    chunk: Optional[list[str]] = typer.Option(None, "-c", "--chunks", metavar="SPEC", help="nccopy-style chunk spec: time/100,lat/1,lon/360 (per dimension) or var:1,1,360 (per variable); repeatable."),
    chunk_old: Optional[list[str]] = typer.Option(None, "--chunk", hidden=True, help="Deprecated spelling of --chunks."),
    for_axes: Optional[str] = typer.Option(None, "--for", metavar="AXES", help="Chunks that make reads along these axes fast: t, xt, xy, xyz, or dimension names (time,lon). Axis letters come from CF metadata."),
    balanced: bool = typer.Option(False, "--balanced", help="Rew's balanced chunks (N-D): equal cost for a series along any leading axis and a map."),
    chunk_bytes: Optional[str] = typer.Option(None, "--chunk-bytes", metavar="SIZE", help="Target chunk size, e.g. 4MiB (for --for and --balanced; alone it means --balanced)."),
    contiguous: bool = typer.Option(False, "--contiguous", help="Contiguous layout (no chunks, no compression)."),
    compression: Optional[str] = typer.Option(None, metavar="SETTING", help="New compression for the converted variables, e.g. deflate1+shuffle, zstd3, bitround12+deflate4, none; Zarr: zstd3, gzip5, blosc_lz4:5, each +shuffle (default: keep each variable's)."),
    out_format: Optional[str] = typer.Option(None, "--format", metavar="FORMAT", help="Output format: netcdf4 or zarr (default: zarr when OUT ends in .zarr)."),
    zarr_format: int = typer.Option(3, "--zarr-format", metavar="N", help="Zarr output: format 3 (default) or 2."),
    shards: Optional[list[str]] = typer.Option(None, "--shards", metavar="SPEC", help="Zarr v3 sharding: shard lengths as -c specs (time/365,lat/90 or var:s1,s2,...), multiples of the chunk lengths; dimensions not named: one chunk. Default: no shards."),
    endian: Optional[str] = typer.Option(None, "--endian", metavar="ORDER", help="Zarr v3 output: byte order of the bytes codec, little (default) or big."),
    concat: Optional[str] = typer.Option(None, "--concat", metavar="DIM", help="Several inputs (or a glob) are one dataset along DIM (e.g. time): written to the one OUT (a Zarr store or a netCDF-4 file), files ordered by DIM's values and checked first (dimensions, dtypes, coordinates, units, calendars; gaps and overlaps reported)."),
    allow_overlap: bool = typer.Option(False, "--allow-overlap", help="With --concat: files overlapping along DIM are concatenated as they are (repeated steps kept) instead of refused."),
    var: Optional[list[str]] = typer.Option(None, "--var", metavar="NAME", help="Convert only this variable (name or /group/path); repeatable. Default: every numeric variable."),
    max_mem: Optional[str] = typer.Option(None, "--max-mem", metavar="SIZE", help="Memory budget for data blocks, e.g. 2GiB (default: a quarter of the RAM)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", metavar="N", help="Processes that read, decode and encode blocks; the parent writes (default: one per core)."),
    tmp: Optional[Path] = typer.Option(None, "--tmp", metavar="DIR", help="Directory for the intermediate file of two-pass plans (default: next to OUTPUT)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (passes, block shape, bytes, peak memory, predicted time) and stop."),
    verify: bool = typer.Option(False, "--verify", help="Re-read the output and compare every value and all metadata before renaming it."),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT if it exists."),
    strict: bool = typer.Option(False, "--strict", help="Refuse a Zarr input with absent chunks (by default they are read as the fill value, with a warning)."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan and the result as one JSON object on stdout."),
    resume: bool = typer.Option(False, "--resume", help="s3:// output: continue a killed or failed run, keeping the blocks its manifest records (size and checksum checked); without it, what an unfinished run left is removed."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", help="Run the block tasks on a Dask cluster: a scheduler address (tcp://HOST:PORT; workers started with --nthreads 1) or 'local' (a LocalCluster of --workers processes). Writes Zarr (s3:// or a shared file system); --max-mem is per worker."),
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="The S3 endpoint of an s3:// input or output (else AWS_ENDPOINT_URL)."),
):
    """Change the chunk shape or compression of netCDF-4 variables or Zarr arrays fast and in bounded
    memory; convert netCDF-4 to Zarr (v3 or v2) and back.

    Every source chunk is decoded once and every target chunk encoded and written once when the
    memory budget allows; otherwise the planner picks strided reads, bounded re-decoding or two
    passes through an intermediate file, whichever it predicts is cheapest.

    Several inputs (or a glob) go into the directory OUT, one after another, each with every worker
    and the whole --max-mem (one file already keeps every core busy; a split budget would make each
    plan re-decode or take two passes), with one summary at the end."""
    import json

    from ..rechunking import phases
    phases.mark("interpreter, CLI imports, arguments")
    from climio.measure.mpi_site import activate, under_mpi
    if under_mpi():
        activate()  # the MPI h5py must be the first h5py this process imports
    from climio.base.errors import ClimioError
    from climio.dataset.options import renamed
    from ..rechunking.remote import convert   # entry.convert, with s3:// stores in or out
    phases.mark("rechunk imports")

    chunk = renamed("--chunk", "-c/--chunks", chunk_old, chunk)
    # `or None`: an empty --chunk-bytes / --max-mem means the default, as if not given
    try:
        summary = convert(inputs if len(inputs) > 1 else inputs[0], output, chunks=chunk, compression=compression,
                          for_axes=for_axes, balanced=balanced, chunk_bytes=chunk_bytes or None,
                          contiguous=contiguous, variables=var,
                          max_mem=max_mem or None, workers=workers, tmp_dir=tmp, verify=verify, force=force,
                          dry_run=dry_run, progress=True, say=err_line if json_out else info,
                          mpi=under_mpi() and not dry_run, out_format=out_format, zarr_format=zarr_format,
                          shards=shards or (), endian=endian or "", resume=resume, scheduler=scheduler or "",
                          endpoint_url=endpoint_url, concat=concat, allow_overlap=allow_overlap,
                          strict=strict)
    except ClimioError as exc:   # some of several files failed: the summary of them all, then the error
        if json_out and getattr(exc, "summary", None):
            print(json.dumps(exc.summary))
        raise
    if json_out and summary:
        print(json.dumps(summary))
    if (scheduler or any(str(p).startswith("s3://") for p in [*inputs, output])) and not under_mpi():
        from . import exit_quickly
        exit_quickly()   # done and reported: no seconds of teardown of what object storage loaded


