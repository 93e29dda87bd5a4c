"""Refuse a variable whose claimed shape no disk could take, before anything is planned or read.

A damaged header (or a template store) can claim a 10^15-long axis while the file holds a few
chunks or none: the stored bytes, which the disk check otherwise goes by for compressed data, then
say "nothing to write". The logical size is what a conversion has to produce and pass through
memory, so it is the one judged here: arithmetic on the shape, nothing iterated or allocated.
"""

import math
import os
import shutil
from pathlib import Path

from climio.base.errors import DataError
from climio.base.units import format_size

# The most any codec climio writes shrinks real data (deflate and zstd on constant chunks reach a few
# hundred to one); an output smaller than logical / MAX_RATIO is not to be expected.
MAX_RATIO = 1000


def logical_bytes(info) -> int:
    """Bytes of the variable's values uncompressed (a string variable counted as 1 byte per value)."""
    return math.prod(int(d) for d in info.shape) * max(1, int(info.itemsize or 0))


def least_output_bytes(info) -> int:
    """The least the variable can take on disk compressed: the floor of the disk check's estimate."""
    return logical_bytes(info) // MAX_RATIO


def refuse_impossible(in_path, infos, out_path) -> None:
    """DataError (one line, exit 3) for a variable larger than MAX_RATIO times the whole file system
    the output goes to, or with a chunk larger than this machine's memory (the libraries decode a
    chunk whole, at its full shape): not "too little free space" or "--max-mem too small" but a
    shape no conversion here can finish."""
    where = _existing(Path(out_path).parent)
    capacity = shutil.disk_usage(where).total
    memory = _memory_bytes()
    for v in infos:
        chunk = math.prod(int(c) for c in v.chunks) * max(1, int(v.itemsize or 0)) if v.chunks else 0
        if memory and chunk > memory:
            shape = "[" + ",".join(str(int(c)) for c in v.chunks) + "]"
            raise DataError(f"{in_path}: {v.path} claims chunks {shape} ({format_size(chunk)} each, decoded whole), "
                            f"more than this machine's memory ({format_size(memory)}): a damaged header, not a "
                            "variable to convert; nothing written")
        size = logical_bytes(v)
        if size > capacity * MAX_RATIO:
            shape = "[" + ",".join(str(int(d)) for d in v.shape) + "]"
            raise DataError(f"{in_path}: {v.path} claims shape {shape} ({format_size(size)} uncompressed), more "
                            f"than the whole file system of {where} ({format_size(capacity)}) could hold at "
                            f"{MAX_RATIO}:1: a damaged header, not a variable to convert; nothing written")


def _existing(p: Path) -> Path:
    p = p.expanduser().absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def _memory_bytes() -> int:
    """Physical memory (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0
