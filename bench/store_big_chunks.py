"""The object-store model on reads of large chunks, as a user's are (0.25 to 4 MiB), where the
CPU of moving the bytes through the stack (the client's buffers, zarr's output copy) shows; the
store sweep (`climio bench predict --store`) draws arrays of a few MB whose chunks are KiB.

Starts climio's own server (SeaweedFS behind Toxiproxy), runs `climio calibrate --store --quick`
at the latency (its profile in a temporary CLIMIO_PROFILE_DIR), writes float32 [64,8,X] arrays
(time, lat, lon) with chunks [16,1,X], plain and in shards [64,1,X], uncompressed and zstd3, and
runs `climio predict s3://... --read 64,8,X --stack S --check` for both Zarr stacks: the whole
array in one read, measured cold by the command itself.

    .venv/bin/python bench/store_big_chunks.py [--latency 0] [--x 4096,16384,65536] [--reps 3]

Prints a line per configuration (predicted, measured, error max(p/m, m/p)) and their median and max.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

import numpy as np

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def _write(endpoint, url, x, shards, codec):
    import zarr
    from zarr.storage import ObjectStore

    from climio.data.zarr_writer import zarr_codecs
    from climio.dataset.options import parse_compression
    from climio.stores.endpoint import parse_s3_url
    u = parse_s3_url(url)
    root = zarr.open_group(ObjectStore(endpoint.obstore(u.bucket, u.key)), mode="w", zarr_format=3)
    shape = (64, 8, x)
    a = root.create_array("v", shape=shape, chunks=(16, 1, x), shards=(64, 1, x) if shards else None, dtype="f4",
                          fill_value=0.0, dimension_names=["time", "lat", "lon"],
                          **zarr_codecs(parse_compression(codec) if codec != "none" else None, 4))
    t = np.arange(64, dtype="f4")[:, None, None]
    a[...] = (np.sin(t / 9) + np.cos(np.arange(x, dtype="f4") / 50)[None, None, :]
              + np.random.default_rng(x).normal(0, 0.05, shape)).astype("f4")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.0, help="injected round trip, ms")
    ap.add_argument("--x", default="4096,16384,65536", help="lon sizes X: a chunk [16,1,X] is 64 X bytes")
    ap.add_argument("--codecs", default="none,zstd3")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    from climio.stores.server import S3Server
    errors = []
    with tempfile.TemporaryDirectory(prefix="climio-bigchunks-") as tmp, S3Server(data_dir=tmp) as s3:
        s3.set_latency(a.latency)
        env = {**os.environ, **s3.env(), "CLIMIO_PROFILE_DIR": str(Path(tmp) / "profiles")}
        cal = subprocess.run([CLIMIO, "calibrate", "--store", "s3://climio/calib", "--quick", "-o", str(Path(tmp) / "cal")],
                             env=env, capture_output=True, text=True)
        if cal.returncode:
            print(cal.stderr[-2000:])
            return 1
        print("\n".join(line for line in cal.stdout.splitlines() if "CPU per GET" in line or "GET latency" in line))
        for x in (int(v) for v in a.x.split(",")):
            for shards in (False, True):
                for codec in a.codecs.split(","):
                    url = f"s3://climio/big/x{x}-{'sh' if shards else 'plain'}-{codec}.zarr"
                    _write(s3.endpoint, url, x, shards, codec)
                    for stack in ("zarr-obstore", "zarr-fsspec"):
                        out = subprocess.run([CLIMIO, "predict", url, "--var", "v", "--read", f"64,8,{x}", "--stack", stack,
                                              "--check", "--reps", str(a.reps)], env=env, capture_output=True, text=True)
                        m = re.search(r"predicted ([0-9.]+) s .*measured ([0-9.]+) s", out.stdout)
                        if not m:
                            print(f"{url} {stack}: no figures ({out.returncode}) {out.stderr.strip()[-300:]}")
                            continue
                        p, t = float(m.group(1)), float(m.group(2))
                        errors.append(max(p / t, t / p))
                        print(f"chunk {16 * x * 4 >> 10} KiB {'shards' if shards else 'plain '} {codec:6s} {stack:13s} "
                              f"{a.latency:g} ms: predicted {p:.3f} s, measured {t:.3f} s ({p / t:.2f}x)", flush=True)
    if errors:
        print(f"{len(errors)} configurations: median error {median(errors):.2f}x, max {max(errors):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
