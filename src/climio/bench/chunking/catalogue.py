"""The thesis's chunk catalogue (section 4.1.1): the named chunk shapes A-G of a [t, z, y, x]
variable, the library default and Rew's balanced shape, and the --chunks list users write.

    named_chunk_shapes(shape, itemsize) -> {label: chunks or None}
    parse_chunk_spec("A,E,F,default,[10,1,20,40]", shape, itemsize) -> [(label, chunks)]
    LayoutCase(label, chunks, compression)      one file the study writes and reads

The geometry these shapes are measured with (chunks touched, bytes decoded, library default,
balanced) lives in climio.dataset.layout; this module only names the study's shapes.
"""

import math
import re
from dataclasses import dataclass

from climio.dataset.layout import _fmt, _itemsize, _shape, balanced_chunks, library_default_chunks, validate_chunks
from climio.dataset.reads import template as _template
from climio.base.errors import InputError

CHUNK_LABELS = {"A": "contiguous", "B": "hypercube 1/10", "C": "~16 KB xy tiles", "D": "~16.2 KB xy tiles",
                "E": "xy", "F": "xt", "G": "xyt", "default": "library default", "balanced": "balanced (Rew)"}

# The thesis's file-system stripe: "64 KB", decimal; four C tiles fit in it, four D tiles do not.
STRIPE_BYTES = 64000


def _need_4d(shape, what) -> tuple:
    shape = _shape(shape)
    if len(shape) != 4:
        raise InputError(f"{what} needs a 4-D [t,z,y,x] variable, not shape {_fmt(shape)}")
    return shape


def named_chunk_shapes(shape, itemsize) -> dict:
    """The thesis's chunk shapes (section 4.1.1) for a [T,Z,Y,X] variable, plus the library default
    and the balanced shape; None is contiguous.

    C: [1,1,n,n] with n the largest tile of which four fit the 64 KB (64000 B) stripe,
    4*n*n*itemsize <= 64000 (44 for float64: 15.5 KB); D: one larger (45 for float64: 16.2 KB,
    four exceed the stripe). The thesis wrote C as [1,1,43,43]; the rule gives 44. Tiles are
    clipped to Y and X."""
    t, z, y, x = _need_4d(shape, "the named chunk shapes")
    itemsize = _itemsize(itemsize)
    n = max(1, math.isqrt(STRIPE_BYTES // (4 * itemsize)))
    m = n + 1
    return {
        "A": None,
        "B": [-(-d // 10) for d in (t, z, y, x)],
        "C": [1, 1, min(n, y), min(n, x)],
        "D": [1, 1, min(m, y), min(m, x)],
        "E": [1, 1, y, x],
        "F": [t, 1, 1, x],
        "G": [t, 1, y, x],
        "default": library_default_chunks((t, z, y, x), itemsize),
        "balanced": balanced_chunks((t, z, y, x), itemsize),
    }


def _split_top(text, seps) -> list:
    """Split on any of `seps` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch in seps and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out]


def _is_bare_shape(piece, rank) -> bool:
    items = [s.strip() for s in piece.split(",")]
    return len(items) == rank and all(re.fullmatch(r"\d+|[TZYXtzyx]", s) for s in items) \
        and any(s.isdigit() for s in items)


def parse_chunk_spec(text, shape, itemsize) -> list:
    """User --chunks -> [(label, chunks)], chunks None for contiguous.

    Items separated by commas or semicolons: a letter A..G (thesis section 4.1.1, 4-D only),
    `default`, `balanced`, `contiguous` (= A), or a shape in brackets `[10,1,20,40]` (letters
    T,Z,Y,X mean the whole dimension), labelled custom, custom2, ... A bare `10,1,20,40` (with no
    other items, or between semicolons) is one shape too. Repeated items are kept once."""
    shape = _shape(shape)
    itemsize = _itemsize(itemsize)
    src = str(text).strip()
    items = []
    for piece in _split_top(src, ";"):
        if _is_bare_shape(piece, len(shape)):
            items.append("[" + piece + "]")
        else:
            items.extend(_split_top(piece, ","))
    items = [s for s in items if s]
    if not items:
        raise InputError(f"no chunk shapes in '{text}': use e.g. A,E,F,default,[10,1,20,40]")
    named = None
    out, seen, customs = [], set(), []
    for item in items:
        key = item.upper() if len(item) == 1 else item.lower()
        if item.startswith("["):
            if not item.endswith("]"):
                raise InputError(f"malformed chunk shape '{item}' in '{text}': use e.g. [10,1,20,40]")
            chunks = list(_template(item, shape, "chunk shape", check_range=False))
            if chunks in customs:
                continue
            customs.append(chunks)
            label = "custom" if len(customs) == 1 else f"custom{len(customs)}"
        elif key in ("contiguous", "A"):
            label, chunks = "A", None
        elif key == "default":
            label, chunks = key, library_default_chunks(shape, itemsize)
        elif key == "balanced":
            label, chunks = key, balanced_chunks(shape, itemsize)
        elif key in CHUNK_LABELS:
            if named is None:
                named = named_chunk_shapes(_need_4d(shape, f"chunk shape {key}"), itemsize)
            label, chunks = key, named[key]
        elif re.fullmatch(r"\d+", item):
            raise InputError(f"chunk item '{item}' in '{text}' is not a label: write a chunk shape in "
                             "brackets, e.g. [10,1,20,40]")
        else:
            raise InputError(f"unknown chunk shape '{item}' in '{text}': use A-G, default, balanced, "
                             "contiguous or [t,z,y,x]")
        if label in seen:
            continue
        seen.add(label)
        validate_chunks(shape, chunks)
        out.append((label, chunks))
    return out


@dataclass
class LayoutCase:
    """One file of the study: a chunk shape of the catalogue (or the user's) x a compression
    setting. The Layout noun of the design (shape, chunks, filters) is climio.dataset.layout.Layout; a
    case adds the study's label, the file and why it could not be written."""

    label: str           # A..G, default, balanced, custom
    chunks: object       # None = contiguous, else list
    compression: object  # data.compression.Compression
    path: str = ""
    error: str = ""      # why the file could not be written (e.g. codec unavailable)

    @property
    def name(self) -> str:
        shape = "contiguous" if self.chunks is None else "x".join(map(str, self.chunks))
        return f"ta_{self.label}_{shape}_{self.compression.label.replace('+', '_')}.nc"
