"""Chunk specifications as users write them: `contiguous`, `default`, `[1,1,180,360]`, `1,1,180,360`."""

import math
import re

from ..errors import InputError

_LIST_RE = re.compile(r"^\[?\s*(\d+(?:\s*,\s*\d+){3})\s*\]?$")


def parse_chunks(text):
    """None for contiguous, 'default' for the library's choice, else a list of 4 ints [t,z,y,x]."""
    s = str(text).strip()
    if s.lower() == "contiguous":
        return None
    if s.lower() == "default":
        return "default"
    m = _LIST_RE.match(s)
    if not m:
        raise InputError(f"malformed chunk shape '{text}': use contiguous, default, or T,Z,Y,X e.g. 1,1,180,360")
    return [int(x) for x in m.group(1).split(",")]


def format_chunks(chunks) -> str:
    if chunks is None or chunks == "contiguous":
        return "contiguous"
    if chunks == "default":
        return "default"
    return "[" + ",".join(map(str, chunks)) + "]"


def validate_chunks(chunks, shape) -> list:
    """The chunk shape as 4 ints, each between 1 and its dimension; InputError otherwise."""
    try:
        ok = len(chunks) == 4 and all(int(c) == c and not isinstance(c, bool) for c in chunks)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"chunk shape {chunks!r} impossible: give four integers [t,z,y,x]")
    chunk = [int(c) for c in chunks]
    if any(not 1 <= c <= n for c, n in zip(chunk, shape)):
        raise InputError(f"chunk shape {format_chunks(chunk)} impossible: every chunk dimension must be "
                         f"between 1 and the dimension size {format_chunks(list(shape))}")
    return chunk


def chunk_bytes(chunk, itemsize: int) -> int:
    return math.prod(chunk) * itemsize
