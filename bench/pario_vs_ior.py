#!/usr/bin/env python3
"""climio's MPI-IO shared-file write against IOR on the same bytes, and parallel vs serial gather.

    python bench/pario_vs_ior.py [--ranks 4] [--local 96,96,96] [--reps 10] [--dir DIR] [--fsync]

1. IOR (`ior` on PATH, --ior PATH, or else built once from ../shared/peers/ior-5fcf0ba.tar.gz into
   ~/.cache/climio-bench/ior by bench/_peers.py, the same IOR bench/parallel_read_vs_peers.py uses):
   `ior -a MPIIO -c -w -b B -t B -s 1 -i REPS` (no -F: one shared file) writes B = n1*n2*n3*8 bytes per rank in one
   collective transfer per rank, the same bytes and call count as climio's benchio mode with
   the mpiio backend and the shared strategy (one MPI_File_write_all of the whole local block).
   The file layouts differ: IOR writes each rank's block contiguously, benchio's subarray
   interleaves them (a 3-D domain decomposition), so the ratio shows what the realistic
   decomposition costs over IOR's ideal one. Rates compared: IOR's best iteration (its JSON
   summary's bandwidth, aggregate bytes / totalTime) and climio's best repetition (both MB/s =
   1e6 B/s), and the means.
2. Parallel shared-file write vs serial gather to rank 0 (the MOM5 paper's baseline), per backend.

Every number is measured in this run; ratios are printed last.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers import PeerError, ior_executable, run_ior  # noqa: E402

from climio.machine import native  # noqa: E402
from climio.measure.mpi import Launcher  # noqa: E402

PROGRAM = native.PARIO


def climio_records(launcher, args, out_dir):
    cmd = launcher.command([*native.pario("write"), "--mode", "benchio", "--dir", out_dir, *args])
    out = subprocess.run(cmd, capture_output=True, text=True, env=launcher.env(), timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{PROGRAM} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def ior_write(ior, launcher, block, reps, out_dir, fsync):
    results, cmd = run_ior(ior, launcher, ["-a", "MPIIO", "-c", "-w", "-b", str(block), "-t", str(block), "-s", "1",
                                           "-i", str(reps), "-o", os.path.join(out_dir, "ior.dat")]
                           + (["-e"] if fsync else []))
    rates = [r["MBps"] for r in results if r.get("access") == "write"]
    if not rates:
        raise PeerError("ior gave no write results")
    return {"max_MBps": max(rates), "mean_MBps": statistics.mean(rates), "cmd": cmd}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--local", default="96,96,96", help="benchio local block n1,n2,n3 (float64)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    ap.add_argument("--fsync", action="store_true", help="include fsync in both tools' times")
    ap.add_argument("--ior", default=None, help="IOR executable (default: `ior` on PATH, else built once)")
    a = ap.parse_args()
    try:
        ior = ior_executable(a.ior)
    except PeerError as exc:
        sys.exit(f"error: {exc}")
    launcher = Launcher(ranks=a.ranks, timeout_s=1800)
    n1, n2, n3 = (int(x) for x in a.local.split(","))
    block = n1 * n2 * n3 * 8
    out_dir = a.dir or tempfile.mkdtemp(prefix="climio-pario-bench-")
    common = ["--local", a.local, "--reps", str(a.reps)] + (["--fsync"] if a.fsync else [])
    try:
        print(f"{a.ranks} ranks x {block / 2**20:.1f} MiB per rank ({a.local} float64), {a.reps} repetitions, dir {out_dir}")
        recs = climio_records(launcher, ["--backends", "mpiio,hdf5,netcdf4,pnetcdf", "--strategies", "shared,serial",
                                         *common], out_dir)
        rates = {}
        for r in recs:
            rates.setdefault((r["params"]["backend"], r["params"]["strategy"]), []).append(r["metrics"]["rate_MBps"])
        for (b, s), v in sorted(rates.items()):
            print(f"climio {b:8} {s:7}: max {max(v):8.1f}  median {statistics.median(v):8.1f}  mean {statistics.mean(v):8.1f} MB/s")
        ratios = []
        try:
            got = ior_write(ior, launcher, block, a.reps, out_dir, a.fsync)
        except PeerError as exc:
            sys.exit(f"error: {exc}")
        print(f"IOR    mpiio    shared : max {got['max_MBps']:8.1f}  mean {got['mean_MBps']:8.1f} MB/s  ({got['cmd']})")
        mine = rates[("mpiio", "shared")]
        ratios.append(("climio mpiio shared / IOR (max)", max(mine) / got["max_MBps"]))
        ratios.append(("climio mpiio shared / IOR (mean)", statistics.mean(mine) / got["mean_MBps"]))
        for b in ("mpiio", "hdf5", "netcdf4", "pnetcdf"):
            if (b, "shared") in rates and (b, "serial") in rates:
                ratios.append((f"{b} shared / serial gather (median)",
                               statistics.median(rates[(b, "shared")]) / statistics.median(rates[(b, "serial")])))
        print()
        for name, x in ratios:
            print(f"ratio {name}: {x:.2f}")
    finally:
        if not a.dir:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
