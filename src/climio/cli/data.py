"""`climio make-data`: synthetic test files."""

from pathlib import Path
from typing import Optional

import typer

from ..errors import InputError
from ..measure.progress import info
from ..options import parse_shape
from . import app


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
    force: bool = typer.Option(False, "--force", help="Replace files of the same names already in OUTDIR."),
):
    """Write synthetic test files with CF metadata, streaming in bounded memory."""
    from ..data import make_data
    from ..layout import parse_chunk_text
    from ..measure.progress import BytesProgress
    from ..rundir import writable_dir
    from ..units import format_size, parse_size

    kinds = tuple(k.strip() for k in kind.split(",") if k.strip())
    if not kinds or any(k not in ("1d", "4d") for k in kinds):
        raise InputError(f"unknown --kind '{kind}': use 1d, 4d or 1d,4d")
    shape4d = parse_shape(shape) if shape else None
    nbytes = parse_size(size)
    from ..data import FILE_NAMES
    names = [n for k, n in FILE_NAMES.items() if k.split("_")[0] in kinds]
    existing = [n for n in names if (Path(outdir) / n).exists()]
    if existing and not force:
        raise InputError(f"{outdir} already holds {', '.join(existing)}: add --force to replace, or choose another OUTDIR")
    created = not Path(outdir).exists()
    out = writable_dir(outdir)
    try:
        _write(out, kinds, nbytes, shape4d, chunks, deflate, shuffle, dtype, random, seed)
    except BaseException:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()   # a failed or interrupted run leaves no empty directory behind
        raise


def _write(out, kinds, nbytes, shape4d, chunks, deflate, shuffle, dtype, random, seed):
    from ..data import make_data
    from ..layout import parse_chunk_text
    from ..measure.progress import BytesProgress
    from ..units import format_size
    total = nbytes * (2 if "1d" in kinds else 0) + (nbytes if "4d" in kinds else 0)
    with BytesProgress(total, "make-data") as bar:
        made = make_data(out, size=nbytes, kinds=kinds, shape4d=shape4d, chunks=parse_chunk_text(chunks) if chunks else None,
                         deflate=deflate, shuffle=shuffle, dtype=dtype, random=random, seed=seed, progress=bar.callback)
    for key, path in made.items():
        if key != "bytes":
            info(f"{key}: {path}")
    info(f"wrote {format_size(made['bytes'])}")


