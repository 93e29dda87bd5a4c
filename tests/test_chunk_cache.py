"""climio.model.chunk_cache against the HDF5 library itself.

The library keeps its chunk-cache statistics private, so the tests count what it does from the
outside: every chunk read from storage (a miss) is one read of exactly the chunk's stored bytes at
the chunk's address (h5py's chunk index gives both). h5py is opened on a Python file object
(climio.bench.predict.counts, which the predictor's validation uses too), so each read the library
makes is a call we see; netCDF4-python (netCDF-C) runs under strace and
its pread64 calls are matched the same way. The simulation must give the same number of chunk
reads, exactly, on every case.
"""

import re
import shutil
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import pytest

from climio.bench.predict.counts import chunk_reads
from climio.base.errors import InputError
from climio.model.chunk_cache import CacheSpec, ChunkCache, simulate


def chunk_addresses(dset) -> dict:
    out = {}
    for i in range(dset.id.get_num_chunks()):
        ci = dset.id.get_chunk_info(i)
        out[(ci.byte_offset, ci.size)] = ci.chunk_offset
    return out


def make_h5(path, shape, chunks, compression="gzip"):
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=shape, chunks=tuple(chunks), dtype="f4", compression=compression,
                             shuffle=compression is not None)
        d[...] = np.random.default_rng(0).random(shape, dtype="f4")


def measured_chunk_reads(path, reads, spec: CacheSpec) -> int:
    return chunk_reads(path, "v", [reads], spec.to_dict())


def read_patterns(shape, seed=1):
    T, Z, Y, X = shape
    rng = np.random.default_rng(seed)
    rand = []
    for _ in range(40):
        s = [int(rng.integers(0, d)) for d in shape]
        rand.append((tuple(s), tuple(int(rng.integers(1, d - a + 1)) for a, d in zip(s, shape))))
    return {
        "xt": [((0, z, y, 0), (T, 1, 1, X)) for z in range(Z) for y in range(Y)],
        "xy": [((t, z, 0, 0), (1, 1, Y, X)) for t in range(T) for z in range(Z)],
        "xyt-blocks": [((t, 0, y, 0), (min(8, T - t), Z, min(5, Y - y), X)) for t in range(0, T, 8) for y in range(0, Y, 5)],
        "random": rand,
    }


# (shape, chunks, compression): whole maps, edge chunks that do not divide the dimensions,
# whole time series, small cubes, and an unfiltered layout
LAYOUTS = [((48, 3, 20, 50), (1, 1, 20, 50), "gzip"),
           ((48, 3, 20, 50), (7, 1, 6, 13), "gzip"),
           ((48, 3, 20, 50), (48, 1, 1, 50), "gzip"),
           ((30, 4, 17, 33), (4, 3, 5, 8), "gzip"),
           ((40, 2, 16, 32), (3, 1, 4, 32), None)]
# caches in chunks: a few entries, hash slots that collide, w0 0 and 1, large enough for a read
CACHES = [(10, 11, 0.75), (40, 521, 0.75), (25, 97, 0.0), (25, 1009, 1.0), (3.5, 7, 0.5)]


@pytest.fixture(scope="module")
def h5files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cc")
    out = {}
    for i, (shape, chunks, comp) in enumerate(LAYOUTS):
        p = d / f"l{i}.h5"
        make_h5(p, shape, chunks, comp)
        out[i] = p
    return out


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("pattern", ["xt", "xy", "xyt-blocks", "random"])
def test_simulated_chunk_reads_equal_hdf5s(h5files, layout, pattern):
    """20 (layout, read) pairs x 5 caches = 100 cases, each exactly as many chunk reads as HDF5 makes."""
    shape, chunks, comp = LAYOUTS[layout]
    reads = read_patterns(shape)[pattern]
    csize = int(np.prod(chunks)) * 4
    for k, slots, w0 in CACHES:
        spec = CacheSpec(int(csize * k), slots, w0)
        sim = simulate(shape, chunks, 4, reads, spec, filtered=comp is not None)
        got = measured_chunk_reads(h5files[layout], reads, spec)
        if comp is None and not sim.uncached:
            assert sim.decodes == 0
        if sim.uncached and comp is None:
            continue   # unfiltered chunks too large for the cache are read in pieces, not as chunks
        assert sim.misses == got, (shape, chunks, pattern, spec)
        assert sim.hits + sim.misses == sim.visits


