"""Rechunking S3 -> S3 on one Dask cluster: `climio rechunk --scheduler` against xarray's
`open_zarr(...).chunk(...).to_zarr()` and against raw GET+PUT of the same bytes.

    .venv/bin/python bench/rechunk_s3_vs_peers.py [--t 96] [--max-mem 16MiB] [--reps 2] [--latency 0 20]

The input: a float32 field [T,4,96,128] (T=96: 18.9 MB) as a Zarr v3 store in the bench's own
SeaweedFS (behind Toxiproxy, which adds the round-trip latency), chunks [1,1,96,128], zstd1 after a
byte shuffle; the output: chunks [T,1,24,32], the same codec. One LocalCluster of 2 worker
processes, 1 thread each, serves every tool (their RSS sampled every 20 ms during each run):
  climio      climio rechunk s3://IN s3://OUT -c ... --max-mem M -j 2 --scheduler ADDRESS
              (M per worker; chunk objects GET and PUT by the workers, 8 requests in flight each)
  to_zarr     xr.open_zarr(ObjectStore(IN), chunks={}).ta.chunk(target).to_zarr(ObjectStore(OUT))
              on the same cluster (no memory bound exists for it)
  raw         every input object GET and PUT to another prefix by the same 2 workers, 8 threads
              each: the floor of moving these bytes at this concurrency (no decoding or encoding)
Runs go in ABBA order per latency (the tools, then reversed); medians reported. Each output's
values are compared with the input's. Memory: the peak RSS of each worker process, and of the
climio command itself (its summary's peak minus its workers'). Ratios: to_zarr / climio and
climio / raw (targets: >= 1.5 and <= 1.5).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CLIMIO = str(Path(sys.executable).with_name("climio"))


def parse_size(text):
    from climio.dataset.options import parse_size as p
    return p(text)


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Sampler:
    """Peak RSS of given processes, sampled every 20 ms while a run goes (the Dask workers live
    across runs, so their ru_maxrss would be every run's)."""

    def __init__(self, pids):
        import threading
        self.pids, self.peak, self.stop = list(pids), {}, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self.stop.is_set():
            for pid in self.pids:
                self.peak[pid] = max(self.peak.get(pid, 0), _rss(pid))
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def worker_peaks(client) -> list:
    return list(client.run(os.getpid).values())


def run_climio(s3, client, address, out, args, src_dir=None):
    cmd = [CLIMIO, "rechunk", "s3://climio/bench/in.zarr", f"s3://climio/bench/{out}", *args["climio"],
           "--scheduler", address, "--json", "--force"]
    workers = worker_peaks(client)
    env = {**os.environ, **s3.env()}
    if src_dir:   # another checkout's command (its process only: the shared workers run this one's block code)
        env["PYTHONPATH"] = src_dir
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Sampler(workers + [p.pid]) as sampled:
        stdout, stderr = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"climio failed: {stderr.strip().splitlines()[-1]}")
    summary = json.loads(stdout)
    peaks = [sampled.peak[w] for w in workers]
    own = sampled.peak[p.pid]
    print(f"    (climio: conversion {summary['seconds']:.2f} s of the command's {wall:.2f} s)", flush=True)
    CONVERSION.setdefault(src_dir or "", []).append(summary["seconds"])
    return wall, peaks, own, summary.get("retries", 0)


CONVERSION = {}   # src dir ("": this one) -> climio's own "seconds" (define the output, run the tasks, check)


def run_to_zarr(s3, client, address, out, args):
    ep = s3.endpoint
    workers = worker_peaks(client)
    t0 = time.perf_counter()
    with Sampler(workers) as sampled:
        _to_zarr(ep, args, out)
    wall = time.perf_counter() - t0
    return wall, [sampled.peak[w] for w in workers], None, 0


def _to_zarr(ep, args, out):
    import xarray as xr
    import zarr.codecs as zc
    from zarr.storage import ObjectStore
    ds = xr.open_zarr(ObjectStore(ep.obstore("climio", "bench/in.zarr"), read_only=True), chunks={})
    var = ds["ta"].chunk(dict(zip(ds["ta"].dims, args["target"])))
    var.encoding = {}
    enc = {"ta": {"chunks": args["target"], "serializer": zc.BytesCodec(),
                  "compressors": [_shuffle(), zc.ZstdCodec(level=1)]}}   # the codecs climio writes
    var.to_dataset().to_zarr(ObjectStore(ep.obstore("climio", f"bench/{out}")), mode="w", encoding=enc,
                             zarr_format=3, consolidated=False)


def _shuffle():
    try:
        from zarr.codecs import Shuffle
    except ImportError:
        from numcodecs.zarr3 import Shuffle
    return Shuffle(elementsize=4)


def _copy_part(keys, env):
    """In a worker: GET each object and PUT its bytes under bench/raw/, 8 requests in flight."""
    import os as _os
    from concurrent.futures import ThreadPoolExecutor
    _os.environ.update(env)
    from climio.stores.chunks import ObjectChunks
    src, dst = ObjectChunks("s3://climio/bench/in.zarr"), ObjectChunks("s3://climio/bench/raw")

    def one(k):
        data = src.get(k)
        dst.put(k, data)
        return len(data)
    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(one, keys))


def run_raw(s3, client, address, out, args):
    keys = args["keys"]
    env = s3.env()
    workers = worker_peaks(client)
    t0 = time.perf_counter()
    with Sampler(workers) as sampled:
        futs = [client.submit(_copy_part, keys[i::2], env, pure=False) for i in range(2)]
        nbytes = sum(f.result() for f in futs)
    wall = time.perf_counter() - t0
    assert nbytes == args["in_bytes"]
    return wall, [sampled.peak[w] for w in workers], None, 0


