"""The advisor's model and profile on synthetic profiles: exact arithmetic, geometry-driven
orderings, the JSON round trip, and fitting a profile from calibration records."""

import json
import math

import pytest

from climio.dataset.access import slice_starts
from climio.dataset.reads import read_count as parse_read
from climio.model import profile as prof_mod
from climio import profiles as on_disk
from climio.model.predict import predict, simulate
from climio.model.fit import fit, fit_storage
from climio.model.profile import Profile, StackRates, default_profile
from climio.base.errors import InputError
from climio.dataset.layout import Layout


def synthetic() -> Profile:
    return Profile(
        platform_id="synthetic", page_bytes=16, sieve_bytes=64 << 10,
        latency_s={"sequential": 1e-4, "strided": 1e-3, "warm": 0.0},
        rate_Bps={"sequential": [[1, 100e6]], "strided": [[1, 50e6]], "warm": [[1, 1e9]]},
        stacks={"s": StackRates(call_s=1e-3, chunk_s=1e-4, piece_s=1e-5, copy_Bps=1e9, open_s=0.5,
                                chunk_cache_bytes=0)},
        decode_Bps={"deflate4": 100e6}, parallel={"cores": 2, "io": {"2": 1.5}, "cpu": {"2": 2.0}})


def test_contiguous_arithmetic_exact():
    lay = Layout((2, 1, 4, 1024), 8, None)
    reads = slice_starts(lay.shape, parse_read("xy", lay.shape))      # two reads of one 32 KiB run each
    p = predict(lay, reads, "s", synthetic())
    # one sieve read of 64 KiB (the whole variable) serves both runs; first request: a seek (strided)
    assert p.counts.requests == {("strided", 65536): 1}
    assert p.io_s == pytest.approx(1e-3 + 65536 / 50e6, rel=1e-12)
    assert p.cpu_s == pytest.approx(2 * (1e-3 + 1e-5 + 32768 / 1e9), rel=1e-12)
    assert p.decode_s == 0
    assert p.seconds == pytest.approx(0.00231072 + 0.002085536, rel=1e-12)
    assert p.open_s == 0.5 and p.total_s == pytest.approx(p.seconds + 0.5)
    assert p.path[:2] == ["contiguous", "sequential (one run per read)"]


def test_chunked_compressed_arithmetic_exact_and_parallel():
    lay = Layout((4, 4), 8, (2, 2), compressed=True, stored_bytes=64)   # 4 chunks of 32 B, 16 B stored
    prof = synthetic()
    p = predict(lay, [((0, 0), (4, 4))], "s", prof, codec="deflate4")
    assert p.counts.requests == {("strided", 16): 1, ("sequential", 16): 3}
    io = (1e-3 + 16 / 50e6) + 3 * (1e-4 + 16 / 100e6)
    dec = 4 * 32 / 100e6
    cpu = 1e-3 + 4 * 1e-4 + 4 * 1e-5 + 128 / 1e9
    assert (p.io_s, p.decode_s, p.cpu_s) == pytest.approx((io, dec, cpu), rel=1e-12)
    assert p.path == ["chunked [2,2]", "whole chunks", "compressed (deflate4)",
                      "storage requests of 0.0 KiB (75% sequential)"]
    p2 = predict(lay, [((0, 0), (4, 4))], "s", prof, tasks=2, codec="deflate4")
    assert p2.seconds == pytest.approx(io / 1.5 + (dec + cpu) / 2.0, rel=1e-12)
    assert p2.parallel_factor == pytest.approx((io + dec + cpu) / (io / 1.5 + (dec + cpu) / 2.0), rel=1e-12)
    # decoding the same chunk twice: the second read finds it in the page cache, not the chunk cache
    p3 = predict(lay, [((0, 0), (1, 4)), ((1, 0), (1, 4))], "s", prof, codec="deflate4")
    assert p3.counts.decodes == 4 and p3.counts.partial_chunks == 4
    assert p3.counts.requests == {("strided", 16): 1, ("sequential", 16): 1, ("warm", 16): 2}
    # a chunk cache that holds both chunks of a read: decoded once
    p4 = predict(lay, [((0, 0), (1, 4)), ((1, 0), (1, 4))], "s", prof, codec="deflate4", chunk_cache_bytes=64)
    assert p4.counts.decodes == 2 and p4.counts.chunk_cache_hits == 2


