"""climio rechunk's checks and warnings (issue 17, items 3-5): divisor chunks and padding in the
plan, no-change and small-chunk warnings, directories, negative lengths, --tmp in --dry-run, the
plugin path, and what a SIGKILLed run leaves behind."""

import json
import os
import signal
import subprocess
import sys
import time

import netCDF4
import numpy as np
import pytest

from climio.data.writer import write_4d
from climio.rechunking import spec
from climio.rechunking.model import VarInfo
from climio.rechunking.plan import Layout, plan_variable
from climio.rechunking.verify import compare
from climio.base.units import format_size
from climio.dataset.compression import Compression

from conftest import run_cli


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

SHAPE = (24, 3, 40, 36)


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    path = tmp_path_factory.mktemp("checks") / "field.nc"
    write_4d(path, SHAPE, chunks=[1, 1, SHAPE[2], SHAPE[3]], dtype="f4", deflate=1, shuffle=True, seed=3)
    return path


def one_line(res):
    lines = res.stderr.strip().splitlines()
    return len(lines) == 1 and "Traceback" not in res.stderr


# ---------------------------------------------------------------- item 3: divisors and padding

def _var(shape, dims=("time_counter", "y", "x"), itemsize=4):
    return VarInfo(path="/tos", dims=dims, shape=shape, unlimited=(False,) * len(shape), dtype="<f4",
                   itemsize=itemsize, chunks=None, compression=Compression())


def test_divisor_near_exact():
    assert spec.divisor_near(180, 7) == 6          # 6 divides 180, 7 would pad 2 rows
    assert spec.divisor_near(100, 97) == 50        # 50 divides; 97 would store 194 rows
    assert spec.divisor_near(10, 4) == 2
    assert spec.divisor_near(332, 60) == 56        # no divisor of 332 = 4 * 83 in [30, 60]: even split of 6
    assert spec.divisor_near(1021, 600) == 511     # prime: 2 chunks of 511 pad 1 row
    assert spec.divisor_near(50, 80) == 50 and spec.divisor_near(7, 1) == 1


def test_for_chunks_divide_or_pad_least_nemo_orca1():
    """NEMO ORCA1 `tos` [12, 332, 362] float32, --for t: x whole (362), y as far as 1 MiB allows
    (60 rows; 332 = 4 * 83 has no divisor in [30, 60]), so the even split of 6 chunks, 56 rows:
    336 rows stored for 332, where 60 rows stored 360 (8.4 % more)."""
    info = _var((12, 332, 362))
    chunks = spec.for_chunks(info, {0}, spec.FOR_BYTES)
    assert chunks == (12, 56, 362)
    src = Layout(info.shape, 4, (1, 332, 362), True, 2_000_000)
    plan = plan_variable(src, Layout(info.shape, 4, chunks, True), 1 << 30)
    assert plan.padding_bytes == 12 * 4 * 362 * 4 == 69504
    assert plan.padding_fraction == pytest.approx(4 / 332)
    assert plan.to_dict()["padding_bytes"] == 69504
    old = plan_variable(src, Layout(info.shape, 4, (12, 60, 362), True), 1 << 30)
    assert old.padding_bytes == 12 * 28 * 362 * 4 == 486528                     # what 60 rows cost


def test_for_chunks_divisor_exact():
    info = _var((100, 180, 360))
    assert spec.for_chunks(info, {0, 2}, 1 << 20) == (100, 6, 360)            # 7 fit, 6 divide 180
    assert spec.for_chunks(info, {1, 2}, 1 << 20) == (4, 180, 360)            # 4 fit and divide 100
    plan = plan_variable(Layout(info.shape, 4, (1, 180, 360)), Layout(info.shape, 4, (100, 6, 360)), 1 << 30)
    assert plan.padding_bytes == 0 and "padding" not in "\n".join(plan.describe())


def test_plan_says_what_padding_costs():
    src = Layout((100, 30), 4, (100, 1))
    plan = plan_variable(src, Layout((100, 30), 4, (97, 7), True), 1 << 30)
    # 2 x 5 chunks of 97 x 7 = 194 x 35 elements allocated for 100 x 30
    assert plan.padding_bytes == (194 * 35 - 3000) * 4 == 15160
    assert plan.padding_fraction == pytest.approx(15160 / 12000)
    text = "\n".join(plan.describe())
    assert "padding: target chunks [97,7] do not divide [100,30]" in text
    assert "15160 B" in text and "126.3 %" in text and "before compression" in text
    flat = plan_variable(src, Layout((100, 30), 4, (50, 10)), 1 << 30)
    assert flat.padding_bytes == 0 and flat.padding_fraction == 0.0


def test_dry_run_shows_padding(field, tmp_path):
    res = run_cli("rechunk", field, tmp_path / "o.nc", "-c", "time/7,lat/9", "--dry-run")
    assert res.returncode == 0, res.stderr
    # [7,1,9,36] over [24,3,40,36]: 28 x 45 allocated for 24 x 40 -> (28*45 - 960) * 3 * 36 * 4 B
    pad = (28 * 45 - 24 * 40) * 3 * 36 * 4
    assert f"({pad} B, {100 * pad / (24 * 40 * 3 * 36 * 4):.1f} % of" in res.stderr, res.stderr


