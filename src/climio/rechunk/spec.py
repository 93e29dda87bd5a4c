"""User chunk options -> one Target (chunk shape + compression) per variable to re-lay out.

Pure functions over `VarInfo`s (no file is opened), so every rule here is testable on made-up
variables. The options, of which at most one may define chunks:

  -c SPEC          nccopy's chunk specs: `dim/len,...` and `var:c1,c2,...` (see `_apply_specs`)
  --for AXES       chunks that make one kind of read fast: `xt`, `xy`, `t`, ... or `time,lon`
  --balanced       Rew's balanced chunks (layout.balanced_chunks), 4 MiB unless --chunk-bytes
  --chunk-bytes N  alone: --balanced with that size; with --for: that command's target size
  --contiguous     no chunks at all
  (none)           every variable keeps its chunks; only the compression changes

Variables that need chunks but get none from any rule (a contiguous or netCDF-3 source variable
that is given a filter, or that has an unlimited dimension) get balanced chunks of 4 MiB
(`FALLBACK_BYTES`): HDF5 cannot store those contiguously, and climio prefers a shape that serves
series and maps alike to the library default, which puts 1 along every unlimited dimension.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from climio.dataset.cf import AXES, axis_of
from climio.dataset.compression import CODECS, Compression
from climio.dataset.options import parse_compression
from climio.base.errors import DataError, InputError
from climio.dataset.layout import balanced_chunks
from ..rules.chunks import DIVISOR_FACTOR   # --for: a length dividing the dimension may differ this much
from climio.base.units import format_size
from climio.dataset.options import parse_size
from .model import Target, VarInfo

FOR_BYTES = 1 << 20           # --for target chunk size: HDF5's default chunk cache holds one such chunk
BALANCED_BYTES = 4 << 20      # --balanced default, as Rew's blog post and layout.balanced_chunks use
FALLBACK_BYTES = 4 << 20      # chunks for variables that must be chunked and have no other rule
NCCOPY_UNLIM_BYTES = 4 << 20  # nccopy's default chunk along an unlimited dimension nobody named
MAX_CHUNK_BYTES = 2**32 - 1   # HDF5 refuses chunks of 4 GiB or more

_CODEC_NAME = {codec: name for name, (codec, _, _) in CODECS.items()}  # zlib -> deflate, ...


# --- what this build can write -------------------------------------------------------------------

def writable_codecs() -> set[str]:
    """netCDF4-python compression names this build can write (zlib always).

    Read from netCDF4's feature flags, not by a trial write: a trial blosc write of a tiny buffer
    crashes some builds, and the flags are what netCDF4-python itself checks before writing."""
    import netCDF4
    out = {"zlib"}
    if getattr(netCDF4, "__has_zstandard_support__", False):
        out.add("zstd")
    if getattr(netCDF4, "__has_bzip2_support__", False):
        out.add("bzip2")
    if getattr(netCDF4, "__has_blosc_support__", False):
        out.update(c for c, _, _ in CODECS.values() if c.startswith("blosc_"))
    return out


def _can_quantize() -> bool:
    import netCDF4
    return bool(getattr(netCDF4, "__has_quantization_support__", False))


def _build() -> str:
    import netCDF4
    c_version = str(getattr(netCDF4, "__netcdf4libversion__", "?")).split()[0]
    return f"netCDF4-python {netCDF4.__version__} with netCDF-C {c_version}"


def _check_writable(comp: Compression, where: str) -> None:
    if comp.codec != "none" and comp.codec not in writable_codecs():
        raise InputError(f"{_CODEC_NAME.get(comp.codec, comp.codec)} cannot be written by this netCDF build "
                         f"({_build()}){where}")
    if comp.quantize and not _can_quantize():
        raise InputError(f"quantization ({comp.label}) cannot be written by this netCDF build ({_build()}){where}")


# --- small helpers -------------------------------------------------------------------------------

def _fmt(chunks) -> str:
    return "contiguous" if chunks is None else "[" + ",".join(str(c) for c in chunks) + "]"


def _ext(info: VarInfo, i: int) -> int:
    """The full extent of dimension i as a chunk length: a chunk is at least 1 long, even along an
    unlimited dimension that has no records yet."""
    return max(int(info.shape[i]), 1)


def _shape1(info: VarInfo) -> tuple:
    return tuple(_ext(info, i) for i in range(len(info.dims)))


def _is_float(info: VarInfo) -> bool:
    try:
        return np.dtype(info.dtype).kind == "f"
    except TypeError:
        return False


def _names(infos, limit=12) -> str:
    names = [i.path.lstrip("/") for i in infos]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _match(name: str, infos) -> list:
    """Variables a user name means: an absolute path exactly; a relative name (`temp`, `grp/temp`)
    every variable whose path ends with it, as nccopy -v treats relative names."""
    name = name.strip()
    if name.startswith("/"):
        return [i for i in infos if i.path == name]
    return [i for i in infos if i.path.endswith("/" + name)]


def _group(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _int_len(text: str, what: str) -> int:
    if re.fullmatch(r"\s*-\s*\d+\s*", text):
        raise InputError(f"chunk length {text.strip()} {what} is negative: chunk lengths are at least 1")
    if not re.fullmatch(r"\s*\d+\s*", text):
        raise InputError(f"chunk length '{text}' {what} is not a whole number")
    n = int(text)
    if n < 1:
        raise InputError(f"chunk length {n} {what} must be at least 1")
    return n


def _check_len(info: VarInfo, i: int, n: int) -> None:
    """A chunk may be longer than an unlimited dimension (it grows; nccopy allows any positive
    length there), never longer than a fixed one (HDF5 refuses it)."""
    if not info.unlimited[i] and n > info.shape[i]:
        raise InputError(f"chunk {n} for dimension {info.dims[i]} (length {info.shape[i]}) of {info.path} "
                         "is larger than the dimension")


# --- CF axes (climio.dataset.cf) ----------------------------------------------------------------

def _axis_of(dim: str, coord) -> tuple:
    return axis_of(dim, coord.attrs if coord is not None else None)


def _coord_var(info: VarInfo, dim: str, infos):
    """The coordinate variable of `dim` as `info` sees it: a 1-D variable named like the dimension
    in the variable's group or the nearest enclosing one (netCDF-4 dimension scoping)."""
    group = _group(info.path)
    while True:
        path = ("" if group == "/" else group) + "/" + dim
        for other in infos:
            if other.path == path and tuple(other.dims) == (dim,):
                return other
        if group == "/":
            return None
        group = _group(group)


