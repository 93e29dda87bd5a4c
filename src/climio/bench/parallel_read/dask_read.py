"""The Dask path (beyond the thesis): the same files read with xarray + Dask on a `distributed`
cluster, per-task times from the scheduler's task stream (`distributed.get_task_stream`).

    LocalCluster(n_workers=N, threads_per_worker=1)     default: N worker processes on this node
    --scheduler tcp://host:8786                         an existing cluster (dask-jobqueue's
                                                        SLURMCluster/PBSCluster, or `dask-mpi` inside an
                                                        mpirun/srun allocation, print this address)

One chunk per worker: a shared file is opened with chunks of E/N elements, a per-task file set with
one chunk per file; a task is that chunk's read (xarray's getter) plus the check of its values
(element i = float(i)) and its stream checksum. The task time is the span of the block's tasks in the
task stream; the rate definitions are the study's (summary.task_rates). Before each repetition the
client evicts every file (posix_fadvise DONTNEED; a remote cluster must share the file system and
the eviction only acts on the client's node, which the record says).
"""

import time

import numpy as np

from ...errors import InputError
from ...measure.series import storage_read_bytes
from ...records import SCHEMA_VERSION, now_iso
from .run import check_storage, file_bytes
from .summary import host_layout, task_rates

CONNECT_TIMEOUT_S = 10


def connect(scheduler=None, workers=1):
    """(client, cluster or None); an unreachable scheduler is one InputError line."""
    from distributed import Client, LocalCluster
    if scheduler:
        try:
            return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s"), None
        except (OSError, TimeoutError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler}: {exc.__class__.__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else 'no answer'}") from None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=50)
    return Client(cluster), cluster


def _digest(block, block_info=None):
    """[bytes, mismatches, checksum] of one block (runs on a worker)."""
    from ...measure.series import StreamChecksum
    start = block_info[0]["array-location"][0][0]
    data = np.ascontiguousarray(block, dtype="<f8")
    ck = StreamChecksum()
    ck.update(data)
    bad = int(np.count_nonzero(data != np.arange(start, start + data.size, dtype=np.float64)))
    return np.array([data.nbytes, bad, int(ck.value)], dtype=np.uint64)


def _key_parts(key):
    if isinstance(key, tuple):
        return key[0], key[1:]
    if isinstance(key, str) and key.startswith("("):
        import ast
        try:
            t = ast.literal_eval(key)
            return t[0], t[1:]
        except (ValueError, SyntaxError):
            pass
    return key, ()


def _storage_sum(before, after):
    """Bytes the workers fetched from storage between two client.run(storage_read_bytes) answers
    ({worker: bytes}); None when a worker lacks the counter or left in between."""
    if set(before) != set(after) or None in before.values() or None in after.values():
        return None
    return sum(after[w] - before[w] for w in after)


def paths_of(top, file_set, ranks):
    return [top / "shared.nc"] if file_set == "shared" else [top / f"{file_set}-{i}.nc" for i in range(ranks)]