def test_dry_run_says_which_rates_are_calibrated(field, tmp_path, monkeypatch):
    """--dry-run prints one line per rate of the cost model: a built-in default, or taken from this
    platform's calibrated profile (what the profile does not hold stays a default, and says so)."""
    from climio.model import profile as profmod
    from climio import profiles as on_disk
    from climio.machine.platform import platform_id_here as platform_id_of
    from climio.rechunking import meta
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    codec = next(v.compression.label for v in meta.scan(field) if v.compression.codec != "none")

    def rate_lines():
        res = run_cli("rechunk", field, tmp_path / "o.nc", "-c", "time/12", "--dry-run")
        assert res.returncode == 0, res.stderr
        return sorted(ln for ln in (res.stdout + res.stderr).splitlines() if ln.startswith("rate "))

    default = "built-in default (a laptop SSD, libdeflate)"
    assert rate_lines() == sorted([f"rate read: 500 MB/s, {default}", f"rate write: 400 MB/s, {default}",
                                   f"rate decode {codec}: 600 MB/s, {default}", f"rate encode {codec}: 90 MB/s, {default}",
                                   f"rate per request: 0.1 ms, {default}"])
    on_disk.save(profmod.Profile(platform_id=platform_id_of(field), latency_s={"strided": 250e-6},
                                 rate_Bps={"sequential": [[4096, 1e9]]}, decode_Bps={"deflate4+shuffle": 300e6}))
    cal = "from the calibrated profile"
    assert rate_lines() == sorted([
        f"rate read: 1000 MB/s, {cal} (sequential 4 MiB requests)",
        "rate write: 800 MB/s, built-in default 400 MB/s scaled by the calibrated read rate (the profile has "
        "no write rate: run `climio calibrate`)",
        f"rate decode {codec}: 300 MB/s, {cal} ({codec})",
        f"rate encode {codec}: 90 MB/s, built-in default (the profile has no {codec} encode rate: run "
        "`climio calibrate`)",
        f"rate per request: 0.25 ms, {cal} (strided request latency)"])


# ---------------------------------------------------------------- item 4: checks and warnings

def test_no_change_warns_and_succeeds(field, tmp_path):
    res = run_cli("rechunk", field, tmp_path / "o.nc")
    assert res.returncode == 0, res.stderr
    assert "warning: no variable changes chunks or compression" in res.stderr
    assert compare(field, tmp_path / "o.nc") == []
    res = run_cli("rechunk", field, tmp_path / "p.nc", "-c", f"lat/{SHAPE[2]}")   # the same chunks, spelled out
    assert res.returncode == 0 and "warning: no variable changes" in res.stderr
    res = run_cli("rechunk", field, tmp_path / "q.nc", "--for", "t")
    assert res.returncode == 0 and "no variable changes" not in res.stderr


