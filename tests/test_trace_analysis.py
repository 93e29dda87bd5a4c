"""The trace reader, analysis, advice rules and `climio trace report`, on synthetic traces written
in the exact format of csrc/trace/FORMAT.md (tests/trace_synth.py); `climio trace run` and the
real tracer end to end are tests/test_trace_run.py."""

import itertools
import json
import random

import numpy as np
import pytest

from climio.dataset import layout

from climio import rules
from climio.rules import fixes
from climio.trace.analysis import SIZE_BUCKETS, analyse, size_bucket
from climio.trace.reader import TraceError, read_trace
from conftest import run_cli
from objects_synth import OBJECT_RULE_TRACES
from test_cli import one_line_error
from trace_synth import SynthProc, ranks_beside_a_wrapper, write_synthetic

MS = 1_000_000  # ns


def facts_of(d):
    an = analyse(read_trace(d))
    return an, an.to_dict()


def rules_fired(d):
    from climio.trace.report import measured_facts      # the trace's facts with its object-store records
    found = rules.judge(measured_facts(d))
    return {f["rule"] for f in found}, found


TRACE_RULES = {r["id"]: r for r in rules.table("trace")}


def access(facts, file, layer="posix", kind="read"):
    entry = next(f for f in facts["files"] if f["file"] == file)
    return entry, next(a for a in entry["access"] if a["layer"] == layer and a["kind"] == kind)


# --- reader ---------------------------------------------------------------------------------------------

def test_reader_resolves_strings_aux_and_processes(tmp_path):
    p = SynthProc(host="node-a", pid=42, rank=3)
    p.leaf("open", "posix", dur=10, file="/data/x.nc")
    p.leaf("pread64", "posix", dur=20, file="/data/x.nc", offset=8, size=16, aux={"note": 1})
    p.write(tmp_path)
    q = SynthProc(host="node-b", pid=7, rank=-1)
    q.leaf("pwrite64", "posix", dur=5, file="/data/y.bin", offset=0, size=4)
    q.write(tmp_path)
    tr = read_trace(tmp_path)
    assert len(tr.events) == 3 and not tr.partial
    funcs = list(tr.text(tr.events["func_id"]))
    files = list(tr.text(tr.events["file_id"]))
    assert sorted(funcs) == ["open", "pread64", "pwrite64"]
    assert files.count("/data/x.nc") == 2 and "/data/y.bin" in files
    i = funcs.index("pread64")
    assert tr.aux[i] == {"note": 1} and tr.events["offset"][i] == 8 and tr.events["size"][i] == 16
    labels = sorted(p.label for p in tr.procs)
    assert labels == ["pid 7", "rank 3"] and {p.host for p in tr.procs} == {"node-a", "node-b"}
    # host names with dashes keep their pid apart
    assert {(p.host, p.pid) for p in tr.procs} == {("node-a", 42), ("node-b", 7)}


