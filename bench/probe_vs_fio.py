"""The physical floor: climio's C probe against fio on the same cold file, in ABBA order.

    .venv/bin/python bench/probe_vs_fio.py [--size 1GiB] [--reps 6] [--dir DIR]

Both read the whole file sequentially in 1 MiB requests after evicting it from the page
cache (the probe: posix_fadvise DONTNEED verified with mincore; fio: --invalidate=1). The runs
go in ABBA order (probe fio fio probe probe fio ...) so drift hits both alike and neither always
follows the other; every run follows a full read of the same file (the one before it, or an
untimed read before the first), so both evict a whole cached copy. fio runs as users run it, with
its default POSIX_FADV_SEQUENTIAL hint (a readahead window twice the probe's); --fio-no-hint drops it.

On a VM whose balloon reports free memory to the host a cold read lands in one of two modes
(issue 27 item 8): each run prints its system time per GB read, which tells them apart, and a
tool whose runs split into two modes is flagged. Prints the best-of-N and the median ratio
probe/fio, and when the runs split, the median ratio over the fast mode's runs of each tool.
Target: median ratio >= 0.9.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from climio.machine import native
from climio.bench.read_stack.run import prime_file
from climio.bench.read_stack.summary import two_modes
from climio.data import make_data
from climio.dataset.options import parse_size

MiB = 1 << 20
TARGET = 0.9


def probe_run(path) -> dict:
    out = subprocess.run([native.program("climio-probe-posix"), "--file", path, "--patterns", "sequential",
                          "--buffers", str(MiB), "--reps", "1", "--cache", "cold", "--budget", "0"],
                         capture_output=True, text=True, check=True).stdout
    rec = json.loads(out.splitlines()[-1])
    if rec["cache"]["state"] != "cold":
        sys.exit(f"probe could not evict {path} (resident {rec['cache']['resident_fraction']})")
    m = rec["metrics"]
    return {"MBps": m["rate_MBps"], "sys_s_per_GB": m["sys_s"] / m["bytes"] * 1e9}


def fio_run(path, size, hint=True) -> dict:
    fio = shutil.which("fio") or sys.exit("fio not found: run `make setup`")
    out = subprocess.run([fio, "--name=floor", f"--filename={path}", "--rw=read", "--bs=1m", "--invalidate=1",
                          "--ioengine=psync", f"--size={size}", f"--fadvise_hint={int(hint)}", "--output-format=json"],
                         capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    read = job["read"]
    sys_s = job["sys_cpu"] / 100 * job.get("job_runtime", read["runtime"]) / 1e3
    return {"MBps": read["bw_bytes"] / 1e6, "sys_s_per_GB": sys_s / read["io_bytes"] * 1e9}


def abba(reps) -> list:
    """The order of 2*reps runs: probe fio fio probe probe fio ... (each tool `reps` times)."""
    pairs = [("probe", "fio") if i % 2 == 0 else ("fio", "probe") for i in range(reps)]
    return [tool for pair in pairs for tool in pair]


def ratios(probe, fio) -> dict:
    """best: best probe / best fio; median: median probe / median fio (rates in MB/s)."""
    return {"best": max(probe) / max(fio), "median": statistics.median(probe) / statistics.median(fio)}


def fast_mode_ratio(runs):
    """(median probe / median fio over the runs of the fast mode, n probe, n fio) when the runs of both
    tools pooled split into two modes by system time per GB, else None: the like-for-like ratio."""
    split = two_modes([r["sys_s_per_GB"] for rs in runs.values() for r in rs])
    if not split:
        return None
    fast = {t: [r["MBps"] for r in rs if r["sys_s_per_GB"] <= split["low"][-1]] for t, rs in runs.items()}
    if not fast["probe"] or not fast["fio"]:
        return None
    return statistics.median(fast["probe"]) / statistics.median(fast["fio"]), len(fast["probe"]), len(fast["fio"])


def mode_note(runs) -> str:
    split = two_modes([r["sys_s_per_GB"] for r in runs])
    if not split:
        return "one mode"
    return f"TWO MODES (sys s/GB {max(split['low']):.3f} | {min(split['high']):.3f}, {split['gap']:.1f}x apart)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--reps", type=int, default=6, help="runs of each tool (default 6)")
    ap.add_argument("--dir", default=None, help="directory on the file system to test (default: a temporary one)")
    ap.add_argument("--fio-no-hint", action="store_true",
                    help="run fio with --fadvise_hint=0: by default fio advises POSIX_FADV_SEQUENTIAL, which doubles "
                         "the kernel's readahead window; the probe asks for nothing")
    a = ap.parse_args()
    if a.reps < 1:
        sys.exit("--reps must be at least 1")
    tmp = tempfile.mkdtemp(prefix="climio-floor-", dir=a.dir)
    try:
        path = str(make_data(tmp, size=parse_size(a.size), kinds=("1d",), random=True)["1d_bin"])
        size = os.path.getsize(path)
        prime_file(path)
        runs = {"probe": [], "fio": []}
        print(f"file {path} ({size} B), {a.reps} cold sequential 1 MiB reads each, ABBA order; fio "
              f"{'without' if a.fio_no_hint else 'with'} its POSIX_FADV_SEQUENTIAL hint")
        print(f"{'run':>4} {'tool':6} {'MB/s':>8} {'sys s/GB':>9}")
        for i, tool in enumerate(abba(a.reps)):
            r = probe_run(path) if tool == "probe" else fio_run(path, size, not a.fio_no_hint)
            runs[tool].append(r)
            print(f"{i:4d} {tool:6} {r['MBps']:8.1f} {r['sys_s_per_GB']:9.3f}", flush=True)
        probe, fio = ([r["MBps"] for r in runs[t]] for t in ("probe", "fio"))
        got = ratios(probe, fio)
        for name, rates, tool in (("climio-probe-posix", probe, "probe"), ("fio psync", fio, "fio")):
            print(f"{name:18}: best {max(rates):8.1f}  median {statistics.median(rates):8.1f} MB/s  "
                  f"(min {min(rates):.1f}); {mode_note(runs[tool])}")
        print(f"ratio probe/fio   : best-of-{a.reps} {got['best']:.3f}  median {got['median']:.3f}  "
              f"(target: median >= {TARGET})")
        like = fast_mode_ratio(runs)
        if like:
            print(f"fast mode only    : median ratio {like[0]:.3f} ({like[1]} probe, {like[2]} fio runs); the runs "
                  f"split into two modes, so the medians above mix them")
        return 0 if got["median"] >= TARGET else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
