"""`climio calibrate --store s3://BUCKET/PREFIX`: an object store's rates for the read-time model.

The object-read study's calibration grid (small to medium GETs, concurrency 1 and 8, the raw-GET
peer and the Zarr stacks) measured on the store, then the GETs each stack keeps in flight
(concurrency.py) and how fast each decodes each codec climio writes (decode.py), fitted into a
model.object_store.StoreRates keyed by the endpoint's URL."""

from ...model.object_store import byte_cpu, rates_from_cells, store_key
from .summary import summarise

CALIBRATE_GRID = {"sizes": "16KiB,64KiB,256KiB,1MiB", "concurrency": "1,8",
                  "stacks": "zarr-obstore,zarr-fsspec", "total": "4MiB", "max_requests": 32, "reps": 2}
QUICK_GRID = {**CALIBRATE_GRID, "sizes": "16KiB,256KiB,1MiB", "reps": 1, "max_requests": 16}


def store_rates(records, endpoint, url: str, latency_ms: float = 0.0, concurrency=None, quick: bool = False):
    """StoreRates from the object-read records of one store; `concurrency` (stack -> GETs in flight)
    and the stacks' decode rates per codec measured here when not given."""
    from .concurrency import measure_concurrency
    from .decode import DECODE_CODECS, measure_decode
    cells = summarise(records)["cells"]
    stacks = sorted({c["stack"] for c in cells} - {"raw-obstore"})
    if concurrency is None:
        concurrency = measure_concurrency(endpoint, url, stacks)
        decode = measure_decode(endpoint, url, stacks, DECODE_CODECS["quick" if quick else "full"],
                                reps=3 if quick else 4)
        for stack, d in decode.items():
            c = concurrency[stack]
            c["decode_Bps"] = d["decode_Bps"]
            # the twin's 8 MiB beyond its 8 GETs' and chunks' own CPU: moving the bytes
            c["byte_cpu_s"] = byte_cpu(d["twin_cpu_s"], d["twin_bytes"], d["twin_chunks"],
                                       c.get("get_cpu_s", 0.0), c.get("chunk_cpu_s", 0.0))
    rates = rates_from_cells(cells, latency_ms, endpoint.describe().get("endpoint_url") or str(url), concurrency,
                             source="climio calibrate --store")
    return store_key(rates.endpoint, latency_ms), rates