def test_output_directory_refused_up_front(field, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    for extra in ([], ["--force"], ["--dry-run"]):
        res = run_cli("rechunk", field, d, "--for", "t", *extra)
        assert res.returncode == 2 and f"output {d} is a directory" in res.stderr and one_line(res), res.stderr
    assert list(d.iterdir()) == []


def test_input_directory(tmp_path):
    res = run_cli("rechunk", tmp_path, tmp_path / "o.nc")
    assert res.returncode == 3 and "is a directory" in res.stderr and one_line(res), res.stderr


@pytest.mark.parametrize("spec_text", ["time/-5", "ta:-1,1,40,36", "ta:1,1,-40,36", "lat/ -2"])
def test_negative_chunk_length(field, tmp_path, spec_text):
    res = run_cli("rechunk", field, tmp_path / "o.nc", "-c", spec_text)
    assert res.returncode == 2 and "is negative" in res.stderr and one_line(res), res.stderr
    assert "whole number" not in res.stderr


TWO_PASS = ["-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}", "--max-mem", "30KiB", "--workers", "1"]


def test_tmp_checked_in_dry_run(field, tmp_path):
    out = tmp_path / "o.nc"
    res = run_cli("rechunk", field, out, *TWO_PASS, "--tmp", tmp_path / "nope", "--dry-run")
    assert res.returncode == 3 and "--tmp" in res.stderr and "does not exist" in res.stderr and one_line(res)
    (tmp_path / "file").write_text("x")
    res = run_cli("rechunk", field, out, *TWO_PASS, "--tmp", tmp_path / "file", "--dry-run")
    assert res.returncode == 3 and "is not a directory" in res.stderr and one_line(res)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if not os.access(ro, os.W_OK):     # root may write anywhere
        res = run_cli("rechunk", field, out, *TWO_PASS, "--tmp", ro, "--dry-run")
        assert res.returncode == 3 and "not writable" in res.stderr and one_line(res)
    res = run_cli("rechunk", field, out, *TWO_PASS, "--tmp", tmp_path, "--dry-run", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["plans"]["/ta"]["strategy"] == "two-pass"
    assert not out.exists()



def test_a_two_pass_run_times_each_pass(field, tmp_path):
    """--json's phases name each pass of each variable, in order, between the plan and the check;
    together they cover the command's own conversion time."""
    out = tmp_path / "o.nc"
    res = run_cli("rechunk", field, out, *TWO_PASS, "--tmp", tmp_path, "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["plans"]["/ta"]["strategy"] == "two-pass"
    names = [n for n, _ in summary["phases"]]
    at = names.index("/ta to-intermediate")
    assert names[at + 1] == "/ta from-intermediate" and names.index("scan, targets, plan") < at, names
    assert names.index("check written output") > at + 1 and all(v >= 0 for _, v in summary["phases"])
    passes = sum(v for n, v in summary["phases"] if n.startswith("/"))
    assert 0 < passes <= summary["seconds"] + 0.02, summary["phases"]
    with netCDF4.Dataset(field) as a, netCDF4.Dataset(out) as b:
        assert np.array_equal(a["ta"][...], b["ta"][...])


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (the tests run as root, as the set-up does)."""
    d = tmp_path / "small"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], check=True)
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_tmp_space_checked_in_dry_run(field, tmp_path, small_fs):
    res = run_cli("rechunk", field, tmp_path / "o.nc", *TWO_PASS, "--tmp", small_fs, "--dry-run")
    assert res.returncode == 4 and "free" in res.stderr and str(small_fs) in res.stderr and one_line(res), res.stderr
    # a plan without an intermediate file needs no room in --tmp
    res = run_cli("rechunk", field, tmp_path / "o.nc", "--for", "t", "--tmp", small_fs, "--dry-run")
    assert res.returncode == 0, res.stderr


def test_small_chunks_warn(field, tmp_path):
    res = run_cli("rechunk", field, tmp_path / "o.nc", "-c", "time/1,lev/1,lat/8,lon/9")
    assert res.returncode == 0, res.stderr
    size = format_size(8 * 9 * 4)
    assert f"warning: /ta chunks [1,1,8,9] are {size}" in res.stderr and "below 64KiB" in res.stderr, res.stderr
    res = run_cli("rechunk", field, tmp_path / "p.nc", "--for", "t", "--chunk-bytes", "256KiB")
    assert res.returncode == 0 and "below 64KiB" not in res.stderr


def test_plugin_path_after_zstd(field, tmp_path):
    assert "zstd" in spec.writable_codecs(), "the netCDF4 wheel writes zstd"
    import hdf5plugin
    out = tmp_path / "z.nc"
    res = run_cli("rechunk", field, out, "--compression", "zstd3")
    assert res.returncode == 0, res.stderr
    assert f"HDF5_PLUGIN_PATH={hdf5plugin.PLUGIN_PATH}" in res.stderr and "ncdump" in res.stderr, res.stderr
    res = run_cli("rechunk", field, tmp_path / "d.nc", "--compression", "deflate2")
    assert res.returncode == 0 and "HDF5_PLUGIN_PATH" not in res.stderr


# ---------------------------------------------------------------- item 5: SIGKILL

def test_killed_run_is_cleaned_up_by_the_next(tmp_path):
    src = tmp_path / "slow.nc"
    write_4d(src, (256, 4, 128, 128), chunks=[1, 1, 128, 128], dtype="f4", deflate=1, shuffle=True, seed=1)
    out = tmp_path / "out" / "o.nc"
    out.parent.mkdir()
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    # a budget this small makes the planner take two passes: about 2 s of work (0.5 s at 64 time steps was
    # too short once the rechunk got faster: the run finished before the kill)
    args = [exe, "rechunk", str(src), str(out), "-c", "time/256,lev/1,lat/1,lon/128", "--max-mem", "400KiB",
            "--workers", "1", "--verify"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not any(p.startswith(".o.nc.tmp-") for p in os.listdir(out.parent)):
        time.sleep(0.05)
    time.sleep(0.1)
    assert proc.poll() is None, "the conversion finished before it could be killed: make the input larger"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = sorted(os.listdir(out.parent))
    # the temporary output, and the intermediate file when the kill came during a two-pass plan
    assert not out.exists() and f".o.nc.tmp-{proc.pid}" in left, left
    assert all(p in (f".o.nc.tmp-{proc.pid}", f".climio-rechunk-{proc.pid}-ta.h5") for p in left), left

    res = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and f".o.nc.tmp-{proc.pid}" in lines[0] and "removed" in lines[0], res.stderr
    assert os.listdir(out.parent) == ["o.nc"]
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(out) as b:
        assert np.array_equal(a["ta"][...], b["ta"][...])
        assert b["ta"].chunking() == [256, 1, 1, 128]
    # a file of a process that is still running is not touched
    live = out.parent / f".o.nc.tmp-{os.getpid()}"
    live.write_bytes(b"busy")
    res = subprocess.run(args + ["--force"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "interrupted" not in res.stderr and live.exists()
    live.unlink()
