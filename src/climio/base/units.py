"""Byte sizes: parse `512B`, `64KiB`, `1GiB`, `2GB`, `4k`; format for humans.

Binary: KiB, MiB, GiB, TiB and the bare letters k, m, g, t (as fio's and IOR's -b/-t/--bs take
them). Decimal: kB, MB, GB, TB (case-insensitive).

Internally everything is bytes; rates are MB/s = 1e6 B/s (as the thesis reports them).
"""




def format_size(nbytes: float) -> str:
    """Binary units, as sizes are shown in KiB/MiB/GiB: 1048576 -> '1MiB'."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= factor:
            v = nbytes / factor
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(nbytes)}B"


def rate_MBps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e6 if seconds > 0 else float("inf")
