"""One Python layer's read-stack series in its own process (the Python twin of the C probes).

    python -m climio.bench.read_stack_worker --layer numpy --file F --buffers 512,4096 ...

Takes the probes' options (csrc/README.md) and prints the same records on stdout.
"""

import argparse
import json
import os
import sys

from .. import cache
from ..measure import Marker, timed_requests
from ..patterns import PATTERNS, StreamChecksum, plan
from ..records import make_record
from .read_stack import STUDY
from .read_stack_layers import ITEMSIZE, READERS, file_kind


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="read_stack_worker")
    ap.add_argument("--layer", required=True, choices=sorted(READERS))
    ap.add_argument("--file", required=True)
    ap.add_argument("--var", default="data")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--buffers", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", choices=("cold", "warm"), default="cold")
    ap.add_argument("--random-count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--max-ops", type=int, default=0)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--platform-id", default="")
    return ap.parse_args(argv)


def file_bytes_of(reader, layer, path) -> int:
    if file_kind(layer) == "bin":
        return os.path.getsize(path)
    return reader.var.shape[0] * ITEMSIZE


def run_config(reader, args, pattern, buffer, reads, marker, emit, base_params):
    """All reps of one (pattern, buffer); stops with one dnf record when over budget."""
    for rep in range(args.reps):
        cache_state = cache.prepare([args.file], args.cache)
        marker.mark("open", 0, rep)  # header reads of the open go to a phase of their own
        reader.open(args.file, args.var)
        marker.mark(pattern, buffer, rep)
        summer = StreamChecksum() if args.verify else None
        t, nbytes, ops = timed_requests(reads, lambda r: reader.read(int(r[0]), int(r[1])), args.budget, summer)
        finished = ops == len(reads)
        reader.close()
        metrics = {"bytes": nbytes, "ops": ops, **t.metrics()}
        if summer is not None:
            metrics["checksum"] = summer.hexdigest()
        params = dict(base_params, pattern=pattern, buffer_bytes=buffer,
                      planned_ops=len(reads), planned_bytes=int(reads[:, 1].sum()))
        if not finished:
            metrics.update(planned_bytes=params["planned_bytes"], budget_s=args.budget,
                           rate_bound_MBps=params["planned_bytes"] / args.budget / 1e6)
            emit(make_record(STUDY, params, metrics, cache_state, rep, "dnf", args.platform_id))
            return
        emit(make_record(STUDY, params, metrics, cache_state, rep, "ok", args.platform_id))


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    reader = READERS[args.layer]()
    try:
        reader.open(args.file, args.var)  # learn the size and library version; also fail early
    except (OSError, KeyError, IndexError) as exc:
        print(f"read_stack_worker: error: cannot read {args.var!r} from {args.file}: {exc}", file=sys.stderr)
        return 2
    fbytes = file_bytes_of(reader, args.layer, args.file)
    base = {"layer": args.layer, "file": os.path.abspath(args.file), "file_bytes": fbytes,
            "random_count": args.random_count, "seed": args.seed, "api": reader.api, "odirect": False,
            "library": reader.library(), "max_ops": args.max_ops}
    if file_kind(args.layer) == "nc":
        base["variable"] = args.var
    reader.close()

    def emit(rec):
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()

    marker = Marker()
    for pattern in args.patterns.split(","):
        for buffer in (int(b) for b in args.buffers.split(",")):
            reads = plan(pattern, fbytes, buffer, args.random_count, args.seed)
            if args.max_ops:
                reads = reads[: args.max_ops]
            run_config(reader, args, pattern, buffer, reads, marker, emit, base)
    marker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
