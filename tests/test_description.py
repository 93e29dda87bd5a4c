"""The dataset seam (climio.dataset): the default variable skips CF auxiliaries; one description of
a variable (roles, layout, store) from a path, a URL or an open dataset."""

import numpy as np
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


# --- any rank: the description and the read shapes by roles -----------------------------------------

RANKS = {
    2: ("lat", "lon"),
    3: ("time", "lat", "lon"),
    4: ("time", "plev", "lat", "lon"),
    5: ("time", "realization", "plev", "lat", "lon"),
}


def _profile(tmp_path):
    from climio.model import profile as profmod
    p = tmp_path / "profile.json"
    p.write_text(profmod.default_profile("seam-test").to_json())
    return str(p)


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_description_and_reads_on_any_rank(tmp_path, rank):
    """A CMOR-like variable of rank 2 to 5: roles from CF metadata; named shapes read the dimensions
    of their roles whole, the others one index at a time (the ensemble member too); reads by names."""
    from climio.dataset.access import slice_starts
    from climio.dataset.description import describe
    from climio.dataset.reads import read_count_of
    dims = RANKS[rank]
    src = tmp_path / f"v{rank}.nc"
    chunks = [{"time": 1, "realization": 1, "plev": 1, "lat": 8, "lon": 16}[d] for d in dims]
    data = write_cmip(src, dims=dims, var="v", chunks=chunks, deflate=1)
    d = describe(src)
    assert (d.var, d.dims, d.shape, d.chunks, d.store) == ("v", dims, data.shape, tuple(chunks), "netcdf4")
    assert d.roles == tuple({"time": "t", "realization": None, "plev": "z", "lat": "y", "lon": "x"}[n] for n in dims)
    assert d.codecs == "deflate1+shuffle" and d.compressed and 0 < d.stored_bytes and d.fill_value == np.float32(1e20)
    size = dict(zip(dims, data.shape))
    xy = read_count_of("xy", d)
    assert xy == tuple(size[n] if n in ("lat", "lon") else 1 for n in dims)
    assert read_count_of("lat,lon", d) == xy                  # by dimension names
    # every hyperslab of the xy read tiles the variable once: maps of every time, member, level
    slabs = slice_starts(d.shape, xy)
    assert len(slabs) == data.size // (size["lat"] * size["lon"])
    if "time" in dims:
        assert read_count_of("t", d) == tuple(size[n] if n == "time" else 1 for n in dims)
        assert read_count_of("time", d) == read_count_of("t", d)
        assert read_count_of("box", d) == tuple({"time": 12, "lat": 2, "lon": 4}.get(n, 1) for n in dims)
    else:
        with pytest.raises(InputError, match=r"read shape 't' needs a time dimension: v\(lat \(latitude/y\), "
                                             r"lon \(longitude/x\)\) has none; shapes that fit: xy"):
            read_count_of("t", d)
    if "plev" in dims:
        assert read_count_of("z", d) == tuple(4 if n == "plev" else 1 for n in dims)
        assert read_count_of("yz", d) == tuple(size[n] if n in ("plev", "lat") else 1 for n in dims)
    elif rank == 3:
        with pytest.raises(InputError, match=r"needs a vertical dimension: .* shapes that fit: t, xy, xt, xyt, box"):
            read_count_of("z", d)


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_predict_on_any_rank_through_the_command(tmp_path, rank):
    """`climio predict` on each rank: one decode per map chunk for xy, the passes weigh the reads,
    the impossible shape is one line naming the dimensions."""
    import json
    from conftest import run_cli
    dims = RANKS[rank]
    src = tmp_path / f"v{rank}.nc"
    chunks = [{"time": 1, "realization": 1, "plev": 1, "lat": 8, "lon": 16}[d] for d in dims]
    data = write_cmip(src, dims=dims, var="v", chunks=chunks, deflate=1)
    prof = _profile(tmp_path)
    read = "t" if "time" in dims else "lon"
    r = run_cli("predict", src, "--read", "xy", "--passes", "3", "--read", read, "--passes", "1", "--json",
                "--profile", prof)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    xy, other = got["reads"]
    assert xy["passes"] == 3 and xy["prediction"]["counts"]["decodes"] == data.size // (8 * 16)
    assert xy["layout"]["shape"] == list(data.shape)
    if rank == 2:
        bad = run_cli("predict", src, "--read", "z", "--profile", prof)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1
        assert "v(lat (latitude/y), lon (longitude/x)) has none; shapes that fit: xy" in bad.stderr


