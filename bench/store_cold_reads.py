"""Why one repetition of an object-store read can take 30x another (issue 35 item 6).

On climio's own S3 server (SeaweedFS behind Toxiproxy, 0 ms injected), small Zarr arrays are
written as `bench predict --store` writes them and each is read REPS times, the server's volume
files evicted before each, as the bench reads them, with every phase timed apart: the stack's
client made, the array opened (zarr.json), the first chunk GET, the other GETs, the whole read, and
the process's CPU seconds. Prints per repetition index the median and max of each phase: a cold
first read (connection set-up, metadata, thread pool start-up) shows as rep 0's phases above the
others'.

    .venv/bin/python bench/store_cold_reads.py [--arrays 12] [--reps 4]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402


def one_read(endpoint, url, stack, start, count) -> dict:
    from climio.measure.stacks_s3 import OBJECT_STACKS
    from climio.stores.timing import timed_store
    times = []
    t0 = time.perf_counter()
    reader = OBJECT_STACKS[stack](endpoint, wrap=lambda st: timed_store(st, times))
    t1 = time.perf_counter()
    reader.open(url, "v")
    t2 = time.perf_counter()
    times.clear()
    c0 = time.process_time()
    reader.read_slab(start, count)
    t3 = time.perf_counter()
    cpu = time.process_time() - c0
    reader.close()
    return {"client_s": t1 - t0, "open_s": t2 - t1, "read_s": t3 - t2, "cpu_s": cpu,
            "first_get_s": times[0] if times else 0.0, "gets": len(times)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arrays", type=int, default=12)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args(argv)
    import zarr
    from zarr.storage import ObjectStore
    from climio.stores.endpoint import parse_s3_url
    from climio.stores.server import S3Server
    rows = []
    with tempfile.TemporaryDirectory(prefix="climio-cold-") as tmp, \
            S3Server(data_dir=tmp, buckets=("coldbench",)) as s3:
        s3.set_latency(0)
        for i in range(args.arrays):
            url = f"s3://coldbench/cold/a{i}.zarr"
            u = parse_s3_url(url)
            root = zarr.open_group(ObjectStore(s3.direct_endpoint.obstore(u.bucket, u.key)), mode="w", zarr_format=3)
            a = root.create_array("v", shape=(4, 48, 96), chunks=(2, 48, 96), dtype="f4", fill_value=0.0,
                                  compressors=None)
            a[...] = np.random.default_rng(i).random((4, 48, 96), dtype=np.float32)
            stack = ("zarr-obstore", "zarr-fsspec")[i % 2]
            for rep in range(args.reps):
                s3.evict()
                r = one_read(s3.endpoint, url, stack, [0, 0, 0], [4, 48, 96])
                rows.append({"array": i, "stack": stack, "rep": rep, **r})
    keys = ("client_s", "open_s", "first_get_s", "read_s", "cpu_s")
    print("rep  n   " + "  ".join(f"{k:>22}" for k in keys) + "   (median / max, ms)")
    for rep in range(args.reps):
        sel = [r for r in rows if r["rep"] == rep]
        cells = [f"{statistics.median(r[k] for r in sel) * 1e3:9.2f} /{max(r[k] for r in sel) * 1e3:9.2f}" for k in keys]
        print(f"{rep:3d} {len(sel):2d}   " + "  ".join(f"{c:>22}" for c in cells))
    worst = max(rows, key=lambda r: r["read_s"])
    print("slowest read:", {k: (round(v * 1e3, 2) if isinstance(v, float) else v) for k, v in worst.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
