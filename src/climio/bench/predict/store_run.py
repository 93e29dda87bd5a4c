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


def decode_of(label, rates, stack) -> tuple:
    """(B/s, where from) of decoding `label` through `stack`: its calibrated rate (or its family's),
    else the built-in profile's (as `climio predict` falls back to)."""
    from climio.model import object_store as om
    from climio.model.profile import default_profile
    bps, measured = om.stack_decode(rates.stack(stack), label)
    if bps is not None:
        return bps, ("nothing to decode" if measured == "none" else f"{stack} decoding {measured}, climio calibrate --store")
    return default_profile().decode(label), "built-in default"


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
    if p["wire_s"] >= p["cpu_s"] + p["decode_s"]:
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
                          "bound": _bound(p), "gets": p["gets"], "bytes": p["bytes"], "slabs": p["slabs"],
                          "decode_Bps": dec[0] if math.isfinite(dec[0]) else None, "decode_source": dec[1],
                          "path": [f"{p['gets']} GETs in {p['slabs']} reads", f"{s.concurrency:.1f} in flight",
                                   f"decode {dec[1]}"]},
            "profile": rates.endpoint, "profile_source": rates.source}


def _one(ctx, grid, s3, cfg, url, rates, say, canary_ref=None) -> int:
    """Describe, predict and measure one configuration; its records written; how many."""
    from climio.dataset.description import describe
    from climio.measure.object_reads import slab_walls
    from climio.model.object_store import predict_layout, slabs_of
    desc = describe(url, "v", s3.endpoint.url)
    dec = decode_of(desc.codecs, rates, cfg.stack)
    p = predict_layout(desc, desc.chunks, desc.shards, cfg.read, rates, cfg.stack, dec[0])
    params = _params(cfg, desc, p, dec, rates)
    params["load_1min"], params["cores"] = round(os.getloadavg()[0], 2), os.cpu_count() or 1
    if canary_ref:
        now = canary(s3.endpoint, canary_ref[0], cfg.stack)
        params["canary"] = {"s": now, "at_calibration_s": canary_ref[1], "slowdown": now / canary_ref[1]}
    slabs = slabs_of(desc, cfg.read)
    walls = []
    for rep in range(grid.reps):
        state = s3.evict()
        w = slab_walls(s3.endpoint, url, "v", slabs, cfg.stack, 1)[0]
        walls.append(w)
        metrics = {"wall_s": w, "bytes": p["bytes"], "ops": p["gets"]}
        ctx.run.writer.write(make_record(STUDY, params, metrics, state, rep, "ok", ctx.run.platform_id))
    meas = sorted(walls)[len(walls) // 2]
    say(f"predict {cfg.id}: predicted {p['time_s']:.3g} s, measured {meas:.3g} s ({p['time_s'] / meas:.2f}x)")
    return len(walls)


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
    t0 = time.perf_counter()
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
                arrays = {}
                for done, cfg in enumerate(sorted(configs, key=lambda c: c.latency_ms)):
                    url = arrays.get(cfg.array_key)
                    if url is None:
                        url = arrays[cfg.array_key] = f"{base}/predict-seed{grid.seed}/a{len(arrays)}.zarr"
                        write_array(s3.direct_endpoint, url, cfg, grid.seed + len(arrays))
                    s3.set_latency(cfg.latency_ms)
                    try:
                        n += _one(ctx, grid, s3, cfg, url, rates[cfg.latency_ms], say,
                                  refs[(cfg.latency_ms, cfg.stack)])
                    except ClimioError as exc:
                        line = str(exc).splitlines()[0]
                        ctx.run.writer.write(make_record(STUDY, {**cfg.to_dict(), "config": cfg.id, "reason": line},
                                                         {"wall_s": 0.0}, {"state": "cold", "note": "not run"}, 0,
                                                         "error", ctx.run.platform_id))
                        say(f"predict {cfg.id}: not measured: {line}")
                        n += 1
                    say(f"predict --store: {done + 1}/{len(configs)} configurations, {time.perf_counter() - t0:.0f} s")
            finally:
                s3.set_latency(0)
                delete_prefix(s3.direct_endpoint, f"{base}/predict-seed{grid.seed}/")
    return n