def test_xt_from_xt_chunks_faster_than_from_contiguous():
    shape = (64, 8, 128, 256)
    reads = slice_starts(shape, parse_read("xt", shape))
    prof = default_profile()
    contiguous = predict(Layout(shape, 8, None), reads, "netcdf4-python", prof)
    xt = predict(Layout(shape, 8, (64, 1, 1, 256)), reads, "netcdf4-python", prof)
    assert xt.seconds < contiguous.seconds / 3
    assert contiguous.path[1].startswith("non-sequential") and xt.path[1] == "whole chunks"


def test_compressed_partial_chunks_slower_than_uncompressed():
    shape = (64, 8, 128, 256)
    reads = slice_starts(shape, parse_read("xt", shape))
    prof = default_profile()
    plain = predict(Layout(shape, 8, (8, 2, 32, 64)), reads, "netcdf4-python", prof)
    packed = predict(Layout(shape, 8, (8, 2, 32, 64), True, 40 << 20), reads, "netcdf4-python", prof)
    assert packed.seconds > 2 * plain.seconds
    assert "partial chunks" in packed.path[1] and packed.decode_s > packed.io_s
    # whole chunks compressed cost little next to partial ones
    whole = predict(Layout(shape, 8, (64, 1, 1, 256), True, 40 << 20), reads, "netcdf4-python", prof)
    assert whole.seconds < packed.seconds / 2


def test_more_tasks_never_slower_and_bad_input():
    shape = (16, 2, 32, 64)
    reads = slice_starts(shape, parse_read("xt", shape))
    prof = synthetic()
    one = predict(Layout(shape, 8, None), reads, "s", prof)
    two = predict(Layout(shape, 8, None), reads, "s", prof, tasks=2)
    assert two.seconds < one.seconds
    with pytest.raises(InputError, match="unknown stack 'nope'"):
        predict(Layout(shape, 8, None), reads, "nope", prof)
    with pytest.raises(InputError, match="outside the variable"):
        simulate(Layout(shape, 8, None), [((0, 0, 0, 0), (17, 1, 1, 64))], 0, prof)


def test_profile_round_trip(tmp_path, monkeypatch):
    p = synthetic()
    p.records = [{"params": {"kind": "storage"}, "median_wall_s": 0.1, "reps": 3}]
    q = Profile.from_json(p.to_json())
    assert q == p and q.to_dict() == p.to_dict()
    assert json.loads(q.to_json())["schema"] == prof_mod.SCHEMA
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    written = on_disk.save(p, tmp_path / "run" / "profile.json")
    assert written[0] == tmp_path / "profiles" / "synthetic.json"
    assert on_disk.load(tmp_path / "run") == p
    found, warn = on_disk.find("synthetic")
    assert found == p and warn == ""
    other, warn = on_disk.find("another-machine")
    assert other == p and "no profile for this platform" in warn and "synthetic" in warn and "another-machine" in warn


def test_rate_interpolation_and_speedup():
    p = synthetic()
    p.rate_Bps["strided"] = [[1024, 10e6], [1 << 20, 1000e6]]
    assert p.rate("strided", 32 << 10) == pytest.approx(math.exp((math.log(10e6) + math.log(1000e6)) / 2))
    assert p.rate("strided", 10) == 10e6 and p.rate("strided", 1 << 30) == 1000e6
    assert p.speedup("io", 1) == 1.0 and p.speedup("cpu", 2) == 2.0 and p.speedup("cpu", 8) == 2.0