def resolve_axes(info: VarInfo, infos: list[VarInfo]) -> dict[str, str]:
    """{'x': dimname, 'y': ..., 'z': ..., 't': ...} for the dimensions of `info` whose axis the CF
    metadata of their coordinate variables (found in `infos`) tells: the `axis` attribute, then
    standard_name, then units (degrees_east/north, `<unit> since <date>`, pressure units or a
    `positive` attribute), then common names (lon, lat, lev, time, ...). A letter claimed by two
    dimensions goes to the one with the stronger evidence, then to the first."""
    best = {}
    for dim in info.dims:
        letter, rank = _axis_of(dim, _coord_var(info, dim, infos))
        if letter and (letter not in best or rank < best[letter][1]):
            best[letter] = (dim, rank)
    return {letter: best[letter][0] for letter in AXES if letter in best}


# --- chunk rules ---------------------------------------------------------------------------------

def divisor_near(n: int, limit: int, factor: int = DIVISOR_FACTOR) -> int:
    """A chunk length for a dimension of length n that should not exceed `limit`: the largest
    divisor of n that is <= limit, if it is at least limit / factor; otherwise the even split
    ceil(n / k) with k = ceil(n / limit) chunks, whose padding (k * length - n < k elements) is the
    least any k chunks can have.

    Why: HDF5 allocates (and, uncompressed, stores) every chunk whole, so a length that does not
    divide the dimension pads the last chunk along it: 97 along 100 stores 194 (94 % more), 50
    stores 100 and 34 (the even split of 3) stores 102."""
    n, limit = int(n), int(limit)
    if limit >= n:
        return n
    limit = max(limit, 1)
    floor = -(-limit // factor)
    for q in range(limit, floor - 1, -1):
        if n % q == 0:
            return q
    k = -(-n // limit)
    return -(-n // k)


def for_chunks(info: VarInfo, axes_idx, target_bytes: int) -> tuple:
    """Chunks for fast reads along the dimensions `axes_idx`: their full extent, 1 elsewhere
    (thesis ch. 4: an xt read of [t,z,y,x] wants [T,1,1,X], an xy read [1,1,Y,X]); then, while the
    chunk is smaller than `target_bytes`, the other dimensions grow, innermost first, each as far
    as it can without the chunk exceeding the target, to a length that divides the dimension
    when one is within a factor DIVISOR_FACTOR of that (`divisor_near`).

    Why grow: a bare [T,1,1,X] chunk of a short series can be a few KiB. HDF5 indexes every chunk
    (a B-tree entry each), so tiny chunks make a huge index, and every read, write and filter call
    works per chunk: many tiny I/Os and per-chunk overheads. Growing the other axes up to the target
    keeps the wanted read one chunk deep along its axes while each chunk stays big enough to be
    read efficiently and small enough for a default chunk cache (1 MiB in HDF5) to hold it. The
    innermost axis grows first because its values are adjacent on disk within the chunk.
    Why divisors: a length that does not divide its dimension pads the last chunk (HDF5 stores
    chunks whole); on real files the first --for outputs were 17-22 % larger than their inputs."""
    chunks = [_ext(info, i) if i in axes_idx else 1 for i in range(len(info.dims))]
    for i in reversed(range(len(chunks))):
        if i in axes_idx:
            continue
        rest = math.prod(chunks) * info.itemsize  # chunks[i] is 1 here
        chunks[i] = divisor_near(_ext(info, i), max(1, min(_ext(info, i), target_bytes // rest)))
    return tuple(chunks)


def _fallback(info: VarInfo) -> tuple:
    return tuple(balanced_chunks(_shape1(info), info.itemsize, FALLBACK_BYTES))


def _parse_specs(chunk_specs) -> tuple:
    """-c texts -> (dim specs {dimname: len or None}, var specs [(name, lens or None, text)], omit).

    Each text may join several specs with commas; a `var:` spec takes the bare integers after it,
    so `time/10,temp:1,1,90,180,lat/30` is two dim specs and one var spec. `dim/` (no length) is
    the whole dimension, `var:` or `var:contiguous` an unchunked variable, a lone `/` unchunks
    every variable no var spec names (all as nccopy)."""
    dims, var_specs, omit = {}, [], False
    for text in chunk_specs:
        text = str(text).strip()
        if text in ("/", "//"):
            omit = True
            continue
        current = None
        for tok in text.split(","):
            tok = tok.strip()
            if not tok:
                raise InputError(f"empty item in chunk spec '{text}': use dim/len,... or var:c1,c2,...")
            if ":" in tok:
                name, _, first = tok.partition(":")
                first = first.strip()
                if first.lower() in ("", "contiguous"):
                    var_specs.append((name.strip(), None, text))
                    current = None
                elif first.lower() == "compact":
                    raise InputError(f"chunk spec '{tok}': compact storage is not supported; use "
                                     f"{name}:contiguous or chunk lengths")
                else:
                    current = [_int_len(first, f"for variable {name} in '{text}'")]
                    var_specs.append((name.strip(), current, text))
            elif "/" in tok:
                current = None
                name, _, length = tok.rpartition("/")
                name = name.strip()
                if not name:
                    raise InputError(f"chunk spec '{tok}' in '{text}' names no dimension: use dim/len")
                n = _int_len(length, f"for dimension {name} in '{text}'") if length.strip() else None
                if name in dims and dims[name] != n:
                    raise InputError(f"dimension {name} given two chunk lengths in chunk specs "
                                     f"({dims[name] or 'full'} and {n or 'full'})")
                dims[name] = n
            elif current is not None:
                current.append(_int_len(tok, f"for variable {var_specs[-1][0]} in '{text}'"))
            else:
                raise InputError(f"chunk spec item '{tok}' in '{text}' is neither dim/len nor var:c1,c2,...")
    if omit and dims:
        raise InputError("chunk spec '/' (no chunks anywhere) cannot be combined with dim/len specs")
    return dims, var_specs, omit


def _dim_applies(spec_name: str, info: VarInfo, dim: str) -> bool:
    """A bare dimension name applies wherever a dimension of that name is used; an absolute one
    (`/grp/lat`) to variables of that group and its subgroups, which see it by scoping."""
    if not spec_name.startswith("/"):
        return spec_name == dim
    group, _, name = spec_name.rpartition("/")
    return name == dim and (group == "" or info.path.startswith(group + "/"))


def _nccopy_dims(info: VarInfo, dims: dict):
    """nccopy's per-dimension rules, as documented in nccopy(1), section "Chunking Rules"
    (netCDF-C 4.9, ncdump/nccopy.1; Unidata/netcdf-c issue #725):

      * rules 1, 4: a variable none of whose dimensions is named keeps its layout (None here);
      * rule 2: a named dimension gets the length given, or the whole dimension for `dim/`;
      * rule 3: a dimension not named keeps the source chunk length if the source is chunked;
      * rule 6: otherwise (contiguous or netCDF-3 source) the full dimension length, "except
        unlimited dimensions, where the default is 4 megabytes": read here as a chunk of at most
        4 MiB, i.e. as many records as fit beside the other extents (at least 1, at most the
        current length).

    The "4 megabytes" is ambiguous and implementations differ: chunkspec.c's comment and
    copy_chunking cap the length at 4 MiB / item size values (which can make chunks of GiBs), and
    the nccopy 4.9.0 binary actually asks the library for its default (1 record). The byte
    reading is the one that keeps the documented promise. nccopy also leaves non-record variables
    under 8 KiB (-M) contiguous; climio does not: a variable whose dimension the user named gets
    the chunks asked for."""
    named = {i: n for i, d in enumerate(info.dims) for s, n in dims.items() if _dim_applies(s, info, d)}
    if not named:
        return None
    chunks, grow = [], []
    for i in range(len(info.dims)):
        if i in named:
            n = named[i] if named[i] is not None else _ext(info, i)
            _check_len(info, i, n)
        elif info.chunks is not None:
            n = int(info.chunks[i])
        elif info.unlimited[i]:
            n = 1
            grow.append(i)
        else:
            n = _ext(info, i)
        chunks.append(n)
    for i in reversed(grow):  # innermost first, like every other growth here
        rest = math.prod(chunks) * info.itemsize  # chunks[i] is 1 here
        chunks[i] = max(1, min(_ext(info, i), NCCOPY_UNLIM_BYTES // rest))
    return tuple(chunks)


def _var_spec_chunks(info: VarInfo, lens, text: str) -> tuple:
    if len(lens) != len(info.dims):
        raise InputError(f"chunk spec '{text}' gives {len(lens)} lengths for {info.path}, which has "
                         f"{len(info.dims)} dimensions ({', '.join(info.dims)})")
    for i, n in enumerate(lens):
        _check_len(info, i, n)
    return tuple(lens)


def _parse_for(for_axes: str, known_dims: set) -> tuple:
    """('letters', 'xt') for axis letters, ('dims', [names]) for comma-separated dimension names.
    A text of distinct letters x, y, z, t without commas is letters (`t`, `xt`, `xyz`)."""
    text = str(for_axes).strip()
    low = text.lower()
    if low and "," not in low and set(low) <= set(AXES) and len(set(low)) == len(low):
        return "letters", low
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise InputError(f"--for '{for_axes}' names no axis: use t, xt, xy, xyz or dimension names like time,lon")
    unknown = [n for n in names if n not in known_dims]
    if unknown:
        raise InputError(f"--for: unknown dimension '{unknown[0]}': use axis letters (t, xt, xy, xyz) or "
                         f"dimensions of the file ({', '.join(sorted(known_dims)) or 'none'})")
    return "dims", names


# --- the whole resolution ------------------------------------------------------------------------

def _is_coordinate(info) -> bool:
    return len(info.dims) == 1 and info.dims[0] == info.name


def _select(infos, all_infos, variables, source) -> tuple:
    """(selected infos in file order, paths named explicitly)."""
    candidates = [i for i in infos if i.numeric and len(i.dims) > 0]
    if not variables:
        # Coordinate variables (1-D, named like their dimension) are small and read whole: a dimension
        # spec such as lat/1 is meant for the data, so they keep their layout unless named (unlike nccopy).
        return [i for i in candidates if not _is_coordinate(i)], set()
    names = [n.strip() for v in variables for n in str(v).split(",") if n.strip()]
    explicit = set()
    for name in names:
        found = _match(name, all_infos)
        if not found:
            raise DataError(f"unknown variable '{name}' in {source}: variables are {_names(all_infos)}")
        for info in found:
            if not (info.numeric and len(info.dims) > 0 and info in infos):
                kind = ("a scalar" if not info.dims else "not re-laid out here") if info.numeric \
                    else f"of type {info.dtype}"
                raise InputError(f"variable {info.path} is {kind}: rechunk re-lays out numeric variables "
                                 "with dimensions (the others are copied as they are)")
            explicit.add(info.path)
    return [i for i in candidates if i.path in explicit], explicit


def _modes(chunk_specs, for_axes, balanced, chunk_bytes, contiguous) -> list:
    modes = [name for name, on in (("-c", bool(chunk_specs)), ("--for", for_axes is not None),
                                   ("--balanced", balanced), ("--contiguous", contiguous)) if on]
    if chunk_bytes is not None and for_axes is None and not balanced:
        modes.append("--chunk-bytes")
    if len(modes) > 1:
        raise InputError(f"{modes[0]} and {modes[1]} both set chunk shapes: use one of -c, --for, "
                         "--balanced/--chunk-bytes, --contiguous")
    return modes


def resolve_targets(infos: list[VarInfo], chunk_specs: list[str] = (), for_axes: str | None = None,
                    balanced: bool = False, chunk_bytes: int | str | None = None, contiguous: bool = False,
                    compression: str | None = None, variables: list[str] | None = None,
                    all_infos: list[VarInfo] | None = None, source: str = "the input file",
                    check=None) -> dict[str, Target]:
    """{variable path: Target} for the variables to re-lay out, in file order.

    `infos`: the source variables that may be re-laid out; `all_infos`: every variable of the file
    (default `infos`), for coordinate variables, known dimensions and error messages; `source`:
    the input's name in messages. Selection: `variables` (names or paths), else every numeric
    variable with a dimension; the rest is copied unchanged by the executor and not returned.

    Compression: None keeps each variable's own; a text (`deflate4+shuffle`) applies to all.
    Quantization needs floats: it is dropped for integer variables picked by default and an
    error for integer variables named in `variables` (the user asked for something impossible).
    `check(compression, where)` raises InputError for a compression the output cannot write
    (default: what this netCDF build writes).
    """
    # long: one pass checking every option against every variable, in the order its messages name them
    check = check or _check_writable
    all_infos = list(all_infos) if all_infos is not None else list(infos)
    infos = list(infos)
    modes = _modes(chunk_specs, for_axes, balanced, chunk_bytes, contiguous)
    mode = modes[0] if modes else None
    size = None
    if chunk_bytes is not None:
        size = parse_size(chunk_bytes)
        if size < 1:
            raise InputError(f"--chunk-bytes must be positive, got {chunk_bytes!r}")
    override = None
    if compression is not None:
        override = parse_compression(str(compression))
        check(override, "")
    selected, explicit = _select(infos, all_infos, variables, source)
    known_dims = {d for i in all_infos for d in i.dims}

    chunks_of, asked_contiguous = {}, set()
    if mode == "-c":
        dims, var_specs, omit = _parse_specs(chunk_specs)
        for name in dims:
            short = name.rpartition("/")[2] if name.startswith("/") else name
            if short not in known_dims or not any(_dim_applies(name, i, d) for i in all_infos for d in i.dims):
                raise InputError(f"unknown dimension '{name}' in chunk spec: dimensions of {source} are "
                                 f"{', '.join(sorted(known_dims)) or 'none'}")
        by_var = {}
        for name, lens, text in var_specs:
            found = _match(name, all_infos)
            if not found:
                raise DataError(f"unknown variable '{name}' in chunk spec '{text}': variables of {source} "
                                 f"are {_names(all_infos)}")
            for info in found:
                if info not in selected:
                    raise InputError(f"chunk spec '{text}' names {info.path}, which is not re-laid out "
                                     "(not selected, or not a numeric variable with dimensions)")
                if info.path not in by_var:  # nccopy: later specs for the same variable are ignored
                    by_var[info.path] = _var_spec_chunks(info, lens, text) if lens is not None else None
        for info in selected:
            if info.path in by_var:
                chunks_of[info.path] = by_var[info.path]
                if by_var[info.path] is None:
                    asked_contiguous.add(info.path)
            elif omit:
                chunks_of[info.path] = None
                asked_contiguous.add(info.path)
            else:
                got = _nccopy_dims(info, dims)
                chunks_of[info.path] = info.chunks if got is None else got
    elif mode == "--for":
        kind, wanted = _parse_for(for_axes, known_dims)
        target = size if size is not None else FOR_BYTES
        for info in selected:
            if kind == "letters":
                axes = resolve_axes(info, all_infos)
                idx = {info.dims.index(axes[a]) for a in wanted if a in axes}
            else:
                idx = {i for i, d in enumerate(info.dims) if d in wanted}
            if idx:
                chunks_of[info.path] = for_chunks(info, idx, target)
            elif info.path in explicit:
                found = resolve_axes(info, all_infos) if kind == "letters" else {}
                has = ", ".join(f"{d}={a}" for a, d in found.items()) or "no recognised axes"
                raise InputError(f"{info.path} has none of the axes --for {for_axes} asks for "
                                 f"(dimensions {', '.join(info.dims)}: {has})")
            else:
                chunks_of[info.path] = info.chunks
    elif mode in ("--balanced", "--chunk-bytes"):
        target = size if size is not None else BALANCED_BYTES
        for info in selected:
            chunks_of[info.path] = tuple(balanced_chunks(_shape1(info), info.itemsize, target))
    elif mode == "--contiguous":
        for info in selected:
            chunks_of[info.path] = None
            asked_contiguous.add(info.path)
    else:
        chunks_of = {info.path: info.chunks for info in selected}

    out = {}
    for info in selected:
        comp = override if override is not None else info.compression
        if override is None:
            check(comp, f" ({info.path} uses it in {source}; choose another --compression)")
        if comp.quantize and not _is_float(info):
            if info.path in explicit:
                raise InputError(f"{comp.label} quantizes floating-point data; {info.path} is {info.dtype}")
            comp = dataclasses.replace(comp, quantize="", nsd=0)
        chunks = chunks_of[info.path]
        needs_chunks = comp.filtered or any(info.unlimited)
        if chunks is None and needs_chunks:
            if info.path in asked_contiguous:
                why = (f"its compression {comp.label} is an HDF5 filter" if comp.filtered
                       else "it has an unlimited dimension")
                hint = " (use --compression none)" if comp.filtered else ""
                raise InputError(f"{info.path} cannot be contiguous: {why}, and HDF5 needs chunks for that{hint}")
            chunks = _fallback(info)
        if chunks is not None:
            chunks = tuple(int(c) for c in chunks)
            nbytes = math.prod(chunks) * info.itemsize
            if nbytes > MAX_CHUNK_BYTES:
                raise InputError(f"chunk {_fmt(chunks)} of {info.path} is {format_size(nbytes)}: HDF5 chunks "
                                 "must be smaller than 4 GiB")
        out[info.path] = Target(chunks, comp)
    return out
