"""Measuring the object-read study: one server, one Zarr array per GET size, rounds of cells.

Per latency (set on the proxy), per round, per (size, concurrency) cell: the raw-GET peer and the
stacks, in an order that alternates from cell to cell and round to round (ABBA), each one:
open (untimed: Zarr metadata; the peer a HEAD, so both start with a live connection), evict the
server's volume files and check with mincore (cold) or read them (warm), time the GETs with the
server's storage counter around them, close. A record per measurement.
"""

import asyncio
import resource
import time
import zlib
from pathlib import Path

import numpy as np

from ...measure.series import Timer, storage_checked
from climio.runs.records import make_record
from climio.measure.stacks_s3 import OBJECT_STACKS
from ...stores.objects import delete_prefix, list_keys
from ...stores.remote import NOT_EVICTABLE, RemoteStore
from ...stores.server import S3Server
from ...stores.timing import request_stats, timed_store
from . import PEER, STUDY, requests_for

BUCKET = "climio"
PREFIX = "object-read"
ARRAY_BLOCK_BYTES = 32 << 20


def _where(s3) -> tuple:
    """(bucket, prefix) the study writes its arrays under: its own server's, or --store's."""
    return getattr(s3, "bucket", BUCKET), getattr(s3, "prefix", PREFIX)


def _var(size: int) -> str:
    return f"s{size}"


