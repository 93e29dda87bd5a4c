"""The object-store model on stores it has not seen (issue 35 item 6): the per-stack, per-codec
decode rates and their lookup, the declared space of `climio bench predict --store`, and a seeded
slice of the bench against the real test server."""

import json
import math
import pytest

from climio.bench.predict.store_space import MAX_GETS, MAX_SLABS, cost, draw_store
from climio.model import object_store as om

from conftest import run_cli


def _stack(**decode):
    return om.StackObjectRates(0.001, 300e6, 8.0, decode_Bps=decode)


def test_stack_decode_takes_the_codec_then_its_family():
    s = _stack(**{"deflate1": 150e6, "deflate1+shuffle": 600e6, "deflate4+shuffle": 500e6, "zstd3": 900e6,
                  "blosc_lz4:5+shuffle": 4e9})
    assert om.stack_decode(s, "deflate1+shuffle") == (600e6, "deflate1+shuffle")     # its own rate
    assert om.stack_decode(s, "none") == (math.inf, "none")
    # deflate6+shuffle: the family with a shuffle (blosc(zlib) in Zarr), the nearest level
    assert om.stack_decode(s, "deflate6+shuffle") == (500e6, "deflate4+shuffle")
    # deflate4 without shuffle is gzip in Zarr: the unshuffled deflate, not blosc's
    assert om.stack_decode(s, "deflate4") == (150e6, "deflate1")
    assert om.stack_decode(s, "zstd3+shuffle") == (900e6, "zstd3")      # only zstd3 calibrated: the family's
    assert om.stack_decode(s, "blosc_lz4:9+shuffle") == (4e9, "blosc_lz4:5+shuffle")
    assert om.stack_decode(s, "bzip2") == (None, "")                   # no rate of the family: the caller's fallback
    assert om.stack_decode(_stack(), "zstd3") == (None, "")
    # kept in the profile and read back
    back = om.StoreRates.from_dict(json.loads(json.dumps(om.StoreRates("http://x", 0.001, 3e8, 3e8, {"a": s}).to_dict())))
    assert back.stacks["a"].decode_Bps == s.decode_Bps


def test_each_hyperslab_pays_the_stacks_call_cost():
    rates = om.StoreRates("http://x", 0.01, 1e12, 1e12, {"s": om.StackObjectRates(0.01, 1e12, 8.0, slab_s=0.005)})
    one = om.predict_read([[[1000]]], rates, "s")
    many = om.predict_read([[[1000]]] * 10, rates, "s")
    assert math.isclose(one["time_s"], 0.015, rel_tol=1e-6) and math.isclose(many["time_s"], 0.15, rel_tol=1e-6)
    assert math.isclose(many["wire_s"], 0.1, rel_tol=1e-6)     # the GETs alone; the call's cost is beside them


def test_a_shards_byte_range_gets_take_the_ranged_latency():
    """s3fs asks a whole object's size before its GET (two round trips) but not a byte range's:
    a partly read shard's index and inner chunks take the stack's measured ranged-GET latency."""
    shape, chunks, shards = [8, 1, 16, 16], [1, 1, 16, 16], [8, 1, 16, 16]
    part = om.read_tasks(shape, chunks, shards, [0, 0, 0, 0], [1, 1, 16, 16], 4)
    whole = om.read_tasks(shape, chunks, shards, [0, 0, 0, 0], [8, 1, 16, 16], 4)
    assert isinstance(part[0], om.Ranged) and len(part[0]) == 2 and not isinstance(whole[0], om.Ranged)
    s = om.StackObjectRates(0.040, 1e12, 8.0, ranged_latency_s=0.020)
    rates = om.StoreRates("http://x", 0.02, 1e12, 1e12, {"s": s})
    assert math.isclose(om.predict_read([part], rates, "s")["time_s"], 2 * 0.020, rel_tol=1e-6)
    assert math.isclose(om.predict_read([whole], rates, "s")["time_s"], 0.040, rel_tol=1e-6)


