"""Every stop is clean: Ctrl-C and SIGTERM end with one line and 130 / 143, keep the records so far,
remove generated data; nothing is merged or overwritten silently."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def _start(args, tmp_path):
    return subprocess.Popen([CLIMIO, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)


def _wait_for(pred, timeout=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_make_data_stops_cleanly(tmp_path, sig, code, word):
    out = tmp_path / "new"
    proc = _start(["make-data", out, "--size", "3GiB", "--kind", "1d"], tmp_path)
    # wait until it is writing (its temporary file exists), then stop it
    assert _wait_for(lambda: out.is_dir() and any(out.iterdir())), "make-data never started writing"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    lines = [l for l in err.splitlines() if l.strip() and "make-data" not in l]
    assert lines and word in lines[-1] and "Traceback" not in err
    assert not out.exists(), f"left behind: {list(out.iterdir()) if out.exists() else ''}"


def test_make_data_refuses_to_overwrite_without_force(tmp_path):
    d = tmp_path / "d"
    assert run_cli("make-data", d, "--size", "64KiB").returncode == 0
    before = (d / "data1d.bin").read_bytes()
    res = run_cli("make-data", d, "--size", "64KiB", "--seed", "3")
    assert res.returncode == 2 and "already holds data1d.nc, data1d.bin" in res.stderr and "--force" in res.stderr
    assert (d / "data1d.bin").read_bytes() == before
    res = run_cli("make-data", d, "--size", "64KiB", "--seed", "3", "--force")
    assert res.returncode == 0 and (d / "data1d.bin").read_bytes() != before


def test_failed_make_data_leaves_no_empty_directory(tmp_path):
    d = tmp_path / "never"
    res = run_cli("make-data", d, "--size", "64KiB", "--kind", "4d", "--chunks", "1,1,1")
    assert res.returncode == 2 and not d.exists()


def test_trace_run_refuses_a_non_empty_directory(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "something").write_text("x")
    res = run_cli("trace", "run", "-o", d, "--", "true")
    assert res.returncode == 2 and "is not empty" in res.stderr and "--force" in res.stderr
    assert sorted(p.name for p in d.iterdir()) == ["something"]


def test_make_data_speaks_climio_compression_and_refuses_conflicts(tmp_path):
    import netCDF4
    d = tmp_path / "c"
    res = run_cli("make-data", d, "--kind", "4d", "--shape", "4,2,16,32", "--chunks", "1,1,16,32",
                  "--compression", "deflate4+shuffle")
    assert res.returncode == 0, res.stderr
    with netCDF4.Dataset(d / "field4d.nc") as ds:
        f = ds["ta"].filters()
        assert f["zlib"] and f["complevel"] == 4 and f["shuffle"] and ds["ta"].chunking() == [1, 1, 16, 32]
    for args, word in ((("--size", "1MiB", "--shape", "4,2,16,32", "--kind", "4d"), "give one"),
                       (("--compression", "deflate4"), "4-D file only"),
                       (("--kind", "4d", "--chunks", "contiguous", "--compression", "deflate1"), "needs chunks")):
        res = run_cli("make-data", tmp_path / "x", *args)
        assert res.returncode == 2 and word in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("cmd,sig,code", [
    (["bench", "read-stack", "--quick", "--layers", "numpy,py-file", "--no-syscalls", "--reps", "5"], signal.SIGTERM, 143),
    (["bench", "chunking", "--quick", "--reps", "5"], signal.SIGINT, 130),
    (["survey", "--quick"], signal.SIGTERM, 143),
])
def test_long_commands_stop_cleanly_keeping_records(tmp_path, cmd, sig, code):
    import glob
    import tempfile
    run = tmp_path / "run"
    proc = _start([*cmd, "-o", run], tmp_path)
    records = run / "records.jsonl"
    assert _wait_for(lambda: records.is_file() and records.stat().st_size > 0, timeout=240), "no record written"
    data_dirs = glob.glob(os.path.join(tempfile.gettempdir(), f"climio-data-{proc.pid}-*"))
    assert data_dirs, "the study generated no data directory of its own"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and ("terminated" if code == 143 else "interrupted") in err.strip().splitlines()[-1]
    lines = records.read_text().splitlines()
    assert lines and all(line.startswith("{") and line.endswith("}") for line in lines)   # every line whole
    assert (run / "report.html").is_file()          # the partial report, rendered from the records so far
    assert not any(os.path.exists(d) for d in data_dirs), "generated data left behind"


def test_sigkilled_study_leaves_data_the_next_run_names_and_removes(tmp_path):
    import glob
    import tempfile
    proc = _start(["bench", "read-stack", "--quick", "--layers", "numpy", "--no-syscalls", "--reps", "20",
                   "-o", tmp_path / "r1"], tmp_path)
    pattern = os.path.join(tempfile.gettempdir(), f"climio-data-{proc.pid}-*")
    assert _wait_for(lambda: glob.glob(pattern) and (tmp_path / "r1" / "records.jsonl").is_file(), timeout=240)
    proc.kill()
    proc.communicate(timeout=60)
    (left,) = glob.glob(pattern)
    res = run_cli("bench", "read-stack", "--quick", "--layers", "numpy", "--no-syscalls", "--reps", "1",
                  "-o", tmp_path / "r2", "--no-report")
    assert res.returncode == 0, res.stderr
    assert f"removing {left}" in res.stderr and "killed" in res.stderr
    assert not os.path.exists(left)
