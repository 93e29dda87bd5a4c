"""A Zarr output defined without Dask (formats.zarr._define_like_xarray: xarray writes the
re-laid-out variables cut to zero length into memory, their metadata goes into the store at full
shape) is the store xarray's to_zarr(compute=False) of lazy Dask arrays defined before: every file,
metadata and the values of the variables not re-laid out, equal byte for byte. Files with
bounds, packed and big-endian values, fill values, groups, netCDF-3, a Zarr input; Zarr v3, v2,
v3 sharded."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from climio.rechunking import command
from climio.rechunking.formats import xarray_io
from climio.rechunking.formats import zarr as zformat
from climio.runs.staging import make_marked_dir

pytestmark = pytest.mark.usefixtures("builtin_rates")


def _define_with_dask(in_path, in_format, tmp, targets, infos, settings) -> None:
    """define_output as it was (to_zarr(compute=False), the targets lazy Dask arrays): the reference."""
    by_path = {i.path: i for i in infos}
    shards = zformat.shard_shapes(infos, targets, settings.shards)
    make_marked_dir(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group, ds in xarray_io.groups(in_path, in_format, targets):
            enc = {}
            for name in ds.variables:
                path = xarray_io.var_path(group, name)
                if path not in targets:
                    enc[name] = xarray_io.cf_encoding(ds[name].encoding)
                    continue
                info = by_path[path]
                e = xarray_io.cf_encoding(ds[name].encoding, np.dtype(info.dtype))
                e.update(zformat.codec_encoding(targets[path].compression, info.itemsize, settings))
                e["chunks"] = zformat.chunk_shape(info, targets[path])
                if shards[path]:
                    e["shards"] = shards[path]
                enc[name] = e
            ds.to_zarr(tmp, group=None if group == "/" else group.lstrip("/"), mode="a", encoding=enc,
                       compute=False, zarr_format=settings.zarr_format, safe_chunks=False, consolidated=False)
        zarr.consolidate_metadata(str(tmp), zarr_format=settings.zarr_format)


def _files(store: Path) -> dict:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


def _both(src: Path, tmp_path: Path, opts: command.Options) -> tuple:
    prep = command.prepare(src, tmp_path / "o.zarr", opts, 1, two_pass=True, say=lambda *_: None)
    settings = command.zarr_settings(opts)
    new, old = tmp_path / "new.zarr", tmp_path / "old.zarr"
    zformat.define_output(src, prep.in_fmt, new, prep.targets, prep.infos, prep.max_mem, settings)
    _define_with_dask(src, prep.in_fmt, old, prep.targets, prep.infos, settings)
    return _files(new), _files(old), prep


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from rechunk_corpus import make_corpus
    return make_corpus(tmp_path_factory.mktemp("corpus"))


CASES = [("cf", 3, ()), ("cf", 2, ()), ("cf", 3, ("time/",)), ("groups", 3, ()), ("groups", 2, ()),
         ("classic", 3, ())]


@pytest.mark.parametrize("name,fmt,shards", CASES)
def test_defined_without_dask_as_xarray_defined_it(corpus, tmp_path, name, fmt, shards):
    opts = command.Options(balanced=True, chunk_bytes=4096, compression="zstd3+shuffle", zarr_format=fmt,
                           shards=shards)
    new, old, prep = _both(Path(corpus[name]), tmp_path, opts)
    assert prep.targets and set(new) == set(old)
    assert any(k.endswith(("zarr.json", ".zarray")) and k.split("/")[-2] in
               {t.rsplit("/", 1)[-1] for t in prep.targets} for k in new)   # the targets' metadata is there
    for key in old:
        assert new[key] == old[key], key


def test_a_zarr_input_and_a_packed_big_endian_target(corpus, tmp_path):
    src = tmp_path / "in.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.open_dataset(corpus["cf"], decode_times=False).to_zarr(src, zarr_format=2, consolidated=True)
    opts = command.Options(chunk_specs=("time/3",), compression="gzip1", endian="big")
    new, old, prep = _both(src, tmp_path, opts)
    assert set(new) == set(old) and all(new[k] == old[k] for k in old)
    assert len(prep.targets) >= 2


def test_the_define_child_imports_no_dask(corpus, tmp_path):
    """A Zarr output defined in the child started early (forked: this process has one thread), as
    the command does with workers, loads no dask module."""
    code = (
        "import sys, pathlib\n"
        "from climio.rechunking import child, command\n"
        "def probe(*args):\n"
        "    command._define_output_apart(*args)\n"
        "    return sorted(m for m in sys.modules if m.split('.')[0] == 'dask' and sys.modules[m] is not None)\n"
        "child.start_early(dask=False)\n"
        "assert child._early['child'][0]._popen.method == 'fork'\n"
        "opts = command.Options(balanced=True, chunk_bytes=4096, compression='zstd3+shuffle')\n"
        f"prep = command.prepare(pathlib.Path({str(corpus['cf'])!r}), pathlib.Path({str(tmp_path / 'o.zarr')!r}), "
        "opts, 2, True, lambda *_: None)\n"
        f"print(child.run(probe, (prep, {str(corpus['cf'])!r}, {str(tmp_path / 'x.zarr')!r}, "
        "command.zarr_settings(opts), True, True)))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
    assert xr.open_zarr(tmp_path / "x.zarr", decode_times=False).sizes["time"] > 0