def test_chunks_larger_than_the_cache_are_decoded_on_every_visit(h5files):
    shape, chunks, _ = LAYOUTS[2]
    reads = read_patterns(shape)["xy"]
    spec = CacheSpec(int(np.prod(chunks)) * 4 - 1, 521, 0.75)
    sim = simulate(shape, chunks, 4, reads, spec)
    assert sim.uncached == sim.misses == sim.visits
    assert measured_chunk_reads(h5files[2], reads, spec) == sim.misses


def test_the_netcdf_c_cache_netcdf4_python_reports_is_the_one_it_runs(tmp_path):
    """Issue 26's case with smaller maps: [1,1,16,256] chunks, xt reads, netCDF-C's own
    per-variable cache (64 MiB, 1,000 slots: colliding slots re-decode chunks every read, which an
    LRU of whole chunks never does). Counted with strace on the pread64 calls HDF5 makes."""
    assert shutil.which("strace"), "strace is needed (scripts/setup.sh installs it)"
    shape, chunks = (256, 4, 16, 256), (1, 1, 16, 256)
    p = tmp_path / "maps.nc"
    with netCDF4.Dataset(p, "w") as ds:
        for n, d in zip("tzyx", shape):
            ds.createDimension(n, d)
        v = ds.createVariable("v", "f4", tuple("tzyx"), zlib=True, complevel=1, chunksizes=chunks)
        v[:] = np.random.default_rng(0).random(shape, dtype="f4")
    prog = ("import sys, netCDF4\n"
            "with netCDF4.Dataset(sys.argv[1]) as ds:\n"
            "    v = ds['v']\n"
            "    print(*v.get_var_chunk_cache(), flush=True)\n"
            "    open('/dev/null', 'w').write('BEGIN')\n"
            "    for z in range(v.shape[1]):\n"
            "        for y in range(v.shape[2]):\n"
            "            v[:, z, y, :]\n")
    log = tmp_path / "strace.log"
    out = subprocess.run(["strace", "-f", "-e", "trace=pread64,write", "-o", str(log), sys.executable, "-c", prog,
                          str(p)], capture_output=True, text=True, check=True)
    nbytes, nslots, w0 = out.stdout.split()
    spec = CacheSpec(int(nbytes), int(nslots), float(w0))
    with h5py.File(p) as f:
        addr = chunk_addresses(f["v"])
    lines = log.read_text().splitlines()
    begin = next(i for i, line in enumerate(lines) if '"BEGIN"' in line)
    got = 0
    for line in lines[begin:]:
        m = re.search(r"pread64\(\d+, .*, (\d+), (\d+)\) = \d+$", line)
        if m and (int(m.group(2)), int(m.group(1))) in addr:
            got += 1
    reads = [((0, z, y, 0), (shape[0], 1, 1, shape[3])) for z in range(shape[1]) for y in range(shape[2])]
    sim = simulate(shape, chunks, 4, reads, spec)
    assert sim.collisions > 0 and sim.misses > int(np.prod(shape[:2]))   # re-decodes, not once per chunk
    assert sim.misses == got


def test_hash_is_hdf5s():
    # grid [256, 4, 1, 1]: bits [8, 2, 0, 0]; val = ((t << 2) ^ z) -> t=250, z=0 and t=0, z=0 share slot 0 of 1000
    c = ChunkCache((256, 4, 128, 256), (1, 1, 128, 256), 4, (64 << 20, 1000, 0.75))
    assert c.bits == [8, 2, 0, 0]
    assert c.hash((250, 0, 0, 0)) == c.hash((0, 0, 0, 0)) == 0
    assert c.hash((3, 1, 0, 0)) == 13


def test_a_hit_moves_the_entry_one_place_not_to_the_tail():
    c = ChunkCache((8,), (1,), 4, (4 * 4, 101, 0.0))
    for i in (0, 1, 2, 3):
        c.visit((i,), 0)           # nothing read: no entry is "fully read"
    c.visit((0,), 0)               # list 0 1 2 3 -> 1 0 2 3 (an LRU: 1 2 3 0)
    assert (c.head, c.next[c.head]) == ((1,), (0,))
    c.visit((4,), 0)               # both evict 1
    c.visit((5,), 0)               # HDF5 evicts 0, the head; an LRU would evict 2
    assert set(c.slot.values()) == {(2,), (3,), (4,), (5,)}


