"""Rechunking S3 -> S3 on one Dask cluster: `climio rechunk --scheduler` against xarray's
`open_zarr(...).chunk(...).to_zarr()` and against raw GET+PUT of the same bytes.

    .venv/bin/python bench/rechunk_s3_vs_peers.py [--t 96] [--shape T,Z,Y,X] [--max-mem 16MiB] [--reps 2]
        [--latency 0 20]

The input: a float32 field [T,Z,Y,X] (default [96,4,96,128]: 18.9 MB; --shape 1024,5,192,256 is
1.0 GB) as a Zarr v3 store in the bench's own SeaweedFS (behind Toxiproxy, which adds the
round-trip latency), chunks [1,1,Y,X], zstd1 after a byte shuffle (Blosc); the output: chunks
[T,1,24,32], the same codec. One LocalCluster of 2 worker
processes, 1 thread each, serves every tool (their RSS sampled every 20 ms during each run):
  climio      climio rechunk s3://IN s3://OUT -c ... --max-mem M -j 2 --scheduler ADDRESS
              (M per worker; chunk objects GET and PUT by the workers, 8 requests in flight each)
  to_zarr     xr.open_zarr(ObjectStore(IN), chunks={}).ta.chunk(target).to_zarr(ObjectStore(OUT))
              on the same cluster (no memory bound exists for it)
  raw         every input object GET and PUT to another prefix by the same 2 workers, 8 threads
              each: the floor of moving these bytes at this concurrency (no decoding or encoding)
  codec       the codec floor: the same 2 workers, each holding its half of the input objects in
              memory (fetched before the clock starts), decode them (numcodecs Blosc, as stored)
              and encode the target chunks of the same values (z levels split between the workers):
              the floor of the computing, no requests
Runs go in ABBA order per latency (the tools, then reversed); medians reported. Each output's
values are compared with the input's. Memory: the peak RSS of each worker process, and of the
climio command itself (its summary's peak minus its workers'). Ratios: to_zarr / climio and
climio / raw (targets: >= 1.5 and <= 1.5).
"""

import argparse
import json
import os
import resource
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


def _cpu_self() -> float:
    t = os.times()
    return t.user + t.system


def workers_cpu(client) -> float:
    return sum(client.run(_cpu_self).values())


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_climio(s3, client, address, out, args, src_dir=None):
    cmd = [CLIMIO, "rechunk", "s3://climio/bench/in.zarr", f"s3://climio/bench/{out}", *args["climio"],
           "--scheduler", address, "--json", "--force"]
    workers = worker_peaks(client)
    env = {**os.environ, **s3.env()}
    if src_dir:   # another checkout's command (its process only: the shared workers run this one's block code)
        env["PYTHONPATH"] = src_dir
    cpu0 = workers_cpu(client)
    t0 = time.perf_counter()
    p = _Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Sampler(workers + [p.pid]) as sampled:
        stdout, stderr = p.communicate()
    wall = time.perf_counter() - t0
    cpu = workers_cpu(client) - cpu0 + CHILD_CPU.get(p.pid, 0.0)
    if p.returncode:
        raise SystemExit(f"climio failed: {stderr.strip().splitlines()[-1]}")
    summary = json.loads(stdout)
    peaks = [sampled.peak[w] for w in workers]
    own = sampled.peak[p.pid]
    phases = ", ".join(f"{k} {v:.2f}" for k, v in summary.get("phases", ()))
    print(f"    (climio: conversion {summary['seconds']:.2f} s of the command's {wall:.2f} s, the command's own CPU "
          f"{CHILD_CPU.get(p.pid, 0.0):.2f} s"
          + (f"; phases: {phases}, exit {wall - sum(v for _, v in summary['phases']):.2f}" if phases else "") + ")",
          flush=True)
    CONVERSION.setdefault(src_dir or "", []).append(summary["seconds"])
    return wall, peaks, own, summary.get("retries", 0), cpu


CHILD_CPU = {}


class _Popen(subprocess.Popen):
    """Popen whose wait records the child's CPU seconds (os.wait4's rusage) in CHILD_CPU."""

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            CHILD_CPU[pid] = ru.ru_utime + ru.ru_stime
        return pid, sts


CONVERSION = {}   # src dir ("": this one) -> climio's own "seconds" (define the output, run the tasks, check)


