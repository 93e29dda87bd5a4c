"""The chunking study (thesis ch. 4): read rate of xy / xt / xyt reads of a [t, z, y, x] variable
for chunk shapes x compression x chunk cache.

    catalogue.py   the thesis's chunk shapes A-G (+ default, balanced) and the --chunks list
    run.py         the layout files and the measuring loop (records into the run directory)
    summary.py     the numbers (pure): cells, Tables 4.1/4.2, cache ratios, reproduction checks
    section.py     the report's section and key findings (climio.present.sections objects)
    figures.py     heat maps and wall/CPU bars (PNG)

`climio bench chunking` is built from Grid's field metadata (climio.bench.base.option).
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError
from .catalogue import LayoutCase
from .summary import CACHE_SETTINGS, CHUNKING_STACKS, STUDY  # defined once, beside the summary


DEFAULT_COMPRESSION = ("none,deflate1,deflate4,deflate9,deflate4+shuffle,granularbr3+deflate4+shuffle,"
                       "bitround12+deflate4+shuffle,zstd3")
PRESETS = {
    # Every chunk shape of the thesis plus the library default and Rew's balanced shape; the
    # compression settings on the default and xy chunks, as the thesis's section 4.1.2.
    # A random sample of slices per cell (read in file order) keeps neighbouring slices from being
    # served by the readahead of the previous one, as they were not on the thesis's 255 GiB file.
    "full": {"shape": "64,8,128,256", "chunks": "A,B,C,D,E,F,G,default,balanced", "reads": "xy,xt,xyt",
             "compression": DEFAULT_COMPRESSION, "compress_chunks": "default,E", "chunk_cache": "default,fit",
             "reps": 3, "budget_s": 20.0, "sample": 48},
    "survey": {"shape": "24,4,64,128", "chunks": "A,B,C,E,F,G,default", "reads": "xy,xt,xyt",
               "compression": "none,deflate4+shuffle,bitround12+deflate4+shuffle", "compress_chunks": "default,E",
               "chunk_cache": "default,fit", "reps": 2, "budget_s": 5.0, "sample": 24},
    "quick": {"shape": "16,4,32,64", "chunks": "A,E,F,default", "reads": "xy,xt",
              "compression": "none,deflate4+shuffle", "compress_chunks": "default,E", "chunk_cache": "default,fit",
              "reps": 2, "budget_s": 5.0, "sample": 0},
}
# Options no preset sets.
DEFAULTS = {"layers": "netcdf4-python", "dtype": "f8", "source": ""}


@dataclass
class Grid:
    """The study's grid. The option fields hold the parsed values once `Chunking.grid` built it
    (shape and reads as lists, the chunk and compression lists as given); `layouts` is derived."""

    shape: list = field(default=None, metadata=option(
        "--shape", "Variable shape T,Z,Y,X (default 64,8,128,256; the thesis used 430,430,430,430).", "SHAPE"))
    chunks: str = field(default=None, metadata=option(
        "--chunks", "Chunk shapes: letters A-G as in the thesis (A contiguous, B hypercube 1/10, C ~16 KB tiles, "
        "D ~16.2 KB tiles, E xy, F xt, G xyt), default, balanced, or [t,z,y,x]; comma separated.", "LIST"))
    reads: list = field(default=None, metadata=option(
        "--read", "Read shapes: xy, xt, xyt, or templates such as 1,1,Y,X (separate templates with ';').", "LIST"))
    compression: str = field(default=None, metadata=option(
        "--compression", "Settings, comma separated: none, deflate1..9, +shuffle, zstdN, bitgroomN/granularbrN "
        "(digits), bitroundN (bits), e.g. bitround12+deflate4+shuffle.", "LIST"))
    compress_chunks: str = field(default=None, metadata=option(
        "--compress-chunks", "Chunk labels that get the compressed settings (default: default,E as in the thesis; "
        "'all' for every chunked shape).", "LIST"))
    layers: list = field(default=None, metadata=option(
        "--stacks", "Comma list of netcdf4-python, h5py, c-netcdf.", "LIST", deprecated=("--layers",)))
    chunk_cache: list = field(default=None, metadata=option(
        "--chunk-cache", "HDF5 chunk-cache settings, comma separated: default (the library's) and/or fit (sized to "
        "hold every chunk one read touches). The page cache is cold in every repetition.", "LIST",
        deprecated=("--caches",)))
    reps: int = field(default=3, metadata=option("--reps", "Cold repetitions per cell (default 3).", "N"))
    budget_s: float = field(default=20.0, metadata=option(
        "--budget", "Seconds per repetition: a repetition still reading then is stopped; its slices so far are "
        "a sample, and one that read almost nothing is did-not-finish (0 = none).", "SECONDS"))
    sample: int = field(default=0, metadata=option(
        "--sample", "Read a random sample of this many slices per cell, in file order (default 48; 0 = all "
        "slices).", "N"))
    dtype: str = field(default="f8", metadata=option(
        "--dtype", "Type of the generated variable: f4 or f8 (default f8; not with --source).", "f4|f8"))
    source: str = field(default="", metadata=option(
        "--source", "Use a real 4-D variable FILE:VAR instead of generated data (its values, shape and type; not "
        "with --shape/--dtype).",
        "FILE:VAR"))
    layouts: list = field(default_factory=list)     # [LayoutCase]: chunk shapes x compression settings
    seed: int = 1
    preset: str = "full"                            # recorded: a --quick grid cannot decide the checks

    def runs(self) -> int:
        n = 0
        for lay in self.layouts:
            caches = [c for c in self.chunk_cache if lay.chunks is not None or c == "default"]
            n += len(self.reads) * len(self.layers) * len(caches)
        return n


def build_grid(preset="full", **values) -> Grid:
    """Parse and check the option values (text as on the command line, or already lists) over the
    preset's defaults; one-line InputError / DataError."""
    import numpy as np

    from climio.dataset.reads import read_count as parse_read
    from climio.dataset.compression import NONE
    from climio.dataset.options import parse_compression_list
    from climio.dataset.options import parse_choice, parse_count, parse_shape
    from .catalogue import parse_chunk_spec
    from .run import open_source, split_reads

    values = base.checked_values("chunking", Grid, PRESETS, preset, values)   # caches= (--caches) is chunk_cache=
    if values.get("source"):
        clash = [flag for name, flag in (("shape", "--shape"), ("dtype", "--dtype")) if values.get(name) is not None]
        if clash:
            raise InputError(f"--source takes the shape and type of its variable: not with {' and '.join(clash)}")
    v = {**DEFAULTS, **PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    text = {k: ",".join(map(str, x)) if isinstance(x, (list, tuple)) else x for k, x in v.items()}
    reps = parse_count(v["reps"], "--reps", 1)
    budget = parse_count(v["budget_s"], "--budget", 0, float)
    sample = parse_count(v["sample"], "--sample", 0)
    source, dtype = str(v["source"] or ""), str(v["dtype"])
    if source:
        shape, dtype, _ = open_source(source)
    else:
        shape = parse_shape(text["shape"])
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:
        raise InputError(f"unknown --dtype '{dtype}': use f4 or f8") from None
    shapes = parse_chunk_spec(text["chunks"], shape, itemsize)
    comps = parse_compression_list(text["compression"])
    labels = [lab for lab, _ in shapes]
    if values.get("compress_chunks") is None:   # the preset's labels: those of this run's chunk shapes
        text["compress_chunks"] = ",".join(x for x in text["compress_chunks"].split(",") if x in labels) or "all"
    compressed_for = set(parse_choice(text["compress_chunks"], labels + ["all"], "chunk label for compression"))
    layouts = []
    for label, ch in shapes:
        for comp in comps:
            if comp == NONE or (ch is not None and ("all" in compressed_for or label in compressed_for)):
                layouts.append(LayoutCase(label, ch, comp))
    check_nothing_dropped(values, shapes, comps, compressed_for, layouts)
    reads = [(name, parse_read(name, shape)) for name in split_reads(text["reads"])]
    return Grid(shape=shape, chunks=text["chunks"], reads=reads, compression=text["compression"],
                compress_chunks=text["compress_chunks"], layers=parse_choice(text["layers"], CHUNKING_STACKS, "layer"),
                chunk_cache=parse_choice(text["chunk_cache"], CACHE_SETTINGS, "chunk-cache setting"), reps=reps, budget_s=budget,
                sample=sample, dtype=dtype, source=source, layouts=layouts, preset=preset)


def check_nothing_dropped(given, shapes, comps, compressed_for, layouts) -> None:
    """A chunk shape or compression setting the user asked for that no layout measures is an
    InputError saying what to change (a contiguous shape is measured uncompressed only, and a
    compressed setting only on the chunked shapes --compress-chunks names)."""
    from climio.dataset.compression import NONE
    contiguous = [lab for lab, ch in shapes if ch is None]
    chunked = [lab for lab, ch in shapes if ch is not None]
    if given.get("compress_chunks") is not None:
        if all(c == NONE for c in comps):
            raise InputError("--compress-chunks applies to compressed settings: --compression is none only; "
                             "add a setting such as deflate4 or drop --compress-chunks")
        bad = [lab for lab in contiguous if lab in compressed_for]
        if bad:
            raise InputError(f"--compress-chunks {bad[0]}: chunk shape {bad[0]} is contiguous and cannot be compressed; "
                             f"name chunked shapes ({', '.join(chunked) or 'none in --chunks'}) or all")
    if given.get("compression") is not None:
        for comp in comps:
            if comp != NONE and not any(lay.compression == comp for lay in layouts):
                raise InputError(f"--compression {comp.label} needs a chunked shape: every shape in --chunks is "
                                 f"contiguous ({', '.join(contiguous)}); add one such as E or default to --chunks")
    if given.get("chunks") is not None:
        for lab in [lab for lab, _ in shapes if not any(lay.label == lab for lay in layouts)]:
            if lab in contiguous:
                raise InputError(f"--chunks {lab}: chunk shape {lab} is contiguous, measured uncompressed only; "
                                 f"add none to --compression or drop {lab} from --chunks")
            raise InputError(f"--chunks {lab}: no --compression setting applies to chunk shape {lab}; add none to "
                             f"--compression or {lab} to --compress-chunks")


class Chunking(base.Study):
    name = STUDY
    title = "Read rate of xy / xt / xyt reads for chunk shapes x compression x chunk cache (thesis ch. 4)."
    Grid = Grid
    presets = PRESETS


study = base.register(Chunking())
