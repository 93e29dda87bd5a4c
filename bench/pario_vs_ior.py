#!/usr/bin/env python3
"""climio's MPI-IO shared-file write against IOR on the same bytes, and parallel vs serial gather.

    python bench/pario_vs_ior.py [--ranks 4] [--local 96,96,96] [--reps 10] [--dir DIR] [--fsync]

1. IOR (when an `ior` executable is on PATH; otherwise a message says it is skipped):
   `ior -a MPIIO -c -w -b B -t B -s 1 -i REPS` (no -F: one shared file) writes B = n1*n2*n3*8 bytes per rank in one
   collective transfer per rank, the same bytes and call count as climio's benchio mode with
   the mpiio backend and the shared strategy (one MPI_File_write_all of the whole local block).
   The file layouts differ: IOR writes each rank's block contiguously, benchio's subarray
   interleaves them (a 3-D domain decomposition), so the ratio shows what the realistic
   decomposition costs over IOR's ideal one. Rates compared: IOR's "Max Write" and climio's best
   repetition (both MB/s = 1e6 B/s), and the means.
2. Parallel shared-file write vs serial gather to rank 0 (the MOM5 paper's baseline), per backend.

Every number is measured in this run; ratios are printed last.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from climio import native
from climio.launcher import ROOT_ENV, Launcher

PROGRAM = "climio-pario-write"


def climio_records(launcher, args, out_dir):
    cmd = launcher.command([native.program(PROGRAM), "--mode", "benchio", "--dir", out_dir, *args])
    out = subprocess.run(cmd, capture_output=True, text=True, env=launcher.env(), timeout=1800)
    if out.returncode != 0:
        sys.exit(f"{PROGRAM} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def run_ior(ior, launcher, block, reps, out_dir, fsync):
    cmd = launcher.command([ior, "-a", "MPIIO", "-c", "-w", "-b", str(block), "-t", str(block), "-s", "1",
                            "-i", str(reps), "-o", os.path.join(out_dir, "ior.dat")] + (["-e"] if fsync else []))
    out = subprocess.run(cmd, capture_output=True, text=True, env=launcher.env(), timeout=1800)
    if out.returncode != 0:
        sys.exit(f"ior failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    # "Max Write: 1234.56 MiB/sec (1294.53 MB/sec)" and "Mean" in the summary (IOR 3.x)
    mx = re.search(r"Max Write:\s*[\d.]+ MiB/sec \(([\d.]+) MB/sec\)", out.stdout)
    rows = [l.split() for l in out.stdout.splitlines() if l.startswith("write ")]
    mean = None
    if rows and len(rows[0]) > 3:
        try:
            mean = float(rows[0][3]) * 1.048576   # the summary table's Mean column is MiB/s
        except ValueError:
            pass
    return {"max_MBps": float(mx.group(1)) if mx else None, "mean_MBps": mean, "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--local", default="96,96,96", help="benchio local block n1,n2,n3 (float64)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    ap.add_argument("--fsync", action="store_true", help="include fsync in both tools' times")
    a = ap.parse_args()
    if os.geteuid() == 0:
        os.environ.update(ROOT_ENV)
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
        ior = shutil.which("ior")
        if ior:
            got = run_ior(ior, launcher, block, a.reps, out_dir, a.fsync)
            print(f"IOR    mpiio    shared : max {got['max_MBps']} MB/s, mean {got['mean_MBps']} MB/s  ({got['cmd']})")
            mine = rates[("mpiio", "shared")]
            if got["max_MBps"]:
                ratios.append(("climio mpiio shared / IOR (max)", max(mine) / got["max_MBps"]))
            if got["mean_MBps"]:
                ratios.append(("climio mpiio shared / IOR (mean)", statistics.mean(mine) / got["mean_MBps"]))
        else:
            print("IOR: skipped, no `ior` executable on PATH (build it from https://github.com/hpc/ior and rerun)")
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
