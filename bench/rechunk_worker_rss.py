"""What a rechunk worker really holds per block, against the planner's memory model.

    .venv/bin/python bench/rechunk_worker_rss.py [--sizes 200MiB,1GiB] [--max-mem 256MiB] [--workers 2] [--keep DIR]

The case is bench/rechunk_zarr_vs_peers.py's (deflate1+shuffle float32 [T,10,240,240] chunked
[1,1,240,240] -> Zarr v3 [T,1,1,240] zstd3+shuffle; --size scales T). For each size, and for a
tiny field of the same grid (T=4: the workers' interpreter, libraries and handles, almost no
block), `climio rechunk --json` is run and each worker's peak RSS read from the summary
(task_peak_rss: VmHWM, the worker's own high-water mark). A worker's peak above the tiny run's is
what its blocks cost; the plan's per-worker term (peak_mem / workers) is what the model says a
worker holds. Printed per size: the plan (strategy, block, workers), the model's per-worker bytes,
the measured extra per worker, and the whole tree's peak against --max-mem.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rechunk_vs_peers as peers  # noqa: E402  (the case's data making)

from climio.dataset.options import parse_size  # noqa: E402

MiB = 1 << 20


def run(inp: Path, out: Path, T: int, a) -> dict:
    cmd = [peers.CLIMIO, "rechunk", str(inp), str(out), "-c", f"time/{T},lev/1,lat/1,lon/240",
           "--compression", "zstd3+shuffle", "--max-mem", a.max_mem, "--workers", str(a.workers), "--force", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200MiB,1GiB")
    ap.add_argument("--max-mem", default="256MiB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", help="make (or reuse) the inputs under this directory")
    a = ap.parse_args()
    work = Path(a.keep or tempfile.mkdtemp(prefix="climio-worker-rss-"))
    sizes = [("tiny", 4)] + [(s, max(2, parse_size(s) // (10 * 240 * 240 * 4))) for s in a.sizes.split(",")]
    base = None
    print(f"--max-mem {a.max_mem}, {a.workers} workers; per worker: model = plan peak / workers, "
          "measured = worker peak RSS - the tiny run's")
    for label, T in sizes:
        d = work / f"T{T}"
        d.mkdir(parents=True, exist_ok=True)
        inp = peers.make_input(d, (T, 10, 240, 240), 1)
        s = run(inp, d / "out.zarr", T, a)
        plan = s["plans"]["/ta"]
        worst = max(s["task_peak_rss"])
        if base is None:
            base = worst
        for p in plan["passes"]:
            print(f"{label:>7} T={T:<5} {plan['strategy']:<11} {p['name']:<17} block {p['block']} "
                  f"{p['workers']} workers, own writes {p.get('own_writes')}: model {p['peak_mem'] / p['workers'] / MiB:6.1f} "
                  f"MiB/worker")
        print(f"{'':>7} worker peaks {[round(r / MiB, 1) for r in s['task_peak_rss']]} MiB: measured "
              f"{(worst - base) / MiB:6.1f} MiB/worker above the tiny run; tree peak {s['peak_rss'] / MiB:.0f} MiB "
              f"for --max-mem {a.max_mem}; {s['seconds']:.1f} s")
        subprocess.run(["rm", "-rf", str(d / "out.zarr")])


if __name__ == "__main__":
    main()
