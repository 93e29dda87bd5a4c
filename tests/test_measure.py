"""The measuring core on small real files: cold means cold, the bookkeeping of needed bytes, the
process streamer's timeout, and every stack delivering exactly what the generator wrote."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from climio.machine import cache, native
from climio.dataset.access import plan, slice_starts
from climio.dataset.reads import read_count
from climio.data import write_4d
from climio.data.fields import values_1d, values_4d
from climio.base.errors import NativeError
from climio.measure import procs, series
from climio.measure.series import Series, StreamChecksum, distinct_bytes, run_series, storage_check
from climio.measure.worker import chunk_needed_bytes
from climio.measure.stacks import STACKS, Reader, file_kind
from conftest import ONE_D_BYTES, run_probe, run_worker

SHAPE4 = (32, 4, 64, 64)           # 4 MiB of float64
T, Z, Y, X = SHAPE4
LAYOUTS = {"contiguous": "contiguous", "xy-chunks": [1, 1, Y, X], "xt-chunks": [T, 1, 1, X]}
SEED4 = 5
MIN_STORAGE_SHARE = 0.9


@pytest.fixture(scope="module")
def files_4d(tmp_path_factory):
    d = tmp_path_factory.mktemp("data4d")
    out = {}
    for name, chunks in LAYOUTS.items():
        path = d / f"ta_{name}.nc"
        write_4d(path, list(SHAPE4), chunks=chunks, seed=SEED4, random=True)
        out[name] = str(path)
    slices = {}
    for read in ("xy", "xt"):
        sl = slice_starts(SHAPE4, read_count(read, SHAPE4))
        p = d / f"{read}.txt"
        p.write_text("".join(" ".join(map(str, (*s, *c))) + "\n" for s, c in sl))
        slices[read] = (str(p), sl)
    return {"files": out, "slices": slices}


def assert_cold(rec, needed=None):
    """Every cold record read at least 90% of what it needs from storage and says so."""
    m, c = rec["metrics"], rec["cache"]
    needed = m["storage_needed_bytes"] if needed is None else needed
    where = (rec["params"].get("layer"), rec["params"].get("pattern") or rec["params"].get("chunking"),
             rec["params"].get("buffer_bytes"), rec["rep"])
    assert rec["status"] == "ok", rec
    assert c["state"] == "cold", where
    assert needed > 0, where
    assert m["storage_read_bytes"] >= MIN_STORAGE_SHARE * needed, (where, m["storage_read_bytes"], needed)
    if "effective" in c:
        assert c["effective"] == "cold", where


# --- (a) cold means cold ----------------------------------------------------------------------------

@pytest.mark.parametrize("stack", ["netcdf4-python", "h5py"])
@pytest.mark.parametrize("lay", list(LAYOUTS))
@pytest.mark.parametrize("read", ["xy", "xt"])
def test_chunking_cold_cells_read_from_storage(files_4d, stack, lay, read):
    path = files_4d["files"][lay]
    sfile, sl = files_4d["slices"][read]
    recs = run_worker(stack, "--file", path, "--var", "ta", "--slices", sfile, "--reps", "2", "--budget", "0",
                      study="chunking")
    assert len(recs) == 2
    for r in recs:
        p, m = r["params"], r["metrics"]
        assert r["study"] == "chunking" and p["layer"] == stack and p["slices_total"] == len(sl)
        assert p["chunking"] == LAYOUTS[lay] and p["var_shape"] == list(SHAPE4)
        assert m["slices_read"] == m["ops"] == len(sl) and m["sampled"] is False
        assert m["bytes"] == 8 * T * Z * Y * X and m["open_s"] >= 0
        assert r["cache"]["effective"] == "cold"
        assert_cold(r)
    # the needed bytes are the whole variable: every chunk (or every byte) is touched once
    assert recs[0]["metrics"]["storage_needed_bytes"] == 8 * T * Z * Y * X
    assert isinstance(recs[0]["params"]["chunk_cache"], dict)


@pytest.mark.parametrize("lay", list(LAYOUTS))
def test_native_slab_probe_cold_cells_read_from_storage(files_4d, lay):
    """The C slab probe prepares the cache after nc_open too; its needed bytes come from the
    Python side (the probe cannot tell stored chunk sizes)."""
    path = files_4d["files"][lay]
    for read in ("xy", "xt"):
        sfile, sl = files_4d["slices"][read]
        recs, _ = run_probe("climio-probe-netcdf-slab", "--file", path, "--var", "ta", "--slices", sfile,
                            "--reps", "2", "--budget", "0")
        chunks = LAYOUTS[lay] if isinstance(LAYOUTS[lay], list) else None
        stored = 8 * T * Z * Y * X
        needed = chunk_needed_bytes(SHAPE4, chunks, sl, 8, stored if chunks else None)(len(sl))
        assert needed == stored
        for r in recs:
            assert_cold(r, needed)


@pytest.mark.parametrize("stack", [s for s in STACKS])
def test_read_stack_worker_cold_cells_read_from_storage(files_1d, stack):
    path = files_1d[file_kind(stack)]
    recs = run_worker(stack, "--file", path, "--patterns", "sequential,strided", "--buffers", "4096,65536",
                      "--reps", "2")
    assert len(recs) == 2 * 2 * 2
    for r in recs:
        p, m = r["params"], r["metrics"]
        assert m["storage_needed_bytes"] == distinct_bytes(plan(p["pattern"], ONE_D_BYTES, p["buffer_bytes"]))
        assert "open_s" in m
        assert r["cache"]["effective"] == "cold"
        assert_cold(r)


@pytest.mark.parametrize("probe,kind", [("climio-probe-posix", "bin"), ("climio-probe-netcdf", "nc")])
def test_read_stack_probes_cold_cells_read_from_storage(files_1d, probe, kind):
    recs, _ = run_probe(probe, "--file", files_1d[kind], "--patterns", "sequential,strided,random",
                        "--buffers", "4096,65536", "--reps", "2")
    assert len(recs) == 3 * 2 * 2
    for r in recs:
        p = r["params"]
        assert r["metrics"]["storage_needed_bytes"] == distinct_bytes(
            plan(p["pattern"], ONE_D_BYTES, p["buffer_bytes"], p["random_count"], p["seed"]))
        assert r["cache"]["effective"] == "cold" and r["cache"]["storage_share"] >= MIN_STORAGE_SHARE
        assert_cold(r)


# --- (b) the bookkeeping, exactly ---------------------------------------------------------------------

def test_distinct_bytes_counts_overlaps_once():
    assert distinct_bytes([]) == 0
    assert distinct_bytes([(0, 10)]) == 10
    assert distinct_bytes([(0, 10), (5, 10), (20, 5), (21, 2), (30, 0)]) == 20
    assert distinct_bytes([(5, 5), (0, 3)]) == 8                 # unsorted input
    assert distinct_bytes([(0, 100), (10, 5), (50, 60)]) == 110  # contained, then overlapping
    assert distinct_bytes([(7, 3), (7, 3), (7, 3)]) == 3          # repeats
    assert distinct_bytes([(0, 4), (4, 4)]) == 8                  # adjacent
    assert distinct_bytes(np.array([[0, 4096], [8192, 4096]], dtype=np.int64)) == 8192
    # the random plan overlaps; brute force agrees
    reads = plan("random", 1 << 16, 4096, 100, 3)
    covered = np.zeros(1 << 16, bool)
    for off, n in reads:
        covered[off:off + n] = True
    assert distinct_bytes(reads) == int(covered.sum()) < int(reads[:, 1].sum())


def test_storage_check_exactly():
    cold = {"state": "cold", "requested": "cold", "method": "posix_fadvise(DONTNEED)"}
    assert storage_check(cold, 900, 1000) == dict(cold, storage_share=0.9, effective="cold")
    assert storage_check(cold, 500, 1000) == dict(cold, storage_share=0.5, effective="cold")
    assert storage_check(cold, 499, 1000) == dict(cold, storage_share=0.499, effective="effectively-warm")
    assert storage_check(cold, 0, 4096) == dict(cold, storage_share=0.0, effective="effectively-warm")
    assert storage_check(cold, 3 << 20, 1 << 20) == dict(cold, storage_share=3.0, effective="cold")
    assert storage_check(cold, None, 1000) == dict(cold, effective="unverified")
    assert storage_check(cold, 123, 0) == dict(cold, effective="cold")
    warm = {"state": "warm", "requested": "cold"}
    assert storage_check(warm, 0, 1000) == dict(warm, effective="warm")
    assert storage_check(cold, 5, 1000) is not cold and "effective" not in cold


def test_chunk_needed_bytes_exactly():
    shape, chunks = (4, 1, 6, 10), [2, 1, 3, 5]        # grid 2 x 1 x 2 x 2 = 8 chunks
    one = [((0, 0, 0, 0), (1, 1, 1, 1))]
    assert chunk_needed_bytes(shape, chunks, one, 8, 8000)(1) == 1000          # stored size / 8 chunks
    assert chunk_needed_bytes(shape, chunks, one, 8, None)(1) == 2 * 3 * 5 * 8   # uncompressed chunk
    xy = [((t, 0, 0, 0), (1, 1, 6, 10)) for t in range(4)]
    assert chunk_needed_bytes(shape, chunks, xy, 8, 8000)(1) == 4000            # 4 chunks of t=0
    assert chunk_needed_bytes(shape, chunks, xy, 8, 8000)(2) == 4000            # t=1: the same chunks
    assert chunk_needed_bytes(shape, chunks, xy, 8, 8000)(3) == 8000
    assert chunk_needed_bytes(shape, chunks, xy, 8, 8000)(0) == 0
    # contiguous: distinct bytes wanted, overlaps once
    overl = [((0, 0, 0, 0), (1, 1, 2, 10)), ((0, 0, 1, 0), (1, 1, 2, 10))]
    assert chunk_needed_bytes(shape, None, overl, 4, None)(2) == 30 * 4


def test_series_evicts_after_the_open(files_1d, monkeypatch):
    """run_series opens first and prepares the cache after: the open's reads are evicted."""
    path = files_1d["bin"]
    events = []
    real_prepare = cache.prepare

    def prepare(paths, state):
        events.append("prepare")
        return real_prepare(paths, state)

    monkeypatch.setattr(series.cache, "prepare", prepare)

    class Opened:
        def __init__(self):
            events.append("open")
            self.fh = open(path, "rb")
            self.fh.read()               # an open that reads (and so caches) the whole file

        def read(self, r):
            self.fh.seek(int(r[0]))
            return self.fh.read(int(r[1]))

        def close(self):
            self.fh.close()

    reads = plan("sequential", ONE_D_BYTES, 1 << 16)
    recs = []
    run_series(Series(study="t", path=path, params={}, requests=reads, open=Opened,
                      needed_bytes=lambda n: distinct_bytes(reads[:n]), planned_bytes=ONE_D_BYTES, reps=2,
                      verify=True, checksum=StreamChecksum), recs.append)
    assert events == ["open", "prepare", "open", "prepare"]
    assert len(recs) == 2
    for r in recs:
        assert r["metrics"]["bytes"] == ONE_D_BYTES and "open_s" in r["metrics"]
        assert_cold(r)


