"""How climio rechunk uses its processes: with worker processes, xarray (the output's definition and
check) stays out of the process that runs the conversion, and the output is still complete."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

ROOT = Path(__file__).resolve().parents[1]
CLIMIO = ROOT / ".venv" / "bin" / "climio"


def _field(tmp_path) -> Path:
    subprocess.run([str(CLIMIO), "make-data", str(tmp_path), "--kind", "4d", "--shape", "20,3,30,40",
                    "--chunks", "1,1,30,40", "--compression", "deflate1+shuffle", "--dtype", "f4"],
                   check=True, capture_output=True)
    return tmp_path / "field4d.nc"


@pytest.mark.parametrize("early", [False, True], ids=["child-when-needed", "child-started-early"])
def test_zarr_output_with_workers_keeps_xarray_out_of_the_converting_process(tmp_path, early):
    """Also through the child started before the plan (rechunk.child.start_early), which a small
    input does not get unless EARLY_POOL_BYTES says so."""
    src, out = _field(tmp_path), tmp_path / "out.zarr"
    code = ("import sys, importlib\n"
            "from climio.rechunking import convert\n"
            "command = importlib.import_module('climio.rechunking.command')\n"
            "child = importlib.import_module('climio.rechunking.child')\n"
            f"command.EARLY_POOL_BYTES = {1 if early else 'command.EARLY_POOL_BYTES'}\n"
            "used = []\n"
            "real = child.start_early\n"
            "child.start_early = lambda **kw: (used.append(1), real(**kw))\n"
            f"s = convert({str(src)!r}, {str(out)!r}, chunks='time/20,lev/1,lat/1,lon/40',"
            " compression='zstd3+shuffle', workers=2, max_mem='256KiB')\n"
            "print(max(p['workers'] for v in s['plans'].values() for p in v['passes']), 'xarray' in sys.modules,"
            " len(used), child._early == {})\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    # two workers ran; xarray was never imported here; the early child was started only when asked
    assert res.stdout.split() == ["2", "False", "1" if early else "0", "True"]
    with xr.open_dataset(src, decode_times=False) as a, xr.open_zarr(out, decode_times=False) as b:
        assert b["ta"].encoding["chunks"] == (20, 1, 1, 40)
        np.testing.assert_array_equal(a["ta"].values, b["ta"].values)
        assert a["ta"].attrs == b["ta"].attrs


def test_an_error_while_defining_in_the_child_is_one_line(tmp_path):
    import netCDF4
    src, out = tmp_path / "ragged.nc", tmp_path / "out.zarr"
    with netCDF4.Dataset(src, "w") as ds:          # a numeric variable to convert and one xarray cannot write
        for d, n in (("time", 20), ("lat", 30), ("lon", 40), ("n", 3)):
            ds.createDimension(d, n)
        ds.createVariable("ta", "f4", ("time", "lat", "lon"), chunksizes=(1, 30, 40), zlib=True)[:] = 1.5
        ragged = ds.createVariable("ragged", ds.createVLType(np.int32, "ragged_t"), ("n",))
        for i in range(3):
            ragged[i] = np.arange(i + 1, dtype=np.int32)
    res = subprocess.run([str(CLIMIO), "rechunk", str(src), str(out), "-c", "time/20,lat/1,lon/40",
                          "--workers", "2", "--max-mem", "64KiB"], capture_output=True, text=True)
    assert res.returncode == 3, res.stderr
    assert res.stderr.count("climio: error: cannot write") == 1 and "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ragged.nc"]
