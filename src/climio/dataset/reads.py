"""The one parser of read shapes (`--read` of every command, `read=` of the Python API).

    read_count(spec, shape, dims=None, roles=None) -> count     one hyperslab's count
    read_count_of(spec, desc)                                  the same for a Description

A read tiles the variable with hyperslabs of its count (access.slice_starts). Three forms:

  * named shapes, defined by the dimensions' CF roles (climio.dataset.cf) so that they mean the
    same on 2-D to 5-D variables: the dimensions whose role the name holds are read whole, every
    other dimension one index at a time (a vertical level, an ensemble member):
        t    one full series at a point          xy   one horizontal map
        xt   a longitude-time section             xyt  all maps of one level (one member)
        z    a column                             xz, yz  vertical sections
        box  a latitude-longitude sub-box (a quarter of each horizontal extent) over all time
  * dimension names: `time`, `lat,lon` read those dimensions whole, the others one index at a time;
  * count templates, one entry per dimension: an integer, or a letter T, Z, Y, X for the whole
    dimension (the letter must be the dimension's role when the role is known): `1,1,Y,X`, `24,1,Y,X`.

Without dims and roles (a bare shape) the roles are cf.roles_of's fallback (last two y, x; the
first t; the one before y z). An impossible shape names the variable's dimensions and the named
shapes that fit.
"""

import re

from climio.base.errors import InputError
from climio.dataset import cf

NAMED = {"t": "t", "xy": "xy", "xt": "xt", "xyt": "xyt", "z": "z", "xz": "xz", "yz": "yz", "box": "txy"}
READ_SHAPES = tuple(NAMED)
BOX_FRACTION = 4          # box: 1/4 of each horizontal extent


def _fmt(seq) -> str:
    return "[" + ",".join(str(v) for v in seq) + "]"


def _frame(shape, dims, roles) -> tuple:
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape {shape!r} must be a list of positive integers") from None
    if not shape or min(shape) < 1:
        raise InputError(f"shape {_fmt(shape)} must be a list of positive integers")
    dims = tuple(dims) if dims else tuple(f"d{i}" for i in range(len(shape)))
    roles = tuple(roles) if roles else cf.roles_of(dims)
    return shape, dims, roles


def fitting(roles) -> list:
    """The named shapes a variable with these roles can take."""
    have = set(r for r in roles if r)
    return [n for n, need in NAMED.items() if set(need) <= have]


def _described(dims, roles, var="") -> str:
    inner = ", ".join(f"{d} ({cf.ROLE_NAMES[r]})" if r else f"{d} (no role)" for d, r in zip(dims, roles))
    return f"{var or 'the variable'}({inner})"


def read_count(spec, shape, dims=None, roles=None, var="") -> tuple:
    """The count of one hyperslab of the read `spec` (see the module docstring); InputError (one
    line) naming the dimensions and the shapes that fit when the read is impossible."""
    shape, dims, roles = _frame(shape, dims, roles)
    text = str(spec).strip()
    low = text.lower()
    if low in NAMED:
        need = NAMED[low]
        missing = [cf.ROLE_NAMES[r] for r in dict.fromkeys(need) if r not in roles]
        if missing:
            fit = fitting(roles)
            raise InputError(f"read shape '{text}' needs a {' and a '.join(missing)} dimension: "
                             f"{_described(dims, roles, var)} has none; shapes that fit: "
                             f"{', '.join(fit) or 'a count template'}")
        count = [d if r and r in need else 1 for d, r in zip(shape, roles)]
        if low == "box":
            count = [max(1, -(-d // BOX_FRACTION)) if r and r in "xy" else n
                     for d, r, n in zip(shape, roles, count)]
        return tuple(count)
    names = [s.strip() for s in text.strip("[]").split(",")]
    if names and all(n in dims for n in names):
        return tuple(d if name in names else 1 for d, name in zip(shape, dims))
    if "," not in text and len(shape) > 1:
        raise InputError(f"unknown read shape '{spec}' for {_described(dims, roles, var)}: use "
                         f"{', '.join(fitting(roles)) or 'a count template'}, dimension names such as "
                         f"{','.join(dims[-2:])}, or a count like {','.join(['1'] * (len(shape) - 2) + ['Y', 'X'])}")
    return template(text, shape, "read count", roles=roles, dims=dims)


def read_count_of(spec, desc) -> tuple:
    """read_count for a climio.dataset.description.Description."""
    return read_count(spec, desc.shape, desc.dims, desc.roles, desc.var)


def template(text, shape, what, check_range=True, roles=None, dims=None) -> tuple:
    """`T,1,10,X` / `[1,1,Y,X]` -> ints; a letter means the whole dimension and must be the
    dimension's role (roles: cf.roles_of's fallback for a bare shape)."""
    shape = tuple(int(d) for d in shape)
    dims = tuple(dims) if dims else tuple(f"d{i}" for i in range(len(shape)))
    roles = tuple(roles) if roles else cf.roles_of(dims)
    items = [s.strip() for s in str(text).strip().strip("[]").split(",")]
    if len(items) != len(shape):
        raise InputError(f"{what} '{text}' has {len(items)} entries for the {len(shape)} dimensions "
                         f"of shape {_fmt(shape)}" + (f" ({', '.join(dims)})" if not dims[0].startswith("d") else ""))
    out = []
    for i, (item, d, r) in enumerate(zip(items, shape, roles)):
        letter = item.lower()
        if letter in cf.AXES and len(letter) == 1:
            if r is not None and letter != r:
                raise InputError(f"{what} '{text}': entry {i + 1} is '{item}', but dimension {i + 1} "
                                 f"({dims[i]}) is {r.upper()}")
            out.append(d)
        elif re.fullmatch(r"\d+", item):
            n = int(item)
            if check_range and not 1 <= n <= d:
                name = f" ({r})" if r else ""
                raise InputError(f"{what} '{text}': entry {i + 1}{name} is {n}, outside 1..{d}")
            out.append(n)
        else:
            raise InputError(f"{what} '{text}': entry {i + 1} '{item}' is neither a count nor one of T,Z,Y,X")
    return tuple(out)
