"""What else a layout change slows (issue 35 item 3, predicted): the canonical reads of a variable
(one map, one full series, a box over all time, the whole field) and any other jobs' reads of it,
each priced by the model on the current layout and on the proposed chunks, with a warning for
each that becomes more than SLOWER_WARN times slower. Pure: the caller describes the data and
finds the profile.

    canonical_reads(shape, roles=None) -> [(name, [(start, count)])]
    effects(layout, codec, chunks, named_reads, stack, profile, chunk_cache=None) -> [row]
        row: {"read", "before_s", "after_s", "ratio", "slower"}
    warnings(rows) -> ["one map: 10.2x slower (predicted 0.08 s -> 0.84 s)", ...]
"""

import math

from climio.dataset.layout import Layout
from climio.dataset.reads import BOX_FRACTION     # the box is the `box` read shape's: one meaning
from . import predict as model

SLOWER_WARN = 2.0


def _axes(shape, roles) -> tuple:
    """(t, y, x) axis indices: by the CF roles when known, else CF order (time first, y, x last)."""
    n = len(shape)
    roles = list(roles or [None] * n)
    t = roles.index("t") if "t" in roles else 0
    y = roles.index("y") if "y" in roles else n - 2
    x = roles.index("x") if "x" in roles else n - 1
    return t, y, x


def canonical_reads(shape, roles=None) -> list:
    """(name, [(start, count)]) of the canonical reads of a variable of 3 or more dimensions (other
    axes at their middle); [] for fewer (no map or series to speak of)."""
    shape = [int(s) for s in shape]
    if len(shape) < 3:
        return []
    t, y, x = _axes(shape, roles)
    if len({t, y, x}) < 3:
        return []
    mid = [s // 2 for s in shape]

    def one(sel) -> tuple:
        start = [mid[i] if i not in sel else sel[i][0] for i in range(len(shape))]
        count = [1 if i not in sel else sel[i][1] for i in range(len(shape))]
        return tuple(start), tuple(count)
    by, bx = max(1, -(-shape[y] // BOX_FRACTION)), max(1, -(-shape[x] // BOX_FRACTION))
    return [("one map", [one({y: (0, shape[y]), x: (0, shape[x])})]),
            ("one full series", [one({t: (0, shape[t])})]),
            ("a box over all time", [one({t: (0, shape[t]), y: (mid[y] - by // 2, by), x: (mid[x] - bx // 2, bx)})]),
            ("the whole field", [(tuple(0 for _ in shape), tuple(shape))])]


def _seconds(layout, codec, reads, stack, profile, chunk_cache) -> float:
    return model.predict(layout, reads, stack, profile, codec=codec if layout.compressed else "",
                         chunk_cache=chunk_cache).seconds


def effects(layout: Layout, codec, chunks, named_reads, stack, profile, chunk_cache=None) -> list:
    """Each named read priced on `layout` and on the same variable in `chunks` (same codec), one pass."""
    after = Layout(layout.shape, layout.itemsize, tuple(int(c) for c in chunks), layout.compressed)
    rows = []
    for name, reads in named_reads:
        if not reads:
            continue
        b = _seconds(layout, codec, reads, stack, profile, chunk_cache)
        a = _seconds(after, codec, reads, stack, profile, chunk_cache)
        ratio = a / b if b > 0 else math.inf
        rows.append({"read": name, "before_s": b, "after_s": a, "ratio": ratio, "slower": ratio > SLOWER_WARN})
    return rows


def warnings(rows) -> list:
    return [f"{r['read']}: {r['ratio']:.1f}x slower (predicted {r['before_s']:.3g} s -> {r['after_s']:.3g} s)"
            for r in rows if r["slower"]]
