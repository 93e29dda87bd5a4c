"""The read-time model on object storage (issue 25 item 4): the GETs a read makes, their schedule,
and `climio calibrate --store` against the real test server, its prediction against a measured read."""

import json
import math

import numpy as np

from climio.layout import chunks_touched
from climio.model import object_store as om

from conftest import run_cli


def test_read_tasks_count_the_gets_zarr_makes():
    shape, chunks = [24, 2, 45, 90], [1, 1, 15, 30]
    start, count = [0, 0, 0, 0], [1, 1, 45, 90]
    tasks = om.read_tasks(shape, chunks, None, start, count, 4)
    assert len(tasks) == chunks_touched(shape, chunks, start, count) == 9
    assert all(t == [15 * 30 * 4] for t in tasks)
    # shards over time: an xy read touches 9 shards, each an index GET then one inner chunk, in turn
    sh = om.read_tasks(shape, chunks, [24, 1, 15, 30], start, count, 4)
    assert len(sh) == 9 and all(t == [24 * om.INDEX_ENTRY_BYTES + 4, 1800] for t in sh)
    # an xt read covers whole shards: one GET of the shard (chunks and index) each
    xt = om.read_tasks(shape, chunks, [24, 1, 15, 30], [0, 0, 0, 0], [24, 1, 1, 90], 4)
    assert xt == [[24 * 1800 + 24 * om.INDEX_ENTRY_BYTES + 4]] * 3


def test_cpu_units_and_the_cpu_bound():
    shape, chunks, shards = [24, 2, 45, 90], [1, 1, 15, 30], [24, 1, 15, 30]
    assert om.cpu_units(shape, chunks, None, [0, 0, 0, 0], [1, 1, 45, 90]) == (9, 0)
    assert om.cpu_units(shape, chunks, shards, [0, 0, 0, 0], [24, 1, 1, 90]) == (72, 3)   # 3 shards, 24 chunks each
    slow = om.StoreRates("http://x", 0.0, 1e12, 1e12, {"s": om.StackObjectRates(0.0, 1e12, 8.0, chunk_cpu_s=1e-3,
                                                                                shard_cpu_s=5e-3)})
    tasks = om.read_tasks(shape, chunks, shards, [0, 0, 0, 0], [24, 1, 1, 90], 4)
    p = om.predict_read([tasks], slow, "s", cpu_units=[(72, 3)])
    assert math.isclose(p["time_s"], 72e-3 + 15e-3)        # the CPU, not the wire, sets this read's time


def test_schedule_in_waves_and_the_aggregate_cap():
    assert om.makespan([1.0] * 20, 10) == 2.0 and om.makespan([1.0] * 21, 10) == 3.0
    rates = om.StoreRates("http://x", 0.02, 100e6, 1e9, {"s": om.StackObjectRates(0.02, 100e6, 4.0)})
    p = om.predict_read([[[1 << 20]] * 8], rates, "s")
    assert math.isclose(p["io_s"], 2 * (0.02 + (1 << 20) / 100e6))
    capped = om.StoreRates("http://x", 0.0, 1e12, 10e6, {"s": om.StackObjectRates(0.0, 1e12, 8.0)})
    assert math.isclose(om.predict_read([[[1 << 20]] * 8], capped, "s")["io_s"], 8 * (1 << 20) / 10e6)
    back = om.StoreRates.from_dict(json.loads(json.dumps(rates.to_dict())))
    assert back == rates


def test_calibrate_store_then_predict_a_read(s3_server, tmp_path, monkeypatch):
    """calibrate --store on the test server with 20 ms per round trip: the profile keeps the store
    under its endpoint (no credential), the stacks' measured concurrency, and predicts an xy and an
    xt read of a chunked Zarr store within 1.5x of their measured time."""
    from climio.data.writer import write_4d
    from climio.data.zarr_writer import write_zarr_4d
    from climio.stores.objects import upload
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    s3_server.set_latency(20)
    try:
        out = run_cli("calibrate", "--store", "s3://climio/cal-test", "--quick", "-o", tmp_path / "cal", timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        text = (tmp_path / "cal" / "object-stores.json").read_text()
        assert s3_server._secret not in text and s3_server._key not in text
        assert not list((tmp_path / "profiles").glob("*.json"))     # no file-system profile made up
        prof = json.loads(text)
        key = om.store_key(s3_server.endpoint.url)
        rates = om.StoreRates.from_dict(prof["object_stores"][key])
        assert prof["object_stores"] == json.loads(om.rates_path(prof["platform_id"]).read_text())["object_stores"]
        assert 0.015 < rates.latency_s < 0.1                    # the 20 ms toxic is in every GET
        assert rates.stacks["zarr-obstore"].concurrency > 2     # zarr-python keeps several GETs in flight
        shape, chunks = [4, 1, 32, 64], [1, 1, 8, 16]
        write_zarr_4d(tmp_path / "m.zarr", shape, chunks=chunks, dtype="f4")
        upload(s3_server.endpoint, tmp_path / "m.zarr", "s3://climio/model-test")
        url = "s3://climio/model-test/m.zarr"
        out = run_cli("predict", url, "--read", "xy", "--read", "xt", "--check", "--reps", "2", "--json", timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout)
        assert got["layout"]["chunks"] == chunks and [r["read"] for r in got["reads"]] == ["xy", "xt"]
        xt = got["reads"][1]
        assert xt["gets"] == 32 * 4 * 4 and xt["slabs"] == 32          # every chunk of each time series
        for r in got["reads"]:
            assert r["error"] <= 1.5, r                                  # predicted within 1.5x of measured
        adv = run_cli("advise", url, "--read", "xt", timeout=120)
        assert adv.returncode == 0, adv.stderr[-3000:]
        first = adv.stdout.splitlines()
        assert first[0].startswith("1. ") and "predicted" in first[0] and "climio rechunk" in adv.stdout
        # netCDF-4 in the bucket: a reference file and Zarr copies against downloading it
        write_4d(tmp_path / "f.nc", shape, chunks=[1, 1, 32, 64], dtype="f4")
        upload(s3_server.endpoint, tmp_path / "f.nc", "s3://climio/model-test")
        adv = run_cli("advise", "s3://climio/model-test/f.nc", "--read", "xt", timeout=120)
        assert adv.returncode == 0, adv.stderr[-3000:]
        assert "kerchunk reference" in adv.stdout and "climio rechunk FILE.nc s3://BUCKET/ta-xt.zarr -c ta:4,1,1,64" in adv.stdout
    finally:
        s3_server.set_latency(0)
