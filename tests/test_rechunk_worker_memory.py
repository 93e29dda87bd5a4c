"""What a rechunk worker holds, as the planner counts it and as the worker measures it.

Workers writing a local Zarr store write their chunks themselves and hand nothing back: the plan
counts one block and a chunk per worker for them (climio.model.convert.peak_memory's `own`), and
each worker's peak RSS is its own high-water mark (VmHWM), not the one a spawned process inherits
from the parent it was forked from."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from climio.rechunking.command import Options, _own_writes

ROOT = Path(__file__).resolve().parents[1]
CLIMIO = ROOT / ".venv" / "bin" / "climio"
MiB = 1 << 20


def test_a_spawned_workers_peak_rss_is_its_own():
    """ru_maxrss of a spawned process starts at its parent's RSS before the exec; VmHWM does not."""
    code = ("import numpy as np, resource\n"
            "from climio.machine import spawning\n"
            "from climio.rechunking import blocks\n"
            "held = np.ones(300 << 20, np.uint8)   # 300 MiB resident in the parent\n"
            "with spawning.context().Pool(1) as pool:\n"
            "    own = pool.apply_async(blocks.peak_rss).get(timeout=120)\n"
            "    usage = pool.apply_async(resource.getrusage, (resource.RUSAGE_SELF,)).get(timeout=120)\n"
            "print(own, usage.ru_maxrss * 1024)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    own, inherited = map(int, res.stdout.split())
    assert inherited >= 300 * MiB          # what the summary used to add up for every worker
    assert own < 150 * MiB                 # the worker's own: interpreter, numpy, climio's modules


def test_own_writes_only_where_the_workers_write_local_chunks_one_by_one():
    targets = {"/ta": None, "/pr": None}
    infos = []
    assert _own_writes("zarr", Options(), infos, targets) == {"/ta", "/pr"}
    assert _own_writes("netcdf4", Options(), infos, targets) == frozenset()      # the parent writes HDF5
    assert _own_writes("zarr", Options(remote_out="s3://b/o.zarr"), infos, targets) == frozenset()
    assert _own_writes("zarr", Options(scheduler="local"), infos, targets) == frozenset()


def test_zarr_output_plan_one_block_per_worker_and_the_workers_stay_within_it(tmp_path):
    """Maps [1,1,256,256] to series [40,1,1,256]: a whole-chunk block [40,1,256,256] is 10 MiB. At
    --max-mem 40MiB with 2 workers, results handed back to the parent (netCDF-4 output) need 4
    blocks per worker: no single pass fits. Workers writing Zarr chunks need one each: one pass,
    and each worker's peak RSS is its libraries plus about the block the plan counts."""
    subprocess.run([str(CLIMIO), "make-data", str(tmp_path), "--kind", "4d", "--shape", "40,4,256,256",
                    "--chunks", "1,1,256,256", "--compression", "deflate1+shuffle", "--dtype", "f4"],
                   check=True, capture_output=True)
    src = tmp_path / "field4d.nc"
    args = ["-c", "time/40,lev/1,lat/1,lon/256", "--compression", "zstd3+shuffle", "--max-mem", "40MiB",
            "--workers", "2", "--json"]
    nc = subprocess.run([str(CLIMIO), "rechunk", str(src), str(tmp_path / "o.nc"), *args, "--dry-run"],
                        capture_output=True, text=True)
    assert nc.returncode == 0, nc.stderr
    nc_plan = json.loads(nc.stdout)["plans"]["/ta"]
    assert nc_plan["strategy"] != "single-pass" and not nc_plan["passes"][-1]["own_writes"]

    out = tmp_path / "o.zarr"
    res = subprocess.run([str(CLIMIO), "rechunk", str(src), str(out), *args], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    plan = s["plans"]["/ta"]
    (p,) = plan["passes"]
    assert plan["strategy"] == "single-pass" and p["own_writes"] and p["workers"] == 2
    block = int(np.prod(p["block"])) * 4
    assert p["peak_mem"] == 2 * (block + 2 * 256 * 256 * 4 + 3 * 40 * 256 * 4) <= 40 * MiB
    assert len(s["task_peak_rss"]) == 2
    # each worker: the block the plan counts, on top of the interpreter and libraries (~50 MiB
    # measured by bench/rechunk_worker_rss.py); not the 85 MiB ru_maxrss inherited from the parent
    assert all(r <= p["peak_mem"] // 2 + 64 * MiB for r in s["task_peak_rss"]), s["task_peak_rss"]
    with xr.open_dataset(src) as a, xr.open_zarr(out) as b:
        assert b["ta"].encoding["chunks"] == (40, 1, 1, 256)
        np.testing.assert_array_equal(a["ta"].values, b["ta"].values)