def test_with_w0_1_and_nothing_fully_read_the_cache_overflows_as_hdf5s_does():
    # the second pointer starts only after the first has walked every entry, and the walk ends
    # there: HDF5 then adds the chunk over the byte limit (the h5py cases above measure it)
    c = ChunkCache((8,), (1,), 4, (4 * 2, 101, 1.0))
    for i in (0, 1, 2):
        c.visit((i,), 0)
    assert c.nused == 3 and c.counts.evictions == 0


def test_fully_read_chunks_go_first_within_w0():
    c = ChunkCache((8,), (1,), 4, (4 * 3, 101, 0.75))
    c.visit((0,), 0)
    c.visit((1,), 4)               # chunk 1 fully read
    c.visit((2,), 0)
    c.visit((3,), 0)               # method 0 skips 0 (partly read) and evicts 1
    assert set(c.slot.values()) == {(0,), (2,), (3,)}


def test_bad_caches_and_reads_are_one_line_errors():
    with pytest.raises(InputError):
        CacheSpec(-1, 10, 0.5)
    with pytest.raises(InputError):
        CacheSpec(10, 10, 1.5)
    with pytest.raises(InputError):
        simulate((4, 4), (2, 2), 4, [((0, 3), (1, 2))], (100, 7, 0.75))


def test_h5netcdf_reads_with_an_empty_chunk_cache_every_time(tmp_path):
    """h5netcdf opens the HDF5 dataset anew for every read and lets it go, so HDF5 frees the chunk
    cache between reads: counted from h5netcdf itself (on a counting file object), map reads of
    chunks that span 4 time steps decode every chunk every time, as the model simulates for a stack
    in DATASET_PER_READ, and as the replay gives when it does not hold the dataset; h5py holding
    its dataset decodes each chunk once."""
    import h5netcdf
    import hdf5plugin  # noqa: F401
    from climio.bench.predict.counts import CountingFile
    from climio.data.writer import write_4d
    from climio.dataset.layout import Layout
    from climio.model.predict import DATASET_PER_READ
    from climio.model.predict import simulate as model_simulate
    from climio.model.profile import default_profile
    from climio.dataset.options import parse_compression
    path = str(tmp_path / "maps.nc")
    write_4d(path, [8, 2, 24, 32], chunks=[4, 2, 1, 32], dtype="f4", compression=parse_compression("zstd3"),
             random=True)
    reads = [((t, z, 0, 0), (1, 1, 24, 32)) for t in range(8) for z in range(2)]
    with h5py.File(path, "r") as f:
        addr = set()
        f["ta"].id.chunk_iter(lambda ci: addr.add((ci.byte_offset, ci.size)))
        nslots, nbytes, w0 = f["ta"].id.get_access_plist().get_chunk_cache()
    cf = CountingFile(path)
    with h5netcdf.File(cf, "r") as f:
        v = f.variables["ta"]
        cf.reads.clear()
        for s, c in reads:
            v[tuple(slice(a, a + b) for a, b in zip(s, c))]
    by_h5netcdf = sum(1 for r in cf.reads if r in addr)
    spec = {"nbytes": nbytes, "nslots": nslots, "w0": w0}
    assert by_h5netcdf == len(reads) * 24 == chunk_reads(path, "ta", [reads], spec, per_read=True)
    assert chunk_reads(path, "ta", [reads], spec) == 2 * 24          # held open: each chunk once
    lay = Layout((8, 2, 24, 32), 4, (4, 2, 1, 32), True, 8 * 2 * 24 * 32 * 4)
    prof = default_profile()
    assert "h5netcdf" in DATASET_PER_READ
    assert model_simulate(lay, reads, CacheSpec(nbytes, nslots, w0), prof, cache_per_read=True).decodes == by_h5netcdf
    assert model_simulate(lay, reads, CacheSpec(nbytes, nslots, w0), prof).decodes == 2 * 24
