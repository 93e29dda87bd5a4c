"""Byte sizes: parse `512B`, `64KiB`, `1GiB`, `2GB`, `4k`; format for humans.

Binary: KiB, MiB, GiB, TiB and the bare letters k, m, g, t (as fio's and IOR's -b/-t/--bs take
them). Decimal: kB, MB, GB, TB (case-insensitive).

Internally everything is bytes; rates are MB/s = 1e6 B/s (as the thesis reports them).
"""

import re

from .errors import InputError

_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "m": 1024**2, "mb": 1000**2, "g": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text) -> int:
    """Return the number of bytes in `text`; raise InputError when malformed."""
    if isinstance(text, int):
        if text < 0:
            raise InputError(f"size must be non-negative, got {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise InputError(f"malformed size '{text}': use e.g. 512B, 64KiB (or 64k, binary as in fio/IOR), 1MiB, 2GB (decimal)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value != int(value):
        raise InputError(f"size '{text}' is not a whole number of bytes")
    return int(value)


def parse_size_list(text: str) -> list:
    """`512B,4KiB,1MiB` -> sorted unique byte counts; `512B..1GiB` doubles between the ends,
    `512B..1GiB:4` multiplies by 4."""
    sizes = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part:
            rng, _, step = part.partition(":")
            factor = int(step) if step.isdigit() else (2 if not step else 0)
            if factor < 2:
                raise InputError(f"bad step in '{part}': use e.g. 512B..1GiB:4")
            lo, hi = (parse_size(p) for p in rng.split("..", 1))
            if lo <= 0 or hi < lo:
                raise InputError(f"bad size range '{part}': need 0 < start <= end")
            s = lo
            while s <= hi:
                sizes.add(s)
                s *= factor
        else:
            s = parse_size(part)
            if s <= 0:
                raise InputError(f"size must be positive, got '{part}'")
            sizes.add(s)
    if not sizes:
        raise InputError(f"no sizes in '{text}'")
    return sorted(sizes)


def format_size(nbytes: float) -> str:
    """Binary units, as sizes are shown in KiB/MiB/GiB: 1048576 -> '1MiB'."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= factor:
            v = nbytes / factor
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(nbytes)}B"


def rate_MBps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e6 if seconds > 0 else float("inf")
