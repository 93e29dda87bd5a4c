"""`climio predict --check` on object storage, as a user runs it: the test server (SeaweedFS behind
Toxiproxy) at each latency, `climio calibrate --store` on it (the object-read calibration grid and
the stacks' measured concurrency), then Zarr stores of the chunking study's space (xy, xt and
block chunks, small chunks, whole-field chunks, shards over time), none used to calibrate, each
predicted and read with `climio predict s3://... --read xy --read xt --read xyt --check`.

    .venv/bin/python bench/object_predict_cli.py [--latency 0,20] [--reps 2]

Prints one line per configuration and the median / p90 / max error (max(p/m, m/p))."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from climio.data.zarr_writer import write_zarr_4d
from climio.stores.objects import upload
from climio.stores.server import S3Server

SHAPE = [12, 2, 32, 64]
LAYOUTS = [  # (name, chunks, shards)
    ("xy-planes", [1, 1, 32, 64], None), ("time-series", [12, 1, 1, 64], None), ("blocks", [12, 1, 16, 32], None),
    ("small", [1, 1, 8, 16], None), ("whole", [12, 2, 32, 64], None),
    ("xy-planes-sharded", [1, 1, 32, 64], [12, 1, 32, 64]), ("small-sharded", [1, 1, 8, 16], [12, 1, 8, 16]),
]
CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def run(*args):
    out = subprocess.run([CLIMIO, *map(str, args)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"climio {' '.join(map(str, args))}: {out.stderr.strip()[-2000:]}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", default="0,20")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    errors = []
    with tempfile.TemporaryDirectory() as tmp, S3Server(data_dir=Path(tmp) / "s3") as s3:
        os.environ.update(s3.env())
        os.environ["CLIMIO_PROFILE_DIR"] = str(Path(tmp) / "profiles")
        for name, chunks, shards in LAYOUTS:
            write_zarr_4d(Path(tmp) / f"{name}.zarr", SHAPE, chunks=chunks, shards=shards, dtype="f4")
            upload(s3.endpoint, Path(tmp) / f"{name}.zarr", "s3://climio/predict-check")
        for lat in [float(x) for x in a.latency.split(",")]:
            s3.set_latency(lat)
            run("calibrate", "--store", "s3://climio/calibration", "-o", Path(tmp) / f"cal-{lat:g}", "--force")
            for name, chunks, shards in LAYOUTS:
                got = json.loads(run("predict", f"s3://climio/predict-check/{name}.zarr", "--read", "xy", "--read", "xt",
                                     "--read", "xyt", "--check", "--reps", a.reps, "--json"))
                for r in got["reads"]:
                    errors.append(r["error"])
                    print(f"{lat:4g} ms {name:18s} {r['read']:4s} {r['gets']:5.0f} GETs  predicted {r['time_s']:.3f} s  "
                          f"measured {r['measured_s']:.3f} s  error {r['error']:.2f}x", flush=True)
        s3.set_latency(0)
    e = sorted(errors)
    print(f"{len(e)} configurations: median error {median(e):.2f}x, p90 {e[int(0.9 * (len(e) - 1))]:.2f}x, max {e[-1]:.2f}x")


if __name__ == "__main__":
    main()
