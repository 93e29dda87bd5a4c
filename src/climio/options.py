"""Every parser of option values: comma lists of names and integers, array shapes, KEY=VALUE hints.
(Sizes are units.parse_size, compression settings data.compression.parse_compression, chunk shapes
layout.parse_chunk_text, read shapes access.parse_read: each next to the noun it builds.)"""

from pathlib import Path

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


def parse_int_list(text, what, n=None, minimum=1) -> list:
    try:
        vals = [int(x) for x in str(text).strip("[] ").split(",") if x.strip()]
    except ValueError:
        raise InputError(f"malformed {what} '{text}': use comma-separated integers") from None
    if not vals or (n is not None and len(vals) != n) or min(vals) < minimum:
        want = f"{n} " if n else ""
        raise InputError(f"{what} '{text}' must be {want}integers >= {minimum}")
    return vals


def parse_hints(pairs=(), hints_file=None) -> dict:
    """`KEY=VALUE` items and the lines of a hints file (KEY=VALUE or ROMIO's `KEY VALUE`; # comments)."""
    items = []
    if hints_file:
        try:
            text = Path(hints_file).read_text()
        except OSError as exc:
            raise InputError(f"cannot read hints file {hints_file}: {exc.strerror}") from None
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                items.append(line if "=" in line else "=".join(line.split(None, 1)))
    for p in pairs:
        items += [x.strip() for x in str(p).split(",") if x.strip()]
    hints = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"malformed hint '{item}': use KEY=VALUE, e.g. cb_nodes=4")
        hints[key.strip()] = value.strip()
    return hints
