"""Parsing of the option values several commands share: comma lists of names, array shapes."""

from .errors import InputError


def parse_choice(text, allowed, what) -> list:
    """`a,b` -> ['a', 'b'] when every item is allowed; else a one-line InputError naming the choices."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if bad or not items:
        raise InputError(f"unknown {what} '{','.join(bad) or text}': choose from {', '.join(allowed)}")
    return items


def parse_shape(text, names="T,Z,Y,X") -> list:
    """`48,8,96,192` or `[48,8,96,192]` -> list of positive ints, one per name in `names`."""
    rank = len(names.split(","))
    try:
        dims = [int(x) for x in str(text).strip("[] ").split(",")]
    except ValueError:
        raise InputError(f"malformed shape '{text}': use {names}") from None
    if len(dims) != rank or min(dims) < 1:
        raise InputError(f"shape '{text}' must be {rank} positive integers {names}")
    return dims
