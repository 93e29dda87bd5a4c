"""The GETs a stack really keeps in flight (measured, not assumed): one Zarr array of many small
chunks is read whole, in one selection, through the stack with its default settings; the mean in
flight is Little's law over the read, the GETs' summed time over the read's wall time."""

import tempfile
import time
from pathlib import Path

from ...data.zarr_writer import write_zarr_4d
from ...stacks_s3 import OBJECT_STACKS
from ...stores.objects import delete_prefix, upload
from ...stores.timing import timed_store

PROBE_SHAPE, PROBE_CHUNKS = [1, 1, 128, 512], [1, 1, 16, 32]     # 128 chunks of 2 KiB (float32)


def measure_concurrency(endpoint, url: str, stacks, reps: int = 3) -> dict:
    """stack -> {"mean_in_flight", "gets", "wall_s"} (the median repetition's), for a probe array
    written under `url` (removed after)."""
    from statistics import median
    out = {}
    with tempfile.TemporaryDirectory(prefix="climio-conc-") as tmp:
        local = Path(tmp) / "climio-concurrency-probe.zarr"
        write_zarr_4d(local, PROBE_SHAPE, chunks=PROBE_CHUNKS, dtype="f4")
        target = f"{url.rstrip('/')}/climio-concurrency-probe.zarr"
        upload(endpoint, local, url.rstrip("/"))     # a directory goes under the URL by its name
        _forget_listings()
        try:
            for stack in stacks:
                runs = []
                for _ in range(reps):
                    times = []
                    reader = OBJECT_STACKS[stack](endpoint, wrap=lambda st: timed_store(st, times))
                    reader.open(target, "ta")
                    times.clear()
                    try:
                        t0 = time.perf_counter()
                        reader.read_slab([0, 0, 0, 0], PROBE_SHAPE)
                        wall = time.perf_counter() - t0
                    finally:
                        reader.close()
                    runs.append({"mean_in_flight": sum(times) / wall, "gets": len(times), "wall_s": wall})
                out[stack] = sorted(runs, key=lambda r: r["mean_in_flight"])[len(runs) // 2]
                out[stack]["all"] = [round(r["mean_in_flight"], 2) for r in runs]
                out[stack]["median_in_flight"] = median(r["mean_in_flight"] for r in runs)
        finally:
            delete_prefix(endpoint, target)
    return out


def _forget_listings() -> None:
    """s3fs keeps its file systems (and their directory listings) per process: one that listed the
    prefix before the probe was uploaded would not see it."""
    import s3fs
    s3fs.S3FileSystem.clear_instance_cache()
