"""`climio make-data`: synthetic test files."""

import math
from pathlib import Path
from typing import Optional

import typer

from climio.base.errors import InputError, disk_full_error
from ..measure.progress import info
from climio.dataset.options import parse_shape
from climio.runs.staging import remove_stale, stale_temporaries
from . import app


@app.command("make-data")
def make_data_cmd(
    outdir: Optional[Path] = typer.Argument(None, metavar="OUTDIR", help="Directory for the files (the same as -o/--out)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", metavar="DIR", help="Directory for the files (created if missing)."),
    size: Optional[str] = typer.Option(None, metavar="SIZE", help="Bytes of data per file, e.g. 512MiB, 4GiB (default 256MiB; larger than RAM is fine: written in blocks). Not with --shape."),
    kind: str = typer.Option("1d", metavar="LIST", help="Which files: 1d (data1d.nc + data1d.bin, float64 contiguous), 4d (field4d.nc), or 1d,4d."),
    shape: Optional[str] = typer.Option(None, metavar="SHAPE", help="4-D shape T,Z,Y,X (default: derived from --size; not with --size)."),
    chunks: Optional[str] = typer.Option(None, metavar="SHAPE", help="4-D chunk shape: contiguous, default, or T,Z,Y,X."),
    compression: Optional[str] = typer.Option(None, metavar="SETTING", help="Compression of the 4-D variable, as everywhere in climio: none, deflate4, deflate4+shuffle, zstd3, bitround12+deflate4 ... (needs chunks)."),
    dtype: str = typer.Option("f8", metavar="TYPE", help="4-D variable type: f4 or f8."),
    random: bool = typer.Option(False, "--random", help="Incompressible uniform random numbers (as the thesis's files) instead of smooth waves + noise."),
    seed: int = typer.Option(0, metavar="N", help="Seed: the same seed gives the same bytes."),
    force: bool = typer.Option(False, "--force", help="Replace files of the same names already in the directory."),
    fmt: str = typer.Option("nc", "--format", metavar="LIST", help="Format of the 4-D field: nc (netCDF-4), zarr (Zarr v3, field4d.zarr) or nc,zarr."),
    shards: Optional[str] = typer.Option(None, metavar="SHAPE", help="Zarr shard shape T,Z,Y,X (whole chunks; --format zarr only)."),
    upload: Optional[str] = typer.Option(None, metavar="URL", help="Also upload the files to s3://BUCKET/PREFIX (with a kerchunk reference of each netCDF-4 file); endpoint and credentials from the AWS_* variables."),
    endpoint_url: Optional[str] = typer.Option(None, "--endpoint-url", metavar="URL", help="S3 endpoint for --upload (else AWS_ENDPOINT_URL)."),
):
    """Write synthetic test files with CF metadata, streaming in bounded memory."""
    from climio.runs.rundir import writable_dir
    from climio.dataset.options import parse_size

    from climio.dataset.compression import NONE
    from climio.dataset.options import parse_compression

    if outdir is not None and out is not None and outdir != out:
        raise InputError(f"two output directories, {outdir} and -o {out}: give one")
    outdir = out if out is not None else outdir
    if outdir is None:
        raise InputError("make-data needs a directory for the files: -o DIR")
    kinds = tuple(k.strip() for k in kind.split(",") if k.strip())
    if not kinds or any(k not in ("1d", "4d") for k in kinds):
        raise InputError(f"unknown --kind '{kind}': use 1d, 4d or 1d,4d")
    if size is not None and shape is not None:
        raise InputError("--size and --shape both set the 4-D size: give one")
    four_d_only = [f for f, v in (("--shape", shape), ("--chunks", chunks), ("--compression", compression)) if v]
    if four_d_only and "4d" not in kinds:
        raise InputError(f"{', '.join(four_d_only)} applies to the 4-D file only: add --kind 4d (or 1d,4d)")
    from ..data.publish import check_formats
    formats, upload_to = check_formats(kinds, fmt, chunks, shards, upload, endpoint_url)
    comp = parse_compression(compression) if compression else None
    if comp is not None and comp != NONE and chunks and chunks.strip().lower() == "contiguous":
        raise InputError(f"--compression {compression} needs chunks: a contiguous variable cannot be compressed")
    shape4d = parse_shape(shape) if shape else None
    nbytes = parse_size(size or "256MiB")
    from ..data import FILE_NAMES
    names = [n for k, n in FILE_NAMES.items() if k.split("_")[0] in kinds and (k != "4d" or "nc" in formats)]
    names += ["field4d.zarr"] if "zarr" in formats else []
    # what a SIGKILLed make-data left: temporaries named in one line and removed, an existing file
    # it had moved aside to replace put back (before the check below, which must then see it)
    remove_stale([p for name in names for p in stale_temporaries(Path(outdir) / name)], info, "make-data")
    existing = [n for n in names if (Path(outdir) / n).exists()]
    if existing and not force:
        raise InputError(f"{outdir} already holds {', '.join(existing)}: add --force to replace, or choose another directory")
    created = not Path(outdir).exists()
    out = writable_dir(outdir)
    try:
        nc_kinds = tuple(k for k in kinds if k != "4d" or "nc" in formats)
        if nc_kinds:
            _write(out, nc_kinds, nbytes, shape4d, chunks, comp, dtype, random, seed)
        if "zarr" in formats:   # the Zarr store and the upload: climio.data.publish
            from ..data.publish import write_zarr
            info(f"zarr: {write_zarr(out, nbytes, shape4d, chunks, shards, comp, dtype, random, seed)}")
        if upload_to is not None:
            from ..data.publish import upload_made
            upload_made(out, names, upload_to, say=info)
    except BaseException as exc:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()   # a failed or interrupted run leaves no empty directory behind
        full = disk_full_error(exc, out, f"writing {out}")   # netCDF-C says "HDF error", not ENOSPC
        if full is not None:
            raise full from None
        raise


def _write(out, kinds, nbytes, shape4d, chunks, compression, dtype, random, seed):
    from ..data import make_data
    from climio.dataset.options import parse_chunk_text
    from ..measure.progress import BytesProgress
    from climio.base.units import format_size
    # with --shape the 4-D file holds the shape's bytes, not --size's default
    bytes4d = math.prod(shape4d) * (4 if dtype == "f4" else 8) if shape4d else nbytes
    total = nbytes * (2 if "1d" in kinds else 0) + (bytes4d if "4d" in kinds else 0)
    with BytesProgress(total, "make-data") as bar:
        made = make_data(out, size=nbytes, kinds=kinds, shape4d=shape4d, chunks=parse_chunk_text(chunks) if chunks else None,
                         compression=compression, dtype=dtype, random=random, seed=seed, progress=bar.callback)
    for key, path in made.items():
        if key != "bytes":
            info(f"{key}: {path}")
    info(f"wrote {format_size(made['bytes'])}")


