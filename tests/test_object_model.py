"""The read-time model on object storage (issue 25 item 4): the GETs a read makes, their schedule,
and `climio calibrate --store` against the real test server, its prediction against a measured read."""

import json
import math

import numpy as np

from climio.dataset.layout import chunks_touched
from climio.model import object_store as om
from climio import profiles as on_disk

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


def test_read_tasks_match_the_gets_zarr_python_makes_on_edge_shards():
    """Counted against zarr-python itself: a shard is read whole only when the read touches every
    chunk of the shard's grid, so an edge shard that the array's end cuts (here lat 72-95 of a 72-row
    shard: 2 of its 4 chunks exist) costs its index and then each chunk, even when the read covers all
    the chunks it holds (the store sweep's worst configuration, seed 3: 4 GETs a map, not 2)."""
    import zarr
    from zarr.storage import MemoryStore

    class Counting(MemoryStore):
        gets = 0

        async def get(self, key, prototype, byte_range=None):
            if not key.endswith("zarr.json"):
                Counting.gets += 1
            return await super().get(key, prototype, byte_range)

    shape, chunks, shards = (48, 96, 48), (47, 18, 48), (47, 72, 48)
    store = Counting()
    arr = zarr.create_array(store, name="v", shape=shape, chunks=chunks, shards=shards, dtype="f4")
    arr[:] = np.arange(math.prod(shape), dtype="f4").reshape(shape)
    arr = zarr.open_array(store, path="v", mode="r")
    reads = {"xy": ([5, 0, 0], [1, 96, 48]), "xy last step": ([47, 0, 0], [1, 96, 48]),
             "t": ([0, 80, 3], [48, 1, 1]), "box in the edge shard": ([0, 72, 0], [48, 24, 48]),
             "whole": ([0, 0, 0], list(shape))}
    for name, (start, count) in reads.items():
        Counting.gets = 0
        arr[tuple(slice(s, s + n) for s, n in zip(start, count))]
        tasks = om.read_tasks(list(shape), list(chunks), list(shards), start, count, 4)
        assert sum(len(t) for t in tasks) == Counting.gets, name
    xy = om.read_tasks(list(shape), list(chunks), list(shards), [5, 0, 0], [1, 96, 48], 4)
    assert not isinstance(xy[0], om.Ranged) and isinstance(xy[1], om.Ranged) and len(xy[1]) == 3


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
        assert prof["object_stores"] == json.loads(on_disk.rates_path(prof["platform_id"]).read_text())["object_stores"]
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
        assert first[0].startswith("advice for ") and first[1].startswith("predicted now")
        assert first[2].startswith("1. ") and "climio rechunk" in adv.stdout
        # netCDF-4 in the bucket: a reference file and Zarr copies against downloading it
        write_4d(tmp_path / "f.nc", shape, chunks=[1, 1, 32, 64], dtype="f4")
        upload(s3_server.endpoint, tmp_path / "f.nc", "s3://climio/model-test")
        adv = run_cli("advise", "s3://climio/model-test/f.nc", "--read", "xt", timeout=120)
        assert adv.returncode == 0, adv.stderr[-3000:]
        assert "kerchunk reference" in adv.stdout
        assert ("climio rechunk s3://climio/model-test/f.nc s3://climio/model-test/f-ta-xt.zarr -c ta:4,1,1,64 "
                f"--endpoint-url {s3_server.endpoint.url}") in adv.stdout   # written back beside the input
        assert "climio make-refs s3://climio/model-test/f.nc -o f.nc.kerchunk.json" in adv.stdout   # test_refs runs it
    finally:
        s3_server.set_latency(0)


def test_decoding_a_compressed_stores_chunks():
    """Chunks decoded after their GETs: beside the GETs still in flight, the last task's after the
    wire; the stack's CPU and all the decoding when that is longer. Nothing to decode: as before."""
    rates = om.StoreRates("http://x", 0.02, 100e6, 1e12, {"s": om.StackObjectRates(0.02, 100e6, 4.0)})
    tasks = [[[1 << 19]] * 8]                                # 8 chunks of 512 KiB stored, 1 MiB decoded
    plain = om.predict_read(tasks, rates, "s")
    wire = 2 * (0.02 + (1 << 19) / 100e6)
    assert math.isclose(plain["time_s"], wire) and plain["decode_s"] == 0 and plain["io_s"] == plain["time_s"]
    fast = om.predict_read(tasks, rates, "s", decode_Bps=500e6, chunk_raw_bytes=1 << 20)
    assert math.isclose(fast["decode_s"], 8 * (1 << 20) / 500e6)
    assert math.isclose(fast["time_s"], wire + (1 << 20) / 500e6)          # one chunk's decoding after the wire
    slow = om.predict_read(tasks, rates, "s", decode_Bps=20e6, chunk_raw_bytes=1 << 20)
    assert math.isclose(slow["time_s"], 8 * (1 << 20) / 20e6)              # decoding sets the time
    assert math.isclose(slow["io_s"], wire)