def run_to_zarr(s3, client, address, out, args):
    ep = s3.endpoint
    workers = worker_peaks(client)
    cpu0 = workers_cpu(client) + own_cpu()
    t0 = time.perf_counter()
    with Sampler(workers) as sampled:
        _to_zarr(ep, args, out)
    wall = time.perf_counter() - t0
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0


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
    addrs = sorted(client.scheduler_info()["workers"])
    cpu0 = workers_cpu(client) + own_cpu()
    t0 = time.perf_counter()
    with Sampler(workers) as sampled:
        futs = [client.submit(_copy_part, keys[i::2], env, pure=False, workers=[addrs[i]]) for i in range(2)]
        nbytes = sum(f.result() for f in futs)
    wall = time.perf_counter() - t0
    assert nbytes == args["in_bytes"]
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0


def _fetch_part(keys, env):
    """In a worker: the compressed objects of its z levels, held in memory for _codec_part."""
    import os as _os
    _os.environ.update(env)
    from climio.stores.chunks import ObjectChunks
    got = ObjectChunks("s3://climio/bench/in.zarr").get_many(keys)
    return [(k, bytes(got[k])) for k in keys]


def _codec_part(objs, shape, target):
    """In a worker: decode its input chunks [1,1,Y,X] (Blosc zstd1 shuffle, as stored) into one
    [T,Y,X] slab per z level, then encode that slab's target chunks [T,1,ty,tx]: the computing of a
    rechunk with no requests. Returns the values' bytes encoded."""
    import numcodecs
    import numpy as _np
    codec = numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE, typesize=4)
    t, _, y, x = shape
    slabs = {}
    for key, data in objs:
        ti, zi = (int(v) for v in key.split("/")[2:4])
        slab = slabs.setdefault(zi, _np.empty((t, y, x), "<f4"))
        slab[ti] = _np.frombuffer(codec.decode(data), "<f4").reshape(y, x)
    n = 0
    for slab in slabs.values():
        for j in range(0, y, target[2]):
            for i in range(0, x, target[3]):
                n += len(codec.encode(_np.ascontiguousarray(slab[:, j:j + target[2], i:i + target[3]])))
    return n


def run_codec(s3, client, address, out, args):
    keys, shape = args["keys"], args["shape"]
    addrs = sorted(client.scheduler_info()["workers"])
    parts = [[k for k in keys if int(k.split("/")[3]) % 2 == i] for i in range(2)]
    held = [client.submit(_fetch_part, parts[i], s3.env(), pure=False, workers=[addrs[i]]) for i in range(2)]
    from distributed import wait
    wait(held)
    workers = worker_peaks(client)
    cpu0 = workers_cpu(client) + own_cpu()
    t0 = time.perf_counter()
    with Sampler(workers) as sampled:
        futs = [client.submit(_codec_part, held[i], shape, args["target"], pure=False, workers=[addrs[i]])
                for i in range(2)]
        assert sum(f.result() for f in futs) > 0
    wall = time.perf_counter() - t0
    del held, futs
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0


def _warm():
    """In a worker: import what the tools' tasks import (xarray, zarr, obstore, climio's block code)."""
    import obstore  # noqa: F401
    import xarray  # noqa: F401
    import zarr  # noqa: F401

    import climio.rechunking.blocks  # noqa: F401
    import climio.stores.chunks  # noqa: F401


TOOLS = {"climio": run_climio, "to_zarr": run_to_zarr, "raw": run_raw, "codec": run_codec}


