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
    """Chunks are PUT straight under the final name and the metadata last: before every object a
    reader opening the final name finds no Zarr group; after the last one (the root zarr.json),
    the complete store opens with every value. Nothing of the store is staged locally."""
    import zarr
    from zarr.storage import ObjectStore
    from climio.data.writer import write_4d
    from climio.rechunking.remote import convert
    from climio.stores.chunks import ObjectChunks
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
    real_put = ObjectChunks.put

    def put(self, rel, data):
        seen.append((rel, openable()))
        return real_put(self, rel, data)
    monkeypatch.setattr(ObjectChunks, "put", put)
    convert(str(src), "s3://climio/vis/out.zarr", chunks=["ta:4,1,4,4"], workers=1, progress=False,
            say=lambda *_: None)
    assert len(seen) > 5 and not any(vis for _, vis in seen)
    assert any(k.startswith("ta/c/") for k, _ in seen[:4])          # chunks first, straight to the bucket
    assert seen[-1][0] == "zarr.json"
    g = zarr.open_group(store=ObjectStore(ep.obstore("climio", "vis/out.zarr"), read_only=True), mode="r")
    assert g["ta"].shape == (4, 1, 8, 16) and g["ta"].chunks == (4, 1, 4, 4)
    assert not any(k.startswith(".climio-rechunk") for k in ObjectChunks("s3://climio/vis/out.zarr", ep).listing())
    from climio.base.errors import InputError
    with pytest.raises(InputError, match="exists"):
        convert(str(src), "s3://climio/vis/out.zarr", chunks=["ta:4,1,4,4"], progress=False, say=lambda *_: None)


def test_s3_to_s3_streamed_leftovers_and_resume(s3_server, tmp_path, monkeypatch):
    """S3 -> S3 with no local copy of either store; an unfinished run's objects are removed by the
    next run without --resume (one line); a run that fails midway leaves nothing readable and
    --resume keeps the blocks its manifest records (size and MD5 checked: a damaged chunk's block
    is written again), and the result equals the input."""
    import xarray as xr
    from zarr.storage import ObjectStore
    from climio.base.errors import DataError
    from climio.data.writer import write_4d
    from climio.rechunking.remote import convert
    from climio.stores.chunks import ObjectChunks
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    ep = s3_server.endpoint
    src = tmp_path / "in.nc"
    write_4d(src, [8, 4, 32, 64], chunks=[1, 1, 32, 64], dtype="f4")   # 8 blocks of 8 chunks below
    quiet = dict(progress=False, say=lambda *_: None, workers=1)
    convert(str(src), "s3://climio/s2s/in.zarr", chunks=["ta:1,1,32,64"], **quiet)
    ref = xr.open_dataset(src)["ta"].values

    def values(name):
        return xr.open_zarr(ObjectStore(ep.obstore("climio", f"s2s/{name}"), read_only=True))["ta"].values
    out = ObjectChunks("s3://climio/s2s/out.zarr", ep)
    out.put("ta/c/9/9/9/9", b"left by a killed run")
    lines = []
    convert("s3://climio/s2s/in.zarr", "s3://climio/s2s/out.zarr", chunks=["ta:8,1,8,16"], max_mem="96KiB",
            progress=False, workers=1, say=lines.append)
    assert any("unfinished run" in line for line in lines), lines
    np.testing.assert_array_equal(values("out.zarr"), ref)
    assert "ta/c/9/9/9/9" not in out.listing()

    # a run that fails after 20 chunk objects (2 blocks done): one line, nothing readable, a manifest left
    real_put, n = ObjectChunks.put, []

    def failing(self, rel, data):
        if rel.startswith("ta/c/"):
            n.append(rel)
            if len(n) > 20:
                raise PermissionError("403 Forbidden (injected)")
        return real_put(self, rel, data)
    monkeypatch.setattr(ObjectChunks, "put", failing)
    with pytest.raises(DataError, match="nothing readable.*--resume"):
        convert("s3://climio/s2s/in.zarr", "s3://climio/s2s/res.zarr", chunks=["ta:8,1,8,16"], max_mem="96KiB",
                **quiet)
    monkeypatch.setattr(ObjectChunks, "put", real_put)
    res = ObjectChunks("s3://climio/s2s/res.zarr", ep)
    left = res.listing()
    assert "zarr.json" not in left and "ta/zarr.json" not in left
    done = [k for k in left if k.startswith(".climio-rechunk/done/")]
    assert done
    # damage one recorded chunk: its block must be written again
    import json
    first = json.loads(bytes(res.get(done[0])))[0][0]
    res.put(first, b"damaged")
    summary = convert("s3://climio/s2s/in.zarr", "s3://climio/s2s/res.zarr", chunks=["ta:8,1,8,16"],
                      max_mem="96KiB", resume=True, **quiet)
    assert 0 < summary["blocks_skipped"] < len(done) + 1 and summary["blocks_skipped"] == len(done) - 1
    np.testing.assert_array_equal(values("res.zarr"), ref)
    assert not any(k.startswith(".climio-rechunk") for k in res.listing())


