"""How an STSA task reads (climio.stsa.readplan): the geometry is exact, and on real files the
``runs`` plan reads the same values as the thesis's ``latitude`` plan while sizing the chunk cache
to the chunks the task touches."""

import numpy as np
import pytest
import xarray as xr

from climio.data import write_4d
from climio.base.errors import InputError
from climio.stsa import direct, readplan, tasks, workflow

DIMS = ("time", "lev", "lat", "lon")


def test_row_runs():
    assert readplan.row_runs([0, 1, 62, 63]) == [(0, 2), (62, 64)]
    assert readplan.row_runs([7]) == [(7, 8)]
    assert readplan.row_runs([3, 4, 5, 9, 11, 12]) == [(3, 6), (9, 10), (11, 13)]
    assert readplan.row_runs([5, 3, 4]) == [(3, 6)]
    with pytest.raises(ValueError):
        readplan.row_runs([1, 1])


def test_chunks_touched_and_cache_size():
    shape, chunks = (2920, 1, 64, 144), (1460, 1, 32, 72)
    runs = [(0, 2), (62, 64)]
    kept = {"time", "lat", "lon"}
    # 2 time chunks x 2 lat chunks (each run inside one) x 2 lon chunks; the level axis is selected away
    assert readplan.chunks_touched(runs, DIMS, shape, chunks, "lat", kept) == 8
    # a run that starts inside a chunk may span one more; never more chunks than the axis holds
    assert readplan.chunks_touched([(30, 34)], DIMS, shape, chunks, "lat", kept) == 2 * 2 * 2
    assert readplan.chunks_touched([(0, 64)], DIMS, (2920, 1, 64, 144), (2920, 1, 1, 144), "lat", kept) == 64
    # levels stacked as pseudo-time: the level axis counts
    assert readplan.chunks_touched(runs, DIMS, (240, 10, 64, 1024), (240, 1, 1, 1024), "lat", kept | {"lev"}) == 10 * 4
    size, slots = readplan.chunk_cache_bytes(runs, DIMS, shape, chunks, 8, "lat", kept)
    assert size == 8 * 1460 * 32 * 72 * 8 and slots >= readplan.CHUNK_CACHE_SLOTS_MIN and slots % 2 == 1
    assert readplan.chunk_cache_bytes(runs, DIMS, shape, chunks, 8, "lat", kept, cap=1 << 20)[0] == 1 << 20
    assert readplan.chunk_cache_bytes(runs, DIMS, shape, None, 8, "lat", kept) is None


