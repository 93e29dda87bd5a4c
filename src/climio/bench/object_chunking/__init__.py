"""The chunking study of the thesis's chapter 4 on object storage (issue 25, study b).

A [t,z,y,x] field written as Zarr v3 with the thesis's chunk shapes (A-G, the library default),
each with and without shards that hold the whole time axis, per codec, and the same field as
netCDF-4 read through a kerchunk reference; read as xy, xt and xyt hyperslabs and the STSA job's
x-t slabs (a random sample in order) through zarr-python + obstore (Zarr) and zarr-python on the reference (netCDF-4), at each
injected latency, cold (the server's volume files evicted and checked before every repetition).

    run.py      data (written locally, uploaded), the rounds
    summary.py  rates per cell and the findings' numbers (pure)
    section.py  tables and findings with verdicts
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError

STUDY = "object-chunking"
# zarr-fsspec reads the unsharded stores through s3fs, the client the references use too: the
# reference's own cost is its rate over zarr-fsspec's, the client's is zarr-fsspec's over zarr-obstore's
OBJECT_CHUNKING_STACKS = ("zarr-obstore", "zarr-fsspec", "zarr-kerchunk")
READS = ("xy", "xt", "xyt", "stsa")     # stsa: the STSA job's x-t slabs, latitude outer (model.workflow.stsa_reads)
PRESETS = {
    "full": {"shape": "96,4,180,360", "chunks": "B,C,E,F,G,default", "shards": "none,t",
             "compression": "none,deflate4+shuffle", "reads": "xy,xt,xyt", "latency": "0,20,50",
             "stacks": ",".join(OBJECT_CHUNKING_STACKS), "sample": 8, "reps": 3},
    "quick": {"shape": "24,2,45,90", "chunks": "E,F,default", "shards": "none,t", "compression": "none",
              "reads": "xy,xt", "latency": "0,20", "stacks": ",".join(OBJECT_CHUNKING_STACKS), "sample": 4, "reps": 1},
}
PRESETS["survey"] = PRESETS["quick"]


@dataclass
class Grid:
    shape: str = field(default="", metadata=option("--shape", "The field's shape T,Z,Y,X (float32).", "SHAPE"))
    chunks: str = field(default="", metadata=option("--chunks", "Chunk shapes: A-G (A, contiguous, is skipped: Zarr has none), default, [t,z,y,x].", "LIST"))
    shards: str = field(default="", metadata=option("--shards", "none and/or t (a shard holds the whole time axis of its chunks).", "LIST"))
    compression: str = field(default="", metadata=option("--compression", "Codecs, e.g. none,deflate4+shuffle,zstd3 (netCDF-4 references: none and deflate).", "LIST"))
    reads: str = field(default="", metadata=option("--reads", "Read shapes: xy, xt, xyt, stsa (the STSA job's x-t slab per latitude and level, latitude outer).", "LIST"))
    latency: str = field(default="", metadata=option("--latency", "Round-trip latency added by the proxy, ms.", "LIST"))
    stacks: str = field(default="", metadata=option("--stacks", f"{', '.join(OBJECT_CHUNKING_STACKS)} (the last reads netCDF-4 through references).", "LIST"))
    sample: int = field(default=0, metadata=option("--sample", "Hyperslabs read per cell (random, in order).", "N"))
    reps: int = field(default=0, metadata=option("--reps", "Cold repetitions.", "N"))
    preset: str = "full"
    shape_list: list = None
    layouts: list = None          # [(label, chunks)]
    shard_list: list = None
    compression_list: list = None
    read_list: list = None
    latency_list: list = None
    stack_list: list = None


def _items(text) -> list:
    return [s.strip() for s in str(text).split(",") if s.strip()]


def build_grid(preset="full", **values) -> Grid:
    from climio.dataset.options import parse_compression, parse_shape
    from ..chunking.catalogue import parse_chunk_spec
    values = base.checked_values(STUDY, Grid, PRESETS, preset, values)
    v = {**PRESETS[preset], **{k: x for k, x in values.items() if x not in (None, "", 0)}}
    shape = parse_shape(str(v["shape"]))
    if len(shape) != 4:
        raise InputError(f"--shape {v['shape']}: give T,Z,Y,X")
    layouts = [(label, c) for label, c in parse_chunk_spec(str(v["chunks"]), shape, 4) if c is not None]
    if not layouts:
        raise InputError("--chunks: Zarr stores are chunked; give at least one chunked shape (not only A)")
    shards = _items(v["shards"])
    comps = [parse_compression(c) for c in _items(v["compression"])]
    reads, stacks = _items(v["reads"]), _items(v["stacks"])
    for what, got, known in (("--shards", shards, ("none", "t")), ("--reads", reads, READS), ("--stacks", stacks, OBJECT_CHUNKING_STACKS)):
        bad = [x for x in got if x not in known]
        if bad or not got:
            raise InputError(f"{what}: unknown '{(bad or [''])[0]}', use {', '.join(known)}")
    try:
        lat = sorted({float(x) for x in _items(v["latency"])})
    except ValueError:
        raise InputError(f"--latency '{v['latency']}': give milliseconds separated by commas") from None
    sample, reps = int(v["sample"]), int(v["reps"])
    if sample < 1 or reps < 1 or not lat or min(lat) < 0:
        raise InputError("--sample and --reps must be at least 1 and --latency at least 0")
    return Grid(shape=str(v["shape"]), chunks=str(v["chunks"]), shards=",".join(shards),
                compression=",".join(c.label for c in comps), reads=",".join(reads), latency=str(v["latency"]),
                stacks=",".join(stacks), sample=sample, reps=reps, preset=preset, shape_list=list(shape),
                layouts=layouts, shard_list=shards, compression_list=comps, read_list=reads, latency_list=lat,
                stack_list=stacks)


class ObjectChunking(base.Study):
    name = STUDY
    title = "Object storage: chunk shape x shards x codec x read shape x latency, Zarr and netCDF-4 references."
    description = ("The chapter 4 chunking study on SeaweedFS behind Toxiproxy: Zarr v3 stores with the thesis's "
                   "chunk shapes, with and without shards over time, and the same field as netCDF-4 read through a "
                   "kerchunk reference, read cold as xy, xt and xyt hyperslabs and STSA x-t slabs at each injected latency.")
    Grid = Grid
    presets = PRESETS
    in_survey = False
    preset_help = {"quick": "About a minute: a small field, 3 chunk shapes, xy and xt, 0 and 20 ms."}

    def run(self, ctx, grid) -> int:
        return self._part("run").run_object_chunking(ctx, grid)   # by name, as base.Study.run: no import cycle


base.register(ObjectChunking())
