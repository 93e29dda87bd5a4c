"""How fast each Zarr stack decodes each codec climio writes (`climio calibrate --store`).

One array per codec (the synthetic field of climio.data.fields, float32, 1 MiB chunks) and an
uncompressed twin of the same values are written under the store's prefix; each is read whole
through the stack, as a user reads it, and the process's CPU seconds are taken: the codec's
decoding is its CPU time beyond the twin's (the GETs and the stack's own work per chunk are the
same), so decode_Bps = decoded bytes / that difference, the median over repetitions of each read
paired with the twin's, never below the twin's own spread. CPU seconds, not wall seconds:
zarr-python decodes in worker threads beside the event loop, and CPU time is what a shared
machine's other work does not stretch. The twin's own CPU beyond its GETs and chunks is what moving
the bytes costs (byte_cpu_s). Removed after.
"""

import math
import time
from statistics import median

import numpy as np

from climio.measure.stacks_s3 import OBJECT_STACKS
from climio.model.object_store import decode_rate

# the settings climio writes to Zarr (climio.dataset.compression.zarr_v3_compressors): gzip,
# blosc(zlib) with its shuffle, zstd, blosc(zstd) with its shuffle, blosc-lz4
DECODE_CODECS = {"full": ("deflate1", "deflate4", "deflate1+shuffle", "deflate4+shuffle", "deflate9+shuffle",
                          "zstd1", "zstd3", "zstd3+shuffle", "blosc_lz4:5+shuffle", "blosc_lz4:5"),
                 "quick": ("deflate1", "deflate1+shuffle", "deflate4+shuffle", "zstd3", "zstd3+shuffle",
                           "blosc_lz4:5+shuffle")}
PROBE_SHAPE, PROBE_CHUNKS = (1, 1, 1024, 2048), (1, 1, 256, 1024)   # 8 MiB in 8 chunks of 1 MiB (f4)
NAME = "climio-decode-probe.zarr"
MIN_CPU_S = 1e-4                   # a difference below the clock's grain is not a rate


def _name(label: str) -> str:
    return "v_" + "".join(ch if ch.isalnum() else "_" for ch in label)


def write_probe(endpoint, url: str, codecs) -> None:
    """One group at url/NAME: an array per codec and the uncompressed twin `v_none`."""
    import zarr
    from zarr.storage import ObjectStore
    from climio.data import fields
    from climio.data.zarr_writer import zarr_codecs
    from climio.dataset.options import parse_compression
    from climio.stores.endpoint import parse_s3_url
    u = parse_s3_url(url.rstrip("/") + "/" + NAME)
    root = zarr.open_group(ObjectStore(endpoint.obstore(u.bucket, u.key)), mode="w", zarr_format=3)
    values = np.asarray(fields.values_4d(PROBE_SHAPE, seed=7, dtype=np.float32), dtype=np.float32)
    for label in ("none", *codecs):
        comp = parse_compression(label) if label != "none" else None
        a = root.create_array(_name(label), shape=PROBE_SHAPE, chunks=PROBE_CHUNKS, dtype="f4", fill_value=0.0,
                              dimension_names=["time", "lev", "lat", "lon"], **zarr_codecs(comp, 4))
        a[...] = values


def _cpu_of_read(endpoint, stack: str, url: str, var: str) -> float:
    reader = OBJECT_STACKS[stack](endpoint)
    reader.open(url, var)      # untimed: the metadata
    try:
        c0 = time.process_time()
        reader.read_slab([0, 0, 0, 0], list(PROBE_SHAPE))
        return time.process_time() - c0
    finally:
        reader.close()


def measure_decode(endpoint, url: str, stacks, codecs, reps: int = 3) -> dict:
    """stack -> {"decode_Bps": {codec label: B/s of decoded output}, "twin_cpu_s": the twin's median
    CPU seconds, "twin_bytes", "twin_chunks" (one GET each)}, from probe arrays written under `url`
    (removed after); the twin and the codecs read in an order that alternates per repetition."""
    from climio.stores.objects import delete_prefix
    base = url.rstrip("/")
    where = f"{base}/{NAME}"
    raw = math.prod(PROBE_SHAPE) * 4
    write_probe(endpoint, base, codecs)
    out = {}
    try:
        for stack in stacks:
            cpu = {label: [] for label in ("none", *codecs)}
            _cpu_of_read(endpoint, stack, where, _name("none"))      # a first read warms the stack's imports
            for rep in range(reps):
                order = ["none", *codecs]
                for label in (order if rep % 2 == 0 else order[::-1]):
                    cpu[label].append(_cpu_of_read(endpoint, stack, where, _name(label)))
            # each codec's read paired with the twin's of the same repetition (model.object_store.
            # decode_rate): the stack's own work varies from read to read (its garbage, its connections)
            rates = {label: decode_rate(raw, cpu["none"], cpu[label], MIN_CPU_S) for label in codecs}
            out[stack] = {"decode_Bps": rates, "twin_cpu_s": median(cpu["none"]), "twin_bytes": raw,
                          "twin_chunks": math.prod(PROBE_SHAPE) // math.prod(PROBE_CHUNKS)}
    finally:
        delete_prefix(endpoint, where + "/")
    return out
