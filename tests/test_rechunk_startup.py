"""What `climio rechunk` does before and around its blocks: reading a block's chunks ahead
(posix_fadvise WILLNEED while earlier blocks are encoded), a worker pool started before the plan
is known (taken by the Runner when the plan wants it, stopped otherwise and after failures), and a
command line that imports only the command it runs."""

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.machine import cache
from climio.rechunking import blocks, command, entry, execute
from climio.rechunking.formats import netcdf4 as nc_format

ROOT = Path(__file__).resolve().parents[1]


def test_ranges_merge_spans_closer_than_the_gap():
    spans = [(0, 10), (15, 20), (100, 110), (111, 120), (500, 600)]
    assert blocks._ranges(spans, 6) == [(0, 20), (100, 120), (500, 600)]
    assert blocks._ranges(spans, 1) == [(0, 10), (15, 20), (100, 110), (111, 120), (500, 600)]
    assert blocks._ranges(spans, 1000) == [(0, 600)]
    assert blocks._ranges([], 10) == []


def _chunked(path: Path, shape=(40, 64, 64), chunks=(1, 64, 64)) -> Path:
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(path, "w") as ds:
        for d, n in zip(("time", "lat", "lon"), shape):
            ds.createDimension(d, n)
        v = ds.createVariable("ta", "f4", ("time", "lat", "lon"), chunksizes=chunks, zlib=True, complevel=1,
                              shuffle=True)
        v[:] = rng.standard_normal(shape).astype("f4")
    return path


def test_prefetch_brings_exactly_a_tasks_chunks_into_the_page_cache(tmp_path):
    import h5py
    path = _chunked(tmp_path / "in.nc")
    info = next(v for v in nc_format.scan(path) if v.name == "ta")
    with h5py.File(path, "r") as h5:
        src, index = nc_format.input_source(info, str(path), h5, 1 << 20)
    assert src.kind == "direct"
    # the task of time steps 10..19: its ten chunks, far apart from the others' in the file
    start, count = (10, 0, 0), (10, 64, 64)
    entries = tuple((o,) + index[o] for o in sorted(index) if 10 <= o[0] < 20)
    task = blocks.Task(src, blocks.Sink("chunks", (40, 1, 64)), start, count, entries)
    lo = min(e[1] for e in entries)
    hi = max(e[1] + e[2] for e in entries)
    cache.evict(path)
    assert cache.resident_fraction(path, lo, hi - lo) == 0.0
    try:
        blocks.prefetch(task)
        deadline = time.monotonic() + 10
        while cache.resident_fraction(path, lo, hi - lo) < 1.0 and time.monotonic() < deadline:
            time.sleep(0.01)   # WILLNEED queues the reads and returns
        assert cache.resident_fraction(path, lo, hi - lo) == 1.0
        other = [index[o] for o in sorted(index) if o[0] < 10]    # another task's chunks (pages apart): not read
        assert all(cache.resident_fraction(path, a, n) == 0.0 for a, n, _ in other if a + n <= lo - 4096)
        block, nread, ndec = blocks.read_block(task)
        with netCDF4.Dataset(path) as ds:
            np.testing.assert_array_equal(block, ds["ta"][10:20])
        assert ndec == 10 and nread == sum(e[2] for e in entries)
    finally:
        blocks.close_handles()


def _children() -> set:
    return {p.pid for p in multiprocessing.active_children()}


def test_an_early_pool_is_taken_by_a_runner_of_its_size(tmp_path):
    before = _children()
    execute.start_early(2)
    pids = _children() - before
    assert len(pids) == 2
    runner = execute.Runner(2)
    try:
        assert {p.pid for p in runner.pool._pool} == pids     # the same processes, not a second pool
        assert execute._early == {}
    finally:
        runner.close()
    assert _children() == before


def test_an_early_pool_of_another_size_is_stopped(tmp_path):
    before = _children()
    execute.start_early(2)
    runner = execute.Runner(1)          # the plan converts in this process
    assert runner.pool is None and _children() == before and execute._early == {}
    execute.start_early(2)
    runner = execute.Runner(3)
    try:
        assert len(runner.pool._pool) == 3
    finally:
        runner.close()
    assert _children() == before