def test_fit_storage_reproduces_points_and_fit_from_records():
    lat, table = fit_storage([(4096, 1e-4 + 4096 / 1e8), (65536, 1e-4 + 65536 / 1e8), (1 << 20, 1e-4 + (1 << 20) / 1e8)])
    assert lat == pytest.approx(1e-4)
    assert [r for _, r in table] == pytest.approx([1e8, 1e8, 1e8])
    # one noisy point bends its own rate at most 3x from the line
    lat, table = fit_storage([(4096, 1e-4 + 4096 / 1e8), (65536, 1e-4 + 65536 / 1e8), (1 << 20, 1e-4 + (1 << 20) / 1e8),
                              (1 << 22, 1e-4 + (1 << 22) / 1e10)])
    assert max(r for _, r in table) <= 3 * min(r for _, r in table) * 3

    def rec(kind, wall, ops=1, **params):
        return {"study": "calibrate", "status": "ok", "params": {"kind": kind, **params},
                "metrics": {"wall_s": wall, "ops": ops}}
    recs = [rec("storage", 100 * (1e-4 + 4096 / 1e8), 100, pattern="strided", request_bytes=4096),
            rec("storage", 10 * (1e-4 + 65536 / 1e8), 10, pattern="strided", request_bytes=65536),
            rec("stack-call", 0.01, stack="h5py", calls=1000, pieces=1000, bytes_wanted=0, requests=[]),
            rec("parallel", 2.0, what="io", tasks=1, cores=2), rec("parallel", 1.25, what="io", tasks=2, cores=2)]
    p = fit(recs, "pid")
    assert p.latency("strided") == pytest.approx(1e-4)
    assert p.stacks["h5py"].call_s + p.stacks["h5py"].piece_s == pytest.approx(1e-5)
    assert p.parallel["io"] == {"2": pytest.approx(1.6)} and p.parallel["cores"] == 2
    assert len(p.records) == 5


@pytest.mark.parametrize("chunks, compressed", [(None, False), ((4, 2, 3, 4), False), ((4, 2, 3, 4), True),
                                                ((10, 1, 1, 9), True)])
def test_simulated_geometry_is_layout_geometry(chunks, compressed):
    """The model's chunks visited, partial chunks, runs and bytes decoded are climio.dataset.layout's, summed
    over the reads: xt, xy, xyt, the STSA pattern and odd boxes, on a shape the chunks do not divide
    (edge chunks), with no chunk cache so that every chunk touched is decoded."""
    from climio.dataset import layout as geo
    from climio.model.workflow import stsa_reads
    shape = (10, 3, 7, 9)
    lay = Layout(shape, 8, chunks, compressed, 2000 if compressed else None)
    boxes = {r: slice_starts(shape, parse_read(r, shape)) for r in ("xt", "xy", "xyt", "3,1,5,9", "4,2,2,3")}
    boxes["stsa"] = stsa_reads(shape)
    boxes["odd"] = [((1, 0, 2, 3), (5, 3, 4, 6)), ((9, 2, 6, 8), (1, 1, 1, 1)), ((0, 1, 0, 0), (10, 2, 7, 9))]
    for name, reads in boxes.items():
        c = simulate(lay, reads, 0, synthetic())
        want = [sum(f(shape, chunks, s, n) for s, n in reads)
                for f in (geo.chunks_touched, geo.partial_chunks, geo.contiguous_runs)]
        assert [c.chunks_visited, c.partial_chunks, c.pieces] == want, name
        # bytes decoded: every chunk touched of compressed data; what is wanted of contiguous data
        # (uncompressed chunks too large for the cache are read directly: nothing is decoded)
        decoded = sum(geo.bytes_decoded(shape, chunks, s, n, 8) for s, n in reads)
        if compressed or chunks is None:
            assert (c.bytes_decoded if compressed else c.bytes_wanted) == decoded, name
        assert c.chunks_visited > 0 or chunks is None


def test_nodes_divide_the_work_up_to_the_shared_file_system():
    """M nodes of N tasks: I/O / (M S_io(N)) and (decode + CPU) / (M S_cpu(N)); the I/O no faster
    than the cold bytes over the shared file system's bandwidth when the profile has one."""
    lay = Layout((4, 4), 8, (2, 2), compressed=True, stored_bytes=64)
    prof = synthetic()
    io = (1e-3 + 16 / 50e6) + 3 * (1e-4 + 16 / 100e6)
    dec, cpu = 4 * 32 / 100e6, 1e-3 + 4 * 1e-4 + 4 * 1e-5 + 128 / 1e9
    p = predict(lay, [((0, 0), (4, 4))], "s", prof, tasks=2, codec="deflate4", nodes=4, passes=3)
    assert p.seconds == pytest.approx(3 * (io / 1.5 / 4 + (dec + cpu) / 2.0 / 4), rel=1e-12)
    assert p.io_s == pytest.approx(3 * io / 1.5 / 4, rel=1e-12) and p.nodes == 4
    assert p.path[-2:] == ["2 tasks", "4 nodes"] and "assumed to add up" in p.notes[0] and "per node on 4 nodes" in p.lines()[0]
    prof.parallel["shared_fs_Bps"] = 64 / 1e-3           # 64 cold bytes take 1 ms at the ceiling
    q = predict(lay, [((0, 0), (4, 4))], "s", prof, tasks=2, codec="deflate4", nodes=4, passes=3)
    assert q.io_s == pytest.approx(3 * 1e-3, rel=1e-12) and not q.notes
    assert q.seconds == pytest.approx(3 * (1e-3 + (dec + cpu) / 2.0 / 4), rel=1e-12)
    assert Profile.from_json(prof.to_json()).parallel["shared_fs_Bps"] == 64 / 1e-3
    with pytest.raises(InputError, match="nodes 0"):
        predict(lay, [((0, 0), (4, 4))], "s", prof, nodes=0)