def test_s3_sharded_output_and_shard_bound(s3_server, tmp_path, monkeypatch):
    """Sharded Zarr v3 output streamed to the bucket: a block holds whole shards, each one object
    (written through zarr-python in memory, then PUT); zarr reads it back equal. A shard larger
    than the per-worker --max-mem is refused in one line (the planner's) before anything is written."""
    import xarray as xr
    from zarr.storage import ObjectStore
    from climio.base.errors import InputError
    from climio.data.writer import write_4d
    from climio.rechunking.remote import convert
    from climio.stores.chunks import ObjectChunks
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    ep = s3_server.endpoint
    src = tmp_path / "in.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], dtype="f4")
    quiet = dict(progress=False, say=lambda *_: None, workers=1)
    convert(str(src), "s3://climio/sh/out.zarr", chunks=["ta:8,1,4,8"], shards=["ta:8,1,8,32"], **quiet)
    keys = [k for k in ObjectChunks("s3://climio/sh/out.zarr", ep).listing() if k.startswith("ta/c/")]
    assert len(keys) == 2 * 2   # shards [8,1,8,32]: 1 x 2 x 2 x 1
    got = xr.open_zarr(ObjectStore(ep.obstore("climio", "sh/out.zarr"), read_only=True))["ta"]
    np.testing.assert_array_equal(got.values, xr.open_dataset(src)["ta"].values)
    with pytest.raises(InputError, match="--max-mem 4KiB is too small: one target chunk .8,1,8,32."):
        convert(str(src), "s3://climio/sh/big.zarr", chunks=["ta:8,1,4,8"], shards=["ta:8,1,8,32"], max_mem="4KiB",
                **quiet)
    assert not ObjectChunks("s3://climio/sh/big.zarr", ep).listing()


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



