"""One `climio rechunk` command under two checkouts, in one run: is a change faster?

    .venv/bin/python bench/rechunk_ab.py --base-src DIR/src IN OUT_SUFFIX -- RECHUNK_ARGS...
    e.g. (the tiled two-pass intermediate against main's C-order one, 2026-11-28):
    git archive a0c0483 src | tar -x -C /tmp/base
    .venv/bin/python bench/rechunk_ab.py --base-src /tmp/base/src field4d.nc .zarr -- \
        -c ta:1024,1,24,32 --compression zstd1+shuffle --max-mem 64MiB -j 2

"this" is this checkout's climio, "base" the same console script with PYTHONPATH=--base-src (its
worker processes inherit the path, so the whole conversion runs the base code). Each run is cold
(the input evicted with posix_fadvise and checked with mincore, climio.machine.cache), writes a
fresh output next to the input (removed after), and the runs go in ABBA order (--reps 3: this,
base, base, this, this, base). Measured: wall time from spawn to exit and the CPU of the process
tree (RUSAGE_CHILDREN); medians and their ratios printed, with the load average.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from climio.machine import cache

CLIMIO = str(Path(sys.executable).with_name("climio"))


def run(tool: str, base_src: str, src: Path, out: Path, args) -> tuple:
    _remove(out)
    state = cache.prepare([str(src)], "cold")
    env = {**os.environ, "PYTHONPATH": base_src} if tool == "base" else None
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([CLIMIO, "rechunk", str(src), str(out), "--force", *args], env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{tool}: climio rechunk failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    _remove(out)
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), state.get("resident_fraction")


def _remove(out: Path) -> None:
    if out.is_dir():
        shutil.rmtree(out)
    elif out.exists():
        out.unlink()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-src", required=True, help="the other checkout's src/ directory")
    ap.add_argument("--reps", type=int, default=3, help="runs per tool, ABBA order (default 3)")
    ap.add_argument("input", type=Path)
    ap.add_argument("suffix", help="the output's suffix (.zarr or .nc): it decides the output format")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then climio rechunk's options")
    a = ap.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    order = [t for i in range(a.reps) for t in (("this", "base") if i % 2 == 0 else ("base", "this"))]
    res = {"this": [], "base": []}
    for tool in order:
        out = a.input.with_name(f".ab-{tool}{a.suffix}")
        wall, cpu, resident = run(tool, a.base_src, a.input, out, args)
        res[tool].append((wall, cpu))
        print(f"{tool:5s} {wall:7.2f} s wall {cpu:7.2f} s CPU  input resident before {resident}  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    med = {t: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for t, v in res.items()}
    for t, (w, c) in med.items():
        print(f"{t:5s} median {w:.2f} s wall, {c:.2f} s CPU")
    print(f"base / this: {med['base'][0] / med['this'][0]:.2f}x wall, {med['base'][1] / med['this'][1]:.2f}x CPU")


if __name__ == "__main__":
    main()
