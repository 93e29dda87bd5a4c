"""`climio trace` sees object storage (issue 36): store operations and wire requests recorded by the
injected sitecustomize, checked against the S3 server's own request counters and a recording proxy,
and three traced jobs at 20 ms whose reports name the right top item."""

import json
import socket
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from climio.trace.inject.objects import chunk_of, clean_url
from climio.trace.objects_reader import read_objects


PY = sys.executable
CLIMIO = str(Path(sys.executable).parent / "climio")


def test_keys_carry_no_credentials_and_name_their_chunk():
    assert clean_url("https://user:pw@h/b/k?X-Amz-Signature=abc&X-Amz-Credential=AKID") == "https://h/b/k"
    assert clean_url("http://h/b?list-type=2&prefix=x%2F&X-Amz-Date=1") == "http://h/b?list-type=2&prefix=x%2F"
    assert chunk_of("tas/c/3/0/1") == ("chunk", "tas", [3, 0, 1])
    assert chunk_of("lat/0") == ("chunk", "lat", [0])
    assert chunk_of("g/tas/1.2") == ("chunk", "g/tas", [1, 2])
    assert chunk_of("tas/zarr.json")[0] == "meta" and chunk_of("tas/.zarray")[:2] == ("meta", "tas")


def _metrics(s3) -> Counter:
    text = urllib.request.urlopen(f"http://127.0.0.1:{s3.metrics_port}/metrics", timeout=10).read().decode()
    out = Counter()
    for line in text.splitlines():
        if line.startswith("SeaweedFS_s3_request_total{"):
            labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.index("}")].split(","))
            out[(labels["type"].strip('"'), labels["code"].strip('"'))] += int(float(line.rsplit(" ", 1)[1]))
    return out


