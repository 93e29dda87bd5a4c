"""Library warnings stay out of the user's stderr unless they matter, then one line (issue 38
item 1, fifth case): zarr-python's ZarrUserWarning about numcodecs codecs was printed, with its
source line, on every S3 predict and advise of a store climio wrote."""

import os
import subprocess
import sys

import pytest

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


@pytest.fixture(scope="module")
def shuffled_store(s3_server, tmp_path_factory):
    """A 4-D Zarr v3 store make-data writes with zstd3+shuffle (numcodecs' Shuffle), in the bucket."""
    from climio.stores.objects import upload
    d = tmp_path_factory.mktemp("warned")
    r = subprocess.run([CLIMIO, "make-data", str(d), "--kind", "4d", "--shape", "4,2,20,30", "--chunks", "1,1,20,30",
                        "--format", "zarr", "--compression", "zstd3+shuffle", "--dtype", "f4"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    upload(s3_server.endpoint, d / "field4d.zarr", "s3://climio/warned")
    return "s3://climio/warned/field4d.zarr"


def test_s3_predict_and_advise_of_a_climio_store_print_no_library_warning(s3_server, shuffled_store, tmp_path,
                                                                            monkeypatch):
    from climio.model import object_store as om
    from climio import profiles as on_disk
    from climio.machine.platform import platform_id_here as platform_id_of
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    key = om.store_key(s3_server.endpoint.url)
    on_disk.save_rates(platform_id_of(None), key, om.StoreRates(key, 0.002, 200e6, 800e6))   # rates, as calibrate --store keeps them
    env = {**os.environ, **s3_server.endpoint.env(), "CLIMIO_PROFILE_DIR": str(tmp_path / "profiles")}
    for cmd in (["predict", shuffled_store, "--read", "xy"], ["advise", shuffled_store, "--read", "xy"]):
        r = subprocess.run([CLIMIO, *cmd], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "Warning" not in r.stderr and ".py:" not in r.stderr, r.stderr
    assert "predicted" in subprocess.run([CLIMIO, "predict", shuffled_store, "--read", "xy"], capture_output=True,
                                         text=True, timeout=300, env=env, cwd=tmp_path).stdout


def test_a_warning_that_matters_is_one_line():
    code = ("import sys; sys.argv = ['climio', '--version']\n"
            "from climio.cli.library_warnings import install; install()\n"
            "import warnings; warnings.warn('the chunk cache is smaller than one chunk\\nsecond line', RuntimeWarning)\n"
            "import zarr.errors; warnings.warn('Numcodecs codecs are not in the Zarr version 3 specification and may "
            "not be supported', zarr.errors.ZarrUserWarning)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "warning: RuntimeWarning: the chunk cache is smaller than one chunk\n"