def write_arrays(s3: S3Server, grid) -> dict:
    """One uncompressed float64 Zarr v3 array per GET size, chunk = size bytes; {size: [chunk keys]}."""
    import zarr
    from zarr.storage import ObjectStore
    bucket, prefix = _where(s3)
    store = ObjectStore(s3.direct_endpoint.obstore(bucket, prefix))
    root = zarr.open_group(store, mode="w", zarr_format=3)
    rng = np.random.default_rng(25)
    keys = {}
    for size in grid.size_list:
        n = max(requests_for(size, c, grid.total_bytes, grid.max_requests) for c in grid.concurrency_list)
        per = size // 8
        a = root.create_array(_var(size), shape=(n * per,), chunks=(per,), dtype="f8", compressors=None,
                              filters=None, fill_value=0.0)
        step = max(1, ARRAY_BLOCK_BYTES // size)
        for i in range(0, n, step):
            j = min(n, i + step)
            a[i * per:j * per] = rng.random((j - i) * per)
        chunk_keys = list_keys(s3.direct_endpoint, f"s3://{bucket}/{prefix}/{_var(size)}/c/")
        keys[size] = sorted(chunk_keys, key=lambda k: int(k.rsplit("/", 1)[1]))
        assert len(keys[size]) == n, (len(keys[size]), n)
    return keys


class _Peer:
    """obstore ranged GETs (0..size) of the chunk objects, `concurrency` in flight."""

    def __init__(self, s3, keys, size):
        import obstore
        self.obstore, self.keys, self.size = obstore, keys, size
        self.store = s3.endpoint.obstore(_where(s3)[0])
        self.obstore.head(self.store, keys[0])
        # an event loop of its own, made before the timing: asyncio.run() in the timed region took
        # 3-4 s to tear down after obstore's futures whenever Python's default SIGINT handler was in
        # place (asyncio.Runner then installs its own), which a caller of the study may well have
        self.loop = asyncio.new_event_loop()

    def read(self, n, conc, times):
        async def one(key, sem):
            async with sem:
                t0 = time.perf_counter()
                data = await self.obstore.get_range_async(self.store, key, start=0, end=self.size)
                times.append(time.perf_counter() - t0)
                return data

        async def all_():
            sem = asyncio.Semaphore(conc)
            return await asyncio.gather(*(one(k, sem) for k in self.keys[:n]))
        return self.loop.run_until_complete(all_())   # obstore Bytes, not copied

    def close(self):
        self.loop.close()


class _Stack:
    def __init__(self, s3, name, size, times):
        self.reader = OBJECT_STACKS[name](s3.endpoint, wrap=lambda st: timed_store(st, times))
        self.reader.open("s3://{}/{}".format(*_where(s3)), _var(size))
        self.size = size
        times.clear()   # the open's metadata GETs are not requests of the measurement

    def read(self, n, conc, times):
        import zarr
        with zarr.config.set({"async.concurrency": conc}):
            return [self.reader.read_bytes(0, n * self.size)]

    def close(self):
        self.reader.close()


def measure(s3, grid, keys, stack, size, conc, rep, platform_id) -> dict:
    n = requests_for(size, conc, grid.total_bytes, grid.max_requests)
    times = []
    src = _Peer(s3, keys[size], size) if stack == PEER else _Stack(s3, stack, size, times)
    try:
        if grid.page_cache == "cold":
            state = s3.evict()
        else:
            from climio.machine import cache
            state = {**cache.prepare(s3.volume_files(), "warm"), "where": "object store volume files"}
        io0 = s3.storage_read_bytes()
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with Timer() as tm:
            data = src.read(n, conc, times)
        # first touches of fresh memory (the GET buffers; zarr's output array besides): on a VM
        # each can cost a trip to the hypervisor, which shows up as system time
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
        io1 = s3.storage_read_bytes()
    finally:
        src.close()
    nbytes, crc = 0, 0
    for part in data:   # checked outside the timed region: the stack and the peer deliver the same bytes
        view = memoryview(part).cast("B")
        nbytes, crc = nbytes + view.nbytes, zlib.crc32(view, crc)
    metrics = {"bytes": nbytes, "ops": n, **tm.metrics(), **request_stats(times), "crc32": crc,
               "minor_faults": faults}
    # the server's storage reads, not this process's: the bytes came over the network
    metrics.pop("storage_read_bytes", None)
    if io0 is not None and io1 is not None:
        metrics["storage_read_bytes"] = io1 - io0
    metrics["rate_MBps"] = nbytes / tm.wall_s / 1e6
    cache_field = storage_checked(state, metrics, n * size) if state["state"] == "cold" else state
    params_store = {"store": "remote" if state.get("method") == NOT_EVICTABLE else "own server"}
    params = {"stack": stack, "get_bytes": size, "concurrency": conc, "latency_ms": s3.latency_ms,
              "requests": n, "page_cache": grid.page_cache, "peer": PEER,
              "server": s3.describe()["server"], "proxy": s3.describe()["proxy"],
              "endpoint": s3.describe()["endpoint_url"], **params_store}
    status = "ok" if nbytes == n * size else "error"
    return make_record(STUDY, params, metrics, cache_field, rep=rep, status=status, platform_id=platform_id)


def cells(grid):
    return [(s, c) for s in grid.size_list for c in grid.concurrency_list]


def run_object_read(ctx, grid) -> int:
    from ...measure.progress import info
    remote = RemoteStore(grid.store, grid.endpoint_url or None) if grid.store else None
    with (remote or S3Server(data_dir=Path(ctx.data_dir))) as s3:
        if remote:
            info(f"{STUDY}: {grid.store} at {remote.endpoint.describe()['endpoint_url']}; writing the arrays")
        else:
            info(f"{STUDY}: SeaweedFS on 127.0.0.1:{s3.s3_port} behind Toxiproxy on :{s3.proxy_port}; writing the arrays")
        try:
            written = _rounds(ctx, grid, s3, write_arrays(s3, grid))
        finally:
            if remote:   # the arrays written under the user's prefix go again
                delete_prefix(remote.endpoint, "s3://{}/{}/".format(*_where(s3)))
        write_store_profile(ctx.run, s3)
    return written


def write_store_profile(run, s3) -> None:
    """store_profile.json in the run directory: per latency, the per-GET latency, per-connection
    and aggregate bandwidth and the concurrency each GET size needs (summary.store_profile), with
    the store it describes (never a credential): the object-store rates a read-time model takes."""
    import json
    from climio.runs.records import atomic_write_text, read_records
    from .summary import summarise
    profile = summarise(read_records(run.path))["profile"]
    doc = {"store": s3.describe(), "platform_id": run.platform_id,
           "by_latency_ms": {f"{lat:g}": {**p, "sizes": {str(k): v for k, v in p["sizes"].items()}}
                             for lat, p in profile.items()}}
    atomic_write_text(run.path / "store_profile.json", json.dumps(doc, indent=2, sort_keys=True))


def _rounds(ctx, grid, s3, keys) -> int:
    """Per latency, per round, per cell: the peer and the stacks, the order alternating (ABBA)."""
    from ...measure.progress import info
    written = 0
    order = [PEER, *grid.stack_list]
    for lat in grid.latency_list:
        s3.set_latency(lat)
        for rep in range(grid.reps):
            for i, (size, conc) in enumerate(cells(grid)):
                for stack in (order if (i + rep) % 2 == 0 else order[::-1]):
                    ctx.run.writer.write(measure(s3, grid, keys, stack, size, conc, rep, ctx.run.platform_id))
                    written += 1
            info(f"{STUDY}: latency {lat:g} ms, round {rep + 1}/{grid.reps} done")
    return written
