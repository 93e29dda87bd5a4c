"""What a stack really does with a read (measured, not assumed): one Zarr array of many small
chunks is read whole, in one selection, through the stack with its default settings; the mean
GETs in flight is Little's law over the read (the GETs' summed time over its wall time) and the
CPU seconds per chunk its process time over the chunks. The same array in shards (read whole: one
GET per shard) splits that into a GET's CPU and a chunk's (model.object_store.split_cpu), and
compressed (zstd level 1, whose decoding of a 2 KiB chunk takes microseconds) gives the CPU seconds
a compressed chunk costs beyond an uncompressed one: zarr-python hands each compressed chunk to a
worker thread and back, a fixed cost per chunk that the decode rate (bytes per second, measured on
1 MiB chunks) does not hold. 64 MiB in 4 MiB chunks, read whole, gives the rate a large read
reaches (bulk_Bps).
One-chunk hyperslabs read one after another give what each hyperslab (each zarr __getitem__) costs
beyond its GET and chunk; the plain probe's GETs over its wall time the GETs a second the stack
completes. A busy loop beside each read, and the read's own CPU over its wall time, give the share
of a core the process got (a shared machine's load): the CPU terms are CPU seconds, a CPU-bound
read's wall time is theirs over that share."""

import math
import tempfile
import time
from pathlib import Path
from statistics import median

from ...data.zarr_writer import write_zarr_4d
from climio.dataset.options import parse_compression
from climio.measure.object_reads import cpu_share
from climio.measure.stacks_s3 import OBJECT_STACKS
from climio.model.object_store import split_cpu
from ...stores.objects import delete_prefix, upload
from ...stores.timing import timed_store

PROBE_SHAPE, PROBE_CHUNKS = [1, 1, 128, 512], [1, 1, 16, 32]     # 128 chunks of 2 KiB (float32)
PROBE_SHARDS = [1, 1, 64, 128]                                     # 8 shards of 16 chunks
PLAIN, SHARDED = "climio-concurrency-probe.zarr", "climio-shard-probe.zarr"
PACKED, PACKED_CODEC = "climio-codec-probe.zarr", "zstd1"                 # the plain probe, compressed
# 64 MiB in 16 chunks of 4 MiB read whole: the rate a stack reaches on a large read (the grid's
# transfers are 4 MiB in all, mostly ramp-up: 4 MiB chunks were predicted 1.4-2x too slow)
BULK, BULK_SHAPE, BULK_CHUNKS = "climio-bulk-probe.zarr", [1, 1, 2048, 8192], [1, 1, 128, 8192]
SLAB_READS = 32


def _read(endpoint, stack, url, shape=PROBE_SHAPE) -> dict:
    times = []
    reader = OBJECT_STACKS[stack](endpoint, wrap=lambda st: timed_store(st, times))
    reader.open(url, "ta")
    times.clear()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        reader.read_slab([0, 0, 0, 0], shape)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        reader.close()
    return {"mean_in_flight": sum(times) / wall, "gets": len(times), "wall_s": wall, "cpu_s": cpu,
            # the share of a core the reading process gets: at least a busy loop's (one thread) and at
            # least what this read used (zarr's event loop, its codec threads and the HTTP client's, where
            # the read is CPU-bound, as at 0 ms: more than one thread's share of a loaded machine)
            "share": max(cpu_share(), cpu / wall if wall > 0 else 0.0)}


def _slab_reads(endpoint, stack, url, n=SLAB_READS) -> dict:
    """`n` one-chunk hyperslabs read one after another, as a read of many small hyperslabs makes
    them: the wall seconds per read and the median GET inside it."""
    times = []
    reader = OBJECT_STACKS[stack](endpoint, wrap=lambda st: timed_store(st, times))
    reader.open(url, "ta")
    times.clear()
    per_row = PROBE_SHAPE[3] // PROBE_CHUNKS[3]
    try:
        t0 = time.perf_counter()
        for i in range(n):
            y, x = divmod(i, per_row)
            reader.read_slab([0, 0, y * PROBE_CHUNKS[2], x * PROBE_CHUNKS[3]], PROBE_CHUNKS)
        wall = time.perf_counter() - t0
    finally:
        reader.close()
    return {"read_s": wall / n, "get_s": median(times) if times else 0.0}


