"""Mutated inputs through the reading commands (issue 38 item 2): a seeded slice of bench/fuzz_inputs.py
(the bench runs thousands), the crashes the fuzzer found, each replayed as the mutation that found it,
and the child-process isolation of the C libraries (climio.dataset.isolate).

Every outcome must be exit 0 with the libraries' data, or exit 3 with one line: never a signal, a
traceback, a hang or an allocation of what a damaged header claims.
"""

import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from conftest import load_bench

from climio.base.errors import DataError
from climio.dataset import integrity, isolate

EXE = os.path.join(os.path.dirname(sys.executable), "climio")
SEED = 38


F = load_bench("fuzz_inputs")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-seeds")
    F.preload_heavy()             # each forked child then starts with xarray, zarr, dask loaded
    s = F.build_seeds(d)
    from climio.model.profile import default_profile
    (d / "profile.json").write_text(default_profile().to_json())
    return d, s


def _run(seeds, fmt, m, command, tmp_path, timeout=120):
    d, s = seeds
    return F.run_one(fmt, s[fmt], m, command, tmp_path / "w", d / "profile.json", timeout, 1 << 30)


def _explain(fmt, m, command, o):
    return f"{fmt} {command} {m.text()}: {o.kind} {o.code} {o.why}\n{o.stderr[-1500:]}"


# --- the seeded slice --------------------------------------------------------------------------------

# one cheap reading command per format; two mutated inputs each (hypothesis, derandomized by SEED)
SLICE = {"cdf1": "rechunk-nc", "cdf2": "predict", "cdf5": "rechunk-nc", "nc4": "rechunk-nc",
         "zarr2": "rechunk-nc", "zarr3": "rechunk-zarr", "kerchunk": "predict", "darshan": "trace-report",
         "trace": "trace-report", "records": "export"}


def test_seeded_slice_of_mutated_inputs(seeds, tmp_path):
    """Two mutations of every format: each one line and exit 3, or exit 0 with equal data."""
    d, s = seeds
    t0 = time.time()
    bad, kinds = [], set()
    for i, (fmt, command) in enumerate(SLICE.items()):
        for m in F.mutations_for(fmt, s[fmt], 2, SEED + i):
            o = _run(seeds, fmt, m, command, tmp_path)
            kinds.add(m.kind)
            if o.kind == "other":
                bad.append(_explain(fmt, m, command, o))
    assert not bad, "\n\n".join(bad)
    assert len(kinds) >= 3, kinds          # the strategies draw different mutations, not one kind
    assert time.time() - t0 < 120


def test_unmutated_seeds_read_back_equal(seeds, tmp_path):
    """The oracle itself: the seeds convert with exit 0 and the data the libraries read."""
    for fmt, command in (("nc4", "rechunk-zarr"), ("zarr3", "rechunk-nc"), ("nc4", "make-refs")):
        o = _run(seeds, fmt, F.Mutation("none"), command, tmp_path)
        assert o.kind == "ok", _explain(fmt, F.Mutation("none"), command, o)


def test_a_mutation_replays_from_its_line(seeds, tmp_path):
    """What a failure prints is enough to replay it: the same bytes from the same line."""
    d, s = seeds
    m = F.mutations_for("cdf1", s["cdf1"], 1, SEED)[0]
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    for p in (a, b):
        p.write_bytes(s["cdf1"].read_bytes())
    F.apply(m, a)
    F.apply(F.Mutation(**__import__("json").loads(m.text())), b)
    assert a.read_bytes() == b.read_bytes() and a.read_bytes() != s["cdf1"].read_bytes()


# --- the crashes the fuzzer found, replayed -------------------------------------------------------------

