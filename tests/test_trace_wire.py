"""Wire requests below Python (issue 36 items 2-3): the preload's libcurl module (netCDF-C's byte-range
mode through the netCDF4 wheel's own libcurl) and its HTTP/1.1 parser on obstore's sockets, each checked
against the S3 server's own request counters and the byte ranges a recording proxy saw."""

import os
from collections import Counter

import numpy as np

from climio.trace.objects_reader import read_objects
from climio.trace.objects_report import https_note
from test_trace_objects import NCBYTES_JOB as NC_JOB, RecordingProxy, _env, _header, _metrics, _netcdf, _report, _trace


def _server_view(wire) -> Counter:
    """The wire records as the server counts them: SeaweedFS counts a HEAD as a GET."""
    return Counter(("LIST" if "list-type=" in w["key"] else "GET" if w["method"] in ("GET", "HEAD") else w["method"],
                    str(w["status"])) for w in wire)


def _proxy_view(wire, proxy) -> Counter:
    return Counter((w["method"], w["key"].split("?")[0].split(str(proxy.port), 1)[1], _header(w["range"])) for w in wire)


def _traced(s3, tmp_path, name, script, proxy, *extra):
    s3.set_latency(20)
    try:
        before = _metrics(s3)
        out, stdout = _trace(tmp_path, name, script, _env(s3, f"http://127.0.0.1:{proxy.port}"), *extra)
        after = _metrics(s3)
    finally:
        s3.set_latency(0)
    return out, stdout, +(after - before)


def test_netcdf_byte_ranges_libcurl_requests_equal_server_counters_and_proxy_ranges(s3_server, tmp_path):
    nc = tmp_path / "wire.nc"
    _netcdf(nc, nt=6)
    s3_server.direct_endpoint.s3fs().put(str(nc), "public/trwire/wire.nc")
    proxy = RecordingProxy(s3_server.proxy_port)
    try:
        # a query parameter stands for a signature: it must never reach the trace
        url = f"http://127.0.0.1:{proxy.port}/public/trwire/wire.nc?token=SECRETTOKEN"
        out, stdout, server = _traced(s3_server, tmp_path, "curl", NC_JOB.replace("{url}", url), proxy)
        seen = Counter(proxy.seen)
        proxy.seen.clear()
        cout, _, cserver = _traced(s3_server, tmp_path, "curlcnt", NC_JOB.replace("{url}", url), proxy, "--mode", "counters")
    finally:
        proxy.close()
    assert float(stdout.split()[0]) == float(np.arange(6 * 2048, dtype="f4").astype("f8").sum())
    wire = [w for w in read_objects(out).wire if w["lib"] == "libcurl"]
    assert wire and all(w["key"] == f"http://127.0.0.1:{proxy.port}/public/trwire/wire.nc" for w in wire)
    assert _server_view(wire) == server, (_server_view(wire), server)
    assert _proxy_view(wire, proxy) == seen
    gets = [w for w in wire if w["method"] == "GET"]
    assert all(w["status"] == 206 and w["bytes"] == w["range"][1] - w["range"][0] for w in gets)
    assert all(w["t0"] <= w["t1"] <= w["t_done"] for w in wire) and any(w["method"] == "HEAD" for w in wire)
    assert "SECRETTOKEN" not in (out / next(f for f in os.listdir(out) if f.endswith(".wire.jsonl"))).read_text()
    print("COUNTS libcurl: recorded", dict(_server_view(wire)), "server", dict(server))
    # the report joins them to the netCDF file and the rule quotes them
    rep = _report(out, _env(s3_server))
    nb = rep["objects"]["netcdf_byte_ranges"][0]
    assert nb["wire_requests"] == len(wire) and nb["wire_gets"] == len(gets) and nb["wire_peak_in_flight"] == 1
    f = next(f for f in rep["findings"] if f["rule"] == "object-netcdf-byte-range")
    assert f"{len(wire)} wire requests of netCDF-C's libcurl" in f["message"]
    # counters mode: per-key totals, the same requests
    ct = read_objects(cout)
    tot = {(c["op"], c["key"]): c["count"] for c in ct.counters if c["level"] == "wire"}
    assert sum(tot.values()) == sum(cserver.values()) and tot[("GET", wire[0]["key"])] == len(gets)


OBSTORE_JOB = """
import obstore, zarr
from obstore.store import S3Store
s3 = S3Store("climio", endpoint="{base}", region="us-east-1", client_options={"allow_http": True})
z = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), path="trwire/sharded.zarr", mode="r")
a = z[0:40, 0:40]          # part of a shard: ranged GETs of inner chunks (obstore coalesces neighbours)
b = z[64:128, :]           # whole inner chunks of the second shard row
listed = [m["path"] for batch in obstore.list(s3, prefix="trwire/sharded.zarr/") for m in batch]
print(float(a.sum()), float(b.sum()), len(listed))
"""