def _warm():
    """In a worker: import what the tools' tasks import (xarray, zarr, obstore, climio's block code)."""
    import obstore  # noqa: F401
    import xarray  # noqa: F401
    import zarr  # noqa: F401

    import climio.rechunking.blocks  # noqa: F401
    import climio.stores.chunks  # noqa: F401


TOOLS = {"climio": run_climio, "to_zarr": run_to_zarr, "raw": run_raw}


def check(s3, out, ref):
    import xarray as xr
    from zarr.storage import ObjectStore
    got = xr.open_zarr(ObjectStore(s3.endpoint.obstore("climio", f"bench/{out}"), read_only=True))["ta"]
    assert got.encoding["chunks"] == tuple(ref["target"]), got.encoding["chunks"]
    np.testing.assert_array_equal(got.values, ref["values"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=96)
    ap.add_argument("--max-mem", default="16MiB", help="per worker")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--latency", type=float, nargs="+", default=[0, 20])
    ap.add_argument("--baseline-src", help="also run the command of another checkout's src/ (e.g. the commit "
                                           "before a change: git archive REV src | tar -x -C DIR), as climio@base")
    a = ap.parse_args(argv)
    if a.baseline_src:
        TOOLS["climio@base"] = lambda *x: run_climio(*x, src_dir=a.baseline_src)
    tmp = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    try:
        _main(a, tmp)
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def _main(a, tmp):  # long: set-up, the runs and the table in one place, read top to bottom
    from distributed import Client, LocalCluster

    from climio.data.writer import write_4d
    from climio.stores.chunks import ObjectChunks
    from climio.stores.server import S3Server
    target = (a.t, 1, 24, 32)
    with S3Server(data_dir=tmp / "s3") as s3:
        os.environ.update(s3.env())   # the workers inherit the endpoint (through the proxy)
        src = tmp / "in.nc"
        write_4d(src, [a.t, 4, 96, 128], chunks=[1, 1, 96, 128], dtype="f4")
        p = subprocess.run([CLIMIO, "rechunk", src, "s3://climio/bench/in.zarr", "-c", "ta:1,1,96,128",
                            "--compression", "zstd1+shuffle", "-j", "1"], env={**os.environ, **s3.env(direct=True)},
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        import xarray as xr
        ref = {"values": xr.open_dataset(src)["ta"].values, "target": target}
        listing = ObjectChunks("s3://climio/bench/in.zarr", s3.direct_endpoint).listing()
        keys = sorted(k for k in listing if k.startswith("ta/c/"))
        in_bytes = sum(listing[k][0] for k in keys)
        args = {"climio": ["-c", "ta:" + ",".join(map(str, target)), "--compression", "zstd1+shuffle",
                           "--max-mem", a.max_mem, "-j", "2"],
                "target": target, "keys": keys, "in_bytes": in_bytes}
        print(f"input: {ref['values'].nbytes / 1e6:.1f} MB in {len(keys)} objects ({in_bytes / 1e6:.1f} MB stored), "
              f"target chunks {list(target)}, --max-mem {a.max_mem} per worker, 2 workers x 1 thread")
        rows = []
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            client.run(_warm)   # every tool finds the libraries imported: the first run does not pay for them
            for lat in a.latency:
                s3.set_latency(lat)
                order = list(TOOLS) + list(reversed(TOOLS))
                res = {t: [] for t in TOOLS}
                CONVERSION.clear()
                CONVERSION.update({"": [], a.baseline_src or "": []})
                for rep in range(a.reps // 2 or 1):
                    for tool in order:
                        out = f"{tool.replace('@', '-')}-{lat:g}.zarr"
                        wall, peaks, own, retries = TOOLS[tool](s3, client, cluster.scheduler_address, out, args)
                        if tool not in ("raw",):
                            check(s3, out, ref)
                        res[tool].append((wall, max(peaks), own))
                        print(f"  latency {lat:g} ms {tool:8s} {wall:6.2f} s  worker peak {max(peaks) / 2**20:6.1f} MiB"
                              + (f"  command {own / 2**20:6.1f} MiB  retries {retries}" if own is not None else ""),
                              flush=True)
                conv = statistics.median(CONVERSION[""])
                if a.baseline_src:
                    base = statistics.median(CONVERSION[a.baseline_src])
                    print(f"  latency {lat:g} ms: climio's conversion {conv:.2f} s, climio@base's {base:.2f} s "
                          f"(base/now {base / conv:.2f})", flush=True)
                rows.append((lat, conv, {t: (statistics.median(w for w, _, _ in v), max(p for _, p, _ in v),
                                       max((o for _, _, o in v if o is not None), default=None))
                                   for t, v in res.items()}))
        s3.set_latency(0)
    print("\nlatency | tool     | median wall s | worker peak MiB | command peak MiB")
    for lat, conv, r in rows:
        for t, (w, p, o) in r.items():
            print(f"{lat:7g} | {t:8s} | {w:13.2f} | {p / 2**20:15.1f} | {'' if o is None else f'{o / 2**20:.1f}'}")
        c, x, raw = r["climio"][0], r["to_zarr"][0], r["raw"][0]
        print(f"{lat:7g} | ratios: to_zarr/climio {x / c:.2f} (target >= 1.5), climio/raw {c / raw:.2f} "
              f"(target <= 1.5), bound {a.max_mem} per worker")
        print(f"{lat:7g} | climio's conversion alone (no process start-up, which to_zarr in this process does not "
              f"pay either) {conv:.2f} s: to_zarr/climio {x / conv:.2f}, climio/raw {conv / raw:.2f}")


if __name__ == "__main__":
    main()