class RecordingProxy:
    """A TCP proxy in front of the S3 endpoint that parses the client's HTTP/1.1 requests (method,
    path, Range) and passes every byte on unchanged both ways."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.seen = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            u = socket.create_connection(self.upstream)
            threading.Thread(target=self._requests, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    @staticmethod
    def _pump(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _requests(self, c, u):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                hdr = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
                n = int(hdr.get("content-length") or 0)
                while len(buf) < n:
                    buf += c.recv(65536)
                body, buf = buf[:n], buf[n:]
                self.seen.append((method, path.split("?")[0], hdr.get("range")))
                u.sendall(head + b"\r\n\r\n" + body)
        except OSError:
            pass
        finally:
            try:
                u.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self.sock.close()


def _env(s3, url=None):
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ZARR_"))}
    env.update(s3.env())
    if url:
        env["AWS_ENDPOINT_URL"] = url
    return env


def _trace(tmp_path, name, script, env, *extra):
    job = tmp_path / f"job_{name}.py"
    job.write_text(script)
    out = tmp_path / f"trace-{name}"
    r = subprocess.run([CLIMIO, "trace", "run", *extra, "-o", str(out), "--", PY, str(job)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r.stdout


def _report(out, env):
    r = subprocess.run([CLIMIO, "trace", "report", str(out), "--json"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _header(rng):
    if not rng:
        return None
    s, e = rng
    return f"bytes={s}" if s < 0 else f"bytes={s}-" + ("" if e is None else str(e - 1))


SHARDED_JOB = """
import numpy as np, s3fs, zarr
fs = s3fs.S3FileSystem(asynchronous=True)
z = zarr.open_array(zarr.storage.FsspecStore(fs, path="climio/trobj/sharded.zarr", read_only=True), mode="r")
a = z[0:40, 0:40]          # part of the shard: ranged GETs of inner chunks
b = z[64:128, :]           # whole chunks of the second shard row
print(float(a.sum()), float(b.sum()))
"""


def test_s3fs_wire_requests_equal_server_counters_and_proxy_ranges(s3_server, tmp_path):
    import zarr
    data = np.arange(128 * 128, dtype="f4").reshape(128, 128)
    st = zarr.storage.FsspecStore(s3_server.direct_endpoint.s3fs(asynchronous=True), path="climio/trobj/sharded.zarr")
    z = zarr.create_array(st, shape=data.shape, chunks=(16, 16), shards=(64, 128), dtype="f4", overwrite=True)
    z[:] = data
    proxy = RecordingProxy(s3_server.proxy_port)
    s3_server.set_latency(20)
    try:
        before = _metrics(s3_server)
        out, stdout = _trace(tmp_path, "sharded", SHARDED_JOB, _env(s3_server, f"http://127.0.0.1:{proxy.port}"))
        after = _metrics(s3_server)
    finally:
        s3_server.set_latency(0)
        proxy.close()
    a, b = (float(x) for x in stdout.split()[:2])
    assert a == float(data[:40, :40].sum()) and b == float(data[64:, :].sum())
    ot = read_objects(out)
    wire = ot.wire
    # the server's own counters: SeaweedFS counts a HEAD as a GET
    server = after - before
    mine = Counter(("LIST" if w["op"].startswith("List") else "GET" if w["method"] in ("GET", "HEAD") else w["method"],
                    str(w["status"])) for w in wire)
    assert mine == +server, (mine, server)
    print("COUNTS s3fs: recorded", dict(mine), "server", dict(+server))
    # the byte ranges, as the recording proxy saw them
    seen = Counter((m, p, r) for m, p, r in proxy.seen)
    recorded = Counter((w["method"], w["key"].split("?")[0].split(str(proxy.port), 1)[1], _header(w["range"]))
                       for w in wire)
    assert recorded == seen
    assert any(w["range"] for w in wire)
    # store ops name the array chunk (shard) they served; every wire GET names its store op
    gets = [s for s in ot.store if s.get("kind") == "chunk"]
    assert gets and all(s["chunk"] is not None for s in gets)
    assert all(w.get("parent") for w in wire if w["method"] == "GET" and "list-type" not in w["key"])
    text = (out / [f.name for f in out.iterdir() if f.name.startswith("objects-")][0]).read_text()
    assert s3_server._secret not in text and s3_server._key not in text


XARRAY_JOB = """
import xarray as xr
ds = xr.open_zarr("s3://climio/trobj/small.zarr", consolidated=False, chunks=None)   # zarr reads, async.concurrency in flight
print(float(ds["tas"].mean()))
"""


def test_xarray_zarr_small_chunks_default_concurrency(s3_server, tmp_path):
    import xarray as xr
    import zarr
    data = np.random.default_rng(1).random((30, 32, 32)).astype("f4")
    st = zarr.storage.FsspecStore(s3_server.direct_endpoint.s3fs(asynchronous=True), path="climio/trobj/small.zarr")
    xr.Dataset({"tas": (("time", "lat", "lon"), data)}).to_zarr(
        st, mode="w", consolidated=False, encoding={"tas": {"chunks": (1, 16, 16)}}, zarr_format=3)
    s3_server.set_latency(20)
    try:
        out, stdout = _trace(tmp_path, "xarray", XARRAY_JOB, _env(s3_server))
    finally:
        s3_server.set_latency(0)
    assert abs(float(stdout.split()[0]) - float(data.mean())) < 1e-5
    rep = _report(out, _env(s3_server))
    o = rep["objects"]
    tas = next(a for a in o["arrays"] if a["array"] == "tas")
    assert tas["chunk_reads"] == 120 and tas["layout"]["chunks"] == [1, 16, 16]
    assert o["concurrency"]["client_limit"] == 10 and o["concurrency"]["peak_in_flight"] >= 8
    top = rep["findings"][0]
    assert top["rule"] in ("object-concurrency", "object-small-chunks"), [f["rule"] for f in rep["findings"]]
    assert {"object-concurrency", "object-small-chunks"} <= {f["rule"] for f in rep["findings"]}
    print("LEAD xarray:", top["title"], "|", top["message"])


def _netcdf(path, nt=24):
    import netCDF4
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", nt)
        ds.createDimension("lat", 32)
        ds.createDimension("lon", 64)
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat[:] = np.linspace(-90, 90, 32)
        v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 32, 64))
        v[:] = np.arange(nt * 32 * 64, dtype="f4").reshape(nt, 32, 64)


REFS_JOB = """
import fsspec, zarr
fs = fsspec.filesystem("reference", fo="{refs}", remote_protocol="s3", remote_options={"asynchronous": True}, asynchronous=True)
g = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r", zarr_format=2)
total = 0.0
for i in range(g["tas"].shape[0]):
    lat = g["lat"][:]              # the coordinate again for every step: what the tracer should catch
    total += float(g["tas"][i].sum()) + float(lat[0])