def test_advise_3d_two_reads_and_passes(tmp_path):
    """The issue's CMOR tas(time, lat, lon) with two reads and passes: advice, not 'needs a 4-D'."""
    import climio
    src = tmp_path / "tas_day.nc"
    write_cmip(src, chunks=[1, 8, 16], deflate=4, lengths={"time": 48})
    prof = _profile(tmp_path)
    a = climio.advise(src, read=["xy", "t"], passes=[10, 2], profile=prof, warn=lambda line: None)
    b = climio.advise(src, read=["xy", "t"], passes=[1, 30], profile=prof, warn=lambda line: None)
    assert [(s.read, s.passes) for s, _, _, _ in a.prediction.items] == [("xy", 10), ("t", 2)]
    assert a.predicted_s != b.predicted_s
    # one kind of result: attributes and to_dict() on the prediction's items and the advice's best
    item = a.prediction.items[0]
    assert (item.read, item.passes, item.seconds) == ("xy", 10, item.prediction.seconds)
    assert item.to_dict()["passes"] == 10 and a.prediction.to_dict()["reads"][0] == item.to_dict()
    assert a.best is not None and a.best.rule == a.best["rule"] and a.best.to_dict()["gain_s"] == a.best.gain_s
    # the layout search weighs each pattern by its passes: 10 xy passes cost 10x one
    now_a, now_b = a.layout["current"]["per_pattern_s"], b.layout["current"]["per_pattern_s"]
    assert now_a["xy"] == pytest.approx(10 * now_b["xy"]) and now_b["t"] == pytest.approx(15 * now_a["t"])


def test_local_zarr_predict_and_chunk_cache_refused(tmp_path):
    """`climio predict local.zarr` (a v3 store) works; --chunk-cache on it is one line, exit 2."""
    import json

    import zarr
    from conftest import run_cli
    from climio.dataset.description import describe
    store = tmp_path / "tas.zarr"
    g = zarr.open_group(store, mode="w", zarr_format=3)
    a = g.create_array("tas", shape=(12, 8, 16), chunks=(1, 8, 16), dtype="f4", dimension_names=("time", "lat", "lon"))
    a[:] = np.arange(12 * 8 * 16, dtype="f4").reshape(12, 8, 16)
    for name, n, attrs in (("time", 12, {"units": "days since 1850-01-01"}), ("lat", 8, {"units": "degrees_north"}),
                           ("lon", 16, {"units": "degrees_east"})):
        c = g.create_array(name, shape=(n,), chunks=(n,), dtype="f8", dimension_names=(name,))
        c.attrs.update(attrs)
    d = describe(store)
    assert (d.var, d.store, d.roles, d.chunks) == ("tas", "zarr3", ("t", "y", "x"), (1, 8, 16))
    prof = _profile(tmp_path)
    r = run_cli("predict", store, "--read", "t", "--passes", "2", "--json", "--profile", prof)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["reads"][0]["prediction"]["counts"]["decodes"] >= 12 and "local Zarr" in got["notes"][0]
    bad = run_cli("predict", store, "--read", "t", "--chunk-cache", "64MiB", "--profile", prof)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "keeps no chunk cache" in bad.stderr
    # advise takes the store as data, not as a trace directory; no file stack is offered for Zarr
    adv = run_cli("advise", store, "--read", "t", "--passes", "2", "--json", "--profile", prof)
    assert adv.returncode == 0, adv.stderr
    recs = json.loads(adv.stdout)["recommendations"]
    assert recs and "stack" not in {r["rule"] for r in recs}
    # a what-if's command is a line that runs as shown: the same reads predicted and measured
    for r in recs:
        if r["rule"] == "tasks":
            line = r["command"].split("#")[0].split()
            assert line[:3] == ["climio", "predict", str(store)] and "--tasks" in line
            ran = run_cli(*line[1:], "--profile", prof)
            assert ran.returncode == 0 and "predicted" in ran.stdout, ran.stderr