def test_the_converters_start_up_is_fitted_and_in_every_conversion_plan():
    """calibrate times `climio rechunk` as a process and by its own clock: the median difference is
    the command's start-up, which the planner adds to every plan (what advice's one-off costs and
    `climio rechunk --dry-run` say), and a profile without it predicts the work alone."""
    from climio.model.convert import conversion_plan
    from climio.dataset.layout import Layout

    def conv(kind, codec, wall, process):
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "process_wall_s": process, "ops": 1},
                "params": {"kind": kind, "codec": codec, "stack": "climio-rechunk", "bytes_encoded": 1e6,
                           "bytes_decoded": 1e6}}
    recs = [conv("convert-encode", "none", 0.5, 2.5), conv("convert-encode", "deflate1", 0.7, 2.6),
            conv("convert-decode", "deflate1", 0.6, 3.6)]
    p = fit(recs, "pid")
    assert p.convert_start_s == pytest.approx(2.0)          # median of 2.0, 1.9, 3.0
    src, dst = Layout((64, 1, 32, 32), 4, (1, 1, 32, 32)), Layout((64, 1, 32, 32), 4, (64, 1, 1, 32))
    with_start = conversion_plan(src, dst, p, "none", max_mem=64 << 20, workers=1)
    p.convert_start_s = 0.0
    without = conversion_plan(src, dst, p, "none", max_mem=64 << 20, workers=1)
    assert with_start.start_s == pytest.approx(2.0) and without.start_s == 0.0
    assert with_start.predicted_s == pytest.approx(without.predicted_s + 2.0)
    assert with_start.to_dict()["predicted_s"] == pytest.approx(with_start.predicted_s)


def test_stacks_share_the_per_run_and_per_chunk_costs_of_the_library_below():
    """A Python stack's per-run and per-chunk costs are its C library's: taken from the reference
    stack (c-netcdf for netCDF-C, h5py for HDF5), its own per-call cost re-solved from its call case;
    warm library costs use the fastest repetition."""
    def rec(kind, stack, wall, calls, pieces, chunks=0):
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": calls},
                "params": {"kind": kind, "stack": stack, "calls": calls, "pieces": pieces, "chunks": chunks,
                           "bytes_wanted": 0, "requests": []}}
    # c-netcdf: 10 us a call, 50 ns a run, 3 us a chunk; xarray: 400 us a call, and a noisy runs case
    recs = [rec("stack-call", "c-netcdf", 1000 * 10e-6 + 1000 * 50e-9, 1000, 1000),
            rec("stack-runs", "c-netcdf", 100 * 10e-6 + 100000 * 50e-9, 100, 100000),
            rec("stack-chunks", "c-netcdf", 10 * 10e-6 + 10 * 50e-9 + 1000 * 3e-6, 10, 10, 1000),
            rec("stack-call", "xarray", 1000 * 400e-6 + 1000 * 50e-9, 1000, 1000),
            rec("stack-call", "xarray", 5.0, 1000, 1000),                 # a slow repetition: not the fastest
            rec("stack-runs", "xarray", 100 * 400e-6 + 100000 * 2e-6, 100, 100000)]   # 2 us a run: noise
    p = fit(recs, "pid")
    x, c = p.stacks["xarray"], p.stacks["c-netcdf"]
    assert c.piece_s == pytest.approx(50e-9) and c.chunk_s == pytest.approx(3e-6)
    assert x.piece_s == c.piece_s and x.chunk_s == c.chunk_s
    assert x.call_s == pytest.approx(400e-6)