def run_dask(grid, top, ranks, platform_id, sink) -> None:
    """Every file set of the grid at `ranks` workers; records go to sink(extra)(rec)."""
    import dask
    import xarray as xr
    from distributed import get_task_stream

    from ...cache import COLD_THRESHOLD, evict, resident_fraction
    client, cluster = connect(grid.scheduler, ranks)
    try:
        nworkers = len(client.scheduler_info()["workers"])
        import socket
        hostname = client.run(socket.gethostname)   # {worker address: host name}
        for fs in grid.file_sets:
            paths = paths_of(top, fs, ranks)
            elems = file_bytes(grid, fs) // 8
            if fs == "shared":
                if elems < ranks:
                    raise InputError(f"more ranks than the file can split: {elems} elements over {ranks} workers")
                chunk = -(-elems // ranks)
            else:
                chunk = -1
            for rep in range(grid.reps):
                dsets = [xr.open_dataset(p, engine="netcdf4", chunks={"dim1": chunk}, cache=False) for p in paths]
                arrays = [d["var"].data for d in dsets]
                digests = [a.map_blocks(_digest, dtype=np.uint64, chunks=((3,) * a.numblocks[0],),
                                        name=f"parallel-read-digest-{i}-{rep}") for i, a in enumerate(arrays)]
                names = {}
                for i, (a, dg) in enumerate(zip(arrays, digests)):
                    names[a.name] = i
                    names[dg.name] = i
                for p in paths:
                    evict(p)
                resident = [resident_fraction(p) for p in paths]
                io0 = client.run(storage_read_bytes)     # each worker process, outside the timed job
                t0 = time.perf_counter()
                epoch0 = time.time()
                with get_task_stream(client) as ts:
                    futures = client.compute(digests)
                    results = client.gather(futures)
                # A one-block graph is fused into its finalize task and that task's 'original-' data task,
                # whose keys share the future's token.
                tokens = {str(fut.key).rsplit("-", 1)[-1]: i for i, (a, fut) in enumerate(zip(arrays, futures))
                          if a.numblocks[0] == 1}
                wall = time.perf_counter() - t0
                storage = _storage_sum(io0, client.run(storage_read_bytes))
                for d in dsets:
                    d.close()
                spans = {}
                for t in ts.data:
                    name, idx = _key_parts(t["key"])
                    if name in names:
                        blk = (names[name], idx[0] if idx else 0)
                    elif isinstance(name, str) and name.rsplit("-", 1)[-1] in tokens:
                        blk = (tokens[name.rsplit("-", 1)[-1]], 0)
                    else:
                        continue
                    for ss in t.get("startstops", []):
                        if ss.get("action") == "compute":
                            lo, hi, w = spans.get(blk, (ss["start"], ss["stop"], t.get("worker", "")))
                            spans[blk] = (min(lo, ss["start"]), max(hi, ss["stop"]), w)
                res = [r.reshape(-1, 3) for r in results]
                blocks = [(i, b) for i, r in enumerate(res) for b in range(len(r))]
                per_bytes = [int(res[i][b][0]) for i, b in blocks]
                per_bad = [int(res[i][b][1]) for i, b in blocks]
                per_ck = [f"{int(res[i][b][2]):016x}" for i, b in blocks]
                times = [spans[blk][1] - spans[blk][0] if blk in spans else float("nan") for blk in blocks]
                if any(not t > 0 for t in times):
                    times = [wall] * len(blocks)   # the stream missed a block: fall back to the job time
                hosts = [hostname.get(spans[blk][2], str(spans[blk][2])) if blk in spans else "" for blk in blocks]
                nodes, per_node, host_idx = host_layout(hosts)
                nbytes = sum(per_bytes)
                rates = task_rates(nbytes, times)
                cold = [resident[i] <= COLD_THRESHOLD for i, _ in blocks]
                rec = {
                    "study": "parallel-read",
                    "params": {"experiment": "dask", "stack": "xarray+dask", "pattern": "sequential",
                               "access": "independent", "collective": False, "file_set": fs, "files": len(paths),
                               "ranks": ranks, "workers": nworkers, "tasks": len(blocks), "nodes": nodes,
                               "tasks_per_node": per_node, "hosts": hosts,
                               "buffer_bytes": (chunk if chunk > 0 else elems) * 8,
                               "file_bytes": sum(p.stat().st_size for p in paths), "elements": elems,
                               "dtype": "float64", "library": f"dask {dask.__version__}, xarray {xr.__version__}",
                               "scheduler": grid.scheduler or "LocalCluster", "hints_requested": {}, "hints": {}},
                    "metrics": {"bytes": nbytes, "wall_s": wall, "task_max_s": max(times),
                                "task_mean_s": sum(times) / len(times), "rate_MBps": rates["slowest_MBps"],
                                "rate_mean_task_MBps": rates["mean_task_MBps"],
                                "rate_slowest_task_MBps": rates["slowest_MBps"],
                                "rate_job_MBps": nbytes / wall / 1e6,
                                "epoch_start_us": int(epoch0 * 1e6), "epoch_end_us": int((epoch0 + wall) * 1e6),
                                "per_rank": {"total": times, "bytes": per_bytes, "checksum": per_ck,
                                             "rate_MBps": rates["per_task_MBps"], "host": host_idx},
                                "imbalance": max(times) / (sum(times) / len(times)),
                                "verified": not any(per_bad), "mismatches": sum(per_bad)}
                    | ({"storage_read_bytes": storage} if storage is not None else {}),
                    "cache": {"state": "cold" if all(cold) else "warm", "requested": "cold",
                              "method": "posix_fadvise(DONTNEED) of every file by the client"
                                        + (" (remote workers: only the client's node)" if grid.scheduler else ""),
                              "resident_fraction_max": max(resident),
                              "per_rank": ["cold" if c else "warm" for c in cold],
                              "resident_fraction": [resident[i] for i, _ in blocks]},
                    "rep": rep, "status": "ok", "time": now_iso(), "platform_id": platform_id,
                    "schema": SCHEMA_VERSION,
                }
                sink(check_storage(rec))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
