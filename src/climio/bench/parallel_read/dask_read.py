"""The Dask path (beyond the thesis): the same files read with xarray + Dask on a `distributed`
cluster, per-task times from the scheduler's task stream (`distributed.get_task_stream`).

    measure.dask.Cluster(workers=N)                     default: a LocalCluster of N one-thread worker processes
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

import socket
import time

import numpy as np

from climio.base.errors import InputError
from ...measure.dask import Cluster
from ...measure.series import storage_read_bytes
from .task_record import file_bytes, task_record


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


def _task_spans(ts_data, names, tokens) -> dict:
    """{(array index, block index): (first start, last stop, worker)} of the compute intervals of
    each block's tasks in the task stream."""
    spans = {}
    for t in ts_data:
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
    return spans


def _timed_job(client, paths, chunk, rep):
    """One cold repetition over `paths`: (per-block outcomes, job wall seconds, epoch start, storage bytes)."""
    import xarray as xr
    from distributed import get_task_stream

    from climio.machine.cache import evict, resident_fraction
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
    spans = _task_spans(ts.data, names, tokens)
    res = [r.reshape(-1, 3) for r in results]
    blocks = [(i, b) for i, r in enumerate(res) for b in range(len(r))]
    times = [spans[blk][1] - spans[blk][0] if blk in spans else float("nan") for blk in blocks]
    if any(not t > 0 for t in times):
        times = [wall] * len(blocks)   # the stream missed a block: fall back to the job time
    hostname = client.run(socket.gethostname)   # {worker address: host name}
    per = [{"total": t, "bytes": int(res[i][b][0]), "mismatches": int(res[i][b][1]),
            "checksum": f"{int(res[i][b][2]):016x}", "resident": resident[i],
            "host": hostname.get(spans[(i, b)][2], str(spans[(i, b)][2])) if (i, b) in spans else ""}
           for (i, b), t in zip(blocks, times)]
    return per, wall, epoch0, storage


def run_dask(grid, top, ranks, platform_id, sink) -> None:
    """Every file set of the grid at `ranks` workers; records go to sink(extra)(rec)."""
    import dask
    import xarray as xr

    method = ("posix_fadvise(DONTNEED) of every file by the client"
              + (" (remote workers: only the client's node)" if grid.scheduler else ""))
    with Cluster(workers=ranks, scheduler=grid.scheduler) as cl:
        nworkers = cl.n_workers
        for fs in grid.file_sets:
            paths = paths_of(top, fs, ranks)
            elems = file_bytes(grid, fs) // 8
            if fs == "shared":
                if elems < ranks:
                    raise InputError(f"more ranks than the file can split: {elems} elements over {ranks} workers")
                chunk = -(-elems // ranks)
            else:
                chunk = -1
            params = {"experiment": "dask", "stack": "xarray+dask", "pattern": "sequential", "access": "independent",
                      "collective": False, "file_set": fs, "files": len(paths), "ranks": ranks, "workers": nworkers,
                      "buffer_bytes": (chunk if chunk > 0 else elems) * 8,
                      "file_bytes": sum(p.stat().st_size for p in paths), "elements": elems, "dtype": "float64",
                      "library": f"dask {dask.__version__}, xarray {xr.__version__}",
                      "scheduler": grid.scheduler or "LocalCluster"}
            for rep in range(grid.reps):
                per, wall, epoch0, storage = _timed_job(cl.client, paths, chunk, rep)
                job_rate = {"rate_job_MBps": sum(p["bytes"] for p in per) / wall / 1e6}
                sink(task_record(dict(params, tasks=len(per)), per, rep, platform_id, method, wall_s=wall,
                                 epoch=epoch0, storage=storage, extra_metrics=job_rate))