@pytest.mark.parametrize("chunks", ["contiguous", [40, 1, 4, 16], [40, 1, 1, 32]])
@pytest.mark.parametrize("method,nz", [("wk", 1), ("hayashi", 3)])
def test_runs_plan_reads_what_the_latitude_plan_reads(tmp_path, chunks, method, nz):
    path = tmp_path / "u.nc"
    write_4d(str(path), [80, nz, 12, 32], chunks=chunks, seed=3, var="u")
    with xr.open_dataset(path, engine="netcdf4") as ds:     # separately: .values caches in memory
        truth = np.asarray(workflow.prepare_input(ds["u"], method, lat_band=None, spd=4, ndaywin=10,
                                                       ndayskip=-5).da.values, dtype=np.float64)
    with xr.open_dataset(path, engine="netcdf4") as ds:
        inp = workflow.prepare_input(ds["u"], method, lat_band=None, spd=4, ndaywin=10, ndayskip=-5)
        for plan in readplan.READ_PLANS:
            specs = workflow._specs(inp, 4, False, 10, -5, None, 0.1, plan)
            for s in specs:
                parts = workflow.task_parts(inp.da, s)
                assert len(parts) == (1 if plan == "latitude" else len(readplan.row_runs(s.rows)))
                var, lock = tasks._netcdf4_variable(parts[0])
                assert var is not None and var.name == "u" and lock is not None
                got = workflow.run_task(parts, s)
                block = workflow.read_block(workflow.task_parts(inp.da, s), s)
                if nz > 1:     # levels stacked as pseudo-time, level-major
                    want = np.concatenate([truth[:, iz][:, list(s.rows), :] for iz in range(nz)], axis=0)
                else:
                    want = truth[:, list(s.rows), :]
                np.testing.assert_array_equal(block, want)
                assert got["read_plan"] == plan
                # a contiguous netCDF-4 variable read in runs goes through h5py
                fast = plan == "runs" and chunks == "contiguous"
                assert got["reader"].startswith("h5py") if fast else got["reader"] == direct.READER_XARRAY
                if chunks == "contiguous":
                    assert got["chunk_cache"] is None and got["chunk_cache_bytes"] is None
                else:
                    # the whole cache the task read with, as the library reports it
                    size, slots, w0 = var.get_var_chunk_cache()
                    assert got["chunk_cache"] == {"nbytes": size, "nslots": slots, "w0": w0,
                                                  "source": got["chunk_cache"]["source"]}
                    assert got["chunk_cache_bytes"] == size
                if plan == "runs" and chunks != "contiguous":
                    kept = {"time", "lat", "lon"} | ({"lev"} if nz > 1 else set())
                    need = readplan.chunk_cache_bytes(readplan.row_runs(s.rows), DIMS, (80, nz, 12, 32), chunks, 8,
                                                      "lat", kept)[0]
                    # the cache holds what the task touches (or the library's larger default)
                    assert got["chunk_cache_bytes"] >= need


