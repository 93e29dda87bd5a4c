"""Coverage-guided fuzzing (atheris, libFuzzer) of climio's own pure-Python parsers (issue 38 item 2).

bench/fuzz_inputs.py mutates whole inputs blindly through the commands; here libFuzzer steers the
bytes by the branches they reach in the code climio wrote itself, in-process:

  header    climio.dataset.integrity.problem_of: the netCDF-3 header walk and the HDF5 superblock
            check every command runs first (seeded with CDF-1/2/5 and netCDF-4 files)
  trace     climio.trace.reader.read_trace: a climio trace's .events/.strings/.aux files (the
            fuzzed bytes replace the largest .events file of a real trace)

An outcome is a finding when it is neither a return nor a climio error (ClimioError, one line for
the user): any other exception, or a hang past libFuzzer's -timeout. atheris is an optional bench
dependency (pip install atheris: a manylinux wheel with libFuzzer built in, no clang needed).

    python bench/fuzz_atheris.py header --seconds 120 [--dir DIR]
    python bench/fuzz_atheris.py trace --seconds 120
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_inputs as F  # noqa: E402  (the seeds: written by the real libraries)


def _writes_then(path: Path, call):
    """One fuzz input: `data` written to `path`, then `call()`; a ClimioError (one line) is an answer."""
    from climio.base.errors import ClimioError

    def one(data: bytes):
        path.write_bytes(data)
        try:
            call()
        except ClimioError:
            pass
    return one


def _target(name: str, seeds: dict, scratch: Path):
    if name == "header":
        from climio.dataset.integrity import problem_of
        path = scratch / "x.nc"
        return _writes_then(path, lambda: problem_of(path))
    if name == "trace":
        from climio.trace.reader import read_trace
        trace = scratch / "trace"
        shutil.copytree(seeds["trace"], trace)
        ev = max(trace.glob("*.events"), key=lambda p: p.stat().st_size)
        return _writes_then(ev, lambda: read_trace(trace))
    raise SystemExit(f"unknown target {name}")


def _corpus(name: str, seeds: dict, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    if name == "header":
        for fmt in ("cdf1", "cdf2", "cdf5", "nc4"):
            data = seeds[fmt].read_bytes()
            (where / fmt).write_bytes(data[:4096])
    else:
        ev = max(seeds["trace"].glob("*.events"), key=lambda p: p.stat().st_size)
        (where / "events").write_bytes(ev.read_bytes())
    return where


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", choices=("header", "trace"))
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--dir", default="")
    a = ap.parse_args(argv)
    try:
        import atheris
    except ImportError:
        raise SystemExit("atheris is not installed (pip install atheris)") from None
    base = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="climio-atheris-"))
    formats = ("cdf1", "cdf2", "cdf5", "nc4") if a.target == "header" else ("trace", "cdf1")
    seeds = F.build_seeds(base / "seeds", formats)
    corpus = _corpus(a.target, seeds, base / f"corpus-{a.target}")
    one = _target(a.target, seeds, Path(tempfile.mkdtemp(dir=base)))
    os.environ.setdefault("CLIMIO_ISOLATE", "off")
    print(f"fuzzing {a.target} for {a.seconds} s; findings (crash-*) go to {base}", flush=True)
    atheris.instrument_all()
    atheris.Setup([sys.argv[0], str(corpus), f"-max_total_time={a.seconds}", "-timeout=20", "-rss_limit_mb=3072",
                   f"-artifact_prefix={base}/", "-print_final_stats=1"], one)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
