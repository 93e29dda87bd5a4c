"""climio rechunk end to end: values and metadata survive, every plan strategy converts correctly,
memory stays within the budget, interruption and bad input leave nothing behind."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import netCDF4
import numpy as np
import pytest

from climio.data.writer import write_4d
from climio.rechunking.verify import compare

from conftest import run_cli, slow_rechunk_source, start_slow_rechunk


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

SHAPE = (24, 3, 40, 36)          # [t, z, y, x], float32: 414 KiB per level-time-map stack


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    """Deflate+shuffle float32, chunked [1,1,Y,X] as model output usually is."""
    d = tmp_path_factory.mktemp("rechunk")
    path = d / "field.nc"
    write_4d(path, SHAPE, chunks=[1, 1, SHAPE[2], SHAPE[3]], dtype="f4", deflate=1, shuffle=True, seed=3)
    return path


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _rechunk(src, dst, *args):
    out = run_cli("rechunk", src, dst, "--json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _values(path, var="ta"):
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        v = ds[var]
        return v[...], v.chunking(), v.filters()


@pytest.mark.parametrize("args, strategy", [
    (["--max-mem", "1GiB", "--workers", "1"], "single-pass"),
    (["--max-mem", "200KiB", "--workers", "1"], "redecode"),       # too small for [T,1,Y,X] blocks
    (["--max-mem", "30KiB", "--workers", "1"], "two-pass"),        # re-decoding would decode every chunk many times
    (["--max-mem", "1GiB", "--workers", "2"], "single-pass"),
    (["--max-mem", "400KiB", "--workers", "2"], "redecode"),
])
def test_xy_to_xt_chunks_keeps_every_value(field, tmp_path, args, strategy):
    before = _digest(field)
    out = tmp_path / "xt.nc"
    summary = _rechunk(field, out, "-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}", *args)
    plan = summary["plans"]["/ta"]
    assert plan["strategy"] == strategy
    assert _digest(field) == before, "the input must never change"
    a, _, _ = _values(field)
    b, chunking, filters = _values(out)
    assert np.array_equal(a, b)
    assert chunking == [SHAPE[0], 1, 1, SHAPE[3]]
    assert filters["zlib"] and filters["shuffle"] and filters["complevel"] == 1
    assert compare(field, out) == []
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")], "temporary files left behind"


def test_two_pass_plan_converts_and_removes_its_intermediate(field, tmp_path):
    work = tmp_path / "tmpdir"
    work.mkdir()
    dry = run_cli("rechunk", field, tmp_path / "o.nc", "-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}",
                  "--max-mem", "30KiB", "--workers", "1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)["plans"]["/ta"]
    assert not (tmp_path / "o.nc").exists(), "--dry-run writes nothing"
    summary = _rechunk(field, tmp_path / "o.nc", "-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}",
                       "--max-mem", "30KiB", "--workers", "1", "--tmp", work)
    assert plan["strategy"] == "two-pass"
    assert summary["plans"]["/ta"] == plan
    assert np.array_equal(_values(field)[0], _values(tmp_path / "o.nc")[0])
    assert os.listdir(work) == []


def test_two_pass_through_a_tiled_intermediate_keeps_every_value(field, tmp_path):
    """Narrow target chunks under a small budget: the intermediate is tiled by the second pass's
    blocks (rechunking.tiles), the first pass writing pieces of tiles, the second reading whole tiles."""
    work = tmp_path / "tmpdir"
    work.mkdir()
    summary = _rechunk(field, tmp_path / "o.nc", "-c", f"time/{SHAPE[0]},lev/1,lat/4,lon/6",
                       "--max-mem", "80KiB", "--workers", "2", "--tmp", work)
    plan = summary["plans"]["/ta"]
    first, second = plan["passes"]
    assert plan["strategy"] == "two-pass" and first["dst"]["chunks"] == second["block"] == [SHAPE[0], 1, 8, 12]
    assert second["read_ops"] == second["n_blocks"]
    a, b = _values(field)[0], _values(tmp_path / "o.nc")
    assert np.array_equal(a, b[0]) and b[1] == [SHAPE[0], 1, 4, 6]
    assert os.listdir(work) == []


def test_output_is_readable_by_netcdf_c(field, tmp_path):
    """Chunks we deflate ourselves must decode in netCDF-C's own HDF5 (Debian's ncdump)."""
    out = tmp_path / "xt.nc"
    _rechunk(field, out, "-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}", "--max-mem", "64MiB")
    text = subprocess.run(["ncdump", "-v", "ta", "-p", "9", str(out)], capture_output=True, text=True, check=True).stdout
    body = text.split("ta =", 1)[1]
    numbers = np.array([float(x) for x in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", body)], dtype="f4")
    assert np.array_equal(numbers, _values(field)[0].ravel())
    hs = subprocess.run(["ncdump", "-hs", str(out)], capture_output=True, text=True, check=True).stdout
    assert f'ta:_ChunkSizes = {SHAPE[0]}, 1, 1, {SHAPE[3]}' in hs


def test_compression_change_and_contiguous(field, tmp_path):
    a = _values(field)[0]
    _rechunk(field, tmp_path / "z.nc", "--compression", "deflate4", "--balanced")
    b, chunking, filters = _values(tmp_path / "z.nc")
    assert np.array_equal(a, b) and filters["complevel"] == 4 and not filters["shuffle"]
    _rechunk(field, tmp_path / "c.nc", "--contiguous", "--compression", "none", "--max-mem", "256KiB")
    c, chunking, _ = _values(tmp_path / "c.nc")
    assert chunking == "contiguous" and np.array_equal(a, c)


def test_verify_compares_every_value(field, tmp_path):
    summary = _rechunk(field, tmp_path / "v.nc", "--for", "t", "--verify")
    assert summary["verified"] is True


def _peak_rss_of(cmd):
    """Peak RSS (bytes) of a command and, separately, the largest of its children."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.stdout.close(), proc.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_maxrss * 1024