def test_runs_plan_spectra_equal_latitude_plan(tmp_path):
    path = tmp_path / "u.nc"
    write_4d(str(path), [160, 1, 8, 16], chunks=[40, 1, 2, 8], seed=5, var="u")
    with xr.open_dataset(path, engine="netcdf4") as ds:
        inp = workflow.prepare_input(ds["u"], "wk", lat_band=None, spd=4, ndaywin=10, ndayskip=-5)
        a = workflow.analyse(inp, 10, -5, n_tasks=3, read_plan="runs").spectra
        b = workflow.analyse(inp, 10, -5, n_tasks=3, read_plan="latitude").spectra
    for name in ("sym_raw", "asym_raw", "background", "sym_ratio"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.params["read_plan"] == "runs"


def test_unknown_read_plan_is_an_input_error(tmp_path):
    path = tmp_path / "u.nc"
    write_4d(str(path), [80, 1, 4, 16], chunks="contiguous", seed=1, var="u")
    with xr.open_dataset(path, engine="netcdf4") as ds:
        inp = workflow.prepare_input(ds["u"], "hayashi", lat_band=None, spd=4)
        with pytest.raises(InputError, match="read plan"):
            workflow.analyse(inp, read_plan="sideways")


def _direct_reads(inp, n_tasks=3):
    specs = workflow._specs(inp, n_tasks, False, 10, -5, None, 0.1)
    return [workflow.run_task(workflow.task_parts(inp.da, s), s)["reader"] for s in specs], specs


@pytest.mark.parametrize("case", ["float32", "band", "south-first", "fill", "decoded-mask"])
def test_direct_reader_equals_xarray_or_steps_aside(tmp_path, case):
    """The h5py reader serves only what it can prove equal to xarray's values: float32 converted to
    float64, a latitude band (an index run), and a north-to-south file reversed by prepare_input (a
    negative step: xarray reads it); a variable xarray decodes (mask) is read by xarray."""
    import netCDF4
    path = tmp_path / "u.nc"
    nt, ny, nx = 80, 10, 16
    lat = np.linspace(-45, 45, ny) if case != "south-first" else np.linspace(45, -45, ny)
    vals = np.random.default_rng(4).standard_normal((nt, ny, nx)).astype(np.float32 if case == "float32" else np.float64)
    with netCDF4.Dataset(path, "w") as nc:
        for d, n in (("time", nt), ("lat", ny), ("lon", nx)):
            nc.createDimension(d, n)
        nc.createVariable("time", "f8", ("time",))[:] = np.arange(nt) / 4.0
        nc["time"].units = "days since 2000-01-01"
        nc.createVariable("lat", "f8", ("lat",))[:] = lat
        nc["lat"].units = "degrees_north"
        nc.createVariable("lon", "f8", ("lon",))[:] = np.arange(nx) * 360.0 / nx
        nc["lon"].units = "degrees_east"
        kw = {"fill_value": -999.0} if case in ("fill", "decoded-mask") else {}
        v = nc.createVariable("u", vals.dtype, ("time", "lat", "lon"), contiguous=True, **kw)
        v[:] = vals
        if case == "decoded-mask":
            v.missing_value = -999.0
    band = (-30, 30) if case == "band" else None
    with xr.open_dataset(path, engine="netcdf4") as ds:
        truth = np.asarray(workflow.prepare_input(ds["u"], "wk", lat_band=band, ndaywin=10, ndayskip=-5).da.values,
                           dtype=np.float64)
    with xr.open_dataset(path, engine="netcdf4") as ds:
        inp = workflow.prepare_input(ds["u"], "wk", lat_band=band, ndaywin=10, ndayskip=-5)
        readers, specs = _direct_reads(inp)
        for s in specs:
            np.testing.assert_array_equal(workflow.read_block(workflow.task_parts(inp.da, s), s),
                                          truth[:, list(s.rows), :])
    if case in ("south-first", "fill", "decoded-mask"):
        assert set(readers) == {direct.READER_XARRAY}
    else:
        assert all(r.startswith("h5py") for r in readers)


@pytest.mark.parametrize("state", ["cold", "warm"])
def test_direct_reader_sieve_follows_the_page_cache(tmp_path, state):
    """From storage the h5py reader sweeps with a 4 MiB sieve, from the page cache it reads piece by
    piece; the values are the same either way, and the same as xarray's."""
    from climio.machine import cache
    path = tmp_path / "u.nc"
    write_4d(str(path), [400, 1, 16, 64], chunks="contiguous", seed=9, var="u")
    with xr.open_dataset(path, engine="netcdf4") as ds:
        truth = np.asarray(workflow.prepare_input(ds["u"], "wk", lat_band=None, spd=4, ndaywin=10,
                                                       ndayskip=-5).da.values, dtype=np.float64)
    with xr.open_dataset(path, engine="netcdf4") as ds:
        inp = workflow.prepare_input(ds["u"], "wk", lat_band=None, spd=4, ndaywin=10, ndayskip=-5)
        specs = workflow._specs(inp, 4, False, 10, -5, None, 0.1)
        assert cache.prepare([str(path)], state)["state"] == state
        info = {}
        block = workflow.read_block(workflow.task_parts(inp.da, specs[0]), specs[0], info)
    np.testing.assert_array_equal(block, truth[:, list(specs[0].rows), :])
    want = "h5py, 4 MiB sieve (storage)" if state == "cold" else "h5py, no sieve (cached)"
    assert info["reader"] == want


def test_resident_fraction_of_a_byte_range(tmp_path):
    from climio.machine import cache
    path = tmp_path / "f.bin"
    path.write_bytes(np.arange(1 << 18, dtype=np.int64).tobytes())      # 2 MiB
    cache.evict(str(path))
    with open(path, "rb") as f:                                          # the second MiB only
        f.seek(1 << 20)
        f.read(1 << 20)
    assert cache.resident_fraction(str(path), 1 << 20, 1 << 20) == 1.0
    assert cache.resident_fraction(str(path), 0, 1 << 19) <= cache.COLD_THRESHOLD
    assert 0.4 <= cache.resident_fraction(str(path)) <= 0.6
    assert cache.resident_fraction(str(path), 1 << 22, 10) == 0.0       # past the end: nothing