def test_page_cache_copies_scale_with_the_cpu_storage_requests_with_the_storage():
    """With N tasks, requests served by the page cache (a memory copy) divide by the CPU speed-up,
    storage requests by the storage's."""
    from climio.model.predict import Counts
    prof = Profile(platform_id="p", latency_s={"strided": 1e-4, "warm": 1e-6, "sequential": 1e-6},
                   rate_Bps={"strided": [[4096, 1e8]], "warm": [[4096, 4e9]], "sequential": [[4096, 1e9]]},
                   stacks={"s": StackRates(call_s=0.0, chunk_s=0.0, piece_s=0.0, copy_Bps=1e30, open_s=0.0)},
                   parallel={"cores": 2, "io": {"2": 1.25}, "cpu": {"2": 2.0}})
    c = Counts(reads=2, reads_simulated=2, requests={("strided", 65536): 10, ("warm", 65536): 1000})
    lay = Layout((2, 8192), 8, None)
    p = predict(lay, [((0, 0), (1, 8192)), ((1, 0), (1, 8192))], "s", prof, tasks=2, counts=c)
    cold = 10 * (1e-4 + 65536 / 1e8)
    warm = 1000 * (1e-6 + 65536 / 4e9)
    assert p.io_s == pytest.approx(cold / 1.25 + warm / 2.0)


def test_each_decode_costs_its_fixed_part_fitted_from_small_chunks():
    """4 KiB chunks with a codec, beyond their uncompressed twin and their bytes at the decode rate:
    the per-decode cost, which the model adds per chunk decoded."""
    def rec(codec, wall, decodes, nbytes):
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": 4},
                "params": {"kind": "decode-chunk", "stack": "netcdf4-python", "codec": codec, "decodes": decodes,
                           "bytes_decoded": nbytes, "calls": 4, "pieces": 4, "chunks": decodes, "bytes_wanted": nbytes,
                           "requests": []}}
    base = default_profile()
    rate = base.decode("deflate1")
    recs = [rec("none", 0.10, 0, 0), rec("none", 0.5, 0, 0),
            rec("deflate1", 0.10 + 4e6 / rate + 4096 * 10e-6, 4096, 4e6)]
    p = fit(recs, "pid", base=base)
    assert p.decode_chunk_s == pytest.approx(10e-6)
    lay = Layout((64, 64), 8, (8, 8), True, 64 * 64 * 4)
    reads = [((0, 0), (64, 64))]
    with_chunk = predict(lay, reads, "netcdf4-python", p, codec="deflate1")
    p.decode_chunk_s = 0.0
    without = predict(lay, reads, "netcdf4-python", p, codec="deflate1")
    assert with_chunk.decode_s == pytest.approx(without.decode_s + 64 * 10e-6)


def test_a_chunk_visit_costs_more_when_one_call_visits_many_chunks():
    """HDF5's per-chunk bookkeeping of one H5Dread outgrows the CPU's caches: the cost per chunk
    visit is chunk_s at 256 visits per call, chunk_many_s at 8,192 (calibrate's two cases), linear
    in log2 between and flat beyond; fitted from the two cases and used with the reads' visits per
    call."""
    few, many = prof_mod.CHUNK_VISITS_FEW, prof_mod.CHUNK_VISITS_MANY
    r = StackRates(chunk_s=1e-6, chunk_many_s=5e-6)
    assert r.chunk_visit_s(1) == r.chunk_visit_s(few) == 1e-6
    assert r.chunk_visit_s(many) == r.chunk_visit_s(8 * many) == pytest.approx(5e-6)
    mid = few * math.sqrt(many / few)
    assert r.chunk_visit_s(mid) == pytest.approx(3e-6)
    assert StackRates(chunk_s=1e-6).chunk_visit_s(many) == 1e-6     # not measured: chunk_s throughout

    def rec(kind, wall, calls, chunks, pieces=None):
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": calls},
                "params": {"kind": kind, "stack": "c-netcdf", "calls": calls, "chunks": chunks,
                           "pieces": chunks if pieces is None else pieces, "bytes_wanted": 0, "requests": []}}
    recs = [rec("stack-call", 1000 * 10e-6 + 1000 * 50e-9, 1000, 0, 1000),
            rec("stack-runs", 100 * 10e-6 + 100000 * 50e-9, 100, 0, 100000),
            rec("stack-chunks", 32 * 10e-6 + 8192 * 50e-9 + 8192 * 1e-6, 32, 8192),
            rec("stack-chunks-many", 10e-6 + 8192 * 50e-9 + 8192 * 6e-6, 1, 8192)]
    p = fit(recs, "pid", base=default_profile())
    c = p.stacks["c-netcdf"]
    assert c.chunk_s == pytest.approx(1e-6) and c.chunk_many_s == pytest.approx(6e-6)
    # the same 8,192 chunk visits: in one read, or in 32 reads of 256
    lay = Layout((32, 16, 16), 4, (1, 1, 16))
    one = predict(lay, [((0, 0, 0), (32, 16, 16))], "c-netcdf", p)
    split = predict(lay, [((t, 0, 0), (1, 16, 16)) for t in range(32)], "c-netcdf", p)
    assert one.counts.chunks_visited == split.counts.chunks_visited == 512
    lay = Layout((32, 16, 16), 4, (1, 1, 1))
    one = predict(lay, [((0, 0, 0), (32, 16, 16))], "c-netcdf", p)
    split = predict(lay, [((t, 0, 0), (1, 16, 16)) for t in range(32)], "c-netcdf", p)
    assert one.counts.chunks_visited == split.counts.chunks_visited == 8192
    per_visit = (one.cpu_s - split.cpu_s + 31 * c.call_s) / 8192
    assert per_visit == pytest.approx(6e-6 - 1e-6, rel=1e-6)