FOUND = [   # (format, command, mutation, a word of the one line)
    ("cdf2", "advise", F.Mutation("huge", "", 24, 8, "ffffffffffffffff"), "truncated inside its header"),
    ("cdf5", "advise", F.Mutation("huge", "", 270, 8, "ffffffffffffffff"), "truncated inside its header"),
    ("cdf1", "predict", F.Mutation("flip", "", 155, 2, "b0b0"), "codec can't decode"),
    ("zarr3", "rechunk-zarr", F.Mutation("json", "ta/zarr.json", 2124, 0, "-1"), "non-negative"),
    ("zarr2", "rechunk-nc", F.Mutation("huge", "ta/2.0.0.0", 5, 4, "0080c6a4"), "corrupt chunk"),
    ("records", "export", F.Mutation("extend", "records.jsonl", 0, 0, "f35cdc5a4843af5cc4"), "not a climio record"),
    # seed 38's full run: a v3 chunk extent made 0 (a ZeroDivisionError traceback), a CDF-1 record
    # count made 0 (predict said the read shape "must be positive", exit 2)
    ("zarr3", "rechunk-zarr", F.Mutation("json", "ta/zarr.json", 335, 0, "0"), "chunk extent below 1"),
    ("cdf1", "predict", F.Mutation("huge", "", 3, 8, "0100000000000000"), "has no values"),
    # a B-tree node's bytes altered: h5py's get_storage_size raised RuntimeError (a traceback)
    ("nc4", "rechunk-nc", F.Mutation("flip", "", 10355, 1, "00"), "damaged HDF5 structure"),
    # a Darshan log's end time made 2^32-1: the process's wall overflowed int64 (an OverflowError traceback)
    ("darshan", "trace-report", F.Mutation("huge", "", 2811, 4, "ffffffff"), "timestamps span"),
    # a CDF-1 time value's bytes altered: xarray's time decoding raised OverflowError (a traceback)
    ("cdf1", "stsa", F.Mutation("flip", "", 1023, 3, "e17ad8"), "cannot open"),
    # a CDF-1 record count made 2^32-1: xarray decoding the time coordinate asked for 32 GiB (a traceback)
    ("cdf1", "stsa", F.Mutation("huge", "", 4, 4, "ffffffff"), "cannot open"),
    # seed 39: a Blosc chunk cut by one byte (c-blosc trusts its header: exit 0 once, a failure another time)
    ("zarr2", "rechunk-zarr", F.Mutation("truncate", "ta/0.0.0.0", 538, 1, ""), "Blosc frame claims another length"),
    # a v2 compressor's clevel made "x" (a ValueError traceback) or -1 (netCDF-C's OverflowError traceback)
    ("zarr2", "rechunk-zarr", F.Mutation("json", "ta/.zarray", 1985, 0, '"x"'), "not a level it accepts"),
    ("zarr2", "rechunk-nc", F.Mutation("json", "ta/.zarray", 65594, 0, "-1"), "not a level it accepts"),
    # three bytes of an HDF5 structure altered: HDF5 read chunk [0,0,0,0] as fill values while its index
    # entry still held the old data, and the conversion wrote that data (values no reader sees)
    ("nc4", "rechunk-zarr", F.Mutation("flip", "", 10423, 3, "54ca29"), "reads differently through HDF5"),
    # make-refs: kerchunk left `ta` out without a word; a chunk index claimed bytes past the end of the file
    ("nc4", "make-refs", F.Mutation("flip", "", 6259, 4, "47434f4c"), "could not describe ta"),
    ("nc4", "make-refs", F.Mutation("flip", "", 10379, 2, "de4b"), "damaged HDF5 chunk index"),
    # seed 40: a B-tree key's chunk index made 2^32-1: HDF5 reads that chunk as fill values, the
    # reference's readers dropped the key and read 0.0 (exit 0 with wrong data)
    ("nc4", "make-refs", F.Mutation("huge", "", 10395, 4, "ffffffff"), "outside ta's chunk grid"),
    # seed 41, predict/advise reading local Zarr and references: zarr-python parses a member's metadata
    # lazily, and a damaged one raised its parser's error (JSON, Unicode, ValueError) as a traceback (a
    # reference's too: the same _from_zarr; its mutation's offset depends on the seeds' paths)
    ("zarr2", "predict", F.Mutation("truncate", "ta/.zattrs", 33, 1, ""), "damaged Zarr metadata"),
    ("zarr2", "advise", F.Mutation("flip", "ta/.zarray", 64, 1, "8b"), "damaged Zarr metadata"),
]