def test_rechunk_with_an_early_pool_converts_and_leaves_no_process(tmp_path, monkeypatch):
    path = _chunked(tmp_path / "in.nc")
    monkeypatch.setattr(command, "EARLY_POOL_BYTES", 1)
    started = []
    real = execute.start_early
    monkeypatch.setattr(execute, "start_early", lambda n: (started.append(n), real(n)))
    before = _children()
    out = tmp_path / "out.nc"
    summary = entry.convert(str(path), str(out), chunks="time/40,lat/1,lon/64", workers=2, max_mem="256KiB")
    assert started == [2]
    assert max(p["workers"] for p in summary["plans"]["/ta"]["passes"]) == 2
    with netCDF4.Dataset(path) as a, netCDF4.Dataset(out) as b:
        assert b["ta"].chunking() == [40, 1, 64]
        np.testing.assert_array_equal(a["ta"][:], b["ta"][:])
    assert _children() == before and execute._early == {}
    assert not list(Path("/dev/shm").glob(f".climio-rechunk-{os.getpid()}-*"))   # slots removed


def test_a_failure_before_the_plan_stops_the_early_pool(tmp_path, monkeypatch):
    path = _chunked(tmp_path / "in.nc")
    monkeypatch.setattr(command, "EARLY_POOL_BYTES", 1)
    before = _children()
    with pytest.raises(Exception, match="nosuchdim"):
        entry.convert(str(path), str(tmp_path / "out.nc"), chunks="nosuchdim/4", workers=2)
    assert _children() == before and execute._early == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.nc"]


def test_nothing_starts_early_for_small_or_missing_inputs(tmp_path):
    path = _chunked(tmp_path / "in.nc")
    opts = command.Options(workers=2)
    assert command._early_start(path, tmp_path / "out.nc", opts) == ""      # far below EARLY_POOL_BYTES
    assert command._early_start(path, tmp_path / "out.zarr", opts) == ""
    assert command._early_start(tmp_path / "missing.nc", tmp_path / "out.nc", opts) == ""


def test_each_command_name_maps_to_the_module_that_registers_it():
    """main() imports only the named command's module (COMMAND_MODULES): each name must be
    registered by its module alone, and every registered command must be in the table."""
    from climio import cli
    code = ("import sys, importlib\n"
            "from climio import cli\n"
            "importlib.import_module('climio.cli.' + sys.argv[1])\n"
            "print(' '.join(sorted(c.name for c in cli.app.registered_commands)"
            " + sorted(g.name for g in cli.app.registered_groups)))\n")
    registered = set()
    for module in sorted(set(cli.COMMAND_MODULES.values())):
        out = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, check=True)
        names = set(out.stdout.split())
        assert {n for n, m in cli.COMMAND_MODULES.items() if m == module} <= names, module
        registered |= names
    assert registered == set(cli.COMMAND_MODULES)


def test_a_command_line_imports_only_its_command(tmp_path):
    code = ("import sys\n"
            "from climio.cli import main\n"
            "try:\n    main(['rechunk', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', ' '.join(sorted(m for m in sys.modules if m.startswith('climio.cli.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    loaded = out.stdout.split("LOADED", 1)[1].split()
    assert "climio.cli.rechunk" in loaded and "climio.cli.bench" not in loaded
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "climio"), "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    for name in ("rechunk", "bench", "stsa", "trace", "make-data", "survey"):
        assert name in res.stdout


def test_a_slot_is_reused_and_kept(tmp_path):
    rng = np.random.default_rng(5)
    big = [((i, 0), rng.bytes(50_000)) for i in range(3)]
    small = [((i, 1), rng.bytes(700)) for i in range(2)]
    slot = str(tmp_path / "slot0")
    for chunks in (big, small):            # the second payload is shorter than what the slot holds
        spilled = blocks._spill(iter(chunks), slot)
        with blocks.chunks_of(spilled) as got:
            assert [(o, bytes(d)) for o, d in got] == chunks
        assert os.path.exists(slot)        # kept for the next task


