"""The time of every GET a zarr store makes, and their distribution for a record.

    times = []
    store = timed_store(store, times)      a zarr WrapperStore: one entry per data GET
    request_stats(times)                   {"gets", "req_p50_ms", "req_p90_ms", "req_p99_ms", ...}
"""

import time

import numpy as np

METADATA_SUFFIXES = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")


def timed_store(store, times: list):
    """`store` wrapped so that every GET of a chunk (metadata excluded) appends its seconds to `times`."""
    from zarr.storage import WrapperStore

    class TimedGets(WrapperStore):
        async def get(self, key, prototype, byte_range=None):
            t0 = time.perf_counter()
            out = await self._store.get(key, prototype, byte_range)
            if not key.endswith(METADATA_SUFFIXES):
                times.append(time.perf_counter() - t0)
            return out

        async def get_partial_values(self, prototype, key_ranges):
            key_ranges = list(key_ranges)
            t0 = time.perf_counter()
            out = await self._store.get_partial_values(prototype, key_ranges)
            per = (time.perf_counter() - t0)
            times.extend([per] * len(key_ranges))   # issued together: each took the batch's time at most
            return out
    return TimedGets(store)


def request_stats(times) -> dict:
    t = np.sort(np.asarray(times, dtype=float)) * 1e3
    if not len(t):
        return {"gets": 0}
    q = np.percentile(t, [50, 90, 99])
    return {"gets": int(len(t)), "req_p50_ms": round(float(q[0]), 3), "req_p90_ms": round(float(q[1]), 3),
            "req_p99_ms": round(float(q[2]), 3), "req_min_ms": round(float(t[0]), 3),
            "req_max_ms": round(float(t[-1]), 3), "req_mean_ms": round(float(t.mean()), 3)}