# --- (c) the streamer kills a hung child ---------------------------------------------------------------

def _group_alive(pgid) -> list:
    """Live (non-zombie) processes of the process group."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(pid))
    return alive


@pytest.mark.parametrize("code", [
    "import time; time.sleep(60)",
    # a child with a child of its own: the whole group goes
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "time.sleep(60)",
])
def test_streamer_kills_a_hung_child(monkeypatch, code):
    started = []
    real_popen = procs.subprocess.Popen

    def popen(*a, **kw):
        p = real_popen(*a, **kw)
        started.append(p)
        return p

    monkeypatch.setattr(procs.subprocess, "Popen", popen)
    t0 = time.monotonic()
    with pytest.raises(NativeError) as err:
        procs.stream_records([sys.executable, "-c", code], lambda rec: None, timeout_s=1)
    elapsed = time.monotonic() - t0
    assert elapsed < 10
    msg = str(err.value)
    assert "\n" not in msg and "did not finish within 1 s" in msg
    assert len(started) == 1
    pgid = started[0].pid   # start_new_session: the child leads its own group
    deadline = time.monotonic() + 5
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_alive(pgid) == []


# --- (d) every stack reads exactly what the generator wrote -----------------------------------------------

RANGES = [(0, 4096), (8, 8), (4096 * 3, 65536), (ONE_D_BYTES - 24, 24), (ONE_D_BYTES - 4096, 4096), (800, 8000)]
SLABS = [((0, 0, 0, 0), (1, 1, Y, X)), ((0, 2, 5, 0), (T, 1, 1, X)), ((3, 1, 7, 9), (5, 2, 11, 13)),
         ((T - 1, Z - 1, Y - 1, X - 1), (1, 1, 1, 1)), ((0, 0, 0, 0), (T, Z, Y, X))]


@pytest.mark.parametrize("name", list(STACKS))
def test_stack_reads_exactly_the_bytes_written(files_1d, name):
    values = values_1d(0, ONE_D_BYTES // 8, seed=files_1d["seed"], random=True).astype("<f8")
    raw = values.tobytes()
    reader = STACKS[name]()
    assert isinstance(reader, Reader)
    reader.open(files_1d[file_kind(name)], "data")
    try:
        assert reader.shape == (ONE_D_BYTES // 8,) and reader.dtype == np.dtype("f8")
        got, want = StreamChecksum(), StreamChecksum()
        for off, n in RANGES:
            data = reader.read_bytes(off, n)
            got.update(data)
            want.update(raw[off:off + n])
            assert bytes(np.ascontiguousarray(np.ma.getdata(data)).tobytes()) == raw[off:off + n], (off, n)
        assert got.hexdigest() == want.hexdigest()
        assert isinstance(reader.library(), str) and reader.library()
    finally:
        reader.close()


@pytest.mark.parametrize("name", list(STACKS))
def test_stack_reads_exactly_the_hyperslabs_written(files_4d, name):
    reader = STACKS[name]()
    if not reader.slabs:
        reader.open(files_4d["files"]["contiguous"], "ta")
        try:
            with pytest.raises(NotImplementedError):
                reader.read_slab((0, 0, 0, 0), (1, 1, 1, 1))
        finally:
            reader.close()
        return
    for lay, path in files_4d["files"].items():
        reader.open(path, "ta", None)
        try:
            assert reader.shape == SHAPE4
            got, want = StreamChecksum(), StreamChecksum()
            for start, count in SLABS:
                sel = tuple(slice(s, s + c) for s, c in zip(start, count))
                expect = values_4d(SHAPE4, sel, seed=SEED4, random=True)
                data = reader.read_slab(start, count)
                np.testing.assert_array_equal(np.ma.getdata(data), expect, err_msg=f"{lay} {start} {count}")
                got.update(data)
                want.update(expect)
            assert got.hexdigest() == want.hexdigest()
            info = reader.chunk_cache_info()
            assert info is None or set(info) == {"size", "nelems", "preemption"}
        finally:
            reader.close()


@pytest.mark.parametrize("name", ["netcdf4-python", "h5py", "h5netcdf"])
def test_stack_sets_the_chunk_cache_asked(files_4d, name):
    reader = STACKS[name]()
    reader.open(files_4d["files"]["xy-chunks"], "ta", (3 << 20, 1009, 0.5))
    try:
        info = reader.chunk_cache_info()
        assert info["size"] == 3 << 20 and info["nelems"] == 1009 and info["preemption"] == pytest.approx(0.5)
    finally:
        reader.close()


def test_worker_bad_input_is_one_line(tmp_path, files_1d):
    out = subprocess.run([sys.executable, "-m", "climio.measure.worker", "--study", "chunking", "--stack", "h5py",
                          "--file", files_1d["nc"], "--var", "nope", "--slices", str(tmp_path / "none.txt")],
                         capture_output=True, text=True, env=native.child_env())
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("climio-worker: error:"), out.stderr


# --- the N-task runner (measure.tasks.TaskPool) -------------------------------------------------------

@pytest.fixture(scope="module")
def pool_nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("pool") / "ta.nc"
    write_4d(str(path), [8, 2, 16, 32], chunks=[8, 1, 4, 32])
    return str(path)


def test_task_pool_reads_each_task_s_share_from_a_cold_cache(pool_nc):
    from climio.measure.tasks import SlabReads, TaskPool, gathered, split
    reads = [((0, z, y, 0), (8, 1, 1, 32)) for z in range(2) for y in range(16)]
    groups = split(reads, 2)
    with TaskPool(2) as pool:
        res, state, job_s = pool.run([SlabReads(pool_nc, "ta", "netcdf4-python", g) for g in groups], [pool_nc])
    assert [r["bytes"] for r in res] == [len(g) * 8 * 32 * 8 for g in groups] and [r["ops"] for r in res] == [16, 16]
    assert state["state"] == "cold" and state["verified_by"] == "mincore"
    m = gathered(res, ("bytes",))
    assert m["wall_s"] == max(m["task_wall_s"]) <= job_s and m["bytes"] == 2 * 16 * 8 * 32 * 8
    # every task's own /proc/self/io after the eviction: the chunks came from storage, not the page cache
    assert m["storage_read_bytes"] >= 0.9 * 2 * 16 * 8 * 32 * 8


def test_task_pool_a_task_that_cannot_open_raises_its_own_error(pool_nc):
    """A task failing before the barrier aborts it: its error here, not a hang or a BrokenBarrierError."""
    from climio.measure.tasks import SlabReads, TaskPool
    reads = [((0, 0, 0, 0), (1, 1, 1, 1))]
    t0 = time.perf_counter()
    with pytest.raises(Exception) as err, TaskPool(2) as pool:
        pool.run([SlabReads(pool_nc, "ta", "netcdf4-python", reads), SlabReads(pool_nc, "nope", "h5py", reads)],
                 [pool_nc])
    assert "nope" in str(err.value) and "Barrier" not in type(err.value).__name__
    assert time.perf_counter() - t0 < 60
