"""One record per repetition of N read tasks, shared by the launchers of run.py (MPI ranks) and
dask_read.py (Dask blocks): apart from both so that neither imports the other."""

from climio.measure.series import storage_checked, total_storage_bytes
from .summary import STUDY

SMALL_DIVISOR = 16
PER_TASK = object()       # task_record: the storage bytes are the sum of the tasks' own counts


def file_bytes(grid, file_set) -> int:
    return max(8, grid.size // SMALL_DIVISOR // 8 * 8) if file_set == "small" else grid.size



def task_record(params, per, rep, platform_id, method, wall_s=None, epoch=None, storage=PER_TASK,
                extra_metrics=None) -> dict:
    """The record of one repetition of N tasks (MPI ranks of task.py, Dask blocks of dask_read.py), as
    read.c's emit() writes it, from each task's outcome: total (seconds), bytes, checksum, mismatches,
    resident (fraction), host, storage (bytes or None) unless the job's `storage` is given, and start /
    end (epoch seconds) unless the job's `wall_s` and `epoch` (start) are given; open, read, close and ops go to per_rank when present.
    `method` says how the cache was made cold; the storage-share check is applied (check_storage)."""
    from climio.machine.cache import COLD_THRESHOLD
    from climio.runs.records import make_record
    from .summary import host_layout, task_rates
    hosts = [p["host"] for p in per]
    nodes, per_node, host_idx = host_layout(hosts)
    total = [p["total"] for p in per]
    nbytes = sum(p["bytes"] for p in per)
    rates = task_rates(nbytes, total)
    if wall_s is None:
        epoch, wall_s = min(p["start"] for p in per), max(p["end"] for p in per) - min(p["start"] for p in per)
    cold = [p["resident"] <= COLD_THRESHOLD for p in per]
    if storage is PER_TASK:
        storage = total_storage_bytes(p.get("storage") for p in per)
    keys = [k for k in ("open", "read", "close", "total", "bytes", "ops", "checksum") if k in per[0]]
    metrics = {"bytes": nbytes, "wall_s": wall_s, "task_max_s": max(total), "task_mean_s": sum(total) / len(total),
               "rate_MBps": rates["slowest_MBps"], "rate_mean_task_MBps": rates["mean_task_MBps"],
               "rate_slowest_task_MBps": rates["slowest_MBps"], **(extra_metrics or {}),
               "epoch_start_us": int(epoch * 1e6), "epoch_end_us": int((epoch + wall_s) * 1e6),
               "per_rank": {k: [p[k] for p in per] for k in keys} | {"rate_MBps": rates["per_task_MBps"],
                                                                    "host": host_idx},
               "imbalance": max(total) / (sum(total) / len(total)),
               "verified": all(p["mismatches"] == 0 for p in per), "mismatches": sum(p["mismatches"] for p in per)}
    if storage is not None:
        metrics["storage_read_bytes"] = storage
    cache = {"state": "cold" if all(cold) else "warm", "requested": "cold", "method": method,
             "resident_fraction_max": max(p["resident"] for p in per),
             "per_rank": ["cold" if c else "warm" for c in cold], "resident_fraction": [p["resident"] for p in per]}
    params = dict(params, nodes=nodes, tasks_per_node=per_node, hosts=hosts, hints_requested={}, hints={})
    return check_storage(make_record(STUDY, params, metrics, cache, rep, "ok", platform_id))


def check_storage(rec) -> dict:
    """The storage-share check of a record (the chunking study's helper and keys: metrics.
    storage_needed_bytes, cache.effective, cache.storage_share). Every byte a task reads is its own
    (per-task files, disjoint pieces and strides, one Dask chunk per task), so a cold repetition must
    fetch metrics.bytes from storage; metrics.storage_read_bytes is the sum over the ranks or Dask
    workers, open to close. Without that counter the record says "unverified"."""
    m = rec["metrics"]
    if rec.get("status", "ok") == "ok" and "effective" not in rec["cache"]:
        rec["cache"] = storage_checked(rec["cache"], m, m["bytes"])
    return rec
