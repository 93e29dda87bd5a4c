"""The object-store validation (`climio bench predict --store s3://BUCKET/PREFIX`): the read-time
model of Zarr stores in S3 against measured reads, on arrays the calibration never read.

Without --endpoint-url the bench starts climio's own server (SeaweedFS behind Toxiproxy,
climio.stores.server) with BUCKET, and injects each latency of --latency (default 0 and 20 ms)
on the proxy; with --endpoint-url it measures that endpoint as it is (0 ms only, nothing evicted).
Per latency, `climio calibrate --store s3://BUCKET/PREFIX/calibrate --quick` runs first, as a
user runs it (its own process, a profile directory of the run's); then per drawn configuration
(store_space.draw_store) one Zarr v3 array is written under PREFIX/predict-seedN/, described from
the store's metadata (climio.dataset.description), predicted (climio.model.object_store, with the
stack's calibrated decode rate of the array's codec) and read --reps times, the server's volume
files evicted before each; one record per repetition, in the file study's record shape (summary.py
takes both).

What is measured (the same for every configuration): the hyperslab reads, wall and CPU seconds;
the stack's client and the array's metadata (zarr.json) are made and read before, timed apart as
open_s and not predicted (measure.object_reads.phased_read), with the data GETs' times (the first,
the slowest, their sum) that say whether a slow repetition waited on the store or on the CPU. The
repetitions go in rounds: every configuration of a latency once, then again, so a burst of the
shared machine's load lands on one repetition of several configurations, not on all of one (the
median of the repetitions is the measured time). Before each, a busy loop takes the share of a core
the process gets then (cpu_share_now); predicted_now_s is the model's time with that share instead
of the calibration's, recorded beside the prediction the targets are judged on.
"""

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from climio.base.errors import ClimioError, InputError
from climio.runs.records import make_record
from . import STUDY
from .store_space import draw_store

CALIBRATE_TIMEOUT_S = 600


@contextlib.contextmanager
def _env(values: dict):
    """os.environ with `values` set (the server's AWS_* variables), as it was after."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _values(dims, shape, seed) -> np.ndarray:
    """The synthetic field (climio.data.fields, as the calibration's arrays) in the array's shape:
    a 4-D field of the same size, its leading dimensions folded."""
    from climio.data import fields
    lead = [n for d, n in zip(dims, shape) if d not in ("lev", "lat", "lon")]
    four = (math.prod(lead), *(dict(zip(dims, shape)).get(d, 1) for d in ("lev", "lat", "lon")))
    return np.asarray(fields.values_4d(four, seed=seed, dtype=np.float32), dtype=np.float32).reshape(shape)


def write_array(endpoint, url: str, cfg, seed: int, var: str = "v") -> None:
    """The configuration's array as a Zarr v3 group at `url`, written through zarr-python."""
    import zarr
    from zarr.storage import ObjectStore
    from climio.data.zarr_writer import zarr_codecs
    from climio.dataset.options import parse_compression
    from climio.stores.endpoint import parse_s3_url
    u = parse_s3_url(url)
    root = zarr.open_group(ObjectStore(endpoint.obstore(u.bucket, u.key)), mode="w", zarr_format=3)
    comp = parse_compression(cfg.codec) if cfg.codec != "none" else None
    a = root.create_array(var, shape=cfg.shape, chunks=cfg.chunks, shards=cfg.shards, dtype="f4", fill_value=0.0,
                          dimension_names=list(cfg.dims), **zarr_codecs(comp, 4))
    a[...] = _values(cfg.dims, cfg.shape, seed)


def calibrate(run_path: Path, data_dir: Path, url: str, env: dict, endpoint_url, latency_ms: float, say):
    """`climio calibrate --store URL --quick` in its own process: the StoreRates it measured."""
    from climio.model.object_store import StoreRates
    out = data_dir / f"calibrate-{latency_ms:g}ms"
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    argv = [exe, "calibrate", "--store", url, "--quick", "-o", str(out), "--force"]
    if endpoint_url:
        argv += ["--endpoint-url", endpoint_url]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env={**os.environ, **env, "CLIMIO_PROFILE_DIR": str(data_dir / "profiles")},
                          capture_output=True, text=True, timeout=CALIBRATE_TIMEOUT_S)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise ClimioError(f"climio calibrate --store at {latency_ms:g} ms failed: {tail}")
    doc = json.loads((out / "object-stores.json").read_text())
    shutil.copy(out / "object-stores.json", run_path / f"object-stores-{latency_ms:g}ms.json")
    (key, rates), = doc["object_stores"].items()
    say(f"predict --store: calibrated at {latency_ms:g} ms in {time.perf_counter() - t0:.0f} s")
    return StoreRates.from_dict(rates)


def given_rates(path, endpoint):
    """The endpoint's StoreRates from an object-stores.json (`--calibration`)."""
    from climio.model.object_store import StoreRates, store_key
    stores = json.loads(Path(path).read_text()).get("object_stores") or {}
    key = store_key(endpoint.describe()["endpoint_url"])
    if key not in stores:
        raise InputError(f"--calibration {path}: no rates of {key} (it has {', '.join(sorted(stores)) or 'none'})")
    return StoreRates.from_dict(stores[key])


