"""rechunk keeps attribute order exactly, _FillValue included (issue 17, items 1, 2).

NEMO ocean output (the iris sample data) writes `tos:_FillValue` after `units`; netCDF4-python can
only give a fill value to createVariable, which puts it first. The source files here are built with
netCDF4-python and nc_put_att (meta.put_fill_value) or, independently, with ncgen from CDL, and
their order is checked with netCDF4 before anything is converted."""

import subprocess

import h5py
import netCDF4
import numpy as np
import pytest

from climio.base.errors import DataError
from climio.rechunking import command, meta
from climio.rechunking.verify import compare

from conftest import run_cli


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

T, Y, X = 6, 30, 40

TOS_ORDER = ["standard_name", "long_name", "units", "_FillValue", "missing_value", "online_operation"]
SOS_ORDER = ["long_name", "_FillValue", "scale_factor", "add_offset"]
TIME_ORDER = ["axis", "standard_name", "units", "_FillValue", "calendar"]


def _put(var, name, value):
    if name == "_FillValue":
        meta.put_fill_value(var, var, value)
    else:
        var.setncattr(name, value)


def make_nemo_like(path, fill_first=False):
    """`tos` (deflate, [1,Y,X] chunks), `/ocean/sos` (big-endian short, packed) and the coordinate
    `time_counter`, each with _FillValue in the middle of its attributes (or first: `fill_first`)."""
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time_counter", None)
        ds.createDimension("y", Y)
        ds.createDimension("x", X)
        ds.setncatts({"Conventions": "CF-1.6", "name": "nemo-like"})
        specs = [
            ("time_counter", "f8", ("time_counter",), {}, TIME_ORDER,
             {"axis": "T", "standard_name": "time", "units": "seconds since 1950-01-01", "_FillValue": -1.0,
              "calendar": "gregorian"}),
            ("tos", "f4", ("time_counter", "y", "x"), dict(compression="zlib", complevel=1, chunksizes=(1, Y, X)),
             TOS_ORDER,
             {"standard_name": "sea_surface_temperature", "long_name": "sea surface temperature",
              "units": "degC", "_FillValue": np.float32(1e20), "missing_value": np.float32(1e20),
              "online_operation": "average"}),
        ]
        vs = {}
        for name, dt, dims, kw, order, attrs in specs:
            if fill_first:
                v = ds.createVariable(name, dt, dims, fill_value=attrs["_FillValue"], **kw)
            else:
                v = ds.createVariable(name, dt, dims, **kw)
            for a in order:
                if not (fill_first and a == "_FillValue"):
                    _put(v, a, np.asarray(attrs[a], dt).item() if a == "_FillValue" else attrs[a])
            vs[name] = v
        g = ds.createGroup("ocean")
        attrs = {"long_name": "sea surface salinity", "_FillValue": np.int16(-32767),
                 "scale_factor": np.float32(0.001), "add_offset": np.float32(30)}
        kw = dict(endian="big", chunksizes=(2, Y, X))
        sos = g.createVariable("sos", ">i2", ("time_counter", "y", "x"),
                               **(dict(fill_value=attrs["_FillValue"]) if fill_first else {}), **kw)
        for a in SOS_ORDER:
            if not (fill_first and a == "_FillValue"):
                _put(sos, a, attrs[a])
        for v in (vs["time_counter"], vs["tos"], sos):
            v.set_auto_maskandscale(False)
        vs["time_counter"][:] = np.arange(T) * 86400.0
        tos = (15 + 10 * rng.random((T, Y, X))).astype("f4")
        tos[:, :3, :] = 1e20                       # land
        vs["tos"][:] = tos
        sos[: T - 2] = rng.integers(-5000, 5000, (T - 2, Y, X)).astype("i2")   # the last 2 records unwritten
    return path


def orders(path):
    """{variable or group path: attribute names in order} of a whole file."""
    out = {}
    with netCDF4.Dataset(path) as ds:
        for g in meta.walk(ds):
            out[g.path] = list(g.ncattrs())
            for v in g.variables.values():
                out[meta.var_path(v)] = list(v.ncattrs())
    return out


@pytest.fixture(scope="module")
def nemo(tmp_path_factory):
    path = make_nemo_like(tmp_path_factory.mktemp("nemo") / "nemo.nc")
    got = orders(path)
    # the source really has _FillValue in the middle (netCDF4 reads it so)
    assert got["/tos"] == TOS_ORDER and got["/ocean/sos"] == SOS_ORDER and got["/time_counter"] == TIME_ORDER
    with h5py.File(path) as f:
        assert f["tos"].fillvalue == np.float32(1e20) and f["ocean/sos"].fillvalue == -32767
    return path


