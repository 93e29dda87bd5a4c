"""A rechunk S3 -> S3 survives faults (issue 37 item 5), on its own SeaweedFS behind Toxiproxy:
toxics added during the run (reset_peer, timeout, limit_data, latency), the server killed and
restarted mid-run, the server gone for longer than the retries (one line, nothing readable, then
--resume), and SIGKILL of the command at seeded points followed by --resume. Every finished
output is compared object for object (every key, every byte, metadata included) with a clean run.

The faults are triggered by the run's progress (chunk objects listed straight from the server,
not through the proxy), so that each one hits the run in the middle, whatever the machine's speed.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

CHUNKS = 512   # chunk objects of the output: [16,8,32,64] f4 in [16,1,4,8] chunks
ENV = {"CLIMIO_S3_TIMEOUT": "2s", "CLIMIO_S3_BACKOFF_MAX": "2", "CLIMIO_S3_ATTEMPTS": "14"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A server of these tests' own: they kill it and restart it."""
    from climio.stores.server import S3Server
    with S3Server(data_dir=tmp_path_factory.mktemp("s3faults")) as server:
        yield server


@pytest.fixture(scope="module")
def clean(s3, tmp_path_factory):
    """The input store (through the direct endpoint) and a clean run's output: {key: bytes}."""
    from climio.data.writer import write_4d
    tmp = tmp_path_factory.mktemp("faults")
    src = tmp / "in.nc"
    write_4d(src, [16, 8, 32, 64], chunks=[1, 1, 32, 64], dtype="f4")
    out = subprocess.run(_argv(str(src), "s3://climio/f/in.zarr", "-c", "ta:1,1,32,64", "-j", "1"),
                         env=_env(s3, direct=True), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    done = _run(s3, "clean.zarr", tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    return _snapshot(s3, "clean.zarr"), tmp


def _argv(*args):
    return [os.path.join(os.path.dirname(sys.executable), "climio"), "rechunk", *map(str, args)]


def _env(s3, direct=False):
    return {**os.environ, **s3.env(direct=direct), **ENV}


def _start(s3, name, tmp, *extra, env=None):
    argv = _argv("s3://climio/f/in.zarr", f"s3://climio/f/{name}", "-c", "ta:16,1,4,8", "--compression", "zstd1",
                 "--max-mem", "256KiB", "-j", "2", "--tmp", tmp, "--json", *extra)
    return subprocess.Popen(argv, env=env or _env(s3), start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _run(s3, name, tmp, *extra):
    p = _start(s3, name, tmp, *extra)
    out, err = p.communicate(timeout=300)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _objects(s3, name):
    from climio.stores.chunks import ObjectChunks
    return ObjectChunks(f"s3://climio/f/{name}", s3.direct_endpoint)


def _written(s3, name) -> int:
    try:
        return sum(k.startswith("ta/c/") for k in _objects(s3, name).listing())
    except Exception:   # noqa: BLE001 -- the server is down: nothing countable
        return -1


def _snapshot(s3, name) -> dict:
    objs = _objects(s3, name)
    return {k: bytes(objs.get(k)) for k in sorted(objs.listing())}


def _wait_written(s3, name, n, proc, timeout=120) -> bool:
    """Until `n` chunk objects are listed (True) or the run ended first (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _written(s3, name) >= n:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError(f"{name}: {n} chunk objects not written in {timeout} s")


def _finish(proc):
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_toxics_during_the_run(s3, clean):
    """reset_peer, timeout, limit_data and extra latency, each added for a moment in the middle of
    one run: it completes, counts its retries, and its output is the clean run's."""
    ref, tmp = clean
    s3.set_latency(20)
    toxics = [(0.1, "reset", "reset_peer", {"timeout": 0}, "downstream"),
              (0.3, "stall", "timeout", {"timeout": 0}, "downstream"),
              (0.5, "cut", "limit_data", {"bytes": 300}, "upstream"),
              (0.7, "slow", "latency", {"latency": 300, "jitter": 0}, "downstream")]
    applied = []
    try:
        proc = _start(s3, "toxic.zarr", tmp)
        for frac, name, kind, attrs, stream in toxics:
            if not _wait_written(s3, "toxic.zarr", int(frac * CHUNKS), proc):
                break
            s3.add_toxic(name, kind, attrs, stream)
            time.sleep(1.0 if kind != "timeout" else 2.5)   # a stall longer than the request timeout
            s3.remove_toxic(name)
            applied.append(kind)
        done = _finish(proc)
    finally:
        for _, name, *_ in toxics:
            s3.remove_toxic(name)
        s3.set_latency(0)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(applied) >= 3, applied
    assert json.loads(done.stdout)["retries"] > 0
    assert _snapshot(s3, "toxic.zarr") == ref


def test_server_killed_and_restarted(s3, clean):
    """The server killed mid-run and started again: the run waits it out and completes."""
    ref, tmp = clean
    proc = _start(s3, "restart.zarr", tmp)
    assert _wait_written(s3, "restart.zarr", CHUNKS // 3, proc)
    s3.kill_server()
    time.sleep(1)
    s3.restart_server()
    done = _finish(proc)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["retries"] > 0
    assert _snapshot(s3, "restart.zarr") == ref


def test_server_gone_then_resume(s3, clean):
    """The server gone for longer than the retries: one line, nothing readable under the final
    name; --resume once it is back completes the store."""
    ref, tmp = clean
    env = {**_env(s3), "CLIMIO_S3_ATTEMPTS": "3", "CLIMIO_S3_BACKOFF_MAX": "0.5"}
    proc = _start(s3, "gone.zarr", tmp, env=env)
    assert _wait_written(s3, "gone.zarr", CHUNKS // 3, proc)
    s3.kill_server()
    try:
        done = _finish(proc)
    finally:
        s3.restart_server()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "nothing readable under s3://climio/f/gone.zarr" in last and "--resume" in last, done.stderr[-2000:]
    left = _objects(s3, "gone.zarr").listing()
    assert left and not any(k.endswith(("zarr.json", ".zarray", ".zgroup")) for k in left)
    again = _run(s3, "gone.zarr", tmp, "--resume")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["blocks_skipped"] > 0
    assert _snapshot(s3, "gone.zarr") == ref


def test_sigkill_at_seeded_points_then_resume(s3, clean):
    """SIGKILL of the command (its process group: the workers too, as a batch system's hard limit)
    at 3 seeded points, each followed by --resume, which is itself killed at the next point; the
    last --resume completes: the output is the clean run's. No zarr.json before the end."""
    ref, tmp = clean
    rng = random.Random(37)
    points = sorted(rng.sample(range(CHUNKS // 10, CHUNKS * 9 // 10), 3))
    extra = ()
    for n in points:
        proc = _start(s3, "killed.zarr", tmp, *extra)
        reached = _wait_written(s3, "killed.zarr", n, proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        assert reached, f"the run ended before {n} chunks"
        assert "zarr.json" not in _objects(s3, "killed.zarr").listing()
        extra = ("--resume",)
    done = _run(s3, "killed.zarr", tmp, "--resume")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["blocks_skipped"] > 0
    assert _snapshot(s3, "killed.zarr") == ref
