"""What the LD_PRELOAD tracer costs: a tiny C workload with and without libclimio-trace.so.

    .venv/bin/python bench/trace_overhead.py [--n-small 1000000] [--n-large 4000] [--reps 5]
                                             [--file-mib 64] [--lib PATH] [--dir DIR]

The workload (compiled here with cc) opens a file and does N preads of S bytes at offsets
cycling through it: 1,000,000 x 4 KiB and 4,000 x 1 MiB. The file is read once before the runs,
so every read is a page-cache hit: the system call is as short as it gets and the tracer's share
is the largest it can be. Each case runs plain and traced alternately (so drift hits both), and
the best of --reps wall times is compared; the traced run writes its events to a fresh trace
directory (every 4 MiB, as in real use), and the process wall time includes that. The CPU time
(user + sys) of the workload is compared too: it is what the tracer adds, less disturbed by other
load than the wall time. Targets: ratio <= 1.05 for 4 KiB, <= 1.01 for 1 MiB. Prints both ratios; exit 0.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

WORKLOAD = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[2]), s = atol(argv[3]);
    int fd = open(argv[1], O_RDONLY);
    off_t size = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)s);
    long slots = size / s;
    if (fd < 0 || !buf || slots < 1) return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        if (pread(fd, buf, (size_t)s, (i % slots) * s) != s) return 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.9f\n", (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec));
    return 0;
}
"""


def find_lib(arg):
    if arg:
        return os.path.abspath(arg)
    from climio import native
    return native.library("climio-trace")


def run(exe, path, n, size, lib=None, trace_dir=None):
    """(process wall s, read-loop wall s, process cpu s = user + sys) of one run."""
    env = dict(os.environ)
    if lib:
        shutil.rmtree(trace_dir, ignore_errors=True)
        env.update(LD_PRELOAD=lib, CLIMIO_TRACE_DIR=trace_dir)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([exe, path, str(n), str(size)], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"workload failed ({out.returncode}): {out.stderr.strip()}")
    return wall, float(out.stdout), (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-small", type=int, default=1_000_000, help="number of 4 KiB preads")
    ap.add_argument("--n-large", type=int, default=4000, help="number of 1 MiB preads")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--file-mib", type=int, default=64)
    ap.add_argument("--lib", help="libclimio-trace.so (default: the installed one)")
    ap.add_argument("--dir", help="directory for the data file and traces (default: a temporary one)")
    a = ap.parse_args()
    lib = find_lib(a.lib)
    work = tempfile.mkdtemp(prefix="climio-trace-bench-", dir=a.dir)
    try:
        exe = os.path.join(work, "workload")
        src = exe + ".c"
        with open(src, "w") as f:
            f.write(WORKLOAD)
        cc = shutil.which("cc") or sys.exit("cc not found")
        subprocess.run([cc, "-O2", "-o", exe, src], check=True, timeout=120)
        path = os.path.join(work, "data.bin")
        with open(path, "wb") as f:
            for _ in range(a.file_mib):
                f.write(os.urandom(1 << 20))
        with open(path, "rb") as f:   # warm: every read below is a page-cache hit
            while f.read(1 << 24):
                pass
        trace_dir = os.path.join(work, "trace")
        print(f"tracer: {lib}")
        for label, n, size, target in (("4 KiB", a.n_small, 4096, 1.05), ("1 MiB", a.n_large, 1 << 20, 1.01)):
            plain, traced = [], []
            run(exe, path, min(n, 1000), size)   # warm-up (binary, file, CPU frequency)
            for _ in range(a.reps):
                plain.append(run(exe, path, n, size))
                traced.append(run(exe, path, n, size, lib, trace_dir))
            p_wall, t_wall = min(r[0] for r in plain), min(r[0] for r in traced)
            p_loop, t_loop = min(r[1] for r in plain), min(r[1] for r in traced)
            p_cpu, t_cpu = min(r[2] for r in plain), min(r[2] for r in traced)
            events = os.path.getsize(next(os.path.join(trace_dir, x) for x in os.listdir(trace_dir)
                                          if x.endswith(".events"))) // 64
            print(f"{n} x {label} preads: plain {p_wall:.4f} s, traced {t_wall:.4f} s "
                  f"({events} events), wall ratio {t_wall / p_wall:.3f} (target <= {target}); "
                  f"read-loop ratio {t_loop / p_loop:.3f}; cpu ratio {t_cpu / p_cpu:.3f}; "
                  f"+{(t_wall - p_wall) / n * 1e9:.0f} ns wall, +{(t_cpu - p_cpu) / n * 1e9:.0f} ns cpu per call")
        print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
              "(wall ratios need an otherwise idle machine)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
