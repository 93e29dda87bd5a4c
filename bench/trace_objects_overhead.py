"""Overhead of climio's object-store tracing on a loopback job: zarr-python reading every chunk of an array
from the S3 server of the set-up, straight to it (no proxy, no injected latency: the worst case for the tracer, nothing hides its cost),
traced against untraced, interleaved ABBA in one run; the job times its own read (interpreter start-up
excluded), and the bench times the whole process too (start-up, and the records written at exit). Two
clients, each traced the way `climio trace run` traces it (the preload and the Python tracer):
  s3fs     zarr over s3fs: store ops and botocore's wire events (Python, climio.trace.inject.objects)
  obstore  zarr over obstore (Rust): store ops (Python) and the preload's HTTP/1.1 parser on its sockets
           (csrc/trace/http.c), the wire level below Python
`--traced python` traces with the Python tracer only (no preload), as this bench did first.

    .venv/bin/python bench/trace_objects_overhead.py [--big N] [--small N] [--reps R] [--clients s3fs,obstore]

Issue 36's sizes are 1,000 chunks of 4 MiB and 20,000 of 64 KiB; the defaults are scaled down to
--big 200 and --small 4000 for a shared 2-core machine (same per-chunk work, fewer chunks).
Target: the median traced time at most 1.05x the untraced one.
Last figures (28 Nov, full counts, --reps 3, load 9-16 on 2 cores; traced/untraced, ratio of medians and
median of paired ratios): s3fs 20,000x64KiB wall 0.95/1.10, CPU 1.04/1.01; s3fs 1,000x4MiB wall 0.84/0.96,
CPU 0.92/0.93; obstore 20,000x64KiB wall 1.11/1.05, CPU 1.05/1.07; obstore 1,000x4MiB wall 1.04/1.00,
CPU 1.01/0.99. Wall is noisy at this load (one job's runs span 142-313 s); CPU is the steadier figure.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INJECT = ROOT / "src" / "climio" / "trace" / "inject"

OPEN = {
    "s3fs": """
import s3fs
fs = s3fs.S3FileSystem(asynchronous=True, max_concurrency=1)
store = zarr.storage.FsspecStore(fs, path="climio/{name}", read_only=True)
""",
    "obstore": """
import os
from obstore.store import S3Store
s3 = S3Store("climio", endpoint=os.environ["AWS_ENDPOINT_URL"], region="us-east-1", client_options={"allow_http": True})
store = zarr.storage.ObjectStore(s3, read_only=True)
""",
}
JOB = """
import time, zarr
{open}
z = zarr.open_array(store, path="{path}", mode="r")
t0, c0 = time.perf_counter(), time.process_time()
z[:]
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def job(client, name) -> str:
    path = "" if client == "s3fs" else name
    return JOB.replace("{open}", OPEN[client].replace("{name}", name)).replace("{path}", path)


def traced_env(out_dir, how) -> dict:
    """What `climio trace run` sets (how="run"), or the Python object tracer alone (how="python")."""
    if how == "python":
        return {"CLIMIO_TRACE_OBJECTS": str(out_dir), "PYTHONPATH": str(INJECT)}
    from climio.trace.run import TRACEABLE_LAYERS, default_excludes, interpreter_excludes, trace_vars, tracer_library
    out_dir.mkdir(parents=True, exist_ok=True)
    return trace_vars(tracer_library(), out_dir, TRACEABLE_LAYERS,
                      [*default_excludes(), *interpreter_excludes([sys.executable])], None)


def write_array(s3, name, n_chunks, chunk_bytes):
    import zarr
    per = chunk_bytes // 4
    st = zarr.storage.FsspecStore(s3.direct_endpoint.s3fs(asynchronous=True), path=f"climio/{name}")
    z = zarr.create_array(st, shape=(n_chunks, per), chunks=(1, per), dtype="f4", compressors=None, overwrite=True)
    block = np.random.default_rng(0).random((min(n_chunks, 64), per), dtype="f4")
    for i in range(0, n_chunks, len(block)):
        z[i:i + len(block)] = block[:min(len(block), n_chunks - i)]


def run(s3, client, name, traced, out_dir, how) -> tuple:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CLIMIO_TRACE", "LD_PRELOAD"))}
    env.update(s3.env(direct=True))   # straight to the server: no proxy between the job and it
    if traced:
        env.update(traced_env(out_dir, how))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", job(client, name)], env=env, capture_output=True, text=True,
                       timeout=900)
    whole = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    wall, cpu = r.stdout.split()[-2:]
    return float(wall), float(cpu), whole


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", type=int, default=200, help="chunks of 4 MiB")
    ap.add_argument("--small", type=int, default=4000, help="chunks of 64 KiB")
    ap.add_argument("--reps", type=int, default=3, help="ABBA rounds")
    ap.add_argument("--clients", default="s3fs,obstore", help="s3fs, obstore or s3fs,obstore (both)")
    ap.add_argument("--traced", choices=("run", "python"), default="run",
                    help="run: what `climio trace run` sets (preload + Python tracer); python: the Python tracer only")
    a = ap.parse_args()
    from climio.stores.server import S3Server
    import shutil
    import tempfile
    total_mb = (a.big * 4 + a.small // 16) * 1.5          # the server's 16 volumes must hold both arrays
    with tempfile.TemporaryDirectory(prefix="climio-objbench-") as tmp, \
            S3Server(data_dir=tmp, volume_size_mb=max(256, int(total_mb / 16) + 1)) as s3:
        cases = [("big.zarr", a.big, 4 << 20), ("small.zarr", a.small, 64 << 10)]
        for name, n, size in cases:
            if n:
                write_array(s3, name, n, size)
        for name, n, size in cases:
            for client in a.clients.split(","):
                if not n:
                    continue
                plain, traced = [], []
                load = f"{os.getloadavg()[0]:.1f}"     # a shared machine: say how busy it was
                tag = f"{client}-{name}"
                for r in range(a.reps):
                    order = (False, True, True, False) if r % 2 == 0 else (True, False, False, True)
                    for k, t in enumerate(order):
                        out = Path(tmp) / f"trace-{tag}-{r}" / str(k)
                        (traced if t else plain).append(run(s3, client, name, t, out, a.traced))
                        if t and (r or k > 1):
                            shutil.rmtree(out, ignore_errors=True)   # keep round 0's first traced run only
                recs = ", ".join(f"{sum(1 for _ in open(f)) - 1} in {f.name}" for f in
                                 sorted((Path(tmp) / f"trace-{tag}-0").glob("*/objects-*.jsonl")))
                for i, what in ((0, "wall"), (1, "CPU (the job's process time: less sensitive to a shared machine)"),
                                (2, "whole process wall (start-up, imports and the tracer's write at exit too)")):
                    p, t = statistics.median(x[i] for x in plain), statistics.median(x[i] for x in traced)
                    ratios = [tr[i] / pl[i] for pl, tr in zip(plain, traced)]
                    print(f"{client}, {n} chunks of {size >> 10} KiB, {what}: untraced median {p:.3f} s "
                          f"(all {[round(x[i], 3) for x in plain]}), traced {t:.3f} s "
                          f"(all {[round(x[i], 3) for x in traced]}), ratio of medians {t / p:.3f}, median of paired "
                          f"ratios {statistics.median(ratios):.3f} (traced: {a.traced}; records of one traced run: {recs}; "
                          f"target <= 1.05; load average {load} at the start, {os.getloadavg()[0]:.1f} now)", flush=True)


if __name__ == "__main__":
    main()
