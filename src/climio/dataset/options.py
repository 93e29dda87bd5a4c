"""Every parser of option values: comma lists of names and integers, array shapes, sizes and size
lists, compression settings, chunk shapes, KEY=VALUE hints, and the values only one
command takes (--lat-band, --layouts, --mode, --chunk-cache). Each builds the noun of its module
(layout, access, data.compression; read shapes: climio.dataset.reads) and fails with one InputError line. (A study's own vocabulary, e.g. the thesis's chunk letters A-G, stays with it.)"""

import re
from pathlib import Path

from climio.base.errors import InputError
from climio.dataset.layout import DIMS


def parse_choice(text, allowed, what, renamed=None) -> list:
    """`a,b` -> ['a', 'b'] when every item is allowed; else a one-line InputError naming the choices.
    `renamed` (old -> new) accepts old spellings of a value, with a note (renamed_values)."""
    items = [str(s).strip() for s in (text if isinstance(text, (list, tuple)) else str(text).split(","))
             if str(s).strip()]
    if renamed:
        items = renamed_values(items, renamed, what)
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


def parse_count(value, flag, minimum=1, kind=int):
    """One number of an option (an int, or kind=float), at least `minimum`; InputError naming `flag`."""
    if isinstance(value, bool):
        raise InputError(f"{flag} {value!r} must be a number")
    try:
        v = kind(value)
    except (TypeError, ValueError):
        raise InputError(f"{flag} '{value}' must be {'an integer' if kind is int else 'a number'}") from None
    if v < minimum:
        raise InputError(f"{flag} {v} must be at least {minimum}")
    return v


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


# --- sizes -------------------------------------------------------------------------------------------

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


# --- compression settings ----------------------------------------------------------------------------

def _codec_names() -> list:
    from climio.dataset.compression import CODECS, QUANTIZE_MODES
    return sorted([*CODECS, *QUANTIZE_MODES, "shuffle"], key=len, reverse=True)


def _split_part(part: str):
    """`bzip29` -> ('bzip2', '9'), `blosc_lz4:5` -> ('blosc_lz4', '5'): the longest known name wins,
    so codec names that end in digits keep them."""
    for name in _codec_names():
        if part.startswith(name):
            rest = part[len(name):].lstrip(":")
            return (name, rest) if rest.isdigit() or not rest else (part, "")
    return part, ""


def parse_compression(text: str) -> "Compression":
    """`deflate4+shuffle`, `zstd3`, `bitround12+deflate4`, `none` -> a data.compression.Compression."""
    # imported here: climio.data's package imports this module (a cycle at import time otherwise)
    from climio.dataset.compression import CODECS, NONE, QUANTIZE_MODES, Compression
    text = text.strip().lower()
    if text in ("none", "", "0"):
        return NONE
    codec, level, shuffle, quantize, nsd = "none", 0, False, "", 0
    for part in text.split("+"):
        name, num = _split_part(part.strip())
        if name == "shuffle" and not num:
            shuffle = True
        elif name in CODECS and num and codec == "none":
            codec, lo, hi = CODECS[name]
            level = int(num)
            if not lo <= level <= hi:
                raise InputError(f"compression '{text}': {name} level must be {lo}..{hi}")
        elif name in QUANTIZE_MODES and num and not quantize:
            quantize, nsd = QUANTIZE_MODES[name], int(num)
            if nsd < 1:
                raise InputError(f"compression '{text}': {name} needs at least 1 significant digit")
        else:
            raise InputError(f"unknown compression '{text}': use none or parts like deflate4, zstd3, bzip2, "
                             "blosc_lz4, shuffle, bitgroom3, granularbr3, bitround12 joined by +")
    return Compression(codec, level, shuffle, quantize, nsd)


def parse_compression_list(text: str) -> list:
    items = [parse_compression(t) for t in str(text).split(",") if t.strip()]
    if not items:
        raise InputError(f"no compression setting in '{text}'")
    return list(dict.fromkeys(items))


# --- chunk and read shapes ---------------------------------------------------------------------------

_CHUNK_TEXT = re.compile(r"^\[?\s*(\d+(?:\s*,\s*\d+)*)\s*\]?$")


def parse_chunk_text(text, rank=4):
    """A chunk shape as users write it for one variable: None for `contiguous`, "default" for the
    library's choice, else `rank` ints (`T,Z,Y,X` or `[T,Z,Y,X]` for the 4-D files). The range
    of each entry is checked against the variable by validate_chunks."""
    s = str(text).strip()
    if s.lower() == "contiguous":
        return None
    if s.lower() == "default":
        return "default"
    m = _CHUNK_TEXT.match(s)
    vals = [int(x) for x in m.group(1).split(",")] if m else []
    if len(vals) != rank:
        names = ",".join(d.upper() for d in DIMS) if rank == 4 else f"{rank} integers"
        raise InputError(f"malformed chunk shape '{text}': use contiguous, default, or {names} e.g. "
                         + ("1,1,180,360" if rank == 4 else ",".join(["1"] * rank)))
    return vals


