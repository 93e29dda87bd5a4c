"""climio rechunk --scheduler (issue 37 item 3): the same block tasks on a real Dask cluster, a
`dask scheduler` and two `dask worker` processes started here on free ports and stopped after,
writing a Zarr store in the test S3 server; the output equals a local run's, object for object."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import run_cli


def _dask(*args, env):
    exe = os.path.join(os.path.dirname(sys.executable), "dask")
    return subprocess.Popen([exe, *args], env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def dask_cluster(s3_server):
    """tcp://127.0.0.1:PORT with two single-threaded workers started without any AWS_* variable:
    they reach the S3 server through the Endpoint each task carries (--endpoint-url, credentials)."""
    from distributed import Client
    from climio.stores.server import free_ports
    port, = free_ports(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard", env=env)]
    address = f"tcp://127.0.0.1:{port}"
    try:
        for _ in range(2):
            procs.append(_dask("worker", address, "--nthreads", "1", "--no-dashboard", "--memory-limit", "0",
                               "--host", "127.0.0.1", env=env))
        deadline = time.monotonic() + 90
        while True:
            try:
                with Client(address, timeout="5s") as c:
                    if len(c.scheduler_info()["workers"]) == 2:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the Dask cluster did not come up"
            time.sleep(0.5)
        yield address
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_rechunk_on_dask_cluster_equals_local_run(s3_server, dask_cluster, tmp_path, monkeypatch):
    import xarray as xr
    from zarr.storage import ObjectStore
    from climio.data.writer import write_4d
    from climio.stores.chunks import ObjectChunks
    ep = s3_server.endpoint
    for k, v in s3_server.env().items():   # the credentials; the endpoint only as --endpoint-url
        if k != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    src = tmp_path / "in.nc"
    write_4d(src, [8, 4, 32, 64], chunks=[1, 1, 32, 64], dtype="f4")
    args = ["-c", "ta:8,1,8,16", "--compression", "zstd3+shuffle", "--max-mem", "64KiB", "--tmp", tmp_path,
            "--endpoint-url", ep.url]
    out = run_cli("rechunk", src, "s3://climio/clu/in.zarr", "-c", "ta:1,1,32,64", "-j", "1",
                  "--endpoint-url", ep.url, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    # the plan per worker
    dry = run_cli("rechunk", "s3://climio/clu/in.zarr", "s3://climio/clu/dask.zarr", *args, "-j", "2",
                  "--scheduler", dask_cluster, "--dry-run", timeout=120)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "--max-mem 64KiB per worker (128KiB in all)" in dry.stderr
    assert "tasks, per worker" in dry.stderr and "requests" in dry.stderr and "predicted" in dry.stderr
    # S3 -> S3 on the cluster, and the same conversion locally
    # (with Python's import log: a worker defines the output, so the command never imports xarray,
    # pandas or dask.array, cluster.define_on_worker)
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    out = subprocess.run([exe, "rechunk", "s3://climio/clu/in.zarr", "s3://climio/clu/dask.zarr", *map(str, args),
                          "-j", "2", "--scheduler", dask_cluster, "--json"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "zarr" in imported and "distributed" in imported   # the log is there
    assert not {"xarray", "pandas", "dask.array"} & imported, sorted({"xarray", "pandas", "dask.array"} & imported)
    import json
    summary = json.loads(out.stdout)
    assert len(summary["plans"]["/ta"]["passes"]) == 1
    # where the command's time went, from its start to the published store (rechunking.phases)
    names = [n for n, _ in summary["phases"]]
    assert names[0] == "interpreter, CLI imports, arguments" and names[-1] == "publish (metadata last)"
    assert "tasks" in names and all(v >= 0 for _, v in summary["phases"])
    assert sum(v for _, v in summary["phases"]) >= summary["seconds"]
    local = run_cli("rechunk", "s3://climio/clu/in.zarr", "s3://climio/clu/local.zarr", *args, "-j", "1",
                    timeout=300)
    assert local.returncode == 0, local.stderr[-3000:]
    a, b = ObjectChunks("s3://climio/clu/dask.zarr", ep), ObjectChunks("s3://climio/clu/local.zarr", ep)
    keys = sorted(a.listing())
    assert keys == sorted(b.listing()) and sum(k.startswith("ta/c/") for k in keys) == 64
    for k in keys:   # the metadata a worker defined too
        assert bytes(a.get(k)) == bytes(b.get(k)), k
    ref = xr.open_dataset(src)["ta"].values
    got = xr.open_zarr(ObjectStore(ep.obstore("climio", "clu/dask.zarr"), read_only=True))["ta"].values
    np.testing.assert_array_equal(got, ref)
    # both workers (processes other than the command) ran blocks
    assert summary["task_processes"] == 2 and summary["peak_rss"] > 0


def test_cluster_refuses_netcdf_output(tmp_path):
    from climio.data.writer import write_4d
    src = tmp_path / "in.nc"
    write_4d(src, [2, 1, 8, 8], chunks=[1, 1, 8, 8], dtype="f4")
    out = run_cli("rechunk", src, tmp_path / "out.nc", "-c", "ta:2,1,4,4", "--scheduler", "tcp://127.0.0.1:9",
                  timeout=60)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith("netCDF-4 output on a cluster is refused; name OUT *.zarr "
                                                        "or s3://BUCKET/OUT.zarr")