def test_the_decode_rate_follows_the_datas_compression_ratio():
    """deflate stores what it cannot compress and its decoder then copies: calibrate measures each
    codec on smooth data and on random values (two compression ratios); the model's cost per
    decoded byte is linear in 1 / ratio between them, flat outside, and the ratio is the variable's
    own (decoded over stored bytes of the chunks decoded)."""
    def rec(kind, codec, wall, stored=None):
        p = {"kind": kind, "stack": "netcdf4-python", "codec": codec, "calls": 4, "pieces": 4, "chunks": 64,
             "bytes_wanted": 16e6, "bytes_decoded": 16e6, "requests": []}
        if stored:
            p["bytes_stored"] = stored
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": 4}, "params": p}
    recs = [rec("decode", "none", 0.01), rec("decode", "deflate1", 0.01 + 16e6 / 250e6, 4e6),
            rec("decode-random", "deflate1", 0.01 + 16e6 / 1000e6, 15e6)]
    p = fit(recs, "pid", base=default_profile())
    assert p.decode("deflate1") == pytest.approx(250e6)
    assert p.decode_ratio["deflate1"] == pytest.approx(4.0)
    assert p.decode_random["deflate1"] == [pytest.approx(16 / 15), pytest.approx(1000e6)]
    assert p.decode("deflate1", 4.0) == pytest.approx(250e6) and p.decode("deflate1", 40.0) == pytest.approx(250e6)
    assert p.decode("deflate1", 16 / 15) == pytest.approx(1000e6) and p.decode("deflate1", 1.0) == pytest.approx(1000e6)
    mid = 1 / ((1 / 4 + 15 / 16) / 2)       # halfway in 1 / ratio
    assert p.decode("deflate1", mid) == pytest.approx(1 / (0.5 / 250e6 + 0.5 / 1000e6))
    assert p.decode("zstd3", 1.0) == p.decode("zstd3")      # one ratio measured: one rate
    # the model takes the ratio from the layout's stored bytes; unknown stored bytes: the base rate
    reads = [((0, 0), (64, 64))]
    squeezed = predict(Layout((64, 64), 8, (8, 8), True, 64 * 64 * 8 // 4), reads, "netcdf4-python", p, codec="deflate1")
    loose = predict(Layout((64, 64), 8, (8, 8), True, 64 * 64 * 8 * 15 // 16), reads, "netcdf4-python", p,
                    codec="deflate1")
    unknown = predict(Layout((64, 64), 8, (8, 8), True), reads, "netcdf4-python", p, codec="deflate1")
    per = lambda pr: (pr.decode_s - pr.counts.decodes * p.decode_chunk_s) / pr.counts.bytes_decoded   # noqa: E731
    assert per(squeezed) == pytest.approx(1 / 250e6) and per(loose) == pytest.approx(1 / 1000e6, rel=1e-3)
    assert per(unknown) == pytest.approx(1 / 250e6)


def test_direct_chunk_reads_through_the_sieve_or_one_pread_per_piece():
    """An uncompressed chunk too large for the chunk cache is read directly: some HDF5 builds go
    through the 64 KiB sieve, others issue one pread per piece (contiguous in the chunk and in the
    read's buffer). The simulation counts either; the fit keeps the one the measured time fits."""
    prof = default_profile()
    prof.readahead_bytes = 0
    lay = Layout((64, 4, 64, 128), 8, (4, 1, 64, 128))
    reads = [((0, 0, 0, 16), (64, 1, 64, 16))]      # 16 chunks, each 64 rows x 4 steps of 128-byte pieces
    sieve = simulate(lay, reads, 0, prof)
    runs = simulate(lay, reads, 0, prof, direct_sieve=False)
    n_runs = sum(runs.requests.values())
    assert n_runs == 16 * 4 * 64 and all(size == 128 for _, size in runs.requests)
    # 64 KiB windows from the first piece on, over each 256 KiB chunk (a window's page already read
    # counts apart): a few requests per chunk, the chunk's bytes
    assert sum(sieve.requests.values()) <= 16 * 6
    assert sum(n * s for (_, s), n in sieve.requests.items()) == pytest.approx(16 * (256 << 10), rel=0.01)
    # the fit: a measured time near the per-piece prediction picks it, near the sieve's the sieve
    lat, rate = prof.latency("warm"), prof.rate("warm", 128)

    def rec(wall):
        p = {"kind": "stack-direct", "stack": "h5py", "calls": 1, "pieces": 4096, "chunks": 16, "bytes_wanted": 0,
             "requests": [["warm", s, n] for (_, s), n in sieve.requests.items()],
             "requests_runs": [["warm", s, n] for (_, s), n in runs.requests.items()]}
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": 1}, "params": p}
    t_runs = n_runs * (lat + 128 / rate)
    assert fit([rec(t_runs)], "pid", base=prof).stacks["h5py"].direct_sieve is False
    assert fit([rec(t_runs / 50)], "pid", base=prof).stacks["h5py"].direct_sieve is True


def test_float32_values_take_their_own_decode_rates():
    """calibrate decodes float32 files too (smooth and random, against a float32 uncompressed twin):
    4-byte variables take those two points, 8-byte ones the float64 ones."""
    def rec(kind, codec, wall, stored=None, itemsize=None):
        p = {"kind": kind, "stack": "netcdf4-python", "codec": codec, "calls": 4, "pieces": 4, "chunks": 64,
             "bytes_wanted": 16e6, "bytes_decoded": 16e6, "requests": []}
        if stored:
            p["bytes_stored"] = stored
        if itemsize:
            p["itemsize"] = itemsize
        return {"study": "calibrate", "status": "ok", "metrics": {"wall_s": wall, "ops": 4}, "params": p}
    recs = [rec("decode", "none", 0.01), rec("decode", "zstd3", 0.01 + 16e6 / 1000e6, 8e6),
            rec("decode", "none", 0.02, itemsize=4),
            rec("decode", "zstd3", 0.02 + 16e6 / 400e6, 4e6, itemsize=4),
            rec("decode-random", "zstd3", 0.02 + 16e6 / 200e6, 14e6, itemsize=4)]
    p = fit(recs, "pid", base=default_profile())
    assert p.decode("zstd3") == pytest.approx(1000e6) and p.decode("zstd3", 2.0, 8) == pytest.approx(1000e6)
    assert p.decode_f4["zstd3"] == [[pytest.approx(4.0), pytest.approx(400e6)], [pytest.approx(16 / 14), pytest.approx(200e6)]]
    assert p.decode("zstd3", 4.0, 4) == pytest.approx(400e6) and p.decode("zstd3", 1.0, 4) == pytest.approx(200e6)
    lay4 = Layout((64, 64), 4, (8, 8), True, 64 * 64 * 4 // 4)
    lay8 = Layout((64, 64), 8, (8, 8), True, 64 * 64 * 8 // 4)
    reads = [((0, 0), (64, 64))]
    t4 = predict(lay4, reads, "netcdf4-python", p, codec="zstd3")
    t8 = predict(lay8, reads, "netcdf4-python", p, codec="zstd3")
    per = lambda pr: (pr.decode_s - pr.counts.decodes * p.decode_chunk_s) / pr.counts.bytes_decoded   # noqa: E731
    assert per(t4) == pytest.approx(1 / 400e6) and per(t8) == pytest.approx(1 / 1000e6)
