"""The dataset seam (climio.dataset): the default variable skips CF auxiliaries; one description of
a variable (roles, layout, store) from a path, a URL or an open dataset."""

import pytest
from cmip_files import write_cmip

from climio.base.errors import InputError
from climio.dataset.cf import auxiliary_names, data_variable, roles_of


def test_default_variable_skips_bounds_coordinates_and_auxiliaries(tmp_path):
    import netCDF4
    src = tmp_path / "tas_day.nc"
    write_cmip(src)
    with netCDF4.Dataset(src) as ds:
        variables = {k: (v.dimensions, {a: v.getncattr(a) for a in v.ncattrs()}) for k, v in ds.variables.items()}
    assert sorted(variables) == ["height", "lat", "lat_bnds", "lon", "lon_bnds", "tas", "time", "time_bnds"]
    assert auxiliary_names(variables) == {"height", "lat", "lat_bnds", "lon", "lon_bnds", "time", "time_bnds"}
    assert data_variable(variables, str(src)) == "tas"
    # two data variables: the message names both, not the bounds
    variables["pr"] = (("time", "lat", "lon"), {})
    with pytest.raises(InputError, match=r"has tas, pr$"):
        data_variable(variables, str(src))
    # cell_measures / ancillary_variables / grid_mapping name auxiliaries too
    aux = {"areacella": (("lat", "lon"), {}), "crs": ((), {}), "tas_flag": (("time", "lat", "lon"), {}),
           "tas": (("time", "lat", "lon"), {"cell_measures": "area: areacella", "grid_mapping": "crs",
                                            "ancillary_variables": "tas_flag"})}
    assert data_variable(aux, "x") == "tas"


def test_default_variable_through_predict(tmp_path):
    """`climio predict FILE --read xy` on a CMOR file with bounds picks tas (it said 'say which')."""
    from conftest import run_cli
    src = tmp_path / "tas_day.nc"
    write_cmip(src, dims=("time", "plev", "lat", "lon"), var="ta")
    r = run_cli("predict", src, "--read", "xy", "--json")
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads(r.stdout)["reads"][0]["layout"]["shape"] == [12, 4, 8, 16]


def test_roles_from_cf_metadata_and_the_fallback():
    coords = {"time": {"units": "days since 1850-01-01"}, "lat": {"units": "degrees_north"},
              "lon": {"standard_name": "longitude"}, "plev": {"units": "hPa"}, "member": {"units": "1"}}
    assert roles_of(("time", "member", "plev", "lat", "lon"), coords) == ("t", None, "z", "y", "x")
    # nothing labelled: last two y, x; the first t; the vertical before y
    assert roles_of(("d0", "d1", "d2", "d3")) == ("t", "z", "y", "x")
    assert roles_of(("d0", "d1", "d2")) == ("t", "y", "x")
    assert roles_of(("a", "b")) == ("y", "x")
    # evidence wins over the fallback: a labelled time last is not also x
    assert roles_of(("lat", "lon", "when"), {"when": {"axis": "T"}}) == ("y", "x", "t")
