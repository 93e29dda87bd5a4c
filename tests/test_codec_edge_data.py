"""Every codec climio writes keeps data it cannot shrink (issue 38 item 1, first case).

netCDF4-python's wheel ships netCDF-C's Blosc filter, which h5py's HDF5 loaded: on a chunk Blosc
cannot shrink it handed HDF5 a NULL buffer, so `climio rechunk tas.nc x.nc --compression
blosc_lz4:5` on noisy float32 printed "Blosc_Filter Error ... uncompressible" per chunk and died of
SIGSEGV (climio.dataset.h5filters). Here: incompressible, constant, NaN-only and denormal float32
through every codec of both output formats, in a child process (a signal shows as its exit
status), each value read back bit for bit.
"""

import json
import os
import subprocess
import sys
import textwrap

import h5py
import netCDF4
import numpy as np
import pytest

from climio.dataset.compression import CODECS

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")

SHAPE = (8, 40, 60)
CHUNKS = (1, 40, 60)


def edge_values() -> dict:
    rng = np.random.default_rng(38)
    return {
        "noise": rng.random(SHAPE, dtype=np.float32),                      # full mantissas: Blosc cannot shrink them
        "const": np.full(SHAPE, 273.15, np.float32),
        "nan": np.full(SHAPE, np.nan, np.float32),
        "denorm": rng.integers(1, 2**23, SHAPE, dtype=np.uint32).view(np.float32),   # subnormal, random
    }


@pytest.fixture(scope="module")
def edge_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("edge") / "edge.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for name, n in zip(("time", "lat", "lon"), SHAPE):
            ds.createDimension(name, n)
        for name, values in edge_values().items():
            v = ds.createVariable(name, "f4", ("time", "lat", "lon"), chunksizes=CHUNKS, fill_value=False)
            v.set_auto_maskandscale(False)
            v[:] = values
    return path


def _netcdf4_settings() -> list:
    """Every codec of the grammar at a middle level, deflate with shuffle, and none."""
    out = [f"{name}:{(lo + hi) // 2 or 1}" for name, (_, lo, hi) in CODECS.items()]
    return out + ["deflate1+shuffle", "none"]


def _zarr_settings() -> list:
    blosc = [name for name in CODECS if name.startswith("blosc_")]
    return [f"{b}:5" for b in blosc] + ["blosc_lz4:5+shuffle", "zstd3", "zstd3+shuffle", "gzip5", "none"]


# One child converts to every setting in turn (the imports are paid once); it prints one JSON line
# per output and exits 0; a crash of any conversion is its exit status.
_CHILD = textwrap.dedent("""
    import json, sys, climio
    src, out_dir, fmt, zarr_format = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    for i, setting in enumerate(json.loads(sys.argv[5])):
        out = f"{out_dir}/out{i}." + ("zarr" if fmt == "zarr" else "nc")
        climio.rechunk(src, out, chunks=["time/4"], compression=setting, workers=1,
                       **({"zarr_format": zarr_format} if fmt == "zarr" else {}))
        print(json.dumps({"setting": setting, "out": out}), flush=True)
""")