def test_compressed_layouts_get_stored_bytes_and_decode_at_calibrated_rates(s3_server, tmp_path, monkeypatch):
    """A zstd Zarr store on the test server and zlib, zstd and Blosc netCDF-4 files: the layout knows
    the codec by climio's label and the stored bytes per chunk; the prediction GETs those bytes and
    decodes the chunks at this machine's calibrated rate for the codec (built-in default without one)."""
    import h5py
    import hdf5plugin  # noqa: F401
    import obstore
    from climio.advice import object_store as ao
    from climio.dataset.codecs import hdf5_label, zarr_label
    from climio.dataset.compression import Compression
    from climio.data.writer import write_4d
    from climio.data.zarr_writer import write_zarr_4d
    from climio.model import profile as profmod
    from climio.machine.platform import platform_id_here as platform_id_of
    from climio.stores.objects import upload
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    monkeypatch.chdir(tmp_path)
    shape, chunks = [4, 1, 64, 128], [1, 1, 32, 64]
    write_zarr_4d(tmp_path / "zs.zarr", shape, chunks=chunks, dtype="f4", compression=Compression("zstd", 3))
    upload(s3_server.endpoint, tmp_path / "zs.zarr", "s3://climio/decode-test")
    url = "s3://climio/decode-test/zs.zarr"
    from climio.dataset.description import describe
    lay = describe(url)
    assert lay.codecs == "zstd3" and lay.store == "zarr-s3"
    sizes = [m["size"] for b in obstore.list(s3_server.endpoint.obstore("climio"), prefix="decode-test/zs.zarr/ta/")
             for m in b if not m["path"].endswith("zarr.json")]
    raw = 32 * 64 * 4
    assert len(sizes) == 16 and math.isclose(lay.stored_ratio, sum(sizes) / len(sizes) / raw)
    assert lay.stored_ratio < 0.9                                  # make-data's smooth field compresses
    pid = platform_id_of(None)
    rates = om.StoreRates(s3_server.endpoint.url, 0.001, 200e6, 400e6,
                          {"zarr-obstore": om.StackObjectRates(0.001, 200e6, 8.0)})
    on_disk.save_rates(pid, om.store_key(s3_server.endpoint.url), rates)
    p = ao.predict_store(url, ["xy"])                              # no file-system profile: built-in rates
    xy = p.reads[0]
    assert p.decode["source"] == "built-in default"
    assert xy["bytes"] == 4 * 4 * round(raw * lay.stored_ratio)    # 4 maps of 4 chunks, stored bytes each
    assert math.isclose(xy["decode_s"], 16 * raw / profmod.default_profile().decode("zstd3"))
    calibrated = profmod.default_profile(pid)
    calibrated.decode_Bps = {"zstd3": 5e6, "deflate4+shuffle": 2e6}
    on_disk.save(calibrated)
    q = ao.predict_store(url, ["xy"])
    assert q.decode["source"].startswith("calibrated") and math.isclose(q.reads[0]["decode_s"], 16 * raw / 5e6)
    assert math.isclose(q.reads[0]["time_s"], q.reads[0]["decode_s"]) and q.reads[0]["time_s"] > 3 * xy["time_s"]
    # (at 5 MB/s the decoding, not the GETs, sets the time)
    assert "decoded at 5 MB/s" in "\n".join(q.lines())
    # netCDF-4 filters by their HDF5 ids
    for codec, level, label in (("zlib", 4, "deflate4+shuffle"), ("zstd", 3, "zstd3"), ("blosc_lz4", 5, "blosc_lz4:5+shuffle")):
        write_4d(tmp_path / f"{codec}.nc", shape, chunks=chunks, dtype="f4", compression=Compression(codec, level, shuffle=True))
        with h5py.File(tmp_path / f"{codec}.nc") as f:
            assert hdf5_label(f["ta"]) == label, codec
    # and the same settings as Zarr codecs (make-data's Zarr writer), by zarr-python's objects
    import zarr
    for comp, label in (("blosc_lz4:5+shuffle", "blosc_lz4:5+shuffle"), ("deflate4+shuffle", "deflate4+shuffle")):
        from climio.dataset.options import parse_compression
        write_zarr_4d(tmp_path / f"{label}.zarr", shape, chunks=chunks, dtype="f4", compression=parse_compression(comp))
        a = zarr.open_array(tmp_path / f"{label}.zarr", path="ta", mode="r")
        assert zarr_label([*(a.filters or ()), *(a.compressors or ())]) == label