CANARY_SHAPE, CANARY_CHUNKS, CANARY_READS = (1, 1, 64, 256), (1, 1, 16, 32), 16


def write_canary(endpoint, url: str) -> None:
    """A small uncompressed array whose one-chunk hyperslabs are the bench's canary."""
    import zarr
    from zarr.storage import ObjectStore
    from climio.stores.endpoint import parse_s3_url
    u = parse_s3_url(url)
    root = zarr.open_group(ObjectStore(endpoint.obstore(u.bucket, u.key)), mode="w", zarr_format=3)
    a = root.create_array("v", shape=CANARY_SHAPE, chunks=CANARY_CHUNKS, dtype="f4", fill_value=0.0, compressors=None)
    a[...] = np.arange(math.prod(CANARY_SHAPE), dtype="f4").reshape(CANARY_SHAPE)


def canary(endpoint, url: str, stack: str) -> float:
    """Seconds per one-chunk hyperslab of the canary through `stack`: read right after the
    calibration and again before every configuration, the ratio says how much slower the shared
    machine (or the store) is then than when the rates were measured."""
    from climio.measure.stacks_s3 import OBJECT_STACKS
    reader = OBJECT_STACKS[stack](endpoint)
    reader.open(url, "v")
    try:
        per_row = CANARY_SHAPE[3] // CANARY_CHUNKS[3]
        t0 = time.perf_counter()
        for i in range(CANARY_READS):
            y, x = divmod(i, per_row)
            reader.read_slab([0, 0, y * CANARY_CHUNKS[2], x * CANARY_CHUNKS[3]], list(CANARY_CHUNKS))
        return (time.perf_counter() - t0) / CANARY_READS
    finally:
        reader.close()


def _bound(p) -> str:
    from climio.model.object_store import cpu_wall
    if p["wire_s"] >= cpu_wall(p["cpu_s"] + p["decode_s"], p.get("cpu_share", 1.0)):
        return "I/O"
    return "decode" if p["decode_s"] >= p["cpu_s"] else "CPU"


def _params(cfg, desc, p, dec, rates) -> dict:
    s = rates.stack(cfg.stack)
    return {"config": cfg.id, "seed_index": cfg.index, "object_store": True, "layout": desc.label(),
            "dims": list(cfg.dims), "rank": len(cfg.dims), "shape": list(cfg.shape), "dtype": "f4",
            "chunks": list(cfg.chunks), "shards": list(cfg.shards) if cfg.shards else None,
            "compression": desc.codecs, "codec_drawn": cfg.codec, "stored_ratio": desc.stored_ratio,
            "read": cfg.read, "read_kind": cfg.read, "stack": cfg.stack, "tasks": 1, "latency_ms": cfg.latency_ms,
            "predicted_s": p["time_s"],
            "predicted": {"io_s": p["io_s"], "decode_s": p["decode_s"], "cpu_s": p["cpu_s"], "wire_s": p["wire_s"],
                          "bound": _bound(p), "cpu_share": p.get("cpu_share", 1.0), "gets": p["gets"],
                          "bytes": p["bytes"], "slabs": p["slabs"],
                          "decode_Bps": dec[0] if math.isfinite(dec[0]) else None, "decode_source": dec[1],
                          "path": [f"{p['gets']} GETs in {p['slabs']} reads", f"{s.concurrency:.1f} in flight",
                                   f"decode {dec[1]}"]},
            "profile": rates.endpoint, "profile_source": rates.source}