def _convert_all(src, out_dir, fmt: str, settings: list, zarr_format: int = 3) -> list:
    r = subprocess.run([sys.executable, "-c", _CHILD, str(src), str(out_dir), fmt, str(zarr_format),
                        json.dumps(settings)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    assert "Blosc_Filter Error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
    done = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [d["setting"] for d in done] == settings
    return done


def _read_netcdf4(path) -> dict:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        return {name: np.asarray(ds[name][:]) for name in edge_values()}


def _assert_bitwise(expected: dict, got: dict, what: str) -> None:
    for name, values in expected.items():
        assert np.array_equal(values.view(np.uint32), got[name].view(np.uint32)), f"{what}: {name} differs"


def test_every_netcdf4_codec_stores_incompressible_constant_nan_and_denormal_data(edge_file, tmp_path):
    settings = _netcdf4_settings()
    expected = edge_values()
    for done in _convert_all(edge_file, tmp_path, "netcdf4", settings):
        _assert_bitwise(expected, _read_netcdf4(done["out"]), done["setting"])
    # the mechanism: a Blosc chunk that cannot shrink is stored unfiltered and marked so in its
    # filter mask (HDF5's optional filter), a constant one compressed
    out = tmp_path / f"out{settings.index('blosc_lz4:4')}.nc"
    with h5py.File(out, "r") as f:
        noise, const = f["noise"].id, f["const"].id
        assert all(noise.get_chunk_info(i).filter_mask & 1 for i in range(noise.get_num_chunks()))
        assert all(const.get_chunk_info(i).size < 1000 for i in range(const.get_num_chunks()))


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_every_zarr_codec_stores_incompressible_constant_nan_and_denormal_data(edge_file, tmp_path, zarr_format):
    import zarr
    expected = edge_values()
    for done in _convert_all(edge_file, tmp_path, "zarr", _zarr_settings(), zarr_format):
        got = {name: np.asarray(zarr.open_array(done["out"], path=name, mode="r")[:]) for name in expected}
        _assert_bitwise(expected, got, f"zarr v{zarr_format} {done['setting']}")


def test_quantized_blosc_output_equals_netcdf_c_quantization(edge_file, tmp_path):
    """New quantization with Blosc: netCDF-C quantizes, h5py writes; the values equal those netCDF-C
    stores for the same quantization with deflate, and the quantization attribute is there."""
    settings = ["bitround12+blosc_lz4:5", "bitround12+deflate1", "bitgroom3+blosc_zstd:5", "bitgroom3+deflate1"]
    done = _convert_all(edge_file, tmp_path, "netcdf4", settings)
    for blosc, deflate in ((done[0], done[1]), (done[2], done[3])):
        _assert_bitwise(_read_netcdf4(deflate["out"]), _read_netcdf4(blosc["out"]), blosc["setting"])
        with netCDF4.Dataset(blosc["out"]) as ds:
            assert ds["noise"].quantization() == ({"bitround12": (12, "BitRound"), "bitgroom3": (3, "BitGroom")}
                                                  [blosc["setting"].split("+")[0]])
            assert ds["noise"].filters()["blosc"]
    assert not np.array_equal(_read_netcdf4(done[0]["out"])["noise"], edge_values()["noise"])   # quantized indeed


def test_rechunk_blosc_lz4_on_noisy_float32_exits_0(tmp_path):
    """The reported command, through the CLI: exit 0, no filter noise on stderr, values equal."""
    src, out = tmp_path / "tas_day.nc", tmp_path / "x.nc"
    tas = (280 + 10 * np.random.default_rng(5).standard_normal((60, 45, 90))).astype(np.float32)
    with netCDF4.Dataset(src, "w") as ds:
        for name, n in zip(("time", "lat", "lon"), tas.shape):
            ds.createDimension(name, n)
        ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 45, 90))[:] = tas
    r = subprocess.run([CLIMIO, "rechunk", str(src), str(out), "--var", "tas",
                        "--compression", "blosc_lz4:5"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Blosc_Filter" not in r.stderr and "Traceback" not in r.stderr
    with netCDF4.Dataset(out) as ds:
        assert np.array_equal(ds["tas"][:], tas)
        assert ds["tas"].filters()["blosc"]["compressor"] == "blosc_lz4"


def test_make_data_blosc_on_random_float32(tmp_path):
    """make-data writes Blosc through h5py too: random values equal the uncompressed file's."""
    def make(where, setting):
        r = subprocess.run([CLIMIO, "make-data", str(where), "--kind", "4d",
                            "--shape", "4,2,45,90", "--chunks", "1,1,45,90", "--dtype", "f4", "--random",
                            "--compression", setting], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "Blosc_Filter" not in r.stderr, r.stderr[-2000:]
        with netCDF4.Dataset(where / "field4d.nc") as ds:
            return np.asarray(ds["ta"][:]), ds["ta"].filters()
    blosc, filters = make(tmp_path / "blosc", "blosc_lz:5")
    plain, _ = make(tmp_path / "plain", "none")
    assert filters["blosc"]["compressor"] == "blosc_lz"
    assert np.array_equal(blosc, plain)
