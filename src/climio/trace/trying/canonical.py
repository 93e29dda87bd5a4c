"""What else a layout fix slows (issue 35 item 3, measured): once `trace try` has made the copy, the
canonical reads of the variable (one map, one full series, a box over all time) timed cold on the
original and on the copy, with a warning for each that becomes more than SLOWER_WARN times slower.
The model's prediction of the same before the fix is tried: climio.trace.effects.

    canonical_reads(original, copy, var) -> [{"read", "before_s", "after_s", "ratio"}]   (measured)
    warnings(rows) -> ["one map: 10.2x slower on the copy (0.08 s -> 0.84 s)", ...]
"""

import time

from climio.machine import cache
from ...model.layout_effects import SLOWER_WARN, canonical_reads as predicted_reads


def _reads(shape) -> list:
    """(name, index) of the canonical reads the model predicts (climio.model.layout_effects: time the
    first dimension, y and x the last two, other axes at their middle), but the whole field: one map,
    one full series, a box over all time (the `box` read shape's)."""
    return [(name, tuple(slice(s, s + c) for s, c in zip(start, count)))
            for name, [(start, count)] in predicted_reads(shape) if name != "the whole field"]


def _time(path, var, index) -> float:
    import netCDF4
    cache.evict(path)
    t0 = time.perf_counter()
    with netCDF4.Dataset(path) as d:
        d[var][index]
    return time.perf_counter() - t0


def canonical_reads(original, copy, var) -> list:
    import netCDF4
    var = str(var).lstrip("/")
    with netCDF4.Dataset(original) as d:
        shape = d[var].shape
    rows = []
    for name, index in _reads(shape):
        before, after = _time(original, var, index), _time(copy, var, index)
        rows.append({"read": name, "before_s": before, "after_s": after, "ratio": after / before if before > 0 else None})
    return rows


def warnings(rows) -> list:
    return [f"{r['read']}: {r['ratio']:.1f}x slower on the copy ({r['before_s']:.3g} s -> {r['after_s']:.3g} s)"
            for r in rows if r["ratio"] and r["ratio"] > SLOWER_WARN]

