"""Overhead of climio's object-store tracer (climio.trace.inject.objects, store ops + wire requests) on a
loopback job: zarr-python over s3fs reading every chunk of an array from the S3 server of the set-up
(no injected latency: the worst case for the tracer, nothing hides its cost), traced against untraced,
interleaved ABBA in one run; the job times its own read (interpreter start-up excluded).

    .venv/bin/python bench/trace_objects_overhead.py [--big N] [--small N] [--reps R]

Issue 36's sizes are 1,000 chunks of 4 MiB and 20,000 of 64 KiB; the defaults are scaled down to
--big 200 and --small 4000 for a shared 2-core machine (same per-chunk work, fewer chunks).
Target: the median traced time at most 1.05x the untraced one.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INJECT = ROOT / "src" / "climio" / "trace" / "inject"

JOB = """
import time, s3fs, zarr
fs = s3fs.S3FileSystem(asynchronous=True, max_concurrency=1)
z = zarr.open_array(zarr.storage.FsspecStore(fs, path="climio/{name}", read_only=True), mode="r")
t0, c0 = time.perf_counter(), time.process_time()
z[:]
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def write_array(s3, name, n_chunks, chunk_bytes):
    import zarr
    per = chunk_bytes // 4
    st = zarr.storage.FsspecStore(s3.direct_endpoint.s3fs(asynchronous=True), path=f"climio/{name}")
    z = zarr.create_array(st, shape=(n_chunks, per), chunks=(1, per), dtype="f4", compressors=None, overwrite=True)
    block = np.random.default_rng(0).random((min(n_chunks, 64), per), dtype="f4")
    for i in range(0, n_chunks, len(block)):
        z[i:i + len(block)] = block[:min(len(block), n_chunks - i)]


def run(s3, name, traced, out_dir) -> tuple:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3.env())
    if traced:
        env["CLIMIO_TRACE_OBJECTS"] = str(out_dir)
        env["PYTHONPATH"] = str(INJECT)
    r = subprocess.run([sys.executable, "-c", JOB.replace("{name}", name)], env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    wall, cpu = r.stdout.split()[-2:]
    return float(wall), float(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", type=int, default=200, help="chunks of 4 MiB")
    ap.add_argument("--small", type=int, default=4000, help="chunks of 64 KiB")
    ap.add_argument("--reps", type=int, default=3, help="ABBA rounds")
    a = ap.parse_args()
    from climio.stores.server import S3Server
    import tempfile
    with tempfile.TemporaryDirectory(prefix="climio-objbench-") as tmp, S3Server(data_dir=tmp) as s3:
        cases = [("big.zarr", a.big, 4 << 20), ("small.zarr", a.small, 64 << 10)]
        for name, n, size in cases:
            write_array(s3, name, n, size)
        for name, n, size in cases:
            plain, traced = [], []
            for r in range(a.reps):
                order = (False, True, True, False) if r % 2 == 0 else (True, False, False, True)
                for t in order:
                    (traced if t else plain).append(run(s3, name, t, Path(tmp) / f"trace-{name}-{r}"))
            files = sorted(Path(tmp).glob(f"trace-{name}-0/objects-*.jsonl"))   # one per traced run of round 0
            recs = sum(1 for _ in open(files[0])) - 1
            for i, what in ((0, "wall"), (1, "CPU (the job's process time: less sensitive to a shared machine)")):
                p, t = statistics.median(x[i] for x in plain), statistics.median(x[i] for x in traced)
                print(f"{n} chunks of {size >> 10} KiB, {what}: untraced median {p:.3f} s "
                      f"(all {[round(x[i], 3) for x in plain]}), traced {t:.3f} s (all {[round(x[i], 3) for x in traced]}), "
                      f"ratio {t / p:.3f} ({recs} records per traced run; target <= 1.05)")


if __name__ == "__main__":
    main()
