"""Rechunking S3 -> S3 on Dask clusters: `climio rechunk --scheduler` against xarray's
`open_zarr(...).chunk(...).to_zarr()`, rechunker on Dask, cubed, and raw GET+PUT of the same bytes.

    .venv/bin/python bench/rechunk_s3_vs_peers.py [--t 96] [--shape T,Z,Y,X] [--max-mem 16MiB] [--reps 2]
        [--latency 0 20] [--tools climio,rechunker,...]

The input: a float32 field [T,Z,Y,X] (default [96,4,96,128]: 18.9 MB; --shape 1024,5,192,256 is
1.0 GB) as a Zarr v3 store in the bench's own SeaweedFS (behind Toxiproxy, which adds the
round-trip latency), chunks [1,1,Y,X], zstd1 after a byte shuffle (the spec's blosc codec:
cname zstd, clevel 1, shuffle, typesize 4), and a Zarr v2 copy of it (in-v2.zarr: numcodecs
Blosc, the same codec; rechunker 0.5.4 reads and writes v2 only). The output: chunks
[T,1,24,32], the same codec (v3 blosc, or v2 numcodecs Blosc for the v2 tools). One LocalCluster
of 2 worker processes, 1 thread each, serves climio, to_zarr, raw and codec (their RSS sampled
every 20 ms during each run); rechunker and cubed run in venvs of their own (other zarr-python
versions), so each starts its own 2 worker processes:
  climio      climio rechunk s3://IN s3://OUT -c ... --max-mem M -j 2 --scheduler ADDRESS
              (M per worker; chunk objects GET and PUT by the workers, 8 requests in flight each)
  climio v2   the same from in-v2.zarr with --zarr-format 2 (rechunker's comparison)
  to_zarr     xr.open_zarr(ObjectStore(IN), chunks={}).ta.chunk(target).to_zarr(ObjectStore(OUT))
              on the same cluster (no memory bound exists for it)
  rechunker   rechunker 0.5.4 (zarr 2.18, s3fs, Dask distributed; venv
              ~/.cache/climio-bench/rechunker-0.5.4-s3, made with pip on first use):
              rechunk(zarr.open_group(in-v2.zarr), {ta: target}, max_mem=M, target, temp_store)
              .execute() on a LocalCluster of 2 worker processes x 1 thread started by its script
              (M per task, so per worker), source, target and temporary store all fsspec mappers
              on the bucket; compared with climio v2
  cubed threads / cubed processes   cubed 0.27.0 (zarr 3, s3fs; venv ~/.cache/climio-bench/cubed-0.27.0):
              cubed.store(cubed.from_zarr(IN/ta).rechunk(target), a v3 array ta created with the
              blosc codec above) under Spec(allowed_mem=M, reserved_mem=0, work_dir=s3://... in the
              bucket) on its "threads" or "processes" executor with max_workers 2; compared with climio
              (at the default shape and 16 MiB it plans two rechunk stages of 8 tasks each through an
              intermediate array in the bucket; at 128 MiB one stage)
  raw         every input object GET and PUT to another prefix by the same 2 workers, 8 threads
              each: the floor of moving these bytes at this concurrency (no decoding or encoding)
  codec       the codec floor: the same 2 workers, each holding its half of the input objects in
              memory (fetched before the clock starts), decode them (numcodecs Blosc, as stored)
              and encode the target chunks of the same values (z levels split between the workers):
              the floor of the computing, no requests
Runs go in ABBA order per latency (the tools, then reversed); medians reported. Before each run the
server's volume files are evicted from the page cache (S3Server.evict, checked with mincore) and a
rechunker/cubed output prefix left by the previous round is deleted (untimed). Each output's
values are compared with the input's. Memory: the peak RSS of each worker process (for rechunker
and cubed: the largest of their script's child processes; cubed threads has none, its one process
counts), and of the command itself (climio: its summary's peak minus its workers'; the peers: their
script's process). CPU: the shared workers' CPU over the run plus the command's (wait4); for the
peers their process tree's (wait4: children they reaped). "conv s" is the conversion alone: climio's
summary seconds, the peers' own timer from opening the source to the end of the writes (their
imports and cluster or pool start-up excluded), the whole run for the in-process tools. Ratios:
to_zarr / climio, rechunker / climio v2, cubed / climio (best executor), the fastest Python peer /
climio (target >= 1.5), and climio / max(raw, codec) (target <= 1.5). A peer whose venv cannot be
made here (no wheel, a dependency conflict, no network) is reported in one line and its row says
why; the other tools still run.
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
WORKERS = 2           # the shared LocalCluster's worker processes, climio's -j, the peers' workers
sys.path.insert(0, str(HERE))
from _peers import PeerError, peer_python, peer_versions  # noqa: E402
from rechunk_vs_peers import tree_pids  # noqa: E402

RECHUNKER = ("rechunker-0.5.4-s3", ("rechunker==0.5.4", "zarr<3", "xarray", "dask[array]", "distributed", "s3fs"),
             "import rechunker, zarr, s3fs, distributed; assert rechunker.__version__ == '0.5.4'",
             ("rechunker", "zarr", "dask", "distributed", "s3fs"))
CUBED = ("cubed-0.27.0", ("cubed==0.27.0", "s3fs"), "import cubed, s3fs, zarr; assert cubed.__version__ == '0.27.0'",
         ("cubed", "zarr", "s3fs"))


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
    """Peak RSS of given processes (a list, or a function giving them: a peer's process tree),
    sampled every 20 ms while a run goes (the Dask workers live across runs, so their ru_maxrss
    would be every run's)."""

    def __init__(self, pids):
        import threading
        self.pids = pids if callable(pids) else (lambda fixed=list(pids): fixed)
        self.peak, self.stop = {}, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self.stop.is_set():
            for pid in self.pids():
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


def run_climio(s3, client, address, out, args, src_dir=None, fmt=3):
    src, opts = ("in.zarr", args["climio"]) if fmt == 3 else ("in-v2.zarr", args["climio_v2"])
    cmd = [CLIMIO, "rechunk", f"s3://climio/bench/{src}", f"s3://climio/bench/{out}", *opts,
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
    if fmt == 3:
        CONVERSION.setdefault(src_dir or "", []).append(summary["seconds"])
    return wall, peaks, own, summary.get("retries", 0), cpu, summary["seconds"]


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
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0, wall


def _to_zarr(ep, args, out):
    import xarray as xr
    import zarr.codecs as zc
    from zarr.storage import ObjectStore
    ds = xr.open_zarr(ObjectStore(ep.obstore("climio", "bench/in.zarr"), read_only=True), chunks={})
    var = ds["ta"].chunk(dict(zip(ds["ta"].dims, args["target"])))
    var.encoding = {}
    enc = {"ta": {"chunks": args["target"], "serializer": zc.BytesCodec(),   # the codec climio writes
                  "compressors": [zc.BloscCodec(cname="zstd", clevel=1, shuffle="shuffle", typesize=4)]}}
    var.to_dataset().to_zarr(ObjectStore(ep.obstore("climio", f"bench/{out}")), mode="w", encoding=enc,
                             zarr_format=3, consolidated=False)


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
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0, wall


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
    return wall, [sampled.peak[w] for w in workers], None, 0, workers_cpu(client) + own_cpu() - cpu0, wall


# The peers' scripts (each in its venv; the endpoint and keys come from the AWS_* environment, never argv).
# They print one JSON line: {"seconds": the conversion from opening the source to the last write}.
_S3_OPTIONS = r"""
import os
so = {"key": os.environ["AWS_ACCESS_KEY_ID"], "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
      "endpoint_url": os.environ["AWS_ENDPOINT_URL"], "client_kwargs": {"region_name": os.environ["AWS_REGION"]}}
"""

# rechunker 0.5.4 on its own LocalCluster: argv = in_path out_path tmp_path max_mem workers target_json
RECHUNKER_RUN = _S3_OPTIONS + r"""
import json, sys, time, fsspec, numcodecs, zarr
from distributed import Client, LocalCluster
from rechunker import rechunk
src, dst, tmp, mem, w, target = sys.argv[1:7]
w, target = int(w), tuple(json.loads(target))

def warm():
    import rechunker, s3fs, zarr  # noqa: F401

if __name__ == "__main__":
    with LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        client.run(warm)
        t0 = time.perf_counter()
        source = zarr.open_group(fsspec.get_mapper(f"s3://{src}", **so), mode="r")
        targets = {n: (target if n == "ta" else None) for n in source.array_keys()}
        opts = {"ta": {"compressor": numcodecs.Blosc(cname="zstd", clevel=1, shuffle=numcodecs.Blosc.SHUFFLE)}}
        plan = rechunk(source, targets, int(mem), fsspec.get_mapper(f"s3://{dst}", **so),
                       temp_store=fsspec.get_mapper(f"s3://{tmp}", **so), target_options=opts)
        plan.execute()
        print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)
"""

# cubed 0.27.0: argv = in_path out_path work_dir_url max_mem executor workers target_json
CUBED_RUN = _S3_OPTIONS + r"""
import json, sys, time, cubed, s3fs, zarr
from zarr.codecs import BloscCodec
from zarr.storage import FsspecStore
src, dst, work, mem, ex, w, target = sys.argv[1:8]
w, target = int(w), tuple(json.loads(target))

def store(path, read_only=False):
    fs = s3fs.S3FileSystem(asynchronous=True, skip_instance_cache=True, **so)
    return FsspecStore(fs, path=path, read_only=read_only)

if __name__ == "__main__":
    spec = cubed.Spec(work_dir=work, allowed_mem=int(mem), reserved_mem=0, executor_name=ex,
                      executor_options={"max_workers": w})
    t0 = time.perf_counter()
    inp = zarr.open_array(store(src, True), path="ta", mode="r")
    x = cubed.from_zarr(store(src, True), path="ta", spec=spec)
    root = zarr.open_group(store(dst), mode="w", zarr_format=3)
    out = root.create_array("ta", shape=x.shape, dtype=x.dtype, chunks=target, fill_value=inp.fill_value,
                            compressors=[BloscCodec(cname="zstd", clevel=1, shuffle="shuffle", typesize=4)],
                            dimension_names=inp.metadata.dimension_names, attributes=dict(inp.attrs))
    cubed.store(x.rechunk(target), out)
    print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)
"""


def run_peer(s3, argv):
    """Run a peer's script (argv) with the endpoint in its environment; (wall, [largest child peak
    or its own], own peak, 0, tree CPU, its conversion seconds)."""
    t0 = time.perf_counter()
    p = _Popen(argv, env={**os.environ, **s3.env()}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Sampler(lambda: tree_pids(p.pid)) as sampled:
        stdout, stderr = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        raise PeerError(f"exit {p.returncode}: {(lines or ['no output'])[-1].strip()[:300]}")
    conv = json.loads(stdout.strip().splitlines()[-1])["seconds"]
    own = sampled.peak.get(p.pid, 0)
    kids = [v for pid, v in sampled.peak.items() if pid != p.pid]
    return wall, [max(kids) if kids else own], own, 0, CHILD_CPU.get(p.pid, 0.0), conv


def run_rechunker(s3, client, address, out, args):
    return run_peer(s3, [args["py"]["rechunker"], "-c", RECHUNKER_RUN, "climio/bench/in-v2.zarr",
                              f"climio/bench/{out}", f"climio/bench/tmp-{out}", str(args["max_mem"]),
                              str(WORKERS), json.dumps(args["target"])])


def run_cubed(executor):
    def run(s3, client, address, out, args):
        return run_peer(s3, [args["py"]["cubed"], "-c", CUBED_RUN, "climio/bench/in.zarr", f"climio/bench/{out}",
                                  f"s3://climio/bench/tmp-{out}", str(args["max_mem"]), executor, str(WORKERS),
                                  json.dumps(args["target"])])
    return run


def _warm():
    """In a worker: import what the tools' tasks import (xarray, zarr, obstore, climio's block code)."""
    import obstore  # noqa: F401
    import xarray  # noqa: F401
    import zarr  # noqa: F401

    import climio.rechunking.blocks  # noqa: F401
    import climio.stores.chunks  # noqa: F401


TOOLS = {"climio": run_climio, "climio v2": lambda *x: run_climio(*x, fmt=2), "to_zarr": run_to_zarr,
         "rechunker": run_rechunker, "cubed threads": run_cubed("threads"), "cubed processes": run_cubed("processes"),
         "raw": run_raw, "codec": run_codec}
PEER_VENVS = {"rechunker": RECHUNKER, "cubed threads": CUBED, "cubed processes": CUBED}


def check(s3, out, ref):
    """Every value of the output equal to the input's, one z level at a time (bounded memory)."""
    import xarray as xr
    from zarr.storage import ObjectStore
    import warnings
    with warnings.catch_warnings():   # cubed's output has no consolidated metadata: xarray's fallback warns
        warnings.simplefilter("ignore", RuntimeWarning)
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
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)} (default all)")
    ap.add_argument("--baseline-src", help="also run the command of another checkout's src/ (e.g. the commit "
                                           "before a change: git archive REV src | tar -x -C DIR), as climio@base")
    a = ap.parse_args(argv)
    unknown = [t for t in a.tools.split(",") if t not in TOOLS]
    if unknown:
        ap.error(f"unknown tool(s) {', '.join(unknown)}; the tools are {', '.join(TOOLS)}")
    for t in [t for t in TOOLS if t not in a.tools.split(",")]:
        del TOOLS[t]
    if a.baseline_src:
        TOOLS["climio@base"] = lambda *x: run_climio(*x, src_dir=a.baseline_src)
    tmp = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    try:
        _main(a, tmp)
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def peer_pythons() -> tuple:
    """({"rechunker"|"cubed": its venv's python}, {tool: why it cannot run}) for the selected peers
    (their venvs made with pip on first use)."""
    pys, errors, unavailable = {}, {}, {}
    for tool, (name, packages, probe, dists) in PEER_VENVS.items():
        key = tool.split()[0]
        if tool not in TOOLS:
            continue
        if key not in pys and key not in errors:
            try:
                pys[key] = peer_python(name, packages, probe)
                print(f"{key}: {peer_versions(pys[key], dists)} ({pys[key]})")
            except PeerError as exc:
                errors[key] = str(exc)
        if key in errors:
            unavailable[tool] = errors[key]
            print(f"{tool}: not run: {errors[key]}")
    return pys, unavailable


def make_inputs(s3, src, shape) -> None:
    """The input field as the v3 store in.zarr and (for climio v2 and rechunker) its v2 copy in-v2.zarr."""
    from climio.data.writer import write_4d
    write_4d(src, shape, chunks=[1, 1, *shape[2:]], dtype="f4")
    copies = [("in.zarr", "zstd1+shuffle", [])]
    if "climio v2" in TOOLS or "rechunker" in TOOLS:
        copies.append(("in-v2.zarr", "blosc_zstd1+shuffle", ["--zarr-format", "2"]))   # numcodecs Blosc: the same
    for name, comp, extra in copies:
        p = subprocess.run([CLIMIO, "rechunk", src, f"s3://climio/bench/{name}", "-c",
                            "ta:" + ",".join(map(str, [1, 1, *shape[2:]])), "--compression", comp, "-j", "1", *extra],
                           env={**os.environ, **s3.env(direct=True)}, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def _main(a, tmp):  # long: set-up, the runs and the table in one place, read top to bottom
    from distributed import Client, LocalCluster

    from climio.stores.chunks import ObjectChunks
    from climio.stores.objects import delete_prefix
    from climio.stores.server import S3Server
    shape = [int(v) for v in a.shape.split(",")] if a.shape else [a.t, 4, 96, 128]
    target = (shape[0], 1, 24, 32)
    pys, unavailable = peer_pythons()
    with S3Server(data_dir=tmp / "s3") as s3:
        os.environ.update(s3.env())   # the workers inherit the endpoint (through the proxy)
        src = tmp / "in.nc"
        make_inputs(s3, src, shape)
        ref = {"src": src, "target": target}
        listing = ObjectChunks("s3://climio/bench/in.zarr", s3.direct_endpoint).listing()
        keys = sorted(k for k in listing if k.startswith("ta/c/"))
        in_bytes = sum(listing[k][0] for k in keys)
        chunks = ["-c", "ta:" + ",".join(map(str, target)), "--max-mem", a.max_mem, "-j", str(WORKERS)]
        args = {"climio": chunks + ["--compression", "zstd1+shuffle"],
                "climio_v2": chunks + ["--compression", "blosc_zstd1+shuffle", "--zarr-format", "2"],
                "target": target, "keys": keys, "in_bytes": in_bytes, "shape": shape, "py": pys,
                "max_mem": parse_size(a.max_mem)}
        print(f"input: {4 * np.prod(shape) / 1e6:.1f} MB {shape} in {len(keys)} objects ({in_bytes / 1e6:.1f} MB "
              f"stored), target chunks {list(target)}, --max-mem {a.max_mem} per worker, {WORKERS} workers x 1 "
              f"thread; load {os.getloadavg()[0]:.1f}")
        tools = [t for t in TOOLS if t not in unavailable]
        rows = []
        with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster) as client:
            client.run(_warm)   # every tool finds the libraries imported: the first run does not pay for them
            for lat in a.latency:
                s3.set_latency(lat)
                order = tools + tools[::-1]
                res, failed = {t: [] for t in tools}, {}
                CONVERSION.clear()
                CONVERSION.update({"": [], a.baseline_src or "": []})
                for rep in range(a.reps // 2 or 1):
                    for tool in order:
                        out = f"{tool.replace('@', '-').replace(' ', '-')}-{lat:g}.zarr"
                        if tool in PEER_VENVS:    # no --force there: the last round's output and temporary go first
                            for prefix in (out, f"tmp-{out}"):
                                delete_prefix(s3.direct_endpoint, f"s3://climio/bench/{prefix}")
                        state = s3.evict()["state"]
                        try:
                            wall, peaks, own, retries, cpu, conv = TOOLS[tool](s3, client, cluster.scheduler_address,
                                                                               out, args)
                        except PeerError as exc:
                            failed[tool] = str(exc)
                            print(f"  latency {lat:g} ms {tool:15s} FAILED: {exc}", flush=True)
                            continue
                        if tool not in ("raw", "codec") and (rep == 0 or not a.check_once):
                            check(s3, out, ref)
                        res[tool].append((wall, max(peaks), own, cpu, conv))
                        print(f"  latency {lat:g} ms {tool:15s} {wall:6.2f} s (conversion {conv:6.2f} s)  cpu "
                              f"{cpu:6.2f} s  worker peak {max(peaks) / 2**20:6.1f} MiB"
                              + (f"  command {own / 2**20:6.1f} MiB" if own is not None else "")
                              + (f"  retries {retries}" if tool.startswith("climio") else "")
                              + f"  {state}  load {os.getloadavg()[0]:.1f}", flush=True)
                conv = statistics.median(CONVERSION[""]) if CONVERSION[""] else None
                if a.baseline_src and conv:
                    base = statistics.median(CONVERSION[a.baseline_src])
                    print(f"  latency {lat:g} ms: climio's conversion {conv:.2f} s, climio@base's {base:.2f} s "
                          f"(base/now {base / conv:.2f})", flush=True)
                med = {t: {"wall": statistics.median(x[0] for x in v), "peak": max(x[1] for x in v),
                           "own": max((x[2] for x in v if x[2] is not None), default=None),
                           "cpu": statistics.median(x[3] for x in v), "conv": statistics.median(x[4] for x in v)}
                       for t, v in res.items() if v}
                why = {**unavailable, **{t: f"failed: {failed[t]}" for t in failed if t not in med}}
                rows.append((lat, med, why))
        s3.set_latency(0)
    _table(rows, a.max_mem)


def _ratio_lines(lat, r) -> list:
    """The issue's ratios from one latency's medians (whatever of the tools ran)."""
    lines = []
    c, c2 = r.get("climio"), r.get("climio v2")
    floor = [r[t] for t in ("raw", "codec") if t in r]
    if c and floor:
        f = max(floor, key=lambda m: m["wall"])
        which = "raw" if f is r.get("raw") else "codec"
        lines.append(f"climio/max(codec, raw) {c['wall'] / f['wall']:.2f}, its conversion alone "
                     f"{c['conv'] / f['wall']:.2f} (target <= 1.5; the floor is {which})")
    pairs = [("to_zarr", "to_zarr", c), ("rechunker", "rechunker", c2)]
    cubed = [t for t in ("cubed threads", "cubed processes") if t in r]
    if cubed:
        pairs.append((min(cubed, key=lambda t: r[t]["wall"]), "cubed", c))
    found = []
    for tool, label, ref in pairs:
        if tool in r and ref:
            w, v = r[tool]["wall"] / ref["wall"], r[tool]["conv"] / ref["conv"]
            vs = "climio v2" if ref is c2 else "climio"
            found.append((w, tool, vs))
            lines.append(f"{tool}/{vs} {w:.2f} whole runs, {v:.2f} conversions alone")
    if found:
        w, tool, vs = min(found)
        lines.append(f"the fastest Python peer is {tool}: {tool}/{vs} {w:.2f} (target >= 1.5)")
    return lines


def _table(rows, max_mem) -> None:
    print(f"\nlatency | tool            | median wall s | conv s | median CPU s | worker peak MiB | command peak MiB"
          f"   (load {os.getloadavg()[0]:.1f}; bound {max_mem} per worker)")
    for lat, r, why in rows:
        for t, m in r.items():
            own = "" if m["own"] is None else f"{m['own'] / 2**20:.1f}"
            print(f"{lat:7g} | {t:15s} | {m['wall']:13.2f} | {m['conv']:6.2f} | {m['cpu']:12.2f} | "
                  f"{m['peak'] / 2**20:15.1f} | {own}")
        for t, text in why.items():
            print(f"{lat:7g} | {t:15s} | not run: {text}")
        for line in _ratio_lines(lat, r):
            print(f"{lat:7g} | {line}")


if __name__ == "__main__":
    main()