def test_zarr_in_s3_any_rank_and_passes(s3_server, tmp_path, monkeypatch):
    """tas(time, lat, lon) as Zarr in the test server: described with its roles from the store's
    metadata; predict and advise weigh --passes (xy x30 + t x1 against xy x1 + t x30 differ), take
    --tasks and --json, and refuse --chunk-cache in one line."""
    import json

    import xarray as xr
    from conftest import run_cli
    from climio.dataset.description import describe
    from climio.model import object_store as om
    from climio.machine.platform import platform_id_here as platform_id_of
    from climio import profiles as on_disk
    from climio.stores.objects import upload
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    src = tmp_path / "tas.nc"
    write_cmip(src, chunks=[1, 8, 16], lengths={"time": 24})
    with xr.open_dataset(src) as ds:
        ds.to_zarr(tmp_path / "tas.zarr", zarr_format=3, encoding={"tas": {"chunks": (1, 8, 16)}})
    upload(s3_server.endpoint, tmp_path / "tas.zarr", "s3://climio/seam-test")
    url = "s3://climio/seam-test/tas.zarr"
    d = describe(url)
    assert (d.var, d.dims, d.roles, d.shape, d.chunks, d.store) == (
        "tas", ("time", "lat", "lon"), ("t", "y", "x"), (24, 8, 16), (1, 8, 16), "zarr-s3")
    on_disk.save_rates(platform_id_of(None), om.store_key(s3_server.endpoint.url),
                  om.StoreRates(s3_server.endpoint.url, 0.01, 100e6, 400e6,
                                {"zarr-obstore": om.StackObjectRates(0.01, 100e6, 8.0)}))

    def total(*args):
        r = run_cli("predict", url, *args, "--json", timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    a = total("--read", "xy", "--passes", "30", "--read", "t", "--passes", "1")
    b = total("--read", "xy", "--passes", "1", "--read", "t", "--passes", "30")
    assert [(r["read"], r["passes"]) for r in a["reads"]] == [("xy", 30), ("t", 1)]
    assert a["reads"][0]["gets"] == 30 * 24                        # one chunk per map, 30 passes
    assert b["reads"][1]["gets"] == 30 * 8 * 16 * 24               # every chunk for each point's series
    assert a["total_s"] != pytest.approx(b["total_s"])
    assert a["reads"][0]["time_s"] == pytest.approx(30 * b["reads"][0]["time_s"])
    four = total("--read", "xy", "--passes", "30", "--tasks", "4")
    assert four["tasks"] == 4 and four["reads"][0]["time_s"] < a["reads"][0]["time_s"]
    adv_a = run_cli("advise", url, "--read", "xy", "--passes", "30", "--read", "t", "--passes", "1", "--json")
    adv_b = run_cli("advise", url, "--read", "xy", "--passes", "1", "--read", "t", "--passes", "30", "--json")
    assert adv_a.returncode == 0 and adv_b.returncode == 0, adv_a.stderr + adv_b.stderr
    ra, rb = json.loads(adv_a.stdout), json.loads(adv_b.stdout)
    assert ra["prediction"]["total_s"] == pytest.approx(a["total_s"])
    assert [r["before_s"] for r in ra["recommendations"]] != [r["before_s"] for r in rb["recommendations"]]
    bad = run_cli("predict", url, "--read", "t", "--chunk-cache", "64MiB")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "keeps no chunk cache" in bad.stderr


def test_load_records_is_a_flat_frame(tmp_path):
    """climio.load_records: nested dicts (metrics.syscalls) are dotted columns, a histogram and a
    list one JSON string column each: every cell a scalar."""
    import json

    import climio
    rec = {"schema": 2, "study": "read-stack", "rep": 0, "status": "ok", "time": "2026-01-01T00:00:00Z", "platform_id": "p",
           "params": {"stack": "h5py", "chunks": [1, 8, 16]},
           "metrics": {"wall_s": 1.5, "syscalls": {"reads": 3, "sizes": {"4096": 2, "65536": 1},
                                                   "by_call": {"pread64": 3}}},
           "cache": {"state": "cold"}}
    (tmp_path / "records.jsonl").write_text(json.dumps(rec) + "\n")
    df = climio.load_records(tmp_path)
    assert df.loc[0, "metrics.syscalls.reads"] == 3 and df.loc[0, "metrics.syscalls.by_call.pread64"] == 3
    assert json.loads(df.loc[0, "metrics.syscalls.sizes"]) == {"4096": 2, "65536": 1}
    assert json.loads(df.loc[0, "params.chunks"]) == [1, 8, 16]
    assert all(not isinstance(v, (dict, list)) for v in df.iloc[0].tolist())
