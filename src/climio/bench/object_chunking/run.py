"""Measuring the object-chunking study: layouts written once (Zarr stores and netCDF-4 files with
their kerchunk references, uploaded to the study's server), then per latency, per repetition,
per cell: open (untimed), evict the server's volume files and check them, read the sample of
hyperslabs, close. Cells alternate their stack order from round to round."""

import itertools
import math
import warnings
from pathlib import Path

import numpy as np

from climio.dataset.access import slice_starts
from climio.dataset.stack_names import OBJECT_READ_STACKS
from climio.dataset.reads import read_count
from ...data import values_4d, write_4d
from ...data.zarr_writer import write_zarr_4d
from climio.dataset.layout import chunks_touched, format_chunks
from ...measure.series import Timer, storage_checked
from ...model.workflow import stsa_reads
from climio.runs.records import make_record
from climio.measure.stacks_s3 import OBJECT_STACKS, REFERENCE_SUFFIX, make_reference
from ...stores.objects import put_bytes, upload
from ...stores.server import S3Server
from ...stores.timing import request_stats, timed_store
from . import STUDY

BUCKET, PREFIX = "climio", "object-chunking"
DTYPE = "f4"


def shard_of(shape, chunks, shards):
    """The shard shape for `shards` ("t": the whole time axis of the chunk's column), or None."""
    if shards == "none" or chunks[0] >= shape[0]:
        return None
    return [shape[0], *chunks[1:]]


def cases(grid) -> list:
    """(stack, label, chunks, shards, compression, name) of every layout read."""
    out = []
    for label, chunks in grid.layouts:
        for comp in grid.compression_list:
            for sh in grid.shard_list:
                shard = shard_of(grid.shape_list, chunks, sh)
                if sh == "t" and shard is None:
                    continue   # the chunk already holds the whole time axis
                for stack in OBJECT_READ_STACKS:
                    if stack in grid.stack_list and (stack == "zarr-obstore" or shard is None):
                        out.append((stack, label, chunks, shard, comp, f"{label}-{comp.label}-{sh}.zarr"))
            if "zarr-kerchunk" in grid.stack_list and comp.codec in ("none", "zlib") and not comp.quantize:
                out.append(("zarr-kerchunk", label, chunks, None, comp, f"{label}-{comp.label}.nc"))
    return out


def write_layouts(s3, grid, data_dir) -> None:
    local = Path(data_dir) / "object-chunking"
    local.mkdir(parents=True, exist_ok=True)
    url = f"s3://{BUCKET}/{PREFIX}"
    done = set()
    for stack, label, chunks, shard, comp, name in cases(grid):
        path = local / name
        if name in done:
            continue   # a store two stacks read
        done.add(name)
        if name.endswith(".zarr"):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Numcodecs codecs are not in the Zarr version 3")
                write_zarr_4d(path, grid.shape_list, chunks=chunks, shards=shard, dtype=DTYPE, compression=comp)
        else:
            write_4d(path, grid.shape_list, chunks=chunks, dtype=DTYPE, compression=comp)
        upload(s3.direct_endpoint, path, url)
        if name.endswith(".nc"):
            import json
            refs = make_reference(s3.direct_endpoint, f"{url}/{name}")
            put_bytes(s3.direct_endpoint, f"{url}/{name}{REFERENCE_SUFFIX}", json.dumps(refs).encode())


def distinct_chunks(slabs, chunks) -> int:
    """Chunks the hyperslabs touch, each counted once."""
    seen = set()
    for start, count in slabs:
        seen.update(itertools.product(*(range(s // c, (s + n - 1) // c + 1) for s, n, c in zip(start, count, chunks))))
    return len(seen)


def sample_slabs(shape, read, n, seed=25) -> list:
    """`n` hyperslabs of the read shape, drawn at random and read in the pattern's order (file order;
    stsa: the STSA job's x-t slab per latitude and level, latitude outer, as `climio predict --read stsa`)."""
    slabs = stsa_reads(shape) if read == "stsa" else slice_starts(shape, read_count(read, shape))
    rng = np.random.default_rng(seed)
    idx = sorted(rng.choice(len(slabs), size=min(n, len(slabs)), replace=False))
    return [slabs[i] for i in idx]


def measure(s3, grid, case, read, rep, platform_id) -> dict:
    stack, label, chunks, shard, comp, name = case
    slabs = sample_slabs(grid.shape_list, read, grid.sample)
    times = []
    reader = OBJECT_STACKS[stack](s3.endpoint, wrap=lambda st: timed_store(st, times))
    reader.open(f"s3://{BUCKET}/{PREFIX}/{name}", "ta")
    times.clear()
    try:
        state = s3.evict()
        io0 = s3.storage_read_bytes()
        with Timer() as tm:
            blocks = [reader.read_slab(start, count) for start, count in slabs]
        io1 = s3.storage_read_bytes()
    finally:
        reader.close()
    start, count = slabs[0]
    ok = np.array_equal(blocks[0], values_4d(grid.shape_list, tuple(slice(s, s + c) for s, c in zip(start, count)),
                                             dtype=DTYPE))
    wanted = sum(b.nbytes for b in blocks)
    touched = sum(chunks_touched(grid.shape_list, chunks, s, c) for s, c in slabs)
    distinct = distinct_chunks(slabs, chunks)
    chunk_bytes = math.prod(chunks) * 4
    metrics = {"bytes": wanted, "ops": len(slabs), **tm.metrics(), **request_stats(times),
               "chunks_touched": touched, "chunk_bytes": chunk_bytes, "rate_MBps": wanted / tm.wall_s / 1e6}
    metrics.pop("storage_read_bytes", None)
    if io0 is not None and io1 is not None:
        metrics["storage_read_bytes"] = io1 - io0
    # what a cold read must fetch from the server's disk: each chunk it touches once (a chunk two
    # hyperslabs share is read from the page cache the second time); compressed cells: unknown
    needed = distinct * chunk_bytes if comp.codec == "none" else 0
    metrics["chunks_distinct"] = distinct
    cache = storage_checked(state, metrics, needed) if needed else {**state, "effective": "unverified"}
    params = {"stack": stack, "format": "zarr" if name.endswith(".zarr") else "netcdf4+kerchunk",
              "chunks_label": label, "chunks": format_chunks(chunks), "shards": format_chunks(shard) if shard else "none",
              "compression": comp.label, "read": read, "latency_ms": s3.latency_ms, "samples": len(slabs),
              "shape": format_chunks(grid.shape_list), "server": s3.describe()["server"]}
    return make_record(STUDY, params, metrics, cache, rep=rep, status="ok" if ok else "error", platform_id=platform_id)


def run_object_chunking(ctx, grid) -> int:
    from ...measure.progress import info
    n = 0
    with S3Server(data_dir=Path(ctx.data_dir)) as s3:
        info(f"{STUDY}: SeaweedFS on 127.0.0.1:{s3.s3_port} behind Toxiproxy on :{s3.proxy_port}; writing the layouts")
        write_layouts(s3, grid, ctx.data_dir)
        todo = [(c, r) for c in cases(grid) for r in grid.read_list]
        for lat in grid.latency_list:
            s3.set_latency(lat)
            for rep in range(grid.reps):
                for case, read in (todo if rep % 2 == 0 else todo[::-1]):
                    ctx.run.writer.write(measure(s3, grid, case, read, rep, ctx.run.platform_id))
                    n += 1
                info(f"{STUDY}: latency {lat:g} ms, round {rep + 1}/{grid.reps} done")
    return n