def measure_concurrency(endpoint, url: str, stacks, reps: int = 3) -> dict:
    """stack -> {"median_in_flight", "chunk_cpu_s", "get_cpu_s", "shard_cpu_s", "codec_chunk_s",
    "bulk_Bps", "slab_s", "small_get_s", "ranged_get_s", "cpu_share", "all"} from probe arrays written under `url`
    (removed after); medians over `reps` reads."""
    n_chunks = (PROBE_SHAPE[2] // PROBE_CHUNKS[2]) * (PROBE_SHAPE[3] // PROBE_CHUNKS[3])
    n_shards = (PROBE_SHAPE[2] // PROBE_SHARDS[2]) * (PROBE_SHAPE[3] // PROBE_SHARDS[3])
    out = {}
    base = url.rstrip("/")
    with tempfile.TemporaryDirectory(prefix="climio-conc-") as tmp:
        write_zarr_4d(Path(tmp) / PLAIN, PROBE_SHAPE, chunks=PROBE_CHUNKS, dtype="f4")
        write_zarr_4d(Path(tmp) / SHARDED, PROBE_SHAPE, chunks=PROBE_CHUNKS, shards=PROBE_SHARDS, dtype="f4")
        write_zarr_4d(Path(tmp) / PACKED, PROBE_SHAPE, chunks=PROBE_CHUNKS, dtype="f4",
                      compression=parse_compression(PACKED_CODEC))
        write_zarr_4d(Path(tmp) / BULK, BULK_SHAPE, chunks=BULK_CHUNKS, dtype="f4")
        for name in (PLAIN, SHARDED, PACKED, BULK):
            upload(endpoint, Path(tmp) / name, base)     # a directory goes under the URL by its name
        _forget_listings()
        try:
            for stack in stacks:
                plain = [_read(endpoint, stack, f"{base}/{PLAIN}") for _ in range(reps)]
                sharded = [_read(endpoint, stack, f"{base}/{SHARDED}") for _ in range(reps)]
                packed = [_read(endpoint, stack, f"{base}/{PACKED}") for _ in range(reps)]
                bulk = [_read(endpoint, stack, f"{base}/{BULK}", BULK_SHAPE) for _ in range(reps)]
                get_cpu, chunk_cpu, shard_cpu = split_cpu(
                    (median(r["cpu_s"] for r in plain), median(r["gets"] for r in plain)),
                    (median(r["cpu_s"] for r in sharded), median(r["gets"] for r in sharded)), n_chunks, n_shards)
                # a plain chunk: its GET and its pipeline (the packed and slab probes make one GET a chunk)
                one_chunk = chunk_cpu + get_cpu
                codec_cpu = max(0.0, median(r["cpu_s"] for r in packed) / n_chunks - one_chunk)
                share = median(r["share"] for r in plain + sharded + packed)
                # once: SLAB_READS hyperslabs are many repetitions already
                slab = _slab_reads(endpoint, stack, f"{base}/{PLAIN}")
                read_s, get_s = slab["read_s"], slab["get_s"]
                # one inner chunk of a shard: the index and the chunk, byte-range GETs both
                ranged = _slab_reads(endpoint, stack, f"{base}/{SHARDED}", SLAB_READS // 2)
                # what a hyperslab costs beyond its GET and its chunk: zarr's selection, the hop to its
                # event loop and back (a shared machine's scheduling delays included, as a user sees them)
                out[stack] = {"median_in_flight": median(r["mean_in_flight"] for r in plain),
                              "chunk_cpu_s": chunk_cpu, "shard_cpu_s": shard_cpu, "codec_chunk_s": codec_cpu,
                              "get_cpu_s": get_cpu,
                              "bulk_Bps": math.prod(BULK_SHAPE) * 4 / median(r["wall_s"] for r in bulk),
                              "cpu_share": share,
                              # GETs a second the stack completed reading many small chunks in one selection
                              "gets_per_s": median(r["gets"] / r["wall_s"] for r in plain if r["wall_s"] > 0),
                              "slab_s": max(0.0, read_s - get_s - one_chunk), "small_get_s": get_s,
                              "ranged_get_s": ranged["get_s"],
                              "all": [round(r["mean_in_flight"], 2) for r in plain]}
        finally:
            for name in (PLAIN, SHARDED, PACKED, BULK):
                delete_prefix(endpoint, f"{base}/{name}/")
    return out


def _forget_listings() -> None:
    """s3fs keeps its file systems (and their directory listings) per process: one that listed the
    prefix before the probe was uploaded would not see it."""
    import s3fs
    s3fs.S3FileSystem.clear_instance_cache()