@pytest.mark.parametrize("args", [
    ["--for", "t", "--verify"],                                   # tos and sos converted, time copied
    ["--var", "tos", "-c", "time_counter/3,y/10", "--verify"],    # sos copied too
    ["--compression", "deflate4+shuffle", "--verify", "--workers", "2"],
])
def test_attribute_order_kept_converted_and_copied(nemo, tmp_path, args):
    out = tmp_path / "o.nc"
    res = run_cli("rechunk", nemo, out, *args)
    assert res.returncode == 0, res.stderr
    assert orders(out) == orders(nemo)
    assert compare(nemo, out) == []
    # the fill value is HDF5's too: the two unwritten records of sos read as it
    with h5py.File(out) as f:
        assert f["tos"].fillvalue == np.float32(1e20) and f["ocean/sos"].fillvalue == -32767
        assert f["time_counter"].fillvalue == -1.0
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_maskandscale(False)
        assert (ds["ocean/sos"][T - 2:] == -32767).all()
    text = subprocess.run(["ncdump", "-h", str(out)], capture_output=True, text=True, check=True).stdout
    block = text.split("float tos(", 1)[1].split(";\n", 1)[1]
    names = [line.split(":", 1)[1].split(" =")[0] for line in block.splitlines()[:len(TOS_ORDER)]]
    assert names == TOS_ORDER, text


CDL = """netcdf cdl {
dimensions:
    t = UNLIMITED ;
    x = 50 ;
variables:
    double t(t) ;
        t:units = "days since 2000-01-01" ;
        t:axis = "T" ;
    float tos(t, x) ;
        tos:units = "degC" ;
        tos:_FillValue = -999.f ;
        tos:long_name = "sst" ;
        tos:_Storage = "chunked" ;
        tos:_ChunkSizes = 1, 50 ;
    int n(x) ;
        n:a = 1 ;
        n:b = 2 ;
        n:_FillValue = -1 ;
        n:c = 3 ;
data:
 t = 0, 1, 2, 3 ;
 n = _ ;

group: inner {
  variables:
    short s(x) ;
        s:long_name = "inner" ;
        s:_FillValue = 7s ;
        s:valid_min = 0s ;
  }
}
"""


def test_order_of_a_file_written_by_netcdf_c(tmp_path):
    """A file netCDF-C's own ncgen wrote (no climio code involved in the source)."""
    cdl = tmp_path / "s.cdl"
    cdl.write_text(CDL)
    src = tmp_path / "s.nc"
    subprocess.run(["ncgen", "-4", "-o", str(src), str(cdl)], check=True)
    want = orders(src)
    assert want["/tos"] == ["units", "_FillValue", "long_name"] and want["/n"] == ["a", "b", "_FillValue", "c"]
    assert want["/inner/s"] == ["long_name", "_FillValue", "valid_min"]
    out = tmp_path / "o.nc"
    res = run_cli("rechunk", src, out, "-c", "t/4,x/25", "--verify")
    assert res.returncode == 0, res.stderr
    assert orders(out) == want


def test_verify_reports_a_moved_fill_value(nemo, tmp_path):
    """The same file with _FillValue first differs: verify names the order."""
    other = make_nemo_like(tmp_path / "first.nc", fill_first=True)
    assert orders(other)["/tos"] == ["_FillValue"] + [n for n in TOS_ORDER if n != "_FillValue"]
    diffs = compare(nemo, other)
    assert any(d.startswith("/tos: attribute order") for d in diffs), diffs
    assert any(d.startswith("/ocean/sos: attribute order") for d in diffs), diffs
    assert compare(nemo, nemo) == [] and compare(other, other) == []


def test_rechunk_verify_fails_when_the_order_is_lost(nemo, tmp_path, monkeypatch):
    """If the output put _FillValue first (the old behaviour), --verify refuses it: one DataError
    (exit 3), and nothing under the output name."""
    monkeypatch.setattr(meta, "can_place_fill", lambda var: False)
    out = tmp_path / "o.nc"
    with pytest.raises(DataError) as err:
        command.rechunk(nemo, out, command.Options(for_axes="t", verify=True, workers=1), say=lambda s: None)
    assert "verification failed" in str(err.value) and "attribute order" in str(err.value)
    assert "\n" not in str(err.value) and err.value.exit_code == 3
    assert list(tmp_path.iterdir()) == []