def test_a_worker_heap_serves_every_encoded_chunk_without_new_page_faults(tmp_path):
    """Encoded chunks are codec-bound buffers shrunk to size; in a process that imported what a
    pool worker imports, each was a fresh mapping above glibc's mmap threshold, faulted in page by
    page for every chunk of every block. After _keep_heap (what every pool worker runs) the same
    heap memory serves them. The tasks are the executor's own, run in a fresh process each way."""
    import dataclasses
    import pickle

    import h5py
    path = tmp_path / "in.nc"
    t = np.linspace(0, 20, 200)[:, None, None, None]
    y = np.linspace(0, 3, 24)[None, None, :, None]
    x = np.linspace(0, 6, 240)[None, None, None, :]
    field = (np.sin(t + y) * np.cos(x) * 10 + np.random.default_rng(1).standard_normal((200, 2, 24, 240)) * 0.01)
    with netCDF4.Dataset(path, "w") as ds:
        for d, n in zip(("time", "lev", "lat", "lon"), field.shape):
            ds.createDimension(d, n)
        ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"), chunksizes=(1, 1, 24, 240), zlib=True,
                          complevel=1, shuffle=True)[:] = field.astype("f4")
    info = next(v for v in nc_format.scan(path) if v.name == "ta")
    with h5py.File(path, "r") as h5:
        src, index = nc_format.input_source(info, str(path), h5, 1 << 20)
    sink = blocks.Sink("chunks", (200, 1, 1, 240), True, 1)     # 192 KB target chunks
    slot = str(tmp_path / "slot")
    tasks = [dataclasses.replace(t, spill=slot) for t in execute.tasks(src, sink, (200, 1, 24, 240), index)]
    (tmp_path / "tasks.pkl").write_bytes(pickle.dumps(tasks))
    code = ("import pickle, resource, sys\n"
            "from climio.rechunking import blocks\n"
            "if sys.argv[1] == 'keep':\n    blocks._keep_heap()\n"
            "tasks = pickle.load(open(sys.argv[2], 'rb'))\n"
            "blocks.run_task(tasks[0])\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "blocks.run_task(tasks[1])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    faults = {}
    for mode in ("default", "keep"):
        out = subprocess.run([sys.executable, "-c", code, mode, str(tmp_path / "tasks.pkl")], capture_output=True,
                             text=True, check=True)
        faults[mode] = int(out.stdout)
    assert faults["default"] > 24 * 10, faults    # pages of each of the 24 encoded chunks, again
    assert faults["keep"] < faults["default"] / 10, faults


def test_the_early_define_child_does_the_work_and_says_its_failures():
    from climio.rechunking import child
    before = _children()
    child.start_early()
    early = child._early["child"][0]
    assert child.run(os.getpid, ()) == early.pid                 # the child started early did it
    assert child._early == {} and _children() == before
    child.start_early()
    with pytest.raises(ValueError, match="invalid literal"):
        child.run(int, ("not a number",))
    assert _children() == before
    assert child.run(os.getpid, ()) not in (os.getpid(), early.pid)   # none early: a new child
    child.start_early()
    child.discard()
    assert child._early == {} and _children() == before


def test_what_starts_before_the_plan(tmp_path, monkeypatch):
    import xarray  # noqa: F401
    big = tmp_path / "big.nc"
    with open(big, "wb") as fh:
        fh.truncate(command.EARLY_POOL_BYTES)
    opts = command.Options(workers=2)
    assert command._early_start(big, tmp_path / "out.nc", opts) == "pool"
    # xarray loaded here (a notebook): it defines a Zarr output in this process, after the pool
    assert command._early_start(big, tmp_path / "out.zarr", opts) == "pool"
    monkeypatch.delitem(sys.modules, "xarray")      # a command line: xarray only in the child
    assert command._early_start(big, tmp_path / "out.nc", opts) == "pool"
    assert command._early_start(big, tmp_path / "out.zarr", opts) == "define"
    assert command._early_start(big, tmp_path / "out.nc", command.Options(workers=1)) == ""
    store = tmp_path / "in.zarr"
    (store / "ta" / "c").mkdir(parents=True)
    (store / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group", "attributes": {}}')
    for k in range(3):
        with open(store / "ta" / "c" / str(k), "wb") as fh:
            fh.truncate(command.EARLY_POOL_BYTES // 3 + 1)
    assert command._at_least(store, command.EARLY_POOL_BYTES)
    assert command._early_start(store, tmp_path / "out.nc", opts) == "define"
    (store / "ta" / "c" / "2").unlink()
    assert not command._at_least(store, command.EARLY_POOL_BYTES)
    assert command._early_start(store, tmp_path / "out.nc", opts) == ""