print(total)
"""


def test_kerchunk_job_reading_a_coordinate_per_chunk_gets_repeated_fetches(s3_server, tmp_path):
    from kerchunk.hdf import SingleHdf5ToZarr
    nc = tmp_path / "refs.nc"
    _netcdf(nc)
    fs = s3_server.direct_endpoint.s3fs()
    fs.put(str(nc), "climio/trobj/refs.nc")
    with fs.open("climio/trobj/refs.nc", "rb") as fh:
        refs = SingleHdf5ToZarr(fh, "s3://climio/trobj/refs.nc", inline_threshold=0).translate()
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    s3_server.set_latency(20)
    try:
        out, stdout = _trace(tmp_path, "refs", REFS_JOB.replace("{refs}", str(tmp_path / "refs.json")), _env(s3_server))
    finally:
        s3_server.set_latency(0)
    expect = sum(float(np.arange(i * 2048, (i + 1) * 2048, dtype="f4").sum()) - 90.0 for i in range(24))
    assert abs(float(stdout.split()[0]) - expect) < 1e-3 * abs(expect)
    rep = _report(out, _env(s3_server))
    o = rep["objects"]
    assert o["repeats"]["extra_fetches"] >= 23
    assert o["repeats"]["top"][0]["count"] == 24 and o["repeats"]["top"][0]["range"]   # lat's byte range, 24 times
    assert o["repeats"]["top"][0]["array"] == "lat"
    lat = next(a for a in o["arrays"] if a["array"] == "lat")
    assert lat["chunk_reads"] == 24 and lat["distinct_chunks"] == 1
    top = rep["findings"][0]
    assert top["rule"] == "object-repeated", [f["rule"] for f in rep["findings"]]
    print("LEAD refs:", top["title"], "|", top["message"])


NCBYTES_JOB = """
import netCDF4
with netCDF4.Dataset("{url}#mode=bytes") as ds:
    v = ds["tas"]
    print(sum(float(v[i].sum()) for i in range(v.shape[0])))
"""


def test_netcdf_byte_ranges_are_named_slower_than_a_reference(s3_server, tmp_path):
    nc = tmp_path / "bytes.nc"
    _netcdf(nc, nt=12)
    s3_server.direct_endpoint.s3fs().put(str(nc), "public/trobj/bytes.nc")
    url = f"{s3_server.endpoint.url}/public/trobj/bytes.nc"
    s3_server.set_latency(20)
    try:
        out, stdout = _trace(tmp_path, "ncbytes", NCBYTES_JOB.replace("{url}", url), _env(s3_server))
    finally:
        s3_server.set_latency(0)
    assert float(stdout.split()[0]) == float(np.arange(12 * 2048, dtype="f4").astype("f8").sum())
    rep = _report(out, _env(s3_server))
    nb = rep["objects"]["netcdf_byte_ranges"]
    assert nb and nb[0]["url"].startswith(url) and nb[0]["calls"] >= 12
    top = rep["findings"][0]
    assert top["rule"] == "object-netcdf-byte-range", [f["rule"] for f in rep["findings"]]
    assert "climio make-refs s3://public/trobj/bytes.nc" in top["advice"]
    print("LEAD ncbytes:", top["title"], "|", top["message"])


LOCAL_JOB = """
import numpy as np, zarr
z = zarr.create_array("{store}", shape=(40, 40), chunks=(10, 10), dtype="f4", overwrite=True)
z[:] = np.arange(1600, dtype="f4").reshape(40, 40)
for _ in range(2):
    print(float(zarr.open_array("{store}", mode="r")[:].sum()))