def test_decode_rate_prefers_the_stack_calibration():
    from climio.advice.object_store import decode_rate
    rates = om.StoreRates("http://x", 0.001, 3e8, 3e8, {"zarr-obstore": _stack(zstd3=700e6)})
    bps, source = decode_rate("zstd1", rates=rates, stack="zarr-obstore")
    assert bps == 700e6 and "zarr-obstore decoding zstd3" in source
    # a stack with no rate of the codec falls back to the file profile's (or the built-in) rate
    bps, source = decode_rate("deflate1", rates=rates, stack="zarr-obstore")
    assert bps > 0 and "zarr-obstore" not in source


def test_store_space_covers_its_axes_within_the_budgets():
    configs = draw_store(60, 3)
    assert configs == draw_store(60, 3) and configs != draw_store(60, 4)
    assert {len(c.dims) for c in configs} == {2, 3, 4, 5}
    assert {c.read for c in configs} == {"t", "xy", "xt", "xyt", "box"}
    assert {c.stack for c in configs} == {"zarr-obstore", "zarr-fsspec"}
    assert {c.latency_ms for c in configs} == {0.0, 20.0}
    assert {bool(c.shards) for c in configs} == {True, False}
    assert {"none", "deflate1", "zstd3", "blosc_lz4:5+shuffle"} <= {c.codec for c in configs}
    for c in configs:
        gets, slabs = cost(c.dims, c.shape, c.chunks, c.shards, c.read)
        assert gets <= MAX_GETS and slabs <= MAX_SLABS
        assert not c.shards or all(s % k == 0 for s, k in zip(c.shards, c.chunks))


