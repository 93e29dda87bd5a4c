"""Object storage (issue 25) against the real server: the endpoint and its credentials, the
server's life cycle and latency proxy, every object-store stack reading back the generator's
values, make-data's Zarr output and upload, and the object-read study's quick preset."""

import os
import subprocess
import time

import numpy as np
import pytest

from climio.base.errors import InputError
from climio.stores.endpoint import REDACTED, Endpoint, parse_s3_url
from climio.stores.server import S3Server, process_group_alive

from conftest import check_export, run_cli


def test_endpoint_from_standard_variables_hides_credentials():
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000/", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
           "AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_REGION": "eu-west-2"}
    ep = Endpoint.from_env(environ=env)
    assert (ep.url, ep.region, ep.anonymous) == ("http://127.0.0.1:9000", "eu-west-2", False)
    assert Endpoint.from_env("https://s3.example.org", environ=env).url == "https://s3.example.org"
    shown = f"{ep!r} {ep.describe()}"
    assert "AKIDEXAMPLE" not in shown and "s3cr3t-value" not in shown
    assert ep.describe() == {"endpoint_url": "http://127.0.0.1:9000", "region": "eu-west-2", "credentials": "environment"}
    assert ep.redact("key AKIDEXAMPLE secret s3cr3t-value") == f"key {REDACTED} secret {REDACTED}"
    assert Endpoint.from_env(environ={}).describe()["credentials"] == "anonymous"
    with pytest.raises(InputError):
        Endpoint.from_env(environ={"AWS_ACCESS_KEY_ID": "x"})
    with pytest.raises(InputError):
        Endpoint.from_env("ftp://host", environ={})
    assert parse_s3_url("s3://b/a/c.zarr").key == "a/c.zarr"
    with pytest.raises(InputError):
        parse_s3_url("/local/path")


def _get_ms(store, key, n=7):
    import obstore
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        obstore.get(store, key).bytes()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def test_server_round_trip_and_latency_toxic(s3_server):
    import obstore
    store = s3_server.endpoint.obstore("climio")
    payload = os.urandom(100_000)
    obstore.put(store, "t/latency.bin", payload)
    assert bytes(obstore.get(store, "t/latency.bin").bytes()) == payload
    base = _get_ms(store, "t/latency.bin")
    try:
        s3_server.set_latency(40)
        slow = _get_ms(store, "t/latency.bin")
    finally:
        s3_server.set_latency(0)
    assert slow - base > 30, (base, slow)
    assert _get_ms(store, "t/latency.bin") < slow - 30
    # the bandwidth toxic: 100 kB at 1000 KB/s takes at least ~0.1 s
    try:
        s3_server.set_bandwidth(1000)
        capped = _get_ms(store, "t/latency.bin", n=3)
    finally:
        s3_server.set_bandwidth(None)
    assert capped > 80, capped
    # the server binds the loopback only
    out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    pid = str(s3_server.weed_proc.pid)
    listening = [l.split()[3] for l in out.splitlines() if f"pid={pid}," in l]
    assert listening and all(a.startswith("127.0.0.1:") for a in listening), listening


def test_server_stops_and_leaves_no_process(tmp_path):
    with S3Server(data_dir=tmp_path) as s3:
        pgids = [s3.weed_proc.pid, s3.proxy_proc.pid]
        ddir = s3.data_dir
        assert all(process_group_alive(g) for g in pgids)
        assert s3.volume_files()
        cold = s3.evict()
        assert cold["state"] == "cold" and cold["verified_by"] == "mincore" and cold["files"] >= 1
        logs = "".join((ddir / n).read_text(errors="replace") for n in ("weed.log", "toxiproxy.log"))
        assert logs and s3._secret not in logs
    assert not any(process_group_alive(g) for g in pgids)
    assert not ddir.exists()


SHAPE = [6, 2, 16, 24]
CHUNKS = "1,1,16,24"


