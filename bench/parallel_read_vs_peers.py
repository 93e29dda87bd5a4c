#!/usr/bin/env python3
"""climio's MPI-IO shared-file read against IOR and fio on the same cold bytes, in one run.

    .venv/bin/python bench/parallel_read_vs_peers.py [--ranks 2] [--size 1GiB] [--buffer 1MiB] [--reps 5] [--dir DIR]

One shared file of --size bytes, N = --ranks readers, rank r reading its contiguous r-th of N
pieces in --buffer requests (the sequential pattern of `climio parallel-read`'s experiment B):

  climio independent  climio-pario --op read --mode mpiio --backends mpiio --patterns sequential
  climio collective     --access independent,collective --reps 1 --keep (MPI_File_read_at /
                        MPI_File_read_at_all of one buffer per call, every value checked)
  IOR independent     ior -a MPIIO -r    -b SIZE/N -t BUFFER -s 1 -i 1 -k -o FILE
  IOR collective      ior -a MPIIO -r -c -b SIZE/N -t BUFFER -s 1 -i 1 -k -o FILE
  fio                 fio --numjobs=N --rw=read --bs=BUFFER --offset_increment=SIZE/N --size=SIZE/N
                          --invalidate=1 --direct=0 --ioengine=psync --readonly --group_reporting

All five read the file climio-pario --op read writes (raw MPI-IO backend: no header, float64 i at
element i), so they read the very same bytes at the same offsets with the same request size.
Cold: climio evicts the file and each rank's ranges itself and checks them with mincore (its
record says so per rank). IOR's -C/-e do not evict, so before every IOR and fio run this script
evicts the file (climio.machine.cache.evict: fsync + posix_fadvise DONTNEED) and checks with
climio.machine.cache.resident_fraction that at most 1 % is resident; fio's --invalidate=1 drops it again.

Rounds: climio-pario --op read writes the file afresh each round (it reads only files it wrote: its raw
MPI-IO layout lives in the process), waits --settle seconds, and reads it twice, each time cold,
independently and then collectively; only the second repetition counts. The three peer runs follow
in an order that rotates every round. Why the wait: without it, on this VM, one run in each round
read at about half speed, always the one 4-6 s after climio's write -- the second peer after climio
(rounds 3-9 of a 9-round run), or climio's own reads in the first rounds -- the virtual disk still
writing back the fresh gigabyte. The window moved with the write, not with the tool.

Rates (MB/s = 1e6 B/s), each = the whole file's bytes / one time for all ranks:
  climio: bytes / wall_s (first rank's open to last rank's close), the record's wall rate
  IOR:    its bandwidth, aggregate bytes / totalTime (first open to last close)
  fio:    io_bytes / the group's runtime (the slowest job; opens excluded)
Medians over the rounds and the ratios climio/IOR (independent, collective) and climio
independent/fio are printed last; target >= 0.9 for each. Next to each ratio of medians: the
median of the same-round ratios and the ratio of the best rounds (on a shared machine, where
other jobs' I/O makes single reads several times slower, the best round is each tool undisturbed;
the script says when a tool's rounds varied more than 1.5x).
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

from climio.machine import cache  # noqa: E402
from climio.base.errors import ClimioError  # noqa: E402
from climio.measure import probes  # noqa: E402
from climio.measure.mpi import Launcher, stream_mpi  # noqa: E402
from climio.dataset.options import parse_size  # noqa: E402

PROGRAM = probes.PARIO_READ
TARGET = 0.9
TOOLS = ("climio independent", "climio collective", "IOR independent", "IOR collective", "fio")
PEERS = ("IOR independent", "IOR collective", "fio")


class BenchError(RuntimeError):
    pass


def cold(path) -> float:
    """Evict the whole file and return its resident fraction; refuse to measure a warm file."""
    cache.evict(path)
    frac = cache.resident_fraction(path)
    if frac > cache.COLD_THRESHOLD:
        raise BenchError(f"could not evict {path}: {frac:.1%} of its pages stay resident")
    return frac


def climio_round(launcher, d, size, buffer, timeout, settle):
    """climio's independent and collective reads (the second of two cold repetitions each), `settle`
    seconds after its write."""
    recs = []
    argv = probes.pario_read_argv("mpiio", "--dir", d, "--size", size, "--buffer", buffer, "--backends", "mpiio",
                                  "--patterns", "sequential", "--access", "independent,collective", "--reps", 2,
                                  "--settle", settle, "--keep")
    stream_mpi(launcher, argv, recs.append)
    out = {}
    for r in recs:
        p, m = r["params"], r["metrics"]
        if r.get("status") != "ok" or not m.get("verified") or m.get("mismatches"):
            raise BenchError(f"{PROGRAM} {p.get('access')}: status {r.get('status')}, verified {m.get('verified')}")
        if r["cache"]["state"] != "cold":
            raise BenchError(f"{PROGRAM} {p['access']}: ranks' ranges were not cold {r['cache']['per_rank']}")
        if m["bytes"] != size:
            raise BenchError(f"{PROGRAM} {p['access']} read {m['bytes']} bytes, not {size}")
        if r.get("rep") != 1:          # the first cold read follows the write: not counted
            continue
        out[f"climio {p['access']}"] = {"MBps": m["bytes"] / m["wall_s"] / 1e6, "seconds": m["wall_s"],
                                        "headline_MBps": m["rate_MBps"],
                                        "resident": max(r["cache"]["resident_fraction"])}
    if set(out) != {"climio independent", "climio collective"}:
        raise BenchError(f"{PROGRAM} gave {sorted(out)} instead of one independent and one collective record")
    files = sorted(Path(d).glob("parallel-read-mpiio.*"))
    if len(files) != 1 or files[0].stat().st_size != size:
        raise BenchError(f"{PROGRAM} --keep left {[str(f) for f in files]} in {d}, not one file of {size} bytes")
    return out, str(files[0]), " ".join(launcher.command(argv))


def ior_run(ior, launcher, path, size, buffer, collective, timeout):
    resident = cold(path)
    argv = ["-a", "MPIIO", "-r", *(["-c"] if collective else []), "-b", str(size // launcher.ranks),
            "-t", str(buffer), "-s", "1", "-i", "1", "-k", "-o", path]
    results, cmd = run_ior(ior, launcher, argv, timeout=timeout)
    reads = [r for r in results if r.get("access") == "read"]
    if len(reads) != 1:
        raise BenchError(f"ior gave {len(reads)} read results, not 1")
    r = reads[0]
    return {"MBps": r["MBps"], "seconds": r["totalTime"], "resident": resident}, cmd


def fio_run(fio, path, size, buffer, ranks, timeout):
    resident = cold(path)
    part = size // ranks
    cmd = [fio, "--name=climio-peer", f"--filename={path}", "--readonly", f"--numjobs={ranks}", "--rw=read",
           f"--bs={buffer}", f"--offset_increment={part}", f"--size={part}", "--invalidate=1", "--direct=0",
           "--ioengine=psync", "--group_reporting", "--output-format=json"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"fio did not finish within {timeout} s") from None
    if out.returncode != 0:
        raise BenchError(f"fio failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    job = json.loads(out.stdout[out.stdout.index("{"):])["jobs"][0]["read"]
    if job["io_bytes"] != size:
        raise BenchError(f"fio read {job['io_bytes']} bytes, not {size}")
    secs = job["runtime"] / 1e3
    return {"MBps": job["io_bytes"] / secs / 1e6, "seconds": secs, "resident": resident}, " ".join(cmd)


def main():
    # long: the options, then the rounds (climio, then the peers in a rotating order) and the table, printed as they go
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks = IOR tasks = fio jobs (default 2)")
    ap.add_argument("--size", default="1GiB", help="bytes of the shared file (default 1GiB)")
    ap.add_argument("--buffer", default="1MiB", help="bytes per read request (default 1MiB)")
    ap.add_argument("--reps", type=int, default=5, help="rounds; each tool reads the file cold once a round")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds climio waits between writing the file and reading it (default 10): the virtual disk "
                         "writes back a fresh gigabyte for several seconds, and whichever run falls in that window "
                         "reads at half speed")
    ap.add_argument("--dir", default=None, help="directory for the shared file (default: a temporary one)")
    ap.add_argument("--ior", default=None, help="IOR executable (default: `ior` on PATH, else built once)")
    ap.add_argument("--json", default=None, help="also write every run as one JSON line to this file")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds any one run may take")
    a = ap.parse_args()
    try:
        size, buffer = parse_size(a.size), parse_size(a.buffer)
    except (ValueError, ClimioError) as exc:
        sys.exit(f"error: {exc}")
    if a.ranks < 1 or a.reps < 1:
        sys.exit("error: --ranks and --reps must be at least 1")
    if buffer <= 0 or buffer % 8:
        sys.exit(f"error: --buffer {buffer} must be a positive multiple of 8 (float64 elements)")
    if size % (a.ranks * buffer):
        sys.exit(f"error: --size {size} must be a multiple of ranks x buffer = {a.ranks * buffer} so every rank "
                 "reads whole requests of the same piece in every tool (IOR needs -b to be a multiple of -t)")
    fio = shutil.which("fio")
    if not fio:
        sys.exit("error: fio not found: run `make setup`")
    try:
        ior = ior_executable(a.ior)
    except PeerError as exc:
        sys.exit(f"error: {exc}")
    if a.dir and not os.path.isdir(a.dir):
        sys.exit(f"error: --dir {a.dir} is not a directory")
    d = tempfile.mkdtemp(prefix="climio-pread-peers-", dir=a.dir)
    free = shutil.disk_usage(d).free
    if free < size * 1.05:
        shutil.rmtree(d, ignore_errors=True)
        sys.exit(f"error: {d} has {free} bytes free, the shared file needs {size}")
    launcher = Launcher(ranks=a.ranks, timeout_s=a.timeout)
    rates = {t: [] for t in TOOLS}
    cmds = {}
    log = open(a.json, "w") if a.json else None
    print(f"{a.ranks} ranks, one shared file of {size} B ({size / a.ranks:.0f} B per rank), {buffer} B requests, "
          f"{a.reps} rounds, cold every read, dir {d}")
    print(f"IOR {ior}; fio {fio}")
    try:
        for rnd in range(a.reps):
            got, path, cmds["climio"] = climio_round(launcher, d, size, buffer, a.timeout, a.settle)
            order = PEERS[rnd % len(PEERS):] + PEERS[:rnd % len(PEERS)]
            for peer in order:
                if peer == "fio":
                    got[peer], cmds[peer] = fio_run(fio, path, size, buffer, a.ranks, a.timeout)
                else:
                    got[peer], cmds[peer] = ior_run(ior, launcher, path, size, buffer, peer.endswith("collective"),
                                                    a.timeout)
            for t in TOOLS:
                rates[t].append(got[t]["MBps"])
                if log:
                    log.write(json.dumps({"round": rnd, "tool": t, **got[t]}) + "\n")
            print(f"round {rnd + 1} (climio, then {', '.join(order)}): "
                  + "  ".join(f"{t} {got[t]['MBps']:.0f}" for t in TOOLS) + " MB/s")
    except (BenchError, PeerError, ClimioError, OSError) as exc:
        sys.exit(f"error: {exc}")
    finally:
        if log:
            log.close()
        shutil.rmtree(d, ignore_errors=True)
    print()
    for name, cmd in cmds.items():
        print(f"{name:7} {cmd}")
    print()
    med = {t: statistics.median(v) for t, v in rates.items()}
    for t in TOOLS:
        print(f"{t:19}: median {med[t]:8.1f}  min {min(rates[t]):8.1f}  max {max(rates[t]):8.1f} MB/s")
    print()
    ratios = [("climio independent / IOR independent", "climio independent", "IOR independent"),
              ("climio collective / IOR collective", "climio collective", "IOR collective"),
              ("climio independent / fio", "climio independent", "fio"),
              ("climio collective / fio", "climio collective", "fio")]
    for name, num, den in ratios:
        x = med[num] / med[den]
        per_round = statistics.median(n / m for n, m in zip(rates[num], rates[den]))
        verdict = (f"target >= {TARGET}: {'met' if x >= TARGET else 'NOT met'}" if name != ratios[-1][0]
                   else "for reference: fio has no collective mode")
        best = max(rates[num]) / max(rates[den])
        print(f"ratio {name}: {x:.2f} (median of per-round ratios {per_round:.2f}, of the best rounds {best:.2f}; "
              f"{verdict})")
    spread = {t: max(v) / min(v) for t, v in rates.items()}
    noisy = [t for t, x in spread.items() if x > 1.5]
    if noisy:
        print(f"note: {', '.join(noisy)} varied more than 1.5x between rounds (up to {max(spread.values()):.1f}x): "
              "something else was using the device or the cores; the medians carry that noise, the best rounds "
              "show each tool undisturbed, and more --reps or a quiet machine narrow it")


if __name__ == "__main__":
    main()