def test_obstore_socket_requests_equal_server_counters_and_proxy_ranges(s3_server, tmp_path):
    import zarr
    data = np.arange(128 * 128, dtype="f4").reshape(128, 128)
    st = zarr.storage.FsspecStore(s3_server.direct_endpoint.s3fs(asynchronous=True), path="climio/trwire/sharded.zarr")
    zarr.create_array(st, shape=data.shape, chunks=(16, 16), shards=(64, 128), dtype="f4", overwrite=True)[:] = data
    proxy = RecordingProxy(s3_server.proxy_port)
    try:
        base = f"http://127.0.0.1:{proxy.port}"
        out, stdout, server = _traced(s3_server, tmp_path, "obstore", OBSTORE_JOB.replace("{base}", base), proxy)
    finally:
        proxy.close()
    a, b, n = stdout.split()[:3]
    assert float(a) == float(data[:40, :40].sum()) and float(b) == float(data[64:, :].sum()) and int(n) == 3
    ot = read_objects(out)
    wire = [w for w in ot.wire if w["lib"] == "socket"]
    assert not [w for w in ot.wire if w["lib"] != "socket"]    # Python's own sockets are not parsed twice
    assert _server_view(wire) == server, (_server_view(wire), server)
    assert _proxy_view(wire, proxy) == Counter(proxy.seen)
    ranged = [w for w in wire if w["range"]]
    assert ranged and all(w["status"] == 206 and w["bytes"] == w["range"][1] - w["range"][0] for w in ranged if w["range"][0] >= 0)
    assert any("list-type=2" in w["key"] and w["status"] == 200 and w["bytes"] > 0 for w in wire)   # a LIST's body
    print("COUNTS obstore: recorded", dict(_server_view(wire)), "server", dict(server))
    # the report joins each data request to the store op it served
    rep = _report(out, _env(s3_server))
    o = rep["objects"]
    assert o["levels"]["wire"]["libs"] == {"socket": len(wire)}
    arr = next(x for x in o["arrays"] if x["array"] == "trwire/sharded.zarr")
    assert arr["wire_requests"] >= 1 and arr["requests_per_chunk_read"] is not None
    assert https_note(o) is None     # over http:// the report does not say "store operations only"


PARSER_JOB = r'''
import ctypes, socket, threading
libc = ctypes.CDLL(None, use_errno=True)
RESP = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: y\r\n\r\n"
        b"HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n\r\n0123456789"
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof")
REQS = (b"GET /b/chunked?X-Amz-Signature=SECRETSIG&prefix=a%2F HTTP/1.1\r\nHost: h:1\r\n\r\n"
        b"GET /b/len HTTP/1.1\r\nHost: h:1\r\nrange: bytes=10-19\r\n\r\n"
        b"HEAD /b/len HTTP/1.1\r\nHost: h:1\r\n\r\n"
        b"DELETE /b/gone HTTP/1.1\r\nHost: h:1\r\n\r\n"
        b"PUT /b/put HTTP/1.1\r\nHost: h:1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\nbody"
        b"GET /b/eof HTTP/1.1\r\nHost: h:1\r\n\r\n")
srv = socket.create_server(("127.0.0.1", 0))
def serve():
    for _ in range(3):
        c, _ = srv.accept()
        got = b""
        while len(got) < len(REQS) and (d := c.recv(65536)):
            got += d
        if got.startswith(b"GET"):   # the request sent by ctypes (C) and the one sent by Python
            c.sendall(RESP)
        c.close()
threading.Thread(target=serve, daemon=True).start()
port = srv.getsockname()[1]
# 1: sent and received through libc (as a Rust or C client would), in small pieces
s = socket.create_connection(("127.0.0.1", port))
fd = s.detach()
for i in range(0, len(REQS), 50):
    part = REQS[i:i + 50]
    assert libc.send(fd, part, len(part), 0) == len(part)
buf = ctypes.create_string_buffer(7)
n = 0
while (k := libc.recv(fd, buf, 7, 0)) > 0:
    n += k
libc.close(fd)
# 2: TLS-looking bytes: never parsed; 3: Python's own socket: the Python tracer's business
t = socket.create_connection(("127.0.0.1", port))
tfd = t.detach()
libc.send(tfd, b"\x16\x03\x01\x00\x05hello", 10, 0)
libc.close(tfd)
with socket.create_connection(("127.0.0.1", port)) as p:
    p.sendall(REQS)
    while p.recv(65536):
        pass
print(n == len(RESP))
'''


def test_http_parser_follows_chunks_heads_continues_and_eof_in_order(tmp_path):
    out, stdout = _trace(tmp_path, "parser", PARSER_JOB, dict(os.environ))
    assert stdout.split() == ["True"]
    wire = read_objects(out).wire
    got = [(w["method"], w["key"], w["range"], w["status"], w["bytes"], w.get("error")) for w in wire]
    assert got == [("GET", "http://h:1/b/chunked?prefix=a%2F", None, 200, 11, None),
                   ("GET", "http://h:1/b/len", [10, 20], 206, 10, None),
                   ("HEAD", "http://h:1/b/len", None, 200, 0, None),
                   ("DELETE", "http://h:1/b/gone", None, 204, 0, None),
                   ("PUT", "http://h:1/b/put", None, 200, 2, None),
                   ("GET", "http://h:1/b/eof", None, 200, 9, None)]
    assert all(w["lib"] == "socket" and w["t0"] <= w["t1"] <= w["t_done"] for w in wire)
    assert "SECRETSIG" not in (out / next(f for f in os.listdir(out) if f.endswith(".wire.jsonl"))).read_text()
