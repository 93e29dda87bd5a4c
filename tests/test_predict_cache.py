"""The read-time model runs the chunk cache each stack really has (issue 26, part 1).

climio.measure.stacks.chunk_cache_of reads the cache a stack opens a variable with from the library;
climio.predict / the model simulate HDF5's cache with it (model.chunk_cache). Checked here: what
chunk_cache_of says is what the library reports after the open (and what it was asked for), and
the decodes the model predicts through predict() and climio.predict() are the chunk reads HDF5
makes with that cache, counted on a file object as tests/test_chunk_cache.py counts them.
"""

import h5py
import netCDF4
import numpy as np
import pytest

import climio
from climio.dataset.layout import Layout
from climio.model import profile as profmod
from climio.model.predict import predict
from climio.dataset.description import layout_of
from climio.model.workflow import reads_for
from climio.measure.stacks import chunk_cache_of

SHAPE, CHUNKS = (256, 4, 8, 64), (1, 1, 8, 64)     # 1,024 chunks of 2 KiB: more chunks than netCDF-C's 1,000 slots


@pytest.fixture(scope="module")
def maps(tmp_path_factory):
    p = tmp_path_factory.mktemp("pc") / "maps.nc"
    with netCDF4.Dataset(p, "w") as ds:
        for n, d in zip("tzyx", SHAPE):
            ds.createDimension(n, d)
        v = ds.createVariable("v", "f4", tuple("tzyx"), zlib=True, complevel=1, chunksizes=CHUNKS)
        v[:] = np.random.default_rng(0).random(SHAPE, dtype="f4")
    return p


def chunk_reads_h5py(path, reads, spec) -> int:
    """Chunks HDF5 reads from storage for `reads` through h5py with the cache `spec` (a dict)."""
    from climio.bench.predict.counts import chunk_reads
    return chunk_reads(path, "v", [reads], spec)


def test_chunk_cache_of_is_what_each_library_reports(maps):
    with netCDF4.Dataset(maps) as ds:
        nc = ds["v"].get_var_chunk_cache()
    with h5py.File(maps) as f:
        h5 = f["v"].id.get_access_plist().get_chunk_cache()
    want_nc = {"nbytes": nc[0], "nslots": nc[1], "w0": pytest.approx(nc[2])}
    want_h5 = {"nbytes": h5[1], "nslots": h5[0], "w0": pytest.approx(h5[2])}
    assert chunk_cache_of("netcdf4-python", maps, "v") == want_nc
    assert chunk_cache_of("xarray", maps, "v") == want_nc           # xarray's netcdf4 engine
    assert chunk_cache_of("h5py", maps, "v") == want_h5
    assert chunk_cache_of("h5netcdf", maps, "v") == want_h5         # h5netcdf over h5py
    asked = (3 << 20, 1009, 0.5)
    for stack in ("netcdf4-python", "xarray", "h5py", "h5netcdf"):
        assert chunk_cache_of(stack, maps, "v", asked) == {"nbytes": 3 << 20, "nslots": 1009, "w0": 0.5}, stack
    # xarray's cache is set as netCDF-C's default for the open: the default is given back afterwards
    before = netCDF4.get_chunk_cache()
    chunk_cache_of("xarray", maps, "v", asked)
    assert netCDF4.get_chunk_cache() == before
    # and by the xarray reader itself: a sized open (a validation run's sized configuration) does not
    # size the files this process opens later (it did: the next default configuration was predicted
    # with the 1 MiB cache of the sized one while its reads ran with netCDF-C's own default)
    from climio.measure.stacks import STACKS
    r = STACKS["xarray"]()
    r.open(str(maps), "v", (1 << 20, 521, 0.75))
    try:
        assert r.chunk_cache_info()["size"] == 1 << 20
    finally:
        r.close()
    assert netCDF4.get_chunk_cache() == before
    assert chunk_cache_of("xarray", maps, "v") == want_nc


def test_c_netcdf_cache_comes_from_the_probe_record(maps):
    cc = chunk_cache_of("c-netcdf", maps, "v")
    assert cc["nbytes"] > 0 and cc["nslots"] > 0 and 0 <= cc["w0"] <= 1
    assert chunk_cache_of("c-netcdf", maps, "v", (2 << 20, 4133, 0.75))["nbytes"] == 2 << 20


@pytest.mark.parametrize("read", ["xt", "xy", "2,2,5,40"])
@pytest.mark.parametrize("which", ["netcdf4-python", "h5py", "small"])
def test_predicted_decodes_are_the_chunk_reads_hdf5_makes(maps, read, which):
    """The model's decodes through predict() with each stack's real cache (netCDF-C's 1,000 slots
    collide on 1,024 chunks: an xt read re-decodes chunks) equal HDF5's own chunk reads."""
    lay, codec, var = layout_of(maps, "v")
    spec = (chunk_cache_of(which, maps, "v") if which != "small"
            else {"nbytes": 40 * 2048, "nslots": 37, "w0": 0.75})
    reads = reads_for(lay, read, var)
    p = predict(lay, reads, "h5py", profmod.default_profile(), codec=codec, chunk_cache=spec)
    assert p.counts.decodes == chunk_reads_h5py(maps, reads, spec)
    assert p.chunk_cache["nslots"] == spec["nslots"]
    if which == "netcdf4-python" and read == "xt" and spec["nslots"] < 1024:
        assert p.counts.chunk_cache_collisions > 0 and p.counts.decodes > 1024


def test_climio_predict_uses_the_variables_cache_not_the_profiles(maps):
    prof = profmod.default_profile()     # 16 MiB and HDF5's 521 slots for netcdf4-python
    real = chunk_cache_of("netcdf4-python", maps, "v")
    wp = climio.predict(str(maps), var="v", read="xt", profile=prof)
    p = wp.items[0][3]
    assert {k: p.chunk_cache[k] for k in ("nbytes", "nslots", "w0")} == real
    reads = reads_for(Layout(SHAPE, 4, CHUNKS, True), "xt")
    assert p.counts.decodes == chunk_reads_h5py(maps, reads, real)
    # without a file (an override of the layout's cache) the profile's is used and said so
    q = predict(wp.items[0][1], reads, "netcdf4-python", prof, codec="deflate1")
    assert q.chunk_cache["nbytes"] == prof.stack("netcdf4-python").chunk_cache_bytes
    assert "profile" in q.chunk_cache["source"]


def test_old_profiles_load_and_new_ones_keep_the_slots(tmp_path):
    d = profmod.default_profile("x").to_dict()
    for s in d["stacks"].values():
        s.pop("chunk_cache_nslots", None)
        s.pop("chunk_cache_w0", None)
    old = profmod.Profile.from_dict(d)
    assert old.stack("h5py").chunk_cache_nslots == 0
    rates = profmod.StackRates(chunk_cache_bytes=1 << 20, chunk_cache_nslots=1000, chunk_cache_w0=0.5)
    again = profmod.StackRates.from_dict(profmod.asdict(rates))
    assert (again.chunk_cache_nslots, again.chunk_cache_w0) == (1000, 0.5)