class _Config:
    """One configuration across the rounds: described and predicted once, measured once a round."""

    def __init__(self, s3, cfg, url, rates, canary_ref=None):
        from climio.dataset.description import describe
        from climio.model.object_store import predict_layout, slabs_of
        from climio.profiles import decode_rate
        self.cfg, self.url, self.rates, self.walls = cfg, url, rates, []
        self.desc = describe(url, "v", s3.endpoint.url)
        self.dec = decode_rate(self.desc.codecs, None, rates, cfg.stack)
        self.p = predict_layout(self.desc, self.desc.chunks, self.desc.shards, cfg.read, rates, cfg.stack, self.dec[0])
        self.params = _params(cfg, self.desc, self.p, self.dec, rates)
        self.params["load_1min"], self.params["cores"] = round(os.getloadavg()[0], 2), os.cpu_count() or 1
        self.params["measured"] = ("hyperslab reads after the open: client and zarr.json timed apart as open_s, "
                                   "not predicted")
        self.params["cpu_share_at_calibration"] = rates.cpu_share
        if canary_ref:
            now = canary(s3.endpoint, canary_ref[0], cfg.stack)
            self.params["canary"] = {"s": now, "at_calibration_s": canary_ref[1], "slowdown": now / canary_ref[1]}
        self.slabs = slabs_of(self.desc, cfg.read)

    def measure(self, ctx, s3, rep: int) -> None:
        from dataclasses import replace
        from climio.measure.object_reads import cpu_share, phased_read
        from climio.model.object_store import predict_layout
        share = cpu_share()
        now = predict_layout(self.desc, self.desc.chunks, self.desc.shards, self.cfg.read,
                             replace(self.rates, cpu_share=share), self.cfg.stack, self.dec[0])["time_s"]
        state = s3.evict()
        m = phased_read(s3.endpoint, self.url, "v", self.slabs, self.cfg.stack)
        self.walls.append(m["wall_s"])
        metrics = {**m, "bytes": self.p["bytes"], "ops": self.p["gets"], "cpu_share_now": share,
                   "predicted_now_s": now, "load_1min": round(os.getloadavg()[0], 2)}
        ctx.run.writer.write(make_record(STUDY, self.params, metrics, state, rep, "ok", ctx.run.platform_id))

    def line(self) -> str:
        w = sorted(self.walls)
        meas, t = w[len(w) // 2], self.p["time_s"]
        return (f"predict {self.cfg.id}: predicted {t:.3g} s, measured {meas:.3g} s ({t / meas:.2f}x; "
                f"repetitions {min(w):.3g}-{max(w):.3g} s)")


def _server(grid, data_dir):
    from climio.stores.endpoint import parse_s3_url
    u = parse_s3_url(grid.store)
    if not u.key:
        raise InputError(f"--store {grid.store}: give a prefix the bench may write under, s3://BUCKET/PREFIX")
    if grid.endpoint_url:
        from climio.stores.remote import RemoteStore
        return RemoteStore(grid.store, grid.endpoint_url)
    from climio.stores.server import S3Server
    return S3Server(data_dir=data_dir, buckets=(u.bucket,))


def _failed(ctx, cfg, exc, say) -> int:
    line = str(exc).splitlines()[0]
    ctx.run.writer.write(make_record(STUDY, {**cfg.to_dict(), "config": cfg.id, "reason": line}, {"wall_s": 0.0},
                                     {"state": "cold", "note": "not run"}, 0, "error", ctx.run.platform_id))
    say(f"predict {cfg.id}: not measured: {line}")
    return 1


def _rounds(ctx, grid, s3, configs, base, rates, refs, say) -> int:
    """Per latency, every configuration written, described and predicted, then measured once per
    round for --reps rounds; the records written; how many."""
    n, arrays, t0 = 0, {}, time.perf_counter()
    for lat in sorted({c.latency_ms for c in configs}):
        s3.set_latency(lat)
        live = []
        for cfg in (c for c in configs if c.latency_ms == lat):
            url = arrays.get(cfg.array_key)
            try:
                if url is None:
                    url = arrays[cfg.array_key] = f"{base}/predict-seed{grid.seed}/a{len(arrays)}.zarr"
                    write_array(s3.direct_endpoint, url, cfg, grid.seed + len(arrays))
                live.append(_Config(s3, cfg, url, rates[lat], refs[(lat, cfg.stack)]))
            except ClimioError as exc:
                n += _failed(ctx, cfg, exc, say)
        for rep in range(grid.reps):
            for c in list(live):
                try:
                    c.measure(ctx, s3, rep)
                    n += 1
                except ClimioError as exc:
                    live.remove(c)
                    n += _failed(ctx, c.cfg, exc, say)
            say(f"predict --store: {lat:g} ms, round {rep + 1}/{grid.reps} of {len(live)} configurations, "
                f"{time.perf_counter() - t0:.0f} s")
        for c in live:
            say(c.line())
    return n


def run_store_validation(ctx, grid) -> int:
    from climio.measure.progress import info
    from climio.stores.objects import delete_prefix
    say = info if ctx.progress else (lambda *_: None)
    data_dir = Path(ctx.data_dir) / f"predict-store-seed{grid.seed}"
    data_dir.mkdir(parents=True, exist_ok=True)
    configs = draw_store(grid.configs, grid.seed, grid.latency_list)
    words = [w.strip() for w in grid.only.split(",") if w.strip()]
    configs = [c for c in configs if not words or any(w in c.id for w in words)]
    base = grid.store.rstrip("/")
    n = 0
    with _server(grid, data_dir) as s3:
        env = s3.env() if hasattr(s3, "env") else {}
        with _env(env):
            try:
                canary_url = f"{base}/predict-seed{grid.seed}/canary.zarr"
                write_canary(s3.direct_endpoint, canary_url)
                rates = {0.0: given_rates(grid.calibration, s3.endpoint)} if grid.calibration else {}
                refs = {}
                for lat in sorted({c.latency_ms for c in configs}):
                    s3.set_latency(lat)
                    if lat not in rates:
                        rates[lat] = calibrate(ctx.run.path, data_dir, f"{base}/calibrate", env, grid.endpoint_url,
                                               lat, say)
                    for stack in sorted({c.stack for c in configs}):
                        refs[(lat, stack)] = (canary_url, canary(s3.endpoint, canary_url, stack))
                n = _rounds(ctx, grid, s3, configs, base, rates, refs, say)
            finally:
                s3.set_latency(0)
                delete_prefix(s3.direct_endpoint, f"{base}/predict-seed{grid.seed}/")
    return n