# --- one command's values ------------------------------------------------------------------------------

def parse_lat_band(text):
    """`climio stsa --lat-band`: '-15,15' -> (-15.0, 15.0); None, '', 'all', 'none' -> None."""
    if text is None or text == "" or str(text).lower() in ("all", "none"):
        return None
    if isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        parts = str(text).strip("[]() ").split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except (TypeError, ValueError):
        raise InputError(f"malformed --lat-band '{text}': use SOUTH,NORTH in degrees, e.g. -15,15") from None
    if not (-90.0 <= lo < hi <= 90.0):
        raise InputError(f"--lat-band {lo:g},{hi:g} must satisfy -90 <= SOUTH < NORTH <= 90")
    return lo, hi


def parse_layouts(text, labels) -> list:
    """`climio bench stsa --layouts`: `contiguous,xt+deflate4` -> (item, label, compression label)
    triples; each label one of `labels` (the study's), optionally +COMPRESSION."""
    from climio.dataset.compression import NONE
    out = []
    for item in [s.strip() for s in str(text).split(",") if s.strip()]:
        label, _, comp = item.partition("+")
        if label not in labels:
            raise InputError(f"unknown layout '{item}': use {', '.join(labels)}, optionally +COMPRESSION")
        c = parse_compression(comp) if comp else NONE
        if label == "contiguous" and c != NONE:
            raise InputError(f"layout '{item}': a contiguous variable cannot be compressed")
        out.append((item, label, c.label if c != NONE else "none"))
    if not out:
        raise InputError(f"no layout in '{text}'")
    return out


TRACE_MODES = ("full", "counters")


def parse_mode(mode) -> tuple:
    """`climio trace --mode`: 'full', 'counters' or 'counters:N' -> (mode, sample N or 0)."""
    text = (mode or "full").strip().lower()
    name, _, n = text.partition(":")
    if name not in TRACE_MODES or (n and (name != "counters" or not n.isdigit() or int(n) < 1)):
        raise InputError(f"--mode must be full, counters or counters:N (every Nth call also kept as an event), "
                         f"got {mode!r}")
    return name, int(n) if n else 0


def parse_cache_spec(text):
    """The measuring worker's --chunk-cache: None for `default` (the library's), else
    (bytes, nelems, preemption)."""
    if text == "default":
        return None
    try:
        size, nelems, preemption = text.split(",")
        spec = int(size), int(nelems), float(preemption)
    except ValueError:
        raise InputError(f"--chunk-cache {text!r}: use default or BYTES,NELEMS,PREEMPTION") from None
    if spec[0] < 0 or spec[1] < 0 or not 0 <= spec[2] <= 1:
        raise InputError(f"--chunk-cache {text!r}: sizes must be >= 0 and the preemption in 0..1")
    return spec


# Open MPI's MPI-IO components --mpi-io chooses between (one list for every command that takes it).
MPI_IO = ("default", "romio", "ompio")


def check_mpi_io(value: str) -> str:
    """The --mpi-io value, or one InputError line naming the choices."""
    if value not in MPI_IO:
        raise InputError(f"unknown --mpi-io '{value}': use default, romio or ompio")
    return value


# --- renamed flags and values -----------------------------------------------------------------
# The one mechanism for an old spelling kept one release: a hidden flag (or an old value) still
# works, says so in one line on stderr, and giving the old and the new one together is an error.
# Every command uses it: the studies' flags through bench.base.option(deprecated=...), the other
# commands' hidden typer options through renamed(), old values of a choice through parse_choice's
# `renamed` mapping.

def renamed_note(old: str, new: str) -> None:
    """The one-line note for an old spelling `old` of `new` (a flag or a value)."""
    import sys
    sys.stderr.write(f"climio: note: {old} is deprecated and will be removed; use {new}\n")
    sys.stderr.flush()


def _given(value) -> bool:
    return value is not None and value != [] and value != () and value is not False


def renamed(old: str, new: str, old_value, new_value, new_given=None):
    """The value of an option renamed from flag `old` to `new`: `new_value` when the old spelling was
    not given, else `old_value` with the note. Both given (`new_given`, default: `new_value` set) is
    one InputError line."""
    if not _given(old_value):
        return new_value
    if _given(new_value) if new_given is None else new_given:
        raise InputError(f"{old} is the old name of {new}: give one")
    renamed_note(old, new)
    return old_value


def renamed_values(items, renames: dict, what: str) -> list:
    """`items` with old spellings of a value (`renames`: old -> new) replaced by the new, one note per
    old spelling used ("netcdf-c" -> "c-netcdf": the note names the {what})."""
    out = []
    for s in items:
        if s in renames:
            renamed_note(f"{what} {s}", f"{renames[s]}")
            s = renames[s]
        out.append(s)
    return out