@pytest.mark.parametrize("fmt,command,m,word", FOUND, ids=[f"{f}-{c}-{m.kind}" for f, c, m, _ in FOUND])
def test_crashes_the_fuzzer_found_are_one_line(seeds, tmp_path, fmt, command, m, word):
    o = _run(seeds, fmt, m, command, tmp_path)
    assert o.kind == "data" and word in o.stderr, _explain(fmt, m, command, o)


def test_corrupt_deflate_chunk_is_one_line(seeds, tmp_path):
    """A byte of a deflated chunk altered: rechunk's own decoder (and netCDF-C under stsa or
    --source) says which chunk, exit 3 (it was a DeflateError traceback)."""
    d, s = seeds
    with h5py.File(s["nc4"], "r") as f:
        info = f["ta"].id.get_chunk_info(1)
    m = F.Mutation("flip", "", info.byte_offset + 7, 1, "7f")
    for command in ("rechunk-nc", "bench-source"):
        o = _run(seeds, "nc4", m, command, tmp_path)
        assert o.kind == "data" and ("corrupt chunk" in o.stderr or "HDF error" in o.stderr), \
            _explain("nc4", m, command, o)


def test_stsa_reads_a_netcdf3_file(seeds, tmp_path, monkeypatch):
    """stsa on a CDF-1 file tuned an HDF5 chunk cache netCDF-3 does not have (a RuntimeError
    traceback); on a short segment the one-frequency spectrum failed to plot."""
    monkeypatch.setattr(F, "STSA_PLOTS", ())
    o = _run(seeds, "cdf1", F.Mutation("none"), "stsa", tmp_path, timeout=180)
    assert o.kind == "ok", _explain("cdf1", F.Mutation("none"), "stsa", o)
    assert (tmp_path / "w" / "stsa" / "stsa.html").is_file()


def test_a_header_claiming_1e15_elements_is_not_allocated(tmp_path):
    """An HDF5 dataset of 10^15 float32 (one chunk written): the commands plan, refuse or reference
    it under a 3 GiB address-space limit; nothing tries to hold it."""
    p = tmp_path / "huge.nc"
    with h5py.File(p, "w") as f:
        f.create_dataset("ta", shape=(10**12, 100, 10), chunks=(1, 100, 10), dtype="f4")[0] = 1.0

    def limited():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    for argv, code in ((["rechunk", p, tmp_path / "o.nc", "--var", "ta", "-c", "phony_dim_0/10"], 3),
                       (["make-refs", p, "-o", tmp_path / "r.json"], 0)):
        r = subprocess.run([EXE, *map(str, argv)], capture_output=True, text=True, timeout=120, preexec_fn=limited)
        assert r.returncode == code and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "o.nc").exists()


# --- the isolation of the C libraries ---------------------------------------------------------------------

def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def _abort():
    os.abort()


def _allocate():
    return len(bytearray(10**13))


def _hang():
    time.sleep(60)


@pytest.mark.parametrize("fn,word", [(_segfault, "SIGSEGV"), (_abort, "SIGABRT"), (_allocate, "MiB"),
                                     (_hang, "longer than")])
def test_a_crash_in_the_child_is_one_data_error(fn, word):
    t0 = time.time()
    with pytest.raises(DataError) as e:
        isolate.run_isolated(fn, what="x.nc", timeout=3)
    assert word in str(e.value) and str(e.value).startswith("x.nc: ") and "\n" not in str(e.value)
    assert time.time() - t0 < 30


