"""SIGKILL of `climio rechunk` S3 -> S3 at seeded points, each followed by --resume (itself killed at
the next point), the last --resume left to finish: the output must equal a clean run's, object for
object, and no zarr.json may appear under the final name before the end.

    .venv/bin/python bench/rechunk_s3_kill_points.py [--points 20] [--seed 37] [--latency 10]

The case is tests/test_rechunk_s3_faults.py's ([16,8,32,64] float32 -> chunks [16,1,4,8], zstd1,
512 chunk objects, --max-mem 256KiB, 2 workers), on the bench's own SeaweedFS; a kill point is
a number of chunk objects listed (straight from the server) when the command's process group gets
SIGKILL (a point already passed kills the next run during its start-up). Prints, per point, the
objects listed at the kill and the blocks that run kept.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNKS = 512


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--latency", type=float, default=10)
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-kill-"))
    try:
        _main(a, tmp)
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def _main(a, tmp):  # long: set-up, the runs and the table in one place, read top to bottom
    from climio.data.writer import write_4d
    from climio.stores.chunks import ObjectChunks
    from climio.stores.server import S3Server
    climio = str(Path(sys.executable).with_name("climio"))
    with S3Server(data_dir=tmp / "s3") as s3:
        env = {**os.environ, **s3.env()}
        src = tmp / "in.nc"
        write_4d(src, [16, 8, 32, 64], chunks=[1, 1, 32, 64], dtype="f4")
        subprocess.run([climio, "rechunk", src, "s3://climio/k/in.zarr", "-c", "ta:1,1,32,64", "-j", "1"],
                       env={**os.environ, **s3.env(direct=True)}, check=True, capture_output=True)
        s3.set_latency(a.latency)

        def argv(name, *extra):
            return [climio, "rechunk", "s3://climio/k/in.zarr", f"s3://climio/k/{name}", "-c", "ta:16,1,4,8",
                    "--compression", "zstd1", "--max-mem", "256KiB", "-j", "2", "--tmp", str(tmp), "--json", *extra]

        def objs(name):
            return ObjectChunks(f"s3://climio/k/{name}", s3.direct_endpoint)

        def snapshot(name):
            o = objs(name)
            return {k: bytes(o.get(k)) for k in sorted(o.listing())}
        subprocess.run(argv("clean.zarr"), env=env, check=True, capture_output=True)
        ref = snapshot("clean.zarr")
        rng = random.Random(a.seed)
        points = sorted(rng.sample(range(CHUNKS // 20, CHUNKS * 19 // 20), a.points))
        extra, t0 = (), time.perf_counter()
        for i, n in enumerate(points, 1):
            p = subprocess.Popen(argv("killed.zarr", *extra), env=env, start_new_session=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while p.poll() is None and sum(k.startswith("ta/c/") for k in objs("killed.zarr").listing()) < n:
                time.sleep(0.05)
            finished = p.poll() is not None
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            listed = objs("killed.zarr").listing()
            kept = next((line for line in err.splitlines() if line.startswith("--resume:")), "")
            assert "zarr.json" not in listed, "metadata under the final name before the end"
            print(f"point {i:2d}: kill at >= {n:3d} chunk objects ({'ended first' if finished else 'killed'}); "
                  f"{sum(k.startswith('ta/c/') for k in listed)} listed; this run: "
                  f"{kept or ('fresh start' if i == 1 else 'killed during start-up (the point was already passed)')}",
                  flush=True)
            extra = ("--resume",)
        done = subprocess.run(argv("killed.zarr", "--resume"), env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        same = snapshot("killed.zarr") == ref
        print(f"final --resume: kept {summary['blocks_skipped']} blocks, {summary['retries']} retries; output "
              f"{'identical to' if same else 'DIFFERENT from'} the clean run ({len(ref)} objects); "
              f"{a.points} kill points in {time.perf_counter() - t0:.0f} s")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
