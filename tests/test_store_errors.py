"""Object-store failures name their cause in one line (issue 38 item 1, second case), against the
real server: wrong secret, missing bucket, missing key, a closed port; make-refs, rechunk from and
to a bucket, predict and advise. And the mapping itself (climio.stores.errors) on a throttling
server, which the streaming retries reuse."""

import http.server
import os
import subprocess
import sys
import threading
import time

import netCDF4
import numpy as np
import pytest

from climio.base.errors import Exit
from climio.stores import errors
from climio.stores.endpoint import Endpoint
from climio.stores.server import free_ports

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")
BUCKET = "climio"


@pytest.fixture(scope="module")
def objects(s3_server, tmp_path_factory):
    """A netCDF-4 file and a Zarr store (written by climio rechunk) in the bucket; the local file."""
    from climio.stores.objects import upload
    d = tmp_path_factory.mktemp("store-errors")
    nc = d / "t.nc"
    with netCDF4.Dataset(nc, "w") as ds:
        for name, n in zip(("time", "lat", "lon"), (4, 6, 8)):
            ds.createDimension(name, n)
        ds.createVariable("tas", "f4", ("time", "lat", "lon"))[:] = np.arange(192, dtype=np.float32).reshape(4, 6, 8)
    r = subprocess.run([CLIMIO, "rechunk", str(nc), str(d / "t.zarr")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    upload(s3_server.endpoint, nc, f"s3://{BUCKET}/errs")
    upload(s3_server.endpoint, d / "t.zarr", f"s3://{BUCKET}/errs")
    return {"nc": f"s3://{BUCKET}/errs/t.nc", "zarr": f"s3://{BUCKET}/errs/t.zarr", "local": nc, "dir": d}


def _commands(o, nc, zarr, out_dir):
    return {"make-refs": ["make-refs", nc, "-o", str(out_dir / "r.json")],
            "rechunk from": ["rechunk", zarr, str(out_dir / "o.zarr")],
            "rechunk to": ["rechunk", str(o["local"]), f"s3://{BUCKET}/errs/new.zarr"] if zarr.startswith(f"s3://{BUCKET}/") else None,
            "predict": ["predict", zarr, "--var", "tas", "--read", "xy"],
            "advise": ["advise", nc, "--var", "tas", "--read", "xy"]}


def _run(args, env, tmp_path):
    full = {**os.environ, **env}
    t0 = time.monotonic()
    r = subprocess.run([CLIMIO, *args], capture_output=True, text=True, timeout=120, env=full, cwd=tmp_path)
    return r, time.monotonic() - t0


def _one_line(r, secret=None):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("climio: error: "), r.stderr[-3000:]
    line = lines[0]
    for leak in ("<?xml", "StorePath", "Traceback", "calibrate", "Future exception"):
        assert leak not in line
    if secret:
        assert secret not in r.stderr
    return line


CASES = {   # name: (environment change, nc url, zarr url, what the line says, exit code)
    "wrong secret": ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, None, None, "refused access", Exit.DATA),
    "missing bucket": ({}, "s3://no-such-bucket-38/t.nc", "s3://no-such-bucket-38/t.zarr",
                       "no bucket 'no-such-bucket-38'", Exit.DATA),
    "missing key": ({}, f"s3://{BUCKET}/errs/absent.nc", f"s3://{BUCKET}/errs/absent.zarr", "no ", Exit.DATA),
}


@pytest.mark.parametrize("case", list(CASES))
def test_store_failure_is_one_line_with_its_cause(s3_server, objects, tmp_path, case):
    change, nc, zarr, says, code = CASES[case]
    env = {**s3_server.endpoint.env(), **change}
    for name, args in _commands(objects, nc or objects["nc"], zarr or objects["zarr"], tmp_path).items():
        if args is None or (case != "wrong secret" and name == "rechunk to"):
            continue
        r, _ = _run(args, env, tmp_path)
        line = _one_line(r, change.get("AWS_SECRET_ACCESS_KEY"))
        assert r.returncode == code, f"{name}: {line}"
        assert says in line and s3_server.endpoint.url in line, f"{name}: {line}"
        if case == "missing key":
            assert "no such object" in line or "no Zarr store" in line or "no objects" in line, f"{name}: {line}"


def test_closed_port_is_unreachable_within_the_connect_timeout(objects, tmp_path):
    port = free_ports(1)[0]
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    for name, args in _commands(objects, objects["nc"], objects["zarr"], tmp_path).items():
        if args is None:
            continue
        r, took = _run(args, env, tmp_path)
        line = _one_line(r)
        assert r.returncode == Exit.FAILURE, f"{name}: {line}"
        assert f"cannot reach the S3 endpoint http://127.0.0.1:{port} (connection refused within " \
               f"{errors.CONNECT_TIMEOUT_S:g} s)" in line, line
        assert took < 30, f"{name} took {took:.1f} s"


def test_no_endpoint_suggests_a_calibrate_command_the_flag_accepts(monkeypatch, tmp_path):
    from climio.advice.object_store import store_rates
    from climio.base.errors import InputError
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path))
    with pytest.raises(InputError) as got:
        store_rates(Endpoint.from_env(environ={}))
    assert "--endpoint-url" not in str(got.value) and "climio calibrate --store s3://BUCKET/PREFIX`" in str(got.value)


class _SlowDown(http.server.BaseHTTPRequestHandler):
    """Every request: 503 SlowDown, as S3 says when it throttles."""
    def do_GET(self):
        body = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>'
        self.send_response(503)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_PUT = do_GET

    def log_message(self, *args):
        pass


def test_throttling_server_is_transient_and_one_line():
    import obstore
    from obstore.store import S3Store
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowDown)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        ep = Endpoint.from_env(url, environ={"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"})
        store = S3Store(BUCKET, endpoint=url, region="us-east-1", access_key_id="k", secret_access_key="s",
                        client_options={"allow_http": True}, retry_config={"max_retries": 1})
        with pytest.raises(Exception) as got:
            obstore.get(store, "a/b").bytes()
        assert errors.classify(got.value) == errors.THROTTLED and errors.is_transient(got.value)
        err = errors.store_error(got.value, f"s3://{BUCKET}/a/b", ep)
        assert err.exit_code == Exit.FAILURE and err.transient
        assert str(err) == (f"s3://{BUCKET}/a/b: {url} is throttling requests (SlowDown) and the retries ran out: "
                            "retry later, or read with fewer workers")
    finally:
        server.shutdown()
        server.server_close()


def test_permanent_failures_are_not_transient():
    for exc in (PermissionError("Forbidden"), FileNotFoundError("b/k")):
        assert not errors.is_transient(exc)
    assert errors.is_transient(ConnectionRefusedError(111, "Connection refused"))