"""


@pytest.mark.parametrize("mode", ["full", "counters"])
def test_local_zarr_job_store_ops_in_both_modes_and_the_html_report(tmp_path, mode):
    import os
    env = dict(os.environ)
    out, stdout = _trace(tmp_path, "local", LOCAL_JOB.replace("{store}", str(tmp_path / "a.zarr")), env,
                         "--mode", mode)
    assert stdout.split()[:2] == ["1279200.0", "1279200.0"]
    ot = read_objects(out)
    assert ot.mode == mode
    if mode == "full":
        gets = [r for r in ot.store if r["op"] == "get" and r["kind"] == "chunk"]
        sets = [r for r in ot.store if r["op"] == "set" and r["kind"] == "chunk"]
        assert len(gets) == 32 and len(sets) == 16 and {tuple(r["chunk"]) for r in gets} == {(i, j) for i in range(4) for j in range(4)}
        on_disk = {r["key"]: (tmp_path / "a.zarr" / r["key"]).stat().st_size for r in gets}
        assert all(r["bytes"] == on_disk[r["key"]] and r["t1"] >= r["t0"] and r["tid"] for r in gets)   # stored (zstd) bytes
    else:
        c = {(r["op"], r["key"]): r["count"] for r in ot.counters}
        assert c[("get", "c/1/2")] == 2 and c[("set", "c/1/2")] == 1
    rep = _report(out, env)
    assert rep["objects"]["mode"] == mode
    r = subprocess.run([CLIMIO, "trace", "report", str(out), "--html"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    page = (out / "report.html").read_text()
    assert "Object storage" in page and "store op" in page
    if mode == "full":
        assert page.count("data:image/png") >= 2      # the requests-over-time figure among them


HTTP_JOB = """
import fsspec, h5netcdf, s3fs, zarr
from obstore.store import S3Store
# fsspec's HTTP file system (aiohttp) on the anonymous bucket: whole and ranged GETs
http = fsspec.filesystem("http")
whole = http.cat_file("{base}/public/trobj/http.nc")
part = http.cat_file("{base}/public/trobj/http.nc", start=100, end=1100)
# h5netcdf over an s3fs file object: the file reads h5py asks for (store) and the GETs beneath (wire)
with s3fs.S3FileSystem().open("climio/trobj/http.nc", "rb", block_size=65536) as fh, h5netcdf.File(fh, "r") as ds:
    tas = ds["tas"][:]
# zarr through obstore: store operations (Python) and its requests (the preload's socket parser, http:// only)
st = zarr.storage.ObjectStore(S3Store("climio", endpoint="{base}", region="us-east-1", client_options={"allow_http": True}), read_only=True)
z = zarr.open_array(st, path="trobj/small.zarr/tas", mode="r")
print(len(whole), len(part), float(tas.sum()), float(z[0].sum()))
"""


def test_http_wire_requests_equal_server_counters_and_h5netcdf_obstore_store_ops(s3_server, tmp_path):
    import zarr
    nc = tmp_path / "http.nc"
    _netcdf(nc, nt=4)
    fs = s3_server.direct_endpoint.s3fs()
    for b in ("public", "climio"):
        fs.put(str(nc), f"{b}/trobj/http.nc")
    st = zarr.storage.FsspecStore(s3_server.direct_endpoint.s3fs(asynchronous=True), path="climio/trobj/small.zarr")
    zarr.create_array(st, name="tas", shape=(4, 8), chunks=(1, 8), dtype="f4", overwrite=True)[:] = 1.0
    base = s3_server.endpoint.url
    s3_server.set_latency(20)
    try:
        before = _metrics(s3_server)
        out, stdout = _trace(tmp_path, "http", HTTP_JOB.replace("{base}", base), _env(s3_server))
        after = _metrics(s3_server)
    finally:
        s3_server.set_latency(0)
    n_whole, n_part, tas, z0 = stdout.split()[:4]
    assert int(n_whole) == nc.stat().st_size and int(n_part) == 1000
    assert float(tas) == float(np.arange(4 * 2048, dtype="f4").astype("f8").sum()) and float(z0) == 8.0
    ot = read_objects(out)
    http = [w for w in ot.wire if w["lib"] == "aiohttp"]
    assert [w["range"] for w in http if w["method"] == "GET"][-1] == [100, 1100]
    boto = [w for w in ot.wire if w["lib"] == "botocore"]
    sock = [w for w in ot.wire if w["lib"] == "socket"]
    # every request the server counted was recorded on the wire: aiohttp + botocore in Python, obstore's
    # by the preload below it (one per store get here: whole objects, nothing to coalesce)
    obst = [s for s in ot.store if s["lib"] == "zarr:ObjectStore"]
    assert obst and any(s["kind"] == "chunk" for s in obst)
    server = after - before
    mine = Counter(("LIST" if w["op"].startswith("List") else "GET" if w["method"] in ("GET", "HEAD") else w["method"],
                    str(w["status"])) for w in http + boto + sock)
    obstore_gets = sum(1 for s in obst if s["op"] in ("get", "get-range"))
    assert mine == +server, (server, mine)
    assert len(sock) == obstore_gets and len(http) + len(boto) + len(sock) == len(ot.wire)
    print("COUNTS http+s3fs+obstore: recorded", dict(mine), "server", dict(+server))
    # h5netcdf's reads through the file object are store ops; each served by ranged GETs on the wire
    reads = [s for s in ot.store if s["op"] == "read" and s["key"].endswith("trobj/http.nc")]
    assert reads and sum(r["bytes"] for r in reads) > 0
    assert any(w["range"] and w["key"].endswith("trobj/http.nc") for w in boto)


def test_the_injected_sitecustomize_runs_the_one_it_shadows(tmp_path):
    import os
    from climio.trace.run import INJECT_DIR, python_path
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITE_RAN = True\n")
    env = {**os.environ, "PYTHONPATH": python_path(str(user)), "CLIMIO_TRACE_OBJECTS": str(tmp_path / "o")}
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [INJECT_DIR, str(user)]
    r = subprocess.run([PY, "-c", "import builtins, sys; print(builtins.USER_SITE_RAN, 'sitecustomize' in sys.modules)"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["True", "True"], r.stderr
    assert list((tmp_path / "o").glob("objects-*.jsonl"))


RETRY_JOB = """
import s3fs
fs = s3fs.S3FileSystem(key="k", secret="s", client_kwargs={{"endpoint_url": "{url}", "region_name": "us-east-1"}},
                       config_kwargs={{"retries": {{"max_attempts": 3, "mode": "standard"}}}})