@pytest.fixture(scope="module")
def uploaded(s3_server, tmp_path_factory):
    """make-data's netCDF-4 and sharded Zarr field uploaded to s3://climio/md (the CLI, as a user runs it)."""
    d = tmp_path_factory.mktemp("md")
    env = {**os.environ, **s3_server.env()}
    exe = os.path.join(os.path.dirname(__import__("sys").executable), "climio")
    out = subprocess.run([exe, "make-data", "-o", d, "--kind", "4d", "--format", "nc,zarr", "--shape",
                          ",".join(map(str, SHAPE)), "--chunks", CHUNKS, "--shards", "3,2,16,24", "--compression",
                          "deflate4+shuffle", "--dtype", "f4", "--upload", "s3://climio/md"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert s3_server._secret not in out.stdout + out.stderr and s3_server._key not in out.stdout + out.stderr
    return d, out


def _expected(start, count):
    from climio.data import values_4d
    sel = tuple(slice(s, s + c) for s, c in zip(start, count))
    return values_4d(SHAPE, sel, dtype="f4")


def test_make_data_zarr_upload_reads_back_equal(s3_server, uploaded):
    import zarr
    from climio.stores.objects import list_keys
    d, out = uploaded
    keys = list_keys(s3_server.endpoint, "s3://climio/md/")
    assert "md/field4d.nc" in keys and "md/field4d.nc.kerchunk.json" in keys and "md/field4d.zarr/zarr.json" in keys
    a = zarr.open_array(store=zarr.storage.ObjectStore(s3_server.endpoint.obstore("climio", "md/field4d.zarr"),
                                                       read_only=True), path="ta", mode="r")
    assert a.shards == (3, 2, 16, 24) and a.chunks == (1, 1, 16, 24)
    np.testing.assert_array_equal(a[:], _expected([0, 0, 0, 0], SHAPE))
    local = zarr.open_array(str(d / "field4d.zarr"), path="ta", mode="r")
    np.testing.assert_array_equal(local[:], a[:])
    # the bad combinations are one line and exit 2
    bad = run_cli("make-data", "-o", d / "x", "--kind", "1d", "--format", "zarr")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


STACK_OBJECTS = {"zarr-obstore": "md/field4d.zarr", "zarr-fsspec": "md/field4d.zarr", "xarray-zarr": "md/field4d.zarr"}


@pytest.mark.parametrize("stack", ["zarr-obstore", "zarr-fsspec", "xarray-zarr", "h5py-s3fs", "h5py-s3fs-nocache",
                                   "h5netcdf-s3fs", "h5netcdf-s3fs-nocache", "zarr-kerchunk"])
def test_object_stacks_read_the_generated_values(s3_server, uploaded, stack):
    from climio.measure.stacks import Reader
    from climio.measure.stacks_s3 import OBJECT_STACKS
    reader = OBJECT_STACKS[stack](s3_server.endpoint)
    assert isinstance(reader, Reader)
    reader.open(f"s3://climio/{STACK_OBJECTS.get(stack, 'md/field4d.nc')}", "ta")
    try:
        assert reader.shape == tuple(SHAPE) and reader.dtype == np.dtype("f4")
        for start, count in (([0, 0, 0, 0], [1, 1, 16, 24]), ([0, 1, 3, 5], [6, 1, 1, 1]), ([2, 0, 4, 4], [3, 2, 8, 9])):
            np.testing.assert_array_equal(reader.read_slab(start, count), _expected(start, count))
        assert stack in reader.library() or reader.library()
    finally:
        reader.close()


def test_netcdf_c_byte_range_mode(s3_server, uploaded):
    """netCDF-C's #mode=bytes as the netCDF4 wheel builds it, on an anonymous GET of the object."""
    import netCDF4
    from climio.measure.stacks_s3 import NetCDFCBytes
    from climio.stores.objects import upload
    upload(s3_server.endpoint, uploaded[0] / "field4d.nc", "s3://public/md")
    anonymous = Endpoint(s3_server.endpoint.url)
    reader = NetCDFCBytes(anonymous)
    reader.open("s3://public/md/field4d.nc", "ta")
    try:
        np.testing.assert_array_equal(reader.read_slab([1, 0, 2, 3], [2, 2, 5, 7]), _expected([1, 0, 2, 3], [2, 2, 5, 7]))
        assert "byte-range" in reader.library() and netCDF4.__netcdf4libversion__ in reader.library()
    finally:
        reader.close()


def test_object_read_quick_preset_records(tmp_path, monkeypatch, capfd):
    from climio import api
    from climio.runs.records import read_records
    started, start = [], S3Server.start
    monkeypatch.setattr(S3Server, "start", lambda self: (started.append(self), start(self))[1])
    run = api.run_study("object-read", preset="quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                        progress=False, sizes="256KiB,4MiB", latency="0,20", concurrency="1,4")
    recs = read_records(run)
    assert {r["params"]["stack"] for r in recs} == {"raw-obstore", "zarr-obstore"}
    assert all(r["status"] == "ok" for r in recs)
    for r in recs:
        c = r["cache"]
        assert c["state"] == "cold" and c["verified_by"] == "mincore" and c["files"] >= 1
        assert c["effective"] == "cold" and c["storage_share"] > 0.5, c
        m = r["metrics"]
        assert m["gets"] == r["params"]["requests"] and m["req_p50_ms"] > 0
    # latency shows in the request times: 20 ms added to every GET is a floor none goes below
    assert all(r["metrics"]["req_min_ms"] >= 19.5 for r in recs if r["params"]["latency_ms"] == 20)
    assert np.median([r["metrics"]["req_min_ms"] for r in recs
                      if r["params"]["latency_ms"] == 0 and r["params"]["get_bytes"] == 256 << 10]) < 19.5
    from climio.bench.object_read.summary import summarise
    s = summarise(recs)
    stack_cells = [c for c in s["cells"] if c["stack"] == "zarr-obstore"]
    assert stack_cells and all(c["peer_ratio"] > 0 and c["checksums_match"] for c in stack_cells)
    assert set(s["target"]["by_latency"]) == {0.0, 20.0}
    import json
    prof = json.loads((run / "store_profile.json").read_text())["by_latency_ms"]
    assert set(prof) == {"0", "20"} and prof["20"]["latency_s"] > prof["0"]["latency_s"]
    assert all(p["aggregate_Bps"] > 0 and set(p["sizes"]) == {str(256 << 10), str(4 << 20)} for p in prof.values())
    text = "".join(p.read_text(errors="replace") for p in run.iterdir() if p.is_file())
    assert "object-read" in text and "ratio to peer" in text
    assert set(check_export(run, tmp_path, "object-read")["study"]) == {"object-read"}
    # the study's server made up its credentials: none of them in records, report or output
    seen = text + "".join(capfd.readouterr())
    assert started and started[0]._secret not in seen and started[0]._key not in seen


def test_object_chunking_small_run(tmp_path):
    """Study b at a tiny size: Zarr with and without shards over time, netCDF-4 through references;
    every record cold and its first hyperslab equal to the generator's values (status ok); the STSA
    read is the STSA job's x-t slabs; every finding carries a verdict."""
    from climio import api
    from climio.bench.object_chunking.section import findings
    from climio.bench.object_chunking.summary import summarise
    from climio.runs.records import read_records
    run = api.run_study("object-chunking", preset="quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                        progress=False, shape="8,1,20,40", chunks="E,F", reads="xt,xy,stsa", latency="0",
                        stacks="zarr-obstore,zarr-kerchunk", sample=2)
    recs = read_records(run)
    assert recs and all(r["status"] == "ok" for r in recs)
    stsa = [r for r in recs if r["params"]["read"] == "stsa"]
    assert len(stsa) == len(recs) // 3 and all(r["metrics"]["bytes"] == 2 * 8 * 40 * 4 for r in stsa)
    found = findings(recs)
    assert found and all(f.verdict for f in found), [(f.text, f.verdict) for f in found]
    assert all(r["cache"]["state"] == "cold" and r["cache"]["effective"] == "cold" for r in recs)
    assert {r["params"]["format"] for r in recs} == {"zarr", "netcdf4+kerchunk"}
    s = summarise(recs)
    (row,) = s["sharding"]
    # xt of xy chunks: one GET per time step unsharded, far fewer from one shard
    assert row["xt_gets"][0] == 2 * 8 and row["xt_gets"][1] < row["xt_gets"][0]
    assert s["references"] and all(r["zarr-obstore"] > 0 for r in s["references"])
    assert set(check_export(run, tmp_path, "object-chunking")["study"]) == {"object-chunking"}


def test_object_chunking_smallest_chunk_verdict():
    """The smallest chunk reaching 80% of the peak, lowest against highest latency, per read shape."""
    from climio.bench.object_chunking.section import smallest_verdict

    def rows(at20, shapes=3):
        return [{"latency_ms": lat, "read": read, "smallest_chunk_bytes": b, "shapes": shapes}
                for lat, got in ((0, {"xy": 16, "xt": 32}), (20, at20)) for read, b in got.items()]
    assert smallest_verdict(rows({"xy": 64, "xt": 32})) == "reproduced"
    assert smallest_verdict(rows({"xy": 16, "xt": 32})) == "not reproduced"
    assert smallest_verdict(rows({"xy": 8, "xt": 32})) == "refuted"
    assert smallest_verdict(rows({"xy": 64, "xt": 8})) == "inconclusive"
    assert smallest_verdict(rows({"xy": 64, "xt": 32}, shapes=2)) == "not decidable"
    assert smallest_verdict([r for r in rows({}) if r["latency_ms"] == 0]) == "not measured"


def test_object_read_on_any_endpoint(s3_server, tmp_path, monkeypatch):
    """--store s3://BUCKET/PREFIX with the standard AWS variables: the same study on a store it does
    not run; records say the cache could not be evicted (warm, unverified), no credential is in
    them, and the arrays written under the prefix are removed."""
    from climio import api
    from climio.base.errors import InputError
    from climio.runs.records import read_records
    from climio.stores.objects import list_keys
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    run = api.run_study("object-read", preset="quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                        progress=False, sizes="1MiB", concurrency="2", store="s3://climio/remote-test")
    recs = read_records(run)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert all(r["cache"]["state"] == "warm" and r["cache"]["effective"] == "unverified" for r in recs)
    assert {r["params"]["endpoint"] for r in recs} == {s3_server.endpoint.url}
    text = (run / "records.jsonl").read_text() + (run / "report.html").read_text()
    assert s3_server._secret not in text and s3_server._key not in text
    assert list_keys(s3_server.endpoint, "s3://climio/remote-test/") == []
    with pytest.raises(InputError):
        api.run_study("object-read", preset="quick", out=tmp_path / "r2", store="s3://climio/x", latency="0,20")