def test_peak_memory_stays_within_budget(tmp_path):
    """A 48 MiB variable converted with --max-mem 8MiB: the process grows by at most the budget plus
    a small overhead over an interpreter that has loaded the same libraries."""
    src = tmp_path / "big.nc"
    shape = (96, 2, 256, 256)
    write_4d(src, shape, chunks=[1, 1, 256, 256], dtype="f4", deflate=1, shuffle=True, seed=5)
    budget = 8 << 20
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    peak = _peak_rss_of([exe, "rechunk", src, tmp_path / "o.nc", "-c", "time/96,lev/1,lat/1,lon/256",
                         "--max-mem", str(budget), "--workers", "1"])
    base = _peak_rss_of([sys.executable, "-c", "import climio.cli, climio.rechunking.command, climio.rechunking.execute, "
                         "climio.rechunking.meta, climio.rechunking.verify, h5py, netCDF4, numpy, deflate"])
    assert peak - base <= budget + (12 << 20), f"grew {(peak - base) >> 20} MiB with an 8 MiB budget"
    assert np.array_equal(_values(src)[0], _values(tmp_path / "o.nc")[0])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_leaves_no_output(tmp_path, sig):
    src = slow_rechunk_source(tmp_path / "slow.nc")
    out = tmp_path / "out" / "o.nc"
    out.parent.mkdir()
    # A tiny budget makes many small blocks, so the run is still going when the signal comes.
    proc, started = start_slow_rechunk(src, out)
    assert started, "conversion never started"
    time.sleep(0.3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err   # errors.EXIT_CODES
    last = err.strip().splitlines()[-1]
    assert "nothing written" in last and err.count("climio: error") == 1 and "Traceback" not in err, err
    assert os.listdir(out.parent) == []


@pytest.mark.parametrize("args, message", [
    (["--var", "nosuch"], "unknown variable"),
    (["-c", "nosuch/4"], "nosuch"),
    (["-c", "lat/400"], "larger than the dimension"),
    (["--compression", "lzma9"], "compression"),
    (["--contiguous", "--compression", "deflate1"], "contiguous"),
    (["--max-mem", "1KiB", "-c", "time/24,lev/1,lat/1,lon/36"], "--max-mem"),
    (["--workers", "0"], "--workers"),
])
def test_bad_input_gives_one_line(field, tmp_path, args, message):
    out = run_cli("rechunk", field, tmp_path / "o.nc", *args)
    assert out.returncode != 0
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert os.listdir(tmp_path) == []


def test_missing_input_and_existing_output(field, tmp_path):
    out = run_cli("rechunk", tmp_path / "nope.nc", tmp_path / "o.nc")
    assert out.returncode == 3 and "does not exist" in out.stderr
    (tmp_path / "o.nc").write_bytes(b"keep me")
    out = run_cli("rechunk", field, tmp_path / "o.nc", "--for", "xt")
    assert out.returncode == 2 and "exists" in out.stderr
    assert (tmp_path / "o.nc").read_bytes() == b"keep me"
    out = run_cli("rechunk", field, field, "--force")
    assert out.returncode == 2 and "is the input" in out.stderr


CORPUS_CASES = [
    ["--balanced", "--chunk-bytes", "4KiB"],                 # chunks that divide no dimension
    ["--for", "xt"],
    ["-c", "time/5,lat/7", "--compression", "deflate2+shuffle", "--max-mem", "128KiB", "--workers", "1"],
    ["--compression", "none", "--workers", "2"],
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from rechunk_corpus import make_corpus
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.mark.parametrize("case", range(len(CORPUS_CASES)))
def test_corpus_round_trip(corpus, tmp_path, case):
    """Every corpus file (1-D..5-D, groups, strings, vlen/compound/enum, unlimited dims with short
    variables, fill values, packed ints, netCDF-3/CDF-5) keeps identical values and metadata."""
    args = CORPUS_CASES[case]
    converted = []
    for name, src in corpus.items():
        before = _digest(src)
        out = tmp_path / f"{name}.nc"
        res = run_cli("rechunk", src, out, "--verify", *args)
        refusal = "axis" if "--for" in args else "unknown dimension" if "-c" in args else None
        if res.returncode == 2 and refusal and refusal in res.stderr and name in ("groups", "types"):
            continue  # files without the axes or dimensions asked for: a one-line refusal is right
        assert res.returncode == 0, f"{name}: {res.stderr}"
        assert compare(src, out) == [], name
        assert _digest(src) == before
        converted.append(name)
    assert {"cf", "xt", "classic", "cdf5"} <= set(converted)


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (the tests run as root, as the set-up does)."""
    d = tmp_path / "small"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)], check=True)
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_too_little_disk_is_refused_before_writing(field, small_fs):
    out = run_cli("rechunk", field, small_fs / "o.nc", "--for", "xt")
    assert out.returncode == 4, out.stderr
    assert "free" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert os.listdir(small_fs) == []


# ---------------------------------------------------------------- the executor's copy-saving paths

@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2"])
def test_fused_shuffle_gives_the_same_chunks_as_the_plain_pipeline(dtype):
    """Gathering and shuffling a target chunk in one pass (edge chunks padded) encodes to the very
    bytes of shuffling a contiguous copy; decoding to byte planes and unshuffling into a block
    region gives the values back."""
    from climio.rechunking import blocks, codec
    rng = np.random.default_rng(7)
    block = (rng.random((13, 2, 7, 9)) * 1000).astype(dtype)
    sink = blocks.Sink("chunks", (13, 1, 3, 9), True, 1)
    fused = blocks.encode_block(block, (0, 0, 0, 0), sink)
    assert len(fused) == 2 * 3
    for origin, data in fused:
        piece = np.zeros(sink.chunks, block.dtype)
        region = block[tuple(slice(o, o + c) for o, c in zip(origin, sink.chunks))]
        piece[tuple(slice(0, n) for n in region.shape)] = region
        assert data == codec.encode(piece, True, 1)
        raw, planes = codec.decode_to_planes(data, (codec.FILTER_SHUFFLE, codec.FILTER_DEFLATE), 0,
                                             piece.nbytes, block.dtype.itemsize)
        assert planes
        out = np.zeros(sink.chunks, block.dtype)
        p = np.frombuffer(raw, np.uint8).reshape((block.dtype.itemsize,) + sink.chunks)
        codec.unshuffle_into(p, out.view(np.uint8).reshape(out.shape + (block.dtype.itemsize,)))
        assert np.array_equal(out, piece)


def test_raw_runs_read_and_write_any_box(tmp_path):
    """A two-pass intermediate is read and written by byte runs: every box round-trips."""
    from climio.rechunking import blocks
    rng = np.random.default_rng(3)
    shape = (5, 4, 6, 3)
    full = rng.random(shape).astype("f4")
    path = tmp_path / "flat.bin"
    path.write_bytes(b"\0" * 16 + full.tobytes())
    fd = os.open(path, os.O_RDWR)
    try:
        for _ in range(30):
            start = tuple(int(rng.integers(0, n)) for n in shape)
            count = tuple(int(rng.integers(1, n - s + 1)) for s, n in zip(start, shape))
            box = tuple(slice(s, s + c) for s, c in zip(start, count))
            got = np.empty(count, "f4")
            blocks._raw_io(os.preadv, fd, 16, shape, start, got)
            assert np.array_equal(got, full[box])
            new = rng.random(count).astype("f4")
            blocks._raw_io(os.pwritev, fd, 16, shape, start, new)
            full[box] = new
        assert path.read_bytes()[16:] == full.tobytes()
    finally:
        os.close(fd)


def test_workers_leave_no_shared_memory_behind(field, tmp_path):
    import glob
    before = set(glob.glob("/dev/shm/.climio-rechunk-*"))
    _rechunk(field, tmp_path / "o.nc", "-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}", "--workers", "2")
    assert np.array_equal(_values(field)[0], _values(tmp_path / "o.nc")[0])
    assert set(glob.glob("/dev/shm/.climio-rechunk-*")) <= before