def test_advised_rechunk_writes_back_to_the_bucket(s3_server, tmp_path, monkeypatch):
    """`climio advise s3://B/x.zarr` advises a copy written back beside the input, with the endpoint
    named: `climio rechunk s3://B/x.zarr s3://B/x-rechunked.zarr -c ... --endpoint-url URL`; that
    command, run as printed (no AWS_ENDPOINT_URL), writes the store there with the input's values."""
    import shlex

    import xarray as xr
    from zarr.storage import ObjectStore
    from climio.data.zarr_writer import write_zarr_4d
    from climio.machine.platform import platform_id_here
    from climio.model import object_store as om
    from climio import profiles
    from climio.stores.objects import upload
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    ep = s3_server.endpoint
    # rates as `climio calibrate --store` keeps them (20 ms round trips), so that advise has a model
    stack = om.StackObjectRates(0.02, 100e6, 8.0)
    profiles.save_rates(platform_id_here(None), om.store_key(ep.url),
                  om.StoreRates(ep.url, 0.02, 100e6, 1e9, {"zarr-obstore": stack, "zarr-fsspec": stack}))
    write_zarr_4d(tmp_path / "x.zarr", [16, 1, 32, 64], chunks=[1, 1, 8, 16], dtype="f4")
    upload(ep, tmp_path / "x.zarr", "s3://climio/adv")
    adv = run_cli("advise", "s3://climio/adv/x.zarr", "--read", "xt", timeout=120)
    assert adv.returncode == 0, adv.stderr[-3000:]
    cmds = [line[line.index("climio rechunk"):].strip().strip("`") for line in adv.stdout.splitlines()
            if "climio rechunk s3://" in line]
    assert cmds, adv.stdout
    cmd = next(c for c in cmds if "x-rechunked.zarr" in c)
    assert cmd.startswith("climio rechunk s3://climio/adv/x.zarr s3://climio/adv/x-rechunked.zarr -c ta:")
    assert cmd.endswith(f"--endpoint-url {ep.url}")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    out = run_cli(*shlex.split(cmd)[1:], timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    got = xr.open_zarr(ObjectStore(ep.obstore("climio", "adv/x-rechunked.zarr"), read_only=True), consolidated=False)["ta"]
    want = xr.open_zarr(tmp_path / "x.zarr", consolidated=False)["ta"]
    assert got.encoding["chunks"] != want.encoding["chunks"]
    np.testing.assert_array_equal(got.values, want.values)


def test_netcdf_object_in_s3_as_input(s3_server, tmp_path, monkeypatch):
    """s3://B/f.nc (netCDF-4, deflate + shuffle) rechunked to s3://B/o.zarr by 2 worker processes
    (each task carries its block's byte ranges): read through ranged GETs, the object never copied
    to local disk; the values equal the local file's. A missing object: one line."""
    import xarray as xr
    from zarr.storage import ObjectStore
    from climio.data.writer import write_4d
    from climio.stores.objects import upload
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    ep = s3_server.endpoint
    src = tmp_path / "f.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], dtype="f4", deflate=1, shuffle=True)
    upload(ep, src, "s3://climio/ncin")
    work = tmp_path / "work"
    work.mkdir()
    out = run_cli("rechunk", "s3://climio/ncin/f.nc", "s3://climio/ncin/o.zarr", "-c", "ta:8,1,4,8", "-j", "2",
                  "--tmp", work, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not [p for p in work.rglob("*") if p.is_file() and p.stat().st_size >= src.stat().st_size]   # no copy
    got = xr.open_zarr(ObjectStore(ep.obstore("climio", "ncin/o.zarr"), read_only=True), consolidated=False)
    assert got["ta"].encoding["chunks"] == (8, 1, 4, 8)
    xr.testing.assert_equal(got, xr.open_dataset(src))
    bad = run_cli("rechunk", "s3://climio/ncin/missing.nc", work / "m.zarr", "-c", "ta:8,1,4,8", timeout=60)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
    assert "missing.nc" in bad.stderr


def test_s3_input_absent_chunks_from_the_one_listing(s3_server, tmp_path, monkeypatch):
    """An s3:// Zarr input's chunk objects are counted from the command's one listing of the store
    (not one more LIST per array): a deleted chunk object is one warning line, --strict refuses the
    store, and the next command lists again (the object put back: no warning)."""
    from climio.base.errors import DataError
    from climio.data.writer import write_4d
    from climio.rechunking.remote import convert
    from climio.stores.chunks import ObjectChunks
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    src = tmp_path / "in.nc"
    write_4d(src, [4, 2, 8, 16], chunks=[1, 1, 8, 16], dtype="f4")
    url = "s3://climio/absent/in.zarr"
    convert(str(src), url, chunks="ta:1,1,8,16", workers=1, tmp_dir=tmp_path, force=True)
    objs = ObjectChunks(url, s3_server.endpoint)
    kept = bytes(objs.get("ta/c/2/1/0/0"))
    objs.delete(["ta/c/2/1/0/0"])
    lines = []
    convert(url, "s3://climio/absent/out.zarr", chunks="ta:4,1,8,16", workers=1, tmp_dir=tmp_path, dry_run=True,
            say=lines.append)
    assert [ln for ln in lines if "absent" in ln] == [
        f"warning: {url}: 1 chunks absent, read as the fill value (/ta 1 of 8, fill value nan)"], lines
    with pytest.raises(DataError, match="--strict refuses a store with absent chunks"):
        convert(url, "s3://climio/absent/out.zarr", chunks="ta:4,1,8,16", workers=1, tmp_dir=tmp_path,
                dry_run=True, strict=True)
    objs.put("ta/c/2/1/0/0", kept)
    lines.clear()
    convert(url, "s3://climio/absent/out.zarr", chunks="ta:4,1,8,16", workers=1, tmp_dir=tmp_path, dry_run=True,
            say=lines.append)
    assert not [ln for ln in lines if "absent" in ln], lines