def test_the_child_answers_and_python_errors_are_left_to_the_command(tmp_path):
    assert isolate.run_isolated(sum, [1, 2, 3], what="x") == ("ok", 6)
    kind, why = isolate.run_isolated(int, "nope", what="x")
    assert kind == "error" and why.startswith("ValueError")


def test_integrity_check_runs_the_probe_and_says_a_crash_in_one_line(seeds, monkeypatch):
    """check() opens a whole-looking netCDF file in the child; a library that dies there is a
    DataError naming the file (the probe's walk replaced by one that crashes, as netCDF-C would)."""
    d, s = seeds
    integrity.check(s["nc4"], s["cdf5"])          # sound files pass, through the child
    monkeypatch.setattr(isolate, "_walk_netcdf", lambda path: _segfault())
    with pytest.raises(DataError, match="crashed reading it .SIGSEGV"):
        integrity.check(s["nc4"])
    monkeypatch.setenv("CLIMIO_ISOLATE", "off")
    integrity.check(s["nc4"])


def test_huge_ids_in_trace_events_are_not_allocated(seeds, tmp_path):
    """A trace event whose string id a damaged file turned into ~2^31: the reader keeps it under a
    placeholder name instead of growing a 7 GiB table (a MemoryError traceback the fuzzer found)."""
    d, s = seeds
    ev = max(s["trace"].glob("*.events"), key=lambda p: p.stat().st_size)
    size = ev.stat().st_size
    for at in (size // 3, size // 2, 2 * size // 3):
        m = F.Mutation("huge", ev.name, at - at % 4, 4, "ffffff70")
        o = _run(seeds, "trace", m, "trace-report", tmp_path)
        assert o.kind != "other", _explain("trace", m, "trace-report", o)


def _limited_run(argv, timeout=90):
    """climio ARGV in a child under a 3 GiB address-space limit and a timeout (a hang fails the test)."""
    def limited():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    return subprocess.run([EXE, *map(str, argv)], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limited)


def test_a_zarr_v3_array_claiming_1e15_steps_without_chunks_is_refused(tmp_path):
    """A v3 array of shape [10^15,2,4,6] with no chunk file (the fuzzer's json mutation of a shape):
    zarr-python's nchunks_initialized walked 10^14 grid keys, the block count was a sum over the
    grid, and the disk check saw 0 stored bytes; now one line, exit 3, in a few seconds."""
    import zarr
    store = tmp_path / "big.zarr"
    root = zarr.open_group(str(store), mode="w", zarr_format=3)
    root.create_array("ta", shape=(10**15, 2, 4, 6), chunks=(8, 1, 4, 6), dtype="f4",
                      dimension_names=("time", "lev", "lat", "lon"))
    for out in ("o.zarr", "o.nc"):
        r = _limited_run(["rechunk", store, tmp_path / out, "--var", "ta", "-c", "time/16,lev/2,lat/4,lon/3",
                          "-j", "1", "--max-mem", "64MiB"])
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 3 and len(lines) == 1 and "claims shape [1000000000000000,2,4,6]" in lines[0], \
            r.stderr[-2000:]
        assert not (tmp_path / out).exists()


def test_a_chunk_claiming_1e15_steps_is_a_damaged_header(seeds, tmp_path):
    """The seed store's chunk shape [8,1,4,6] made [10^15,1,4,6]: no machine decodes such a chunk
    whole, so it is the header's damage (exit 3), not a --max-mem too small (exit 2 before)."""
    import json
    import shutil
    d, s = seeds
    store = tmp_path / "z.zarr"
    shutil.copytree(s["zarr3"], store)
    meta = json.loads((store / "ta" / "zarr.json").read_text())
    meta["chunk_grid"]["configuration"]["chunk_shape"][0] = 10**15
    (store / "ta" / "zarr.json").write_text(json.dumps(meta))
    r = _limited_run(["rechunk", store, tmp_path / "o.nc", "--var", "ta", "-c", "time/8,lev/1,lat/2,lon/6",
                      "-j", "1", "--max-mem", "64MiB"])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 3 and len(lines) == 1 and "claims chunks [1000000000000000,1,4,6]" in lines[0], r.stderr


def test_absent_chunks_of_a_1e15_grid_are_counted_not_walked(tmp_path):
    """The absent-chunk count of the same store: arithmetic on the grid plus one listing."""
    import zarr
    from climio.rechunking.formats import zarr as zfmt
    store = tmp_path / "big.zarr"
    a = zarr.open_group(str(store), mode="w", zarr_format=3).create_array(
        "ta", shape=(10**15, 6), chunks=(8, 6), dtype="f4", dimension_names=("time", "lon"))
    a[:16] = 1.0                      # two chunk files of 1.25 * 10^14
    t0 = time.time()
    absent = zfmt.absent_chunks(store, zfmt.scan(store))
    assert absent["/ta"][:2] == (10**15 // 8 - 2, 10**15 // 8) and time.time() - t0 < 10


def test_blocks_of_a_1e15_axis_are_counted_and_iterated_lazily():
    from itertools import islice
    from climio.dataset.layout import count_blocks, iter_blocks
    shape, block = (10**15, 2, 4, 6), (16, 2, 4, 3)
    assert count_blocks(shape, block) == 10**15 // 16 * 2
    first = list(islice(iter_blocks(shape, block), 3))
    assert first == [((0, 0, 0, 0), (16, 2, 4, 3)), ((0, 0, 0, 3), (16, 2, 4, 3)), ((16, 0, 0, 0), (16, 2, 4, 3))]
    assert count_blocks((5, 0), (2, 1)) == 0 and list(iter_blocks((), ())) == [((), ())]
    assert list(iter_blocks((5,), (2,))) == [((0,), (2,)), ((2,), (2,)), ((4,), (1,))]


def test_the_planner_takes_an_axis_of_1e15():
    """Candidate block extents of a 10^15 axis: a few thousand, not 10^7 (a MemoryError the fuzzer found)."""
    from climio.model.convert import _extents
    ex = _extents(10**15, 8)
    assert 100 < len(ex) < 10_000 and ex[0] == 8 and ex[-1] == 10**15


def test_a_damaged_object_trace_line_is_skipped_with_a_note(seeds, tmp_path):
    """Seed 39: a line of an object-store trace that is JSON but no record (a bare number after a
    carriage return) was a TypeError traceback in `trace report`; it is skipped and said."""
    from pathlib import Path
    name = next(Path(seeds[1]["trace"]).glob("objects-*.jsonl")).name     # the seed trace's own pid in it
    m = F.Mutation("extend", name, 0, 0, "0d30")
    o = _run(seeds, "trace", m, "trace-report", tmp_path)
    assert o.kind == "ok", _explain("trace", m, "trace-report", o)
    # its header's pid made a list (an unhashable key, a TypeError traceback): one line, exit 3
    m = F.Mutation("json", name, 0, 0, "[]")
    o = _run(seeds, "trace", m, "trace-report", tmp_path / "h")
    assert o.kind == "data" and "wrong types" in o.stderr, _explain("trace", m, "trace-report", o)


def test_a_header_that_makes_the_library_loop_stops_at_the_stated_timeout(seeds, tmp_path, monkeypatch):
    """Seed 38's full run: one byte of an HDF5 object header made netCDF-C loop for ever under `bench
    --source` (the fuzz bench's 60 s passed first: the isolation child waited 60 s too). The header
    walk's child now stops at TIMEOUT_S (20 s, below the bench's), here 3 s, with one line, exit 3."""
    from climio.dataset import isolate
    monkeypatch.setattr(isolate, "TIMEOUT_S", 3.0)
    o = _run(seeds, "nc4", F.Mutation("flip", "", 6331, 1, "00"), "bench-source", tmp_path, timeout=60)
    assert o.kind == "data" and "took longer than 3 s" in o.stderr, _explain("nc4", F.Mutation("flip", "", 6331, 1, "00"), "bench-source", o)