def test_partial_without_done_json(tmp_path):
    p = SynthProc(pid=1, rank=0)
    p.leaf("pread64", "posix", dur=10, file="/f", offset=0, size=10)
    p.write(tmp_path, done=False)
    q = SynthProc(pid=2, rank=1)
    q.leaf("pread64", "posix", dur=10, file="/f", offset=0, size=10)
    q.write(tmp_path)
    tr = read_trace(tmp_path)
    assert tr.partial
    assert any("no .done.json" in n and "rank 0" in n for n in tr.notes)
    _, facts = facts_of(tmp_path)
    assert facts["trace"]["partial"] is True
    out = run_cli("trace", "report", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "PARTIAL TRACE" in out.stdout and "no .done.json" in out.stdout
    assert json.loads(run_cli("trace", "report", tmp_path, "--format", "json").stdout)["trace"]["partial"] is True
    out = run_cli("trace", "report", tmp_path, "--format", "html", "-o", tmp_path / "r.html")
    assert out.returncode == 0, out.stderr
    assert "Partial trace" in (tmp_path / "r.html").read_text()


def test_partial_torn_record_and_dropped(tmp_path):
    p = SynthProc(pid=1)
    for i in range(3):
        p.leaf("pread64", "posix", dur=10, file="/f", offset=i * 10, size=10)
    stem = p.write(tmp_path, done={"dropped": 5, "partial": True, "end": "exit"})
    with open(tmp_path / f"{stem}.events", "ab") as fh:
        fh.write(b"\0" * 10)
    tr = read_trace(tmp_path)
    assert len(tr.events) == 3 and tr.partial
    assert any("torn record" in n for n in tr.notes) and any("dropped 5" in n for n in tr.notes)


def test_invalid_records_dropped_aux_kept(tmp_path):
    p = SynthProc(pid=1)
    p.leaf("pread64", "posix", dur=10, file="/f", offset=0, size=10)
    p.leaf("nc_get_vara_int", "netcdf", dur=10, file="/f", var="v", size=4, aux={"count": [1]})
    stem = p.write(tmp_path)
    raw = bytearray((tmp_path / f"{stem}.events").read_bytes())
    raw[:64] = bytes(64)  # the first record zeroed, as a crash may leave it
    (tmp_path / f"{stem}.events").write_bytes(bytes(raw))
    tr = read_trace(tmp_path)
    assert len(tr.events) == 1 and tr.partial and any("invalid records" in n for n in tr.notes)
    assert tr.events["index"][0] == 1 and tr.aux == {0: {"count": [1]}}


def test_clean_trace_is_not_partial(tmp_path):
    p = SynthProc(pid=1)
    p.leaf("pread64", "posix", dur=10, file="/f", offset=0, size=10)
    p.write(tmp_path)
    assert not read_trace(tmp_path).partial


def test_trace_errors(tmp_path):
    with pytest.raises(TraceError, match="no trace directory"):
        read_trace(tmp_path / "missing")
    with pytest.raises(TraceError, match="holds no trace"):
        read_trace(tmp_path)
    bad = tmp_path / "bad"
    write_synthetic(bad, [{"func": "read", "layer": 9, "t_start": 1, "t_end": 2}])
    with pytest.raises(TraceError, match="corrupt"):
        read_trace(bad)
    assert "no trace directory" in one_line_error(run_cli("trace", "report", tmp_path / "missing"), 3)
    assert "holds no trace" in one_line_error(run_cli("trace", "report", tmp_path), 3)
    assert "corrupt" in one_line_error(run_cli("trace", "report", bad), 3)
    assert "unknown --format" in one_line_error(run_cli("trace", "report", bad, "--format", "pdf"), 2)


# --- files: sizes, offsets, classification --------------------------------------------------------------

def test_strided_preads_counted_exactly(tmp_path):
    N, S, K, O = 50, 4096, 65536, 1000
    p = SynthProc(pid=5)
    for i in range(N):
        p.leaf("pread64", "posix", dur=1000, file="/data/f.bin", offset=O + i * K, size=S)
        p.idle(500)
    p.write(tmp_path)
    _, facts = facts_of(tmp_path)
    entry, a = access(facts, "/data/f.bin")
    assert a["count"] == N and a["bytes"] == N * S and entry["bytes_read"] == N * S
    assert a["top_sizes"] == [[S, N]]
    assert a["histogram"]["1K-10K"] == N and sum(a["histogram"].values()) == N
    assert entry["timeline"]["offset"] == [O + i * K for i in range(N)]
    assert entry["timeline"]["size"] == [S] * N
    assert a["classification"] == "strided" and a["stride"] == K
    assert (a["transitions"], a["consecutive"], a["sequential"]) == (N - 1, 0, N - 1)
    fn = next(r for r in facts["functions"] if r["function"] == "pread64")
    assert fn["calls"] == N and fn["bytes"] == N * S and fn["time_incl_s"] == pytest.approx(N * 1000 / 1e9)


def _pattern_trace(d, offsets, sizes, pid=1):
    p = SynthProc(pid=pid)
    for o, s in zip(offsets, sizes):
        p.leaf("pread64", "posix", dur=100, file="/f", offset=o, size=s)
    p.write(d)
    return access(facts_of(d)[1], "/f")[1]


def test_classifications(tmp_path):
    n = 40
    assert _pattern_trace(tmp_path / "c", [i * 100 for i in range(n)], [100] * n)["classification"] == "consecutive"
    gaps = np.cumsum([0] + [100 + 7 * (i % 5 + 1) for i in range(n - 1)])
    seq = _pattern_trace(tmp_path / "s", gaps.tolist(), [100] * n)
    assert seq["classification"] == "sequential" and seq["consecutive"] == 0
    offs = list(range(0, n * 1000, 1000))
    random.Random(3).shuffle(offs)
    rnd = _pattern_trace(tmp_path / "r", offs, [100] * n)
    assert rnd["classification"] == "random"
    back = _pattern_trace(tmp_path / "b", [10000 - i * 200 for i in range(n)], [100] * n)
    assert back["classification"] == "strided" and back["stride"] == -200
    assert _pattern_trace(tmp_path / "1", [0], [100])["classification"] == "single"
    assert _pattern_trace(tmp_path / "rep", [64] * n, [8] * n)["classification"] == "repeated"


def test_streams_are_per_process(tmp_path):
    # Two ranks reading their halves consecutively, interleaved in time: consecutive per rank.
    for r in range(2):
        p = SynthProc(pid=10 + r, rank=r)
        p.idle(r * 50)
        for i in range(20):
            p.leaf("pread64", "posix", dur=40, file="/f", offset=r * 10_000 + i * 100, size=100)
            p.idle(60)
        p.write(tmp_path)
    _, a = access(facts_of(tmp_path)[1], "/f")
    assert a["classification"] == "consecutive" and a["consecutive"] == 38 and a["transitions"] == 38


def test_darshan_buckets():
    sizes = [0, 100, 101, 1024, 1025, 10240, 10241, 102400, 1 << 20, (1 << 20) + 1, 4 << 20, 10 << 20,
             100 << 20, 1 << 30, (1 << 30) + 1]
    got = [SIZE_BUCKETS[i] for i in size_bucket(sizes)]
    assert got == ["0-100", "0-100", "100-1K", "100-1K", "1K-10K", "1K-10K", "10K-100K", "10K-100K", "100K-1M",
                   "1M-4M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"]


# --- nesting, flow, ranks -------------------------------------------------------------------------------------

def _two_rank_write_trace(d):
    """rank 0: 3 x nc_put_vara_double -> MPI_File_write_at_all -> pwrite64 (an aggregator), plus a
    thread of its own; rank 1: 2 x nc_put_vara_double -> MPI_File_write_at_all (no POSIX)."""
    r0 = SynthProc(host="n", pid=100, rank=0)
    for i in range(3):
        with r0.span("nc_put_vara_double", "netcdf", before=1 * MS, after=1 * MS, file="/o.nc", var="u", size=800):
            with r0.span("MPI_File_write_at_all", "mpiio", before=2 * MS, file="/o.nc", offset=i * 800, size=800):
                r0.leaf("pwrite64", "posix", dur=(i + 1) * MS, file="/o.nc", offset=i * 1600, size=1600)
    # another thread of rank 0, overlapping in time: its call must not nest under thread 100's
    r0.events.append({"func": "pread64", "layer": "posix", "t_start": r0.t0 + 1000 + 3 * MS,
                      "t_end": r0.t0 + 1000 + 3 * MS + 10, "depth": 0, "rank": 0, "tid": 999, "file": "/in",
                      "offset": 0, "size": 10})
    r0.write(d)
    r1 = SynthProc(host="n", pid=101, rank=1)
    for i in range(2):
        with r1.span("nc_put_vara_double", "netcdf", before=1 * MS, file="/o.nc", var="u", size=800):
            r1.leaf("MPI_File_write_at_all", "mpiio", dur=5 * MS, file="/o.nc", offset=2400 + i * 800, size=800)
    r1.write(d)


def test_nesting_inclusive_exclusive(tmp_path):
    _two_rank_write_trace(tmp_path)
    an, facts = facts_of(tmp_path)
    fn = {r["function"]: r for r in facts["functions"]}
    # rank 0: nc 3 x (1 + 2 + k + 1) ms, k = 1, 2, 3; rank 1: 2 x (1 + 5) ms
    assert fn["nc_put_vara_double"]["time_incl_s"] == pytest.approx((3 * 4 + 6 + 12) / 1e3)
    assert fn["nc_put_vara_double"]["time_excl_s"] == pytest.approx((3 * 2 + 2 * 1) / 1e3)
    assert fn["MPI_File_write_at_all"]["time_incl_s"] == pytest.approx((3 * 2 + 6 + 10) / 1e3)
    assert fn["MPI_File_write_at_all"]["time_excl_s"] == pytest.approx((3 * 2 + 10) / 1e3)
    assert fn["pwrite64"]["time_excl_s"] == fn["pwrite64"]["time_incl_s"] == pytest.approx(6 / 1e3)
    # the other thread's pread64 is a root, not a child of MPI_File_write_at_all
    i = int(np.flatnonzero(an.func == an.trace.id_of("pread64"))[0])
    assert an.parent[i] == -1
    layers = {l["layer"]: l for l in facts["layers"]}
    assert layers["netcdf"]["time_incl_s"] == pytest.approx(0.030)
    # exclusive times add up to the traced I/O time
    assert sum(l["time_excl_s"] for l in facts["layers"]) == pytest.approx(facts["trace"]["io_time_s"])
    assert facts["trace"]["io_time_s"] == pytest.approx(0.030 + 10 / 1e9)


def test_flow_edges_max_rank_and_ranks(tmp_path):
    _two_rank_write_trace(tmp_path)
    _, facts = facts_of(tmp_path)
    edges = {(e["parent_function"], e["child_function"]): e for e in facts["flow"]["edges"]}
    assert set(edges) == {("nc_put_vara_double", "MPI_File_write_at_all"), ("MPI_File_write_at_all", "pwrite64")}
    nm = edges[("nc_put_vara_double", "MPI_File_write_at_all")]
    # per rank: rank 0 = 3 x 2 ms + 6 ms = 12 ms, rank 1 = 2 x 5 ms = 10 ms
    assert (nm["count"], nm["ranks"]) == (5, 2) and nm["max_rank_time_s"] == pytest.approx(0.012)
    assert nm["time_s"] == pytest.approx(0.022) and nm["bytes"] == 5 * 800
    mp = edges[("MPI_File_write_at_all", "pwrite64")]
    assert (mp["count"], mp["ranks"], mp["bytes"]) == (3, 1, 3 * 1600)
    assert mp["max_rank_time_s"] == pytest.approx(0.006)
    nodes = {n["function"]: n for n in facts["flow"]["nodes"]}
    assert nodes["nc_put_vara_double"]["ranks"] == 2
    assert nodes["nc_put_vara_double"]["max_rank_time_s"] == pytest.approx(0.018)
    assert nodes["pwrite64"]["ranks"] == 1


def test_shell_wrapper_and_launcher_are_not_ranks(tmp_path):
    """A process without a rank beside ranked ones (mpirun, `sh -c`) is left out, with a note."""
    procs, w = ranks_beside_a_wrapper()
    for p in procs + [w]:
        p.write(tmp_path)
    _, facts = facts_of(tmp_path)
    assert facts["ranks"]["units"] == ["rank 0", "rank 1"]
    m = next(m for m in facts["ranks"]["main"] if m["function"] == "pwrite64")
    assert m["imbalance"] == pytest.approx(1.5)
    assert any("pid 299" in n and "without an MPI rank" in n for n in facts["trace"]["notes"])
    assert not any(f["function"] == "read" for f in facts["functions"])


def test_rank_imbalance(tmp_path):
    for r, secs in enumerate([1, 2, 3]):
        p = SynthProc(pid=200 + r, rank=r)
        p.leaf("pwrite64", "posix", dur=secs * 10**9, file="/shared", offset=r * 10, size=10)
        p.write(tmp_path)
    p = SynthProc(pid=203, rank=3)  # rank 3 never writes
    p.leaf("pread64", "posix", dur=10, file="/in", offset=0, size=10)
    p.write(tmp_path)
    _, facts = facts_of(tmp_path)
    assert facts["ranks"]["units"] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    m = next(m for m in facts["ranks"]["main"] if m["function"] == "pwrite64")
    assert m["per_rank_s"] == [1.0, 2.0, 3.0, None] and m["ranks_calling"] == 3
    assert (m["min"], m["mean"], m["max"]) == (1.0, 2.0, 3.0)
    assert m["imbalance"] == pytest.approx(1.5) and m["idle_share"] == pytest.approx(1 / 3)


# --- netCDF chunk geometry -------------------------------------------------------------------------------

def _nc_read_trace(d, aux, n=1):
    p = SynthProc(pid=1)
    for _ in range(n):
        p.leaf("nc_get_vara_float", "netcdf", dur=MS, file="/f.nc", var="v", size=-1, aux=aux)
    p.write(d)
    return facts_of(d)[1]["netcdf"]


def test_netcdf_decoded_matches_layout(tmp_path):
    shape, chunks, start, count, item = [20, 30, 40], [5, 7, 9], [3, 4, 5], [4, 10, 20], 4
    cb = layout.chunk_bytes(chunks, item)
    touched = layout.chunks_touched(shape, chunks, start, count)
    aux = {"start": start, "count": count, "stride": None, "chunks": chunks, "shape": shape, "itemsize": item,
           "cache_bytes": touched * cb, "cache_nelems": 1009, "compressed": True, "filters": ["deflate"]}
    nc = _nc_read_trace(tmp_path / "a", aux)
    v, r = nc["variables"][0], nc["reads"][0]
    assert r["requested"] == layout.bytes_wanted(count, item)
    assert r["decoded"] == layout.bytes_decoded(shape, chunks, start, count, item)
    assert v["ratio"] == pytest.approx(layout.amplification(shape, chunks, start, count, item))
    assert r["chunks_touched"] == touched and r["partial_chunks"] == layout.partial_chunks(shape, chunks, start, count)
    assert r["cache"] == "fits"
    assert _nc_read_trace(tmp_path / "b", {**aux, "cache_bytes": touched * cb - 1})["reads"][0]["cache"] == "does not fit"
    assert _nc_read_trace(tmp_path / "c", {**aux, "cache_bytes": cb - 1})["reads"][0]["cache"] == \
        "chunk larger than cache"
    contiguous = _nc_read_trace(tmp_path / "d", {**aux, "chunks": None})
    assert contiguous["reads"][0]["decoded"] == contiguous["reads"][0]["requested"]
    assert contiguous["reads"][0]["cache"] == "contiguous" and contiguous["variables"][0]["ratio"] == 1.0


def test_netcdf_strided_read_chunks_exact(tmp_path):
    shape, chunks, start, count, stride, item = [12, 50], [3, 4], [1, 2], [4, 6], [3, 9], 8
    aux = {"start": start, "count": count, "stride": stride, "chunks": chunks, "shape": shape, "itemsize": item,
           "cache_bytes": 1 << 20, "compressed": False}
    r = _nc_read_trace(tmp_path, aux)["reads"][0]
    points = itertools.product(*[[s + i * st for i in range(n)] for s, n, st in zip(start, count, stride)])
    expect = len({tuple(p // c for p, c in zip(pt, chunks)) for pt in points})
    assert r["chunks_touched"] == expect and r["decoded"] == expect * layout.chunk_bytes(chunks, item)
    assert r["requested"] == 4 * 6 * item


def test_netcdf_reads_without_aux_are_counted(tmp_path):
    nc = _nc_read_trace(tmp_path, None, n=3)
    assert nc["reads_total"] == 0 and nc["reads_without_geometry"] == 3


# --- advice rules ------------------------------------------------------------------------------------------

def _small_requests(d):
    p = SynthProc(pid=1)
    for i in range(200):
        p.leaf("pread64", "posix", dur=10_000, file="/small.bin", offset=i * 512, size=512)
    p.write(d)


def _random_access(d):
    offs = [i << 20 for i in range(64)]
    random.Random(1).shuffle(offs)
    p = SynthProc(pid=1)
    for o in offs:
        p.leaf("pread64", "posix", dur=MS, file="/big.bin", offset=o, size=1 << 20)
    p.write(d)


def _partial_chunks(d):
    # Reads of one row of chunks [100, 100] out of [1000, 100], each in a different chunk: 100x.
    p = SynthProc(pid=1)
    for t in range(0, 1000, 100):
        p.leaf("nc_get_vara_double", "netcdf", dur=MS, file="/z.nc", var="zeta", size=800,
               aux={"start": [t, 0], "count": [1, 100], "shape": [1000, 100], "chunks": [100, 100], "itemsize": 8,
                    "cache_bytes": 1 << 20, "compressed": True, "filters": ["deflate"]})
    p.write(d)


def _chunk_cache(d):
    # xy reads at consecutive t of chunks [10, 100]: each read touches 10 chunks = 40 KB, the next
    # read needs them again, the cache holds 16 KB.
    p = SynthProc(pid=1)
    for t in range(10):
        p.leaf("nc_get_vara_float", "netcdf", dur=MS, file="/c.nc", var="sst", size=4000,
               aux={"start": [t, 0], "count": [1, 1000], "shape": [10, 1000], "chunks": [10, 100], "itemsize": 4,
                    "cache_bytes": 16000, "compressed": False})
    p.write(d)


def _shared_writes(d, func="MPI_File_write_at"):
    for r in range(4):
        p = SynthProc(pid=300 + r, rank=r)
        for k in range(3):
            p.leaf(func, "mpiio", dur=MS, file="/hist.nc", offset=k * 100, size=100)
        p.write(d)


def _close_truncate(d):
    p = SynthProc(pid=1, rank=0)
    p.leaf("nc_put_vara_double", "netcdf", dur=10 * MS, file="/o.nc", var="u", size=8 << 20)
    with p.span("nc_close", "netcdf", before=MS, file="/o.nc"):
        with p.span("MPI_File_set_size", "mpiio", file="/o.nc"):
            p.leaf("ftruncate", "posix", dur=10 * MS, file="/o.nc")
    p.write(d)


def _library_min_read(d):
    offs = [i * 1_000_000 for i in range(20)]
    p = SynthProc(pid=1)
    for o in offs:
        with p.span("H5Dread", "hdf5", before=1000, file="/h.h5", var="/x", size=800):
            p.leaf("pread64", "posix", dur=50_000, file="/h.h5", offset=o, size=65536)
    p.write(d)


def _fpp(d, secs=(1, 1, 1, 4)):
    for r, s in enumerate(secs):
        p = SynthProc(pid=400 + r, rank=r)
        for k in range(4):
            p.leaf("pwrite64", "posix", dur=s * 10**9 // 4, file=f"/out.{r}", offset=k << 22, size=4 << 20)
        p.write(d)


RULE_TRACES = {"small-requests": _small_requests, "random-access": _random_access,
               "partial-chunk-compressed": _partial_chunks, "chunk-cache-small": _chunk_cache,
               "independent-shared-writes": _shared_writes, "close-truncate": _close_truncate,
               "below-library-min-read": _library_min_read, "file-per-process-imbalance": _fpp,
               **OBJECT_RULE_TRACES}


def test_every_rule_has_a_crafted_trace():
    assert set(RULE_TRACES) == set(TRACE_RULES) - {"collective-vs-independent"}


@pytest.mark.parametrize("rule", sorted(RULE_TRACES))
def test_rule_fires(tmp_path, rule):
    RULE_TRACES[rule](tmp_path)
    fired, found = rules_fired(tmp_path)
    assert rule in fired, found
    f = next(f for f in found if f["rule"] == rule)
    assert f["message"] and f["advice"] and f["thresholds"] == TRACE_RULES[rule]["thresholds"]
    assert f["evidence"]["time_s"] > 0 and 0 < f["evidence"]["share_of_io_time"] <= 1.0 + 1e-9
    # the evidence printed is what the registry says the rule prints
    assert set(f["evidence"]) == set(TRACE_RULES[rule]["evidence"]) | {"time_s", "share_of_io_time", "could_save_s",
                                                                       "share_of_run"}


def test_rule_evidence(tmp_path):
    _small_requests(tmp_path / "s")
    f = next(f for f in rules_fired(tmp_path / "s")[1] if f["rule"] == "small-requests")
    assert (f["evidence"]["requests"], f["evidence"]["small_requests"]) == (200, 200)
    assert f["evidence"]["small_bytes"] == 200 * 512 and f["evidence"]["common_sizes"] == [[512, 200]]
    _shared_writes(tmp_path / "w")
    f = next(f for f in rules_fired(tmp_path / "w")[1] if f["rule"] == "independent-shared-writes")
    assert (f["evidence"]["offsets"], f["evidence"]["ranks"], f["evidence"]["writes"]) == (3, 4, 12)
    _close_truncate(tmp_path / "c")
    f = next(f for f in rules_fired(tmp_path / "c")[1] if f["rule"] == "close-truncate")
    assert f["evidence"]["calls"] == 1 and f["evidence"]["under_close"] == 1
    assert f["evidence"]["share_of_io"] == pytest.approx(10 / 21) and f["severity"] == "high"
    _library_min_read(tmp_path / "l")
    f = next(f for f in rules_fired(tmp_path / "l")[1] if f["rule"] == "below-library-min-read")
    assert f["evidence"]["typical_posix_read"] == 65536 and f["evidence"]["inflation"] == pytest.approx(65536 / 800)
    _fpp(tmp_path / "f")
    f = next(f for f in rules_fired(tmp_path / "f")[1] if f["rule"] == "file-per-process-imbalance")
    assert f["evidence"]["time"]["imbalance"] == pytest.approx(4 / 1.75) and f["evidence"]["slowest"] == "rank 3"
    _partial_chunks(tmp_path / "p")
    f = next(f for f in rules_fired(tmp_path / "p")[1] if f["rule"] == "partial-chunk-compressed")
    assert f["evidence"]["ratio"] == pytest.approx(100.0) and f["evidence"]["partial_reads"] == 10
    # the typical read [1, 100] is 800 B: the chunk advised grows to the 64 KiB bound, which the file's
    # chunks [100, 100] already are, so the fix is to read whole chunks, not to rechunk
    assert f["evidence"]["target_chunks"] == [100, 100] and "climio rechunk" not in f["advice"]
    assert "read slabs that cover whole chunks" in f["advice"], f["advice"]


def _small_under_mpiio(d, func, posix):
    """Two ranks, each making 150 MPI-IO calls of 4 KiB that reach the file as 8 x 512 B."""
    for r in range(2):
        p = SynthProc(pid=500 + r, rank=r)
        for k in range(150):
            with p.span(func, "mpiio", before=1000, file="/m.nc", offset=-1, size=4096):
                for j in range(8):
                    p.leaf(posix, "posix", dur=1000, file="/m.nc", offset=(k * 2 + r) * 4096 + j * 512, size=512)
        p.write(d)


@pytest.mark.parametrize("func,posix,kind,group,fix", [
    ("MPI_File_write_at_all", "pwritev", "write", "collective_mpiio", "romio_cb_write"),
    ("MPI_File_read_at", "pread64", "read", "independent_mpiio", "NC_COLLECTIVE"),
])
def test_small_requests_say_who_made_them(tmp_path, func, posix, kind, group, fix):
    _small_under_mpiio(tmp_path, func, posix)
    f = next(f for f in rules_fired(tmp_path)[1] if f["rule"] == "small-requests")
    ev = f["evidence"]
    assert (ev["kind"], ev["requests"], ev["small_requests"]) == (kind, 2400, 2400)
    assert ev["issued_by"] == {"collective_mpiio": 0, "independent_mpiio": 0, "no_mpiio": 0, group: 2400}
    assert f"2400 of them are made inside 300 {group.split('_')[0]} MPI-IO calls ({func} x300)" in f["message"]
    assert fix in f["advice"]
    # small collective calls of the program's own (no POSIX layer beneath): make them larger
    p = SynthProc(pid=9, rank=0)
    for k in range(150):
        p.leaf("MPI_File_write_at_all", "mpiio", dur=1000, file="/own.nc", offset=k * 512, size=512)
    p.write(tmp_path / "own")
    f = next(f for f in rules_fired(tmp_path / "own")[1] if f["rule"] == "small-requests")
    assert "150 of them are collective MPI-IO calls (MPI_File_write_at_all x150)" in f["message"]
    assert f["advice"] == fixes.SMALL_ADVICE
    # small requests with no MPI-IO call around them keep the general advice
    _small_requests(tmp_path / "plain")
    f = next(f for f in rules_fired(tmp_path / "plain")[1] if f["rule"] == "small-requests")
    assert f["evidence"]["issued_by"] == {"collective_mpiio": 0, "independent_mpiio": 0, "no_mpiio": 200}
    assert f["advice"] == fixes.SMALL_ADVICE


def _clean(d):
    """Large consecutive writes, a whole-chunk netCDF read sequence whose chunks the cache holds,
    collective small writes, balanced file-per-process output: no rule may fire."""
    p = SynthProc(pid=1, rank=0)
    p.leaf("open", "posix", dur=1000, file="/clean.bin")
    for k in range(8):
        p.leaf("pwrite64", "posix", dur=5 * MS, file="/clean.bin", offset=k << 22, size=4 << 20)
    p.leaf("close", "posix", dur=1000, file="/clean.bin")
    for t in range(10):  # chunks [5, 100]: the second read of each chunk row comes from the cache
        p.leaf("nc_get_vara_float", "netcdf", dur=MS, file="/c.nc", var="sst", size=400,
               aux={"start": [t, 0], "count": [1, 1000], "shape": [10, 1000], "chunks": [1, 1000], "itemsize": 4,
                    "cache_bytes": 4 << 20, "compressed": True})
    for k in range(3):
        p.leaf("MPI_File_write_at_all", "mpiio", dur=MS, file="/hist.nc", offset=k * 100, size=100)
    with p.span("nc_close", "netcdf", before=MS, file="/o.nc"):
        p.leaf("MPI_File_set_size", "mpiio", dur=10_000, file="/o.nc")
    p.write(d)
    q = SynthProc(pid=2, rank=1)
    for k in range(3):
        q.leaf("MPI_File_write_at_all", "mpiio", dur=MS, file="/hist.nc", offset=k * 100, size=100)
    q.write(d)
    _fpp(d / "fpp", secs=(2, 2, 2, 2))


def test_no_rule_fires_on_a_clean_trace(tmp_path):
    _clean(tmp_path)
    fired, found = rules_fired(tmp_path)
    assert fired == set(), found
    fired, found = rules_fired(tmp_path / "fpp")
    assert fired == set(), found
    # the same small writes made independently do fire
    _shared_writes(tmp_path / "ind")
    _shared_writes(tmp_path / "coll", func="MPI_File_write_at_all")
    assert "independent-shared-writes" in rules_fired(tmp_path / "ind")[0]
    assert "independent-shared-writes" not in rules_fired(tmp_path / "coll")[0]


# --- the report command ----------------------------------------------------------------------------------

def test_report_cli_text_json_html(tmp_path):
    _two_rank_write_trace(tmp_path)
    _close_truncate(tmp_path / "sub")  # not part of this trace: only files directly in DIR count
    out = run_cli("trace", "report", tmp_path)
    assert out.returncode == 0, out.stderr
    for word in ("nc_put_vara_double -> MPI_File_write_at_all", "pwrite64", "Per rank", "Layers", "/o.nc",
                 "Rules and thresholds", "SMALL_REQUEST_BYTES=64KiB"):
        assert word in out.stdout, word
    out = run_cli("trace", "report", tmp_path, "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"trace", "layers", "functions", "flow", "ranks", "files", "netcdf", "findings", "rules",
            "definitions"} <= set(data)
    assert data["trace"]["units"] == 2 and data["trace"]["partial"] is False
    out = run_cli("trace", "report", tmp_path, "--format", "json", "-o", tmp_path / "t.json")
    assert out.returncode == 0 and json.loads((tmp_path / "t.json").read_text())["trace"]["events"] == 14
    out = run_cli("trace", "report", tmp_path, "--format", "html")
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 4  # flow, ranks, histogram, timeline
    for word in ("Call-path flow", "Load balance", "Advice", "Rules and thresholds", "nc_put_vara_double"):
        assert word in html, word
    assert "could not be drawn" not in html


def test_report_html_with_findings(tmp_path):
    _close_truncate(tmp_path)
    out = run_cli("trace", "report", tmp_path, "--format", "html", "-o", tmp_path / "x.html")
    assert out.returncode == 0, out.stderr
    html = (tmp_path / "x.html").read_text()
    assert "File size set at close" in html and "TRUNCATE_SHARE = 0.05" in html
    text = run_cli("trace", "report", tmp_path).stdout
    assert "[high] File size set at close" in text
