"""Synthetic datasets: smooth fields with waves and noise (or uniform random numbers), CF metadata,
any layout, streamed in bounded memory.

    make_data(outdir, size, kinds=("1d", "4d"), ...)   data1d.nc + data1d.bin, field4d.nc
    values_1d / values_4d                              the values of any slice, recomputed
    write_1d / write_4d                                the writers behind make_data
"""

from pathlib import Path

from climio.base.errors import DataError, InputError
from climio.dataset.options import parse_size
from .fields import GENERATOR_VERSION, check_dtype, values_1d, values_4d
from .writer import DEFAULT_BLOCK_BYTES, check_dir, check_space, planned_bytes_4d, write_1d, write_4d

__all__ = ["make_data", "derive_shape", "values_1d", "values_4d", "write_1d", "write_4d", "GENERATOR_VERSION"]

FILE_NAMES = {"1d_nc": "data1d.nc", "1d_bin": "data1d.bin", "4d": "field4d.nc"}
KINDS = ("1d", "4d")


def derive_shape(nbytes: int, dtype="f8") -> list:
    """A [t,z,y,x] shape of at most nbytes: 10 levels, x = 2y as on a lat-lon grid, t ~ y."""
    n = int(nbytes) // check_dtype(dtype).itemsize
    if n < 1:
        raise InputError(f"4-D size {nbytes} B holds no {dtype} value")
    nz = 10 if n >= 20000 else 1
    ny = max(1, int((n / (2 * nz)) ** (1 / 3)))
    nx = max(1, min(2 * ny, n // (nz * ny)))
    return [max(1, n // (nz * ny * nx)), nz, ny, nx]


def _outdir(path) -> Path:
    d = Path(path).expanduser()
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create directory {d}: {exc.strerror}") from None
    return check_dir(d)


def make_data(outdir, size="256MiB", kinds=("1d",), shape4d=None, chunks=None, deflate=0, shuffle=False,
              dtype="f8", random=False, seed=0, progress=None, max_block_bytes=DEFAULT_BLOCK_BYTES,
              compression=None) -> dict:
    """Write the requested files into outdir; return their paths and the data bytes written.

    size is per file (1-D files: rounded down to whole float64s; 4-D: the shape derived from it
    unless shape4d is given). Free space for every file is checked before any is written.
    """
    nbytes = parse_size(size)
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise InputError(f"unknown data kind {unknown[0] if unknown else '(none)'}: use 1d and/or 4d")
    d = _outdir(outdir)
    paths = {k: d / name for k, name in FILE_NAMES.items()}
    plans = []
    if "1d" in kinds:
        if nbytes < 8:
            raise InputError(f"1-D file size {nbytes} B is less than one float64 (8 B)")
        plans += [(paths["1d_nc"], nbytes // 8 * 8), (paths["1d_bin"], nbytes // 8 * 8)]
    if "4d" in kinds:
        shape4d = list(shape4d) if shape4d is not None else derive_shape(nbytes, dtype)
        plans.append((paths["4d"], planned_bytes_4d(shape4d, chunks, dtype, deflate, max_block_bytes)))
    check_space(plans)

    made = {"bytes": 0}
    if "1d" in kinds:
        n = write_1d(paths["1d_nc"], paths["1d_bin"], nbytes, seed=seed, random=random, progress=progress,
                     max_block_bytes=max_block_bytes)
        made.update({"1d_nc": paths["1d_nc"], "1d_bin": paths["1d_bin"]})
        made["bytes"] += 2 * n
    if "4d" in kinds:
        made["bytes"] += write_4d(paths["4d"], shape4d, chunks=chunks, dtype=dtype, deflate=deflate, compression=compression,
                                  shuffle=shuffle, seed=seed, random=random, progress=progress,
                                  max_block_bytes=max_block_bytes)
        made["4d"] = paths["4d"]
    return made