def test_bench_predict_store_slice(s3_server, tmp_path, monkeypatch):
    """Two seeded configurations (one sharded and compressed, one not) on the test server with a
    given calibration: a record per repetition with the prediction and the measurement, both
    positive, the codec as the store's metadata names it and its decode rate from the stack's
    calibration; the arrays are removed after."""
    from climio.runs.records import read_records
    from climio.stores.objects import list_keys
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    s3_server.set_latency(0)
    url = s3_server.endpoint.url
    stacks = {s: om.StackObjectRates(0.002, 200e6, 8.0, decode_Bps={"deflate1": 150e6, "deflate1+shuffle": 500e6,
                                                                     "zstd3": 700e6, "blosc_lz4:5+shuffle": 3e9})
              for s in ("zarr-obstore", "zarr-fsspec")}
    rates = om.StoreRates(url, 0.002, 200e6, 300e6, stacks, source="test")
    cal = tmp_path / "object-stores.json"
    cal.write_text(json.dumps({"platform_id": "test", "object_stores": {om.store_key(url): rates.to_dict()}}))
    drawn = draw_store(60, 1, (0.0,))
    cheap = lambda c: cost(c.dims, c.shape, c.chunks, c.shards, c.read)[0]   # noqa: E731
    pick = [min((c for c in drawn if c.shards and c.codec != "none"), key=cheap),
            min((c for c in drawn if not c.shards), key=cheap)]
    out = run_cli("bench", "predict", "--store", "s3://climio/slice", "--endpoint-url", url, "--calibration", cal,
                  "--configs", "60", "--seed", "1", "--reps", "2", "--only", ",".join(c.id for c in pick),
                  "-o", tmp_path / "run", "--no-report", timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    recs = [r for r in read_records(tmp_path / "run") if r.get("study") == "predict"]
    assert sorted({r["params"]["config"] for r in recs}) == sorted(c.id for c in pick)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    for r in recs:
        p, cfg = r["params"], next(c for c in pick if c.id == r["params"]["config"])
        assert p["predicted_s"] > 0 and r["metrics"]["wall_s"] > 0 and p["predicted"]["gets"] > 0
        assert p["canary"]["s"] > 0 and p["canary"]["at_calibration_s"] > 0
        assert p["compression"] == cfg.codec and p["shape"] == list(cfg.shape)
        assert p["shards"] == (list(cfg.shards) if cfg.shards else None)
        if cfg.codec != "none":
            assert f"{cfg.stack} decoding" in p["predicted"]["decode_source"] and p["predicted"]["decode_Bps"] > 0
    assert not list_keys(s3_server.endpoint, "s3://climio/slice/predict-seed1/")


def test_store_grid_checks_its_values(tmp_path):
    import pytest
    from climio.base.errors import InputError
    from climio.bench.predict import build_grid
    g = build_grid("quick", store="s3://climio/p")
    assert g.latency_list == (0.0, 20.0) and build_grid("quick").latency_list == ()
    assert build_grid("quick", store="s3://b/p", endpoint_url="http://h:1").latency_list == (0.0,)
    for bad in ({"latency": "20"}, {"endpoint_url": "http://h:1"},                      # without --store
                {"store": "s3://b/p", "endpoint_url": "http://h:1", "latency": "0,20"},  # no injection there
                {"store": "s3://b/p", "latency": "x"},
                {"store": "s3://b/p", "calibration": str(tmp_path / "c.json")},           # own server: calibrated
                {"store": "s3://b/p", "endpoint_url": "http://h:1", "calibration": str(tmp_path / "none.json")}):
        with pytest.raises(InputError):
            build_grid("quick", **bad)


def test_a_read_of_more_hyperslabs_than_priced_is_scaled_from_an_even_sample(monkeypatch):
    """A full series at every point (here 16 x 24 = 384 hyperslabs) is priced on an even sample of
    MAX_SLABS of them and scaled: alike slabs add up, so the sample's total equals the exact one, and
    a 1-degree grid's 64,800 series no longer refuse the prediction (issue 34's CMIP case)."""
    from climio.dataset.description import Description
    from climio.model import object_store as om
    desc = Description("tas", ("time", "lat", "lon"), ("t", "y", "x"), (64, 16, 24), "float32", (16, 4, 6),
                       codecs="none", store="zarr-s3", stored_bytes=64 * 16 * 24 * 4)
    rates = om.StoreRates("http://x", 0.01, 100e6, 1e9, {"zarr-obstore": om.StackObjectRates(0.01, 100e6, 8.0)})
    exact = om.predict_layout(desc, (16, 4, 6), None, "t", rates, "zarr-obstore", passes=3)
    monkeypatch.setattr(om, "MAX_SLABS", 48)
    sample = om.predict_layout(desc, (16, 4, 6), None, "t", rates, "zarr-obstore", passes=3)
    assert exact["slabs"] == sample["slabs"] == 16 * 24 and sample["slabs_priced"] == 48
    for k in ("time_s", "gets", "bytes", "wire_s"):
        assert sample[k] == pytest.approx(exact[k], rel=1e-9), k


def test_a_compressed_chunks_hand_off_and_the_cpu_share():
    """A compressed chunk costs the stack's codec_chunk_s beside its chunk_cpu_s; the CPU side
    (the stack's own and the decoding) takes its CPU seconds over the calibration's share of a core
    in wall time; cpu_s and decode_s stay CPU seconds. Exact numbers."""
    assert om.cpu_wall(0.02, 0.5) == 0.04 and om.cpu_wall(0.02, 1.0) == 0.02
    assert om.cpu_wall(0.02, 0.0) == 0.02 and om.cpu_wall(0.02, 7.0) == 0.02     # no share: a whole core
    s = om.StackObjectRates(0.001, 1e15, 8.0, chunk_cpu_s=0.002, codec_chunk_s=0.001)
    slab = [[[1000]] * 10]                               # one hyperslab, ten one-GET chunks
    whole = om.StoreRates("http://x", 0.001, 1e15, 1e15, {"s": s})
    half = om.StoreRates("http://x", 0.001, 1e15, 1e15, {"s": s}, cpu_share=0.5)
    # uncompressed: no hand-off; wire = two waves of 1 ms, CPU 10 x 2 ms
    assert om.predict_read(slab, whole, "s")["time_s"] == pytest.approx(0.020, rel=1e-9)
    plain = om.predict_read(slab, half, "s")
    assert plain["time_s"] == pytest.approx(0.040, rel=1e-9) and plain["cpu_s"] == pytest.approx(0.020, rel=1e-9)
    assert plain["wire_s"] == pytest.approx(0.002, rel=1e-9) and plain["cpu_share"] == 0.5
    # compressed at 1 MB/s of 1000-byte chunks: 1 ms decoding and 1 ms hand-off per chunk
    packed = om.predict_read(slab, half, "s", decode_Bps=1e6, chunk_raw_bytes=1000)
    assert packed["cpu_s"] == pytest.approx(0.030, rel=1e-9) and packed["decode_s"] == pytest.approx(0.010, rel=1e-9)
    assert packed["time_s"] == pytest.approx((0.030 + 0.010) / 0.5, rel=1e-9)
    assert om.predict_read(slab, whole, "s", 1e6, 1000)["time_s"] == pytest.approx(0.040, rel=1e-9)
    # GET-bound: the wire + the last task's decoding (over the share) when that is longer
    slow = om.StoreRates("http://x", 0.1, 1e15, 1e15, {"s": om.StackObjectRates(0.1, 1e15, 8.0)}, cpu_share=0.5)
    assert om.predict_read(slab, slow, "s", 1e6, 1000)["time_s"] == pytest.approx(0.2 + 0.001 / 0.5, rel=1e-9)


def test_calibrated_hand_off_and_share_reach_the_rates():
    """rates_from_cells keeps each stack's codec_chunk_s, the probe's GET rate where it is the
    higher, and the median of the probes' shares; rates without them (an older profile)
    read as a whole core and no hand-off."""
    cells = [{"latency_ms": 0.0, "stack": st, "get_bytes": size, "concurrency": c, "rate_MBps": 100.0,
              "req_p50_ms": 1.0 + size / 1e8} for st in ("raw-obstore", "zarr-obstore", "zarr-fsspec")
             for size in (16384, 1 << 20) for c in (1, 8)]
    probe = {"zarr-obstore": {"median_in_flight": 8.0, "chunk_cpu_s": 5e-4, "codec_chunk_s": 2e-4, "cpu_share": 0.4,
                              "gets_per_s": 1e6},
             "zarr-fsspec": {"median_in_flight": 6.0, "chunk_cpu_s": 4e-3, "codec_chunk_s": 9e-4, "cpu_share": 0.3}}
    r = om.rates_from_cells(cells, 0.0, "http://x", probe)
    assert r.stacks["zarr-obstore"].codec_chunk_s == 2e-4 and r.stacks["zarr-fsspec"].codec_chunk_s == 9e-4
    assert r.cpu_share == 0.4                   # the upper median of two
    # the GET-rate ceiling: the probe's when it completed more GETs a second than the grid's (fsspec's not)
    assert r.stacks["zarr-obstore"].gets_per_s == 1e6
    assert r.stacks["zarr-fsspec"].gets_per_s == pytest.approx(100e6 / 16384, rel=1e-9)   # 8 in flight, 6 its own
    back = om.StoreRates.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.cpu_share == 0.4 and back.stacks["zarr-fsspec"].codec_chunk_s == 9e-4
    old = {k: v for k, v in r.to_dict().items() if k != "cpu_share"}
    old["stacks"] = {k: {f: x for f, x in v.items() if f != "codec_chunk_s"} for k, v in old["stacks"].items()}
    back = om.StoreRates.from_dict(old)
    assert back.cpu_share == 1.0 and back.stacks["zarr-obstore"].codec_chunk_s == 0.0


def test_the_summary_flags_noisy_configurations():
    """Per configuration the repetitions' spread (slowest / fastest): over 1.5x flagged noisy and
    still counted; the median of the repetitions is the measured time."""
    from climio.bench.predict.summary import summarise

    def rec(cfg, wall, rep, now=None):
        return {"study": "predict", "status": "ok", "rep": rep,
                "params": {"config": cfg, "layout": "x", "read": "xt", "stack": "zarr-obstore", "tasks": 1,
                           "compression": "none", "chunks": [1], "predicted_s": 0.1, "object_store": True,
                           "latency_ms": 0.0, "predicted": {"bound": "I/O", "path": [], "io_s": 0.1, "decode_s": 0.0,
                                                            "cpu_s": 0.0}},
                "metrics": {"wall_s": wall, "open_s": 0.3, **({"predicted_now_s": now} if now else {})}}
    recs = ([rec("a", w, i, 0.1) for i, w in enumerate((0.10, 0.12, 0.11))]
            + [rec("b", w, i, 0.2) for i, w in enumerate((0.05, 0.69, 0.10))])
    s = summarise(recs)
    rows = {r["config"]: r for r in s["rows"]}
    assert rows["a"]["spread"] == pytest.approx(1.2) and not rows["a"]["noisy"]
    assert rows["b"]["spread"] == pytest.approx(0.69 / 0.05) and rows["b"]["noisy"]
    assert rows["b"]["measured_s"] == pytest.approx(0.10) and rows["b"]["open_s"] == pytest.approx(0.3)
    assert s["n"] == 2 and s["spread"]["noisy"] == ["b"]
    assert s["max_factor"] == pytest.approx(1.1, rel=1e-9)          # a: 0.1 predicted against 0.11
    assert s["share_now"]["n"] == 2 and s["share_now"]["max_factor"] == pytest.approx(2.0)   # b: 0.2 against 0.1


def test_a_gets_cpu_is_split_from_a_chunks_and_paid_per_get():
    """calibrate --store reads the same 128 chunks as 128 GETs and as 8 whole shards: what the
    fewer GETs saved is a GET's CPU (split_cpu). A whole shard's one GET then costs one GET's CPU
    for all its chunks, where the chunk-per-GET store pays it per chunk. Exact numbers."""
    get, chunk, shard = om.split_cpu((0.128, 128), (8 * 0.8e-3 + 128 * 0.2e-3, 8), 128, 8)
    assert (get, chunk, shard) == (pytest.approx(0.8e-3), pytest.approx(0.2e-3), pytest.approx(0.0, abs=1e-12))
    # sharding saved nothing: all of it is the chunk's, the rest a shard's extra
    assert om.split_cpu((0.128, 128), (0.140, 8), 128, 8) == (0.0, pytest.approx(1e-3), pytest.approx(0.0015))
    s = om.StackObjectRates(0.001, 1e15, 8.0, chunk_cpu_s=0.2e-3, get_cpu_s=2e-3)
    rates = om.StoreRates("http://x", 0.001, 1e15, 1e15, {"s": s})
    whole = om.predict_read([[[8000]]], rates, "s", cpu_units=[(8, 1)])            # one GET, 8 chunks
    apart = om.predict_read([[[1000]] * 8], rates, "s")                          # 8 GETs, 8 chunks
    assert whole["cpu_s"] == pytest.approx(2e-3 + 8 * 0.2e-3) and apart["cpu_s"] == pytest.approx(8 * 2.2e-3)
    assert whole["time_s"] == pytest.approx(3.6e-3) and apart["time_s"] == pytest.approx(17.6e-3)


def test_a_chunks_cpu_comes_after_its_get():
    """A chunk's CPU starts when its bytes have arrived: a hyperslab of one GET pays the wire and
    then all its chunks' CPU; of many GETs, the wire and the last task's share (exact numbers)."""
    s = om.StackObjectRates(0.001, 1e15, 8.0, chunk_cpu_s=0.5e-3)
    rates = om.StoreRates("http://x", 0.001, 1e15, 1e15, {"s": s})
    one = om.predict_read([[[2000]]], rates, "s", cpu_units=[(2, 1)])        # a whole shard of 2 chunks
    assert one["time_s"] == pytest.approx(0.001 + 2 * 0.5e-3)
    many = om.predict_read([[[1000]] * 4], rates, "s")                         # 4 GETs at once, 1 chunk each
    assert many["time_s"] == pytest.approx(max(0.001 + 0.5e-3, 4 * 0.5e-3))


def test_a_decode_rate_is_the_median_paired_difference_never_inside_the_noise():
    """calibrate --store's decode rate: each compressed read paired with the uncompressed twin's of
    its repetition, the median difference; a difference inside the twin's own spread is a bound at
    that spread, never the 84 GB/s a clamp at 0.1 ms gave (seen on a quick calibration through s3fs)."""
    raw = 8 << 20
    twin = [0.030, 0.032, 0.031]
    assert om.decode_rate(raw, twin, [0.041, 0.043, 0.042]) == pytest.approx(raw / 0.011)
    assert om.decode_rate(raw, twin, [0.041, 0.090, 0.042]) == pytest.approx(raw / 0.011)   # one slow read
    noisy = [0.030, 0.036, 0.031]
    assert om.decode_rate(raw, noisy, [0.029, 0.037, 0.031]) == pytest.approx(raw / 0.006)
    assert om.decode_rate(raw, [0.03, 0.03], [0.03, 0.03]) == pytest.approx(raw / 1e-4)


def test_the_bytes_a_read_delivers_cost_cpu_per_byte():
    """calibrate --store's twin (8 uncompressed chunks of 1 MiB, one GET each) beyond its GETs' and
    chunks' CPU is the CPU of moving its bytes (byte_cpu); a read pays it per decoded byte, so a
    4 MiB chunk costs what four 1 MiB chunks do beyond their GETs (exact numbers)."""
    mb = 1 << 20
    assert om.byte_cpu(0.030, 8 * mb, 8, 2e-3, 0.5e-3) == pytest.approx(0.010 / (8 * mb))
    assert om.byte_cpu(0.010, 8 * mb, 8, 2e-3, 0.5e-3) == 0.0        # inside the GETs' own: nothing
    s = om.StackObjectRates(0.005, 1e15, 1.0, chunk_cpu_s=0.5e-3, get_cpu_s=2e-3, byte_cpu_s=1e-3 / mb)
    rates = om.StoreRates("http://x", 0.005, 1e15, 1e15, {"s": s})
    one = om.predict_read([[[4 * mb]]], rates, "s", chunk_raw_bytes=4 * mb)
    assert one["cpu_s"] == pytest.approx(2e-3 + 0.5e-3 + 4e-3)
    # the GET (its CPU inside its measured latency), then the chunk's CPU, its bytes' included
    assert one["time_s"] == pytest.approx(0.005 + 0.5e-3 + 4e-3)


def test_a_large_reads_rate_lifts_the_aggregate_bandwidth():
    """The grid's transfers are 4 MiB in all; the probe's 64 MiB read in 4 MiB GETs (bulk_Bps) is
    the rate a large read reaches: it lifts the stack's and the endpoint's aggregate where higher,
    never lowers them, and a 64 MiB read is priced at it."""
    cells = [{"latency_ms": 0.0, "stack": st, "get_bytes": size, "concurrency": c, "rate_MBps": 100.0,
              "req_p50_ms": 1.0 + size / 1e9} for st in ("raw-obstore", "zarr-obstore", "zarr-fsspec")
             for size in (16384, 1 << 20) for c in (1, 8)]
    probe = {"zarr-obstore": {"median_in_flight": 8.0, "bulk_Bps": 400e6},
             "zarr-fsspec": {"median_in_flight": 8.0, "bulk_Bps": 50e6}}
    r = om.rates_from_cells(cells, 0.0, "http://x", probe)
    assert r.aggregate_Bps == 400e6
    assert r.stacks["zarr-obstore"].aggregate_Bps == 400e6 and r.stacks["zarr-fsspec"].aggregate_Bps == 100e6
    read = om.predict_read([[[4 << 20]] * 16], r, "zarr-obstore")
    assert read["wire_s"] == pytest.approx((64 << 20) / 400e6)