def check(s3, out, ref):
    """Every value of the output equal to the input's, one z level at a time (bounded memory)."""
    import xarray as xr
    from zarr.storage import ObjectStore
    got = xr.open_zarr(ObjectStore(s3.endpoint.obstore("climio", f"bench/{out}"), read_only=True))["ta"]
    assert got.encoding["chunks"] == tuple(ref["target"]), got.encoding["chunks"]
    with xr.open_dataset(ref["src"]) as ds:
        for z in range(got.shape[1]):
            np.testing.assert_array_equal(got[:, z].values, ds["ta"][:, z].values)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=96)
    ap.add_argument("--shape", help="T,Z,Y,X of the input (default: T of --t, 4, 96, 128)")
    ap.add_argument("--max-mem", default="16MiB", help="per worker")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--check-once", action="store_true", help="compare each tool's output with the input in the "
                                                                "first ABBA round only (large inputs)")
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
    shape = [int(v) for v in a.shape.split(",")] if a.shape else [a.t, 4, 96, 128]
    target = (shape[0], 1, 24, 32)
    with S3Server(data_dir=tmp / "s3") as s3:
        os.environ.update(s3.env())   # the workers inherit the endpoint (through the proxy)
        src = tmp / "in.nc"
        write_4d(src, shape, chunks=[1, 1, *shape[2:]], dtype="f4")
        p = subprocess.run([CLIMIO, "rechunk", src, "s3://climio/bench/in.zarr", "-c",
                            "ta:" + ",".join(map(str, [1, 1, *shape[2:]])),
                            "--compression", "zstd1+shuffle", "-j", "1"], env={**os.environ, **s3.env(direct=True)},
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        ref = {"src": src, "target": target}
        listing = ObjectChunks("s3://climio/bench/in.zarr", s3.direct_endpoint).listing()
        keys = sorted(k for k in listing if k.startswith("ta/c/"))
        in_bytes = sum(listing[k][0] for k in keys)
        args = {"climio": ["-c", "ta:" + ",".join(map(str, target)), "--compression", "zstd1+shuffle",
                           "--max-mem", a.max_mem, "-j", "2"],
                "target": target, "keys": keys, "in_bytes": in_bytes, "shape": shape}
        print(f"input: {4 * np.prod(shape) / 1e6:.1f} MB {shape} in {len(keys)} objects ({in_bytes / 1e6:.1f} MB "
              f"stored), target chunks {list(target)}, --max-mem {a.max_mem} per worker, 2 workers x 1 thread; "
              f"load {os.getloadavg()[0]:.1f}")
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
                        wall, peaks, own, retries, cpu = TOOLS[tool](s3, client, cluster.scheduler_address, out,
                                                                     args)
                        if tool not in ("raw", "codec") and (rep == 0 or not a.check_once):
                            check(s3, out, ref)
                        res[tool].append((wall, max(peaks), own, cpu))
                        print(f"  latency {lat:g} ms {tool:8s} {wall:6.2f} s  cpu {cpu:6.2f} s  worker peak "
                              f"{max(peaks) / 2**20:6.1f} MiB"
                              + (f"  command {own / 2**20:6.1f} MiB  retries {retries}" if own is not None else "")
                              + f"  load {os.getloadavg()[0]:.1f}", flush=True)
                conv = statistics.median(CONVERSION[""])
                if a.baseline_src:
                    base = statistics.median(CONVERSION[a.baseline_src])
                    print(f"  latency {lat:g} ms: climio's conversion {conv:.2f} s, climio@base's {base:.2f} s "
                          f"(base/now {base / conv:.2f})", flush=True)
                rows.append((lat, conv, {t: (statistics.median(w for w, _, _, _ in v), max(p for _, p, _, _ in v),
                                             max((o for _, _, o, _ in v if o is not None), default=None),
                                             statistics.median(c for _, _, _, c in v))
                                         for t, v in res.items()}))
        s3.set_latency(0)
    _table(rows, a.max_mem)


def _table(rows, max_mem) -> None:
    print(f"\nlatency | tool        | median wall s | median CPU s | worker peak MiB | command peak MiB   "
          f"(load {os.getloadavg()[0]:.1f})")
    for lat, conv, r in rows:
        for t, (w, p, o, cpu) in r.items():
            print(f"{lat:7g} | {t:11s} | {w:13.2f} | {cpu:12.2f} | {p / 2**20:15.1f} | "
                  f"{'' if o is None else f'{o / 2**20:.1f}'}")
        c, x = r["climio"][0], r["to_zarr"][0]
        floor = max(r["raw"][0], r["codec"][0])
        which = "raw" if r["raw"][0] >= r["codec"][0] else "codec"
        print(f"{lat:7g} | ratios: to_zarr/climio {x / c:.2f} (target >= 1.5), climio/max(codec, raw) {c / floor:.2f} "
              f"(target <= 1.5; the floor is {which}), bound {max_mem} per worker")
        print(f"{lat:7g} | climio's conversion alone (no process start-up, which to_zarr in this process does not "
              f"pay either) {conv:.2f} s: to_zarr/climio {x / conv:.2f}, climio/max(codec, raw) {conv / floor:.2f}")


if __name__ == "__main__":
    main()
