"""climio rechunk to and from object storage (issue 25 item 5), through the real test server."""

import numpy as np
import pytest

from conftest import run_cli


def test_rechunk_netcdf_to_s3_zarr_and_back(s3_server, tmp_path, monkeypatch):
    """netCDF-4 -> s3://climio/rt/out.zarr -> netCDF-4: the values come back equal, the chunks are
    the ones asked for, an existing output is refused without --force."""
    import netCDF4
    from climio.data.writer import write_4d
    from climio.stores.objects import list_keys
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    src = tmp_path / "in.nc"
    write_4d(src, [6, 2, 16, 32], chunks=[1, 1, 16, 32], dtype="f4")
    url = "s3://climio/rt/out.zarr"
    out = run_cli("rechunk", src, url, "-c", "ta:6,1,4,8", "--tmp", tmp_path, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    keys = list_keys(s3_server.endpoint, url + "/")
    assert "rt/out.zarr/zarr.json" in keys and any(k.startswith("rt/out.zarr/ta/c/") for k in keys)
    again = run_cli("rechunk", src, url, "-c", "ta:6,1,4,8", timeout=60)
    assert again.returncode != 0 and "exists" in again.stderr and "Traceback" not in again.stderr
    back = tmp_path / "back.nc"
    out = run_cli("rechunk", url, back, "-c", "ta:1,1,16,32", "--tmp", tmp_path, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(back) as b:
        np.testing.assert_array_equal(a["ta"][:], b["ta"][:])
        assert b["ta"].chunking() == [1, 1, 16, 32]
    assert not list(tmp_path.glob("climio-rechunk-s3-*"))      # the staging directories are gone


def test_s3_store_not_openable_until_its_last_object(s3_server, tmp_path, monkeypatch):
    """The upload puts the root zarr.json last: before every object a reader opening the final
    name finds no Zarr group; after the last one, the complete store opens with every value."""
    import obstore
    import zarr
    from zarr.storage import ObjectStore
    from climio.data.writer import write_4d
    from climio.rechunk.remote import convert
    from climio.stores import objects
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    src = tmp_path / "in.nc"
    write_4d(src, [4, 1, 8, 16], chunks=[1, 1, 8, 16], dtype="f4")
    ep = s3_server.endpoint

    def openable():
        try:
            zarr.open_group(store=ObjectStore(ep.obstore("climio", "vis/out.zarr"), read_only=True), mode="r")
            return True
        except Exception:   # noqa: BLE001 -- any failure to open is "not visible"
            return False
    seen = []
    real_put = obstore.put

    def put(store, key, *a, **kw):
        seen.append((key, openable()))
        return real_put(store, key, *a, **kw)
    monkeypatch.setattr(objects, "UPLOAD_THREADS", 1)
    monkeypatch.setattr(obstore, "put", put)
    convert(str(src), "s3://climio/vis/out.zarr", chunks=["ta:4,1,4,4"], progress=False, say=lambda *_: None)
    assert len(seen) > 5 and not any(vis for _, vis in seen)
    assert seen[-1][0] == "vis/out.zarr/zarr.json"
    g = zarr.open_group(store=ObjectStore(ep.obstore("climio", "vis/out.zarr"), read_only=True), mode="r")
    assert g["ta"].shape == (4, 1, 8, 16) and g["ta"].chunks == (4, 1, 4, 4)
    from climio.base.errors import InputError
    with pytest.raises(InputError, match="exists"):
        convert(str(src), "s3://climio/vis/out.zarr", chunks=["ta:4,1,4,4"], progress=False, say=lambda *_: None)


def test_rechunk_endpoint_url_flag(s3_server, tmp_path, monkeypatch):
    """--endpoint-url, as the other S3 commands take it: without AWS_ENDPOINT_URL the output lands on
    the endpoint named; on two local paths it is one line."""
    from climio.data.writer import write_4d
    from climio.stores.objects import list_keys
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    src = tmp_path / "in.nc"
    write_4d(src, [4, 1, 8, 16], chunks=[1, 1, 8, 16], dtype="f4")
    url = "s3://climio/ep/out.zarr"
    out = run_cli("rechunk", src, url, "-c", "ta:4,1,4,8", "--endpoint-url", s3_server.endpoint.url, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ep/out.zarr/zarr.json" in list_keys(s3_server.endpoint, url + "/")
    bad = run_cli("rechunk", src, tmp_path / "o.nc", "-c", "ta:4,1,4,8", "--endpoint-url", s3_server.endpoint.url)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--endpoint-url" in bad.stderr
