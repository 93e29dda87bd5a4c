"""`climio rechunk`'s one entry, convert(): one input to one output (command.rechunk), several
inputs one output each (many), several inputs into one dataset (concat), under mpirun (mpi_exec) or
on a Dask cluster (cluster). Above all of them, so that none imports another back."""

import os

from climio.base.errors import InputError
from .command import Options, rechunk
from ..stores.endpoint import is_s3_url


def convert(src, dst, chunks=None, compression=None, for_axes=None, balanced=False, chunk_bytes=None,
            contiguous=False, variables=(), max_mem=None, workers=None, tmp_dir=None, verify=False, force=False,
            dry_run=False, progress=False, say=None, mpi=False, out_format=None, zarr_format=3, shards=(),
            endian="", remote_out="", resume=False, scheduler="", concat=None, allow_overlap=False, strict=False) -> dict:
    """Change the chunk shape and/or compression of netCDF-4 variables (the `climio rechunk` command;
    climio.rechunking.convert and climio.rechunk are this function).

    chunks: {"time": 60, "lat": 1} (per dimension), {"tas": [60, 1, 360]} (per variable), or nccopy
    spec strings ["time/60,lat/1"]; compression: "deflate1+shuffle", "zstd3", "none", ...;
    for_axes: "t", "xt", "xy" or dimension names; sizes (chunk_bytes, max_mem) as bytes or "4MiB".
    Returns the summary dict the command prints with --json. Worker processes are spawned: a
    script (not a notebook) calling this with workers > 1 needs `if __name__ == "__main__":`.
    mpi: this process is one rank of an MPI job and converts with the others (rechunk.mpi_exec;
    no dry run, no progress bar). out_format ("netcdf4" | "zarr", default from dst's suffix),
    zarr_format (3 or 2), shards (--shards specs, Zarr v3) and endian (the Zarr v3 bytes codec's
    byte order) as the command's options; strict: refuse a Zarr input with absent chunks (read as
    the fill value otherwise, with a warning). `src` may be a list of inputs or a glob pattern:
    then `dst` is a directory and each input gets an output of the same name there (rechunk.many;
    the summary covers them all, its "failed" lists what was not converted). concat (a dimension
    name): the inputs are one dataset along it, written to the one output `dst` (rechunk.concat;
    overlaps along it refused unless allow_overlap)."""
    from climio.dataset.options import parse_size
    if isinstance(chunks, dict):
        per_dim = [f"{k}/{v}" for k, v in chunks.items() if not isinstance(v, (list, tuple))]
        per_var = [f"{k}:{','.join(map(str, v))}" for k, v in chunks.items() if isinstance(v, (list, tuple))]
        specs = ((",".join(per_dim),) if per_dim else ()) + tuple(per_var)
    else:
        specs = (chunks,) if isinstance(chunks, str) else tuple(chunks or ())
    opts = Options(chunk_specs=specs, for_axes=for_axes, balanced=balanced,
                   chunk_bytes=parse_size(chunk_bytes) if chunk_bytes is not None else None, contiguous=contiguous,
                   compression=compression,
                   variables=tuple([variables] if isinstance(variables, str) else variables or ()),
                   max_mem=parse_size(max_mem) if max_mem is not None else None,
                   workers=workers if workers is not None else len(os.sched_getaffinity(0)),
                   tmp_dir=str(tmp_dir) if tmp_dir else None, verify=verify, force=force, out_format=out_format,
                   zarr_format=int(zarr_format), shards=tuple([shards] if isinstance(shards, str) else shards or ()),
                   endian=endian or "", remote_out=remote_out or "", resume=bool(resume),
                   scheduler=scheduler or "", strict=bool(strict))
    say = say or (lambda *_: None)
    factory = None
    if progress and not mpi:
        from ..measure.progress import BytesProgress
        factory = lambda total: BytesProgress(total, "rechunk")  # noqa: E731
    from . import many
    if concat:
        if mpi:
            raise InputError("--concat runs on one machine (its own worker processes), not under mpirun")
        if scheduler or resume:
            raise InputError("--concat runs on one machine into a local output: not with --scheduler or --resume")
        from .concat import rechunk_concat
        return rechunk_concat(src, dst, opts, concat, allow_overlap=allow_overlap, dry_run=dry_run, say=say)
    if allow_overlap:
        raise InputError("--allow-overlap is for --concat DIM")
    if many.is_many(src) and str(dst).rstrip("/").endswith(".zarr"):
        raise InputError(f"output {dst}: several inputs are written one output per input into a directory, "
                         "not into one Zarr store; pass --concat DIM to write one store along DIM")
    if many.is_many(src):   # several inputs or a pattern: dst is the directory of the outputs
        return many.rechunk_many(src, dst, opts, dry_run=dry_run, progress_factory=factory, say=say, mpi=mpi)
    src = (src,) if isinstance(src, (str, os.PathLike)) else src
    # a URL is one line naming what is supported, not a mangled path; s3:// is read object by object
    src = src[0] if is_s3_url(src[0]) else many.expand(src)[0]
    many.refuse_url(dst, "output")
    if scheduler:   # --max-mem is per worker: the plan is made for all of them
        from .cluster import check_output
        check_output(remote_out or dst, out_format)
        if opts.max_mem:
            opts.max_mem *= max(1, opts.workers)
    if mpi:
        from .mpi_exec import rechunk_mpi
        return rechunk_mpi(src, dst, opts, say=say)
    return rechunk(src, dst, opts, dry_run=dry_run, say=say, progress_factory=factory)