print(fs.cat_file("b/dir/obj.bin", start=2, end=9).decode())
"""


def test_a_retried_request_is_two_attempts_the_final_one_marked(tmp_path):
    """botocore retries a 503: each attempt is a wire record (status, attempt, retries), after-call marks
    the one whose response the call returned; the store op above them counts the bytes once."""
    import os
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from climio.trace.run import INJECT_DIR
    body, seen = b"0123456789abcdef", []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Range")))
            if len(seen) == 1:      # the first attempt: the server is busy
                err = b"<Error><Code>SlowDown</Code><Message>busy</Message></Error>"
                self.send_response(503)
                self.send_header("Content-Length", str(len(err)))
                self.end_headers()
                self.wfile.write(err)
                return
            s, e = (int(x) for x in self.headers["Range"].split("=")[1].split("-"))
            self.send_response(206)
            self.send_header("Content-Length", str(e + 1 - s))
            self.send_header("Content-Range", f"bytes {s}-{e}/{len(body)}")
            self.end_headers()
            self.wfile.write(body[s:e + 1])

        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(CLIMIO_TRACE_OBJECTS=str(tmp_path / "o"), PYTHONPATH=INJECT_DIR)
    try:
        r = subprocess.run([PY, "-c", RETRY_JOB.format(url=f"http://127.0.0.1:{srv.server_port}")], env=env,
                           capture_output=True, text=True, timeout=120)
    finally:
        srv.shutdown()
    assert r.returncode == 0 and r.stdout.strip() == body[2:9].decode(), r.stderr[-2000:]
    assert seen == [("/b/dir/obj.bin", "bytes=2-8")] * 2
    ot = read_objects(tmp_path / "o")
    assert [(w["op"], w["status"], w["attempt"], w["retries"], w.get("final", False), w["range"]) for w in ot.wire] == \
        [("GetObject", 503, 1, 0, False, [2, 9]), ("GetObject", 206, 2, 1, True, [2, 9])]
    assert [w["bytes"] for w in ot.wire] == [len(b"<Error><Code>SlowDown</Code><Message>busy</Message></Error>"), 7]
    (op,) = ot.store
    assert (op["op"], op["key"], op["range"], op["bytes"]) == ("get-range", "b/dir/obj.bin", [2, 9], 7)
    assert all(w["parent"] == op["id"] and w["key"].endswith("/b/dir/obj.bin") for w in ot.wire)
