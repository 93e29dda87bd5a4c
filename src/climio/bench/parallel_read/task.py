"""Experiment A's Python tasks: one rank of `mpirun -n N python -m climio.bench.parallel_read.task ...`.

The Python twin of `climio-pario-read --mode tasks` (csrc/pario/read.c) for the stacks the C
program does not have (netCDF4-python, h5py), with the same command line and the same record:
each rank reads its own file (--files with %d = rank) or its contiguous piece of one shared file
(--split) sequentially in --buffer slices, with no communication between the two barriers that
frame the read. mpi4py is used only outside the timed region (barriers, the final gather).

The readers are climio.stacks' (the open is timed: it is part of a task's time, as in read.c).
Before every repetition every rank evicts its file (climio.cache: posix_fadvise DONTNEED on its
node) and checks its own byte range with mincore; the bytes each rank fetched from storage from
open to close (/proc/self/io) are summed for the storage-share check; every value is compared with
the generator (element i holds float(i)); rank 0 prints one record per repetition.
"""

import argparse
import os
import socket
import sys
import time

import numpy as np

TASK_PROG = "climio-parallel-read-task"
PY_TASK_STACKS = ("netcdf4-python", "h5py")


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=TASK_PROG)
    ap.add_argument("--stack", choices=PY_TASK_STACKS, required=True)
    ap.add_argument("--files", required=True)
    ap.add_argument("--split", action="store_true")
    ap.add_argument("--file-set", default=None)
    ap.add_argument("--var", default="var")
    ap.add_argument("--buffer", type=int, default=1 << 20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--platform-id", default="")
    ap.add_argument("--stall", default=None, help="RANK:SECONDS")
    return ap.parse_args(argv)


def piece(elems, rank, size):
    """[lo, hi) of rank's contiguous piece of `elems` elements (read.c's plan_make)."""
    return elems * rank // size, elems * (rank + 1) // size


def data_offset(path, var) -> int:
    """Byte offset of the contiguous variable in its netCDF-4/HDF5 file."""
    import h5py
    with h5py.File(path, "r") as f:
        off = f[var].id.get_offset()
    if off is None:
        raise ValueError(f"{path}: variable {var} is not contiguous")
    return int(off)


def open_reader(stack, path, var):
    """The stacks module's reader of `stack`, open on `var` (imported before the loop: not timed)."""
    from ...stacks import STACKS
    reader = STACKS[stack]()
    reader.open(path, var)
    if stack == "netcdf4-python":
        reader.var.set_auto_mask(False)   # plain arrays: the generator's values are never the fill value
    return reader


def library(stack) -> str:
    if stack == "netcdf4-python":
        import netCDF4
        return f"netCDF4-python {netCDF4.__version__} (netCDF-C {netCDF4.__netcdf4libversion__.split()[0]})"
    import h5py
    return f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version})"


def elements(stack, path, var) -> int:
    import h5py
    with h5py.File(path, "r") as f:
        return int(f[var].shape[0])


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    from mpi4py import MPI

    from ...cache import evict, resident_fraction
    from ...measure.series import StreamChecksum, storage_read_bytes
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    path = args.files if args.split or "%d" not in args.files else args.files.replace("%d", str(rank))
    err = ""
    try:
        elems = elements(args.stack, path, args.var)
        off0 = data_offset(path, args.var)
        fbytes = os.path.getsize(path)
    except Exception as exc:  # noqa: BLE001 (one line, agreed below)
        err, elems, off0, fbytes = f"{path}: {exc}", 0, 0, 0
    errs = comm.allgather(err)
    if any(errs):
        return fail(rank, next(e for e in errs if e))
    if args.split and elems < size:
        return fail(rank, f"more ranks than the file can split: {path} has {elems} elements for {size} ranks")
    lo, hi = piece(elems, rank, size) if args.split else (0, elems)
    belems = max(1, args.buffer // 8)
    host = socket.gethostname()
    hosts = comm.gather(host, root=0)
    file_bytes = fbytes if args.split else comm.allreduce(fbytes)
    stall = None
    if args.stall:
        r, s = args.stall.split(":")
        stall = (int(r), float(s))
    lib = library(args.stack)
    # What the readers import on first use (climio.stacks ~40 ms, hdf5plugin ~90 ms), imported here:
    # not inside the first repetition's timed open.
    from ... import stacks  # noqa: F401
    if args.stack == "h5py":
        import hdf5plugin  # noqa: F401
    for rep in range(args.reps):
        # A shared file's first rank writes it back and evicts it first: DONTNEED skips pages still
        # under writeback, so ranks evicting one file at once saw each other's dirty pages resident
        # (a "warm" cold record under load). Then every rank evicts it (its node's page cache) and
        # checks its own byte range with mincore; nothing is read before the second barrier.
        if not args.split or rank == 0:
            evict(path)
        comm.Barrier()
        evict(path)
        resident = resident_fraction(path, off0 + lo * 8, (hi - lo) * 8)
        ck = StreamChecksum()
        mism = got = ops = 0
        io0 = storage_read_bytes()
        comm.Barrier()
        t0 = time.perf_counter()
        epoch0 = time.time()
        try:
            rd = open_reader(args.stack, path, args.var)
            t1 = time.perf_counter()
            for first in range(lo, hi, belems):
                n = min(belems, hi - first)
                data = np.ascontiguousarray(rd.read_bytes(first * 8, n * 8), dtype="<f8")
                mism += int(np.count_nonzero(data != np.arange(first, first + n, dtype=np.float64)))
                ck.update(data)
                got += data.nbytes
                ops += 1
            if stall and stall[0] == rank:
                time.sleep(stall[1])
            t2 = time.perf_counter()
            rd.close()
            t3 = time.perf_counter()
            err = ""
        except Exception as exc:  # noqa: BLE001
            err = f"{args.stack} read of {path} failed: {exc}"
            t1 = t2 = t3 = time.perf_counter()
        io1 = storage_read_bytes()
        errs = comm.allgather(err)
        if any(errs):
            return fail(rank, next(e for e in errs if e))
        mine = dict(open=t1 - t0, read=t2 - t1, close=t3 - t2, total=t3 - t0, bytes=got, ops=ops,
                    checksum=ck.hexdigest(), mismatches=mism, resident=resident, start=epoch0, end=epoch0 + t3 - t0,
                    storage=None if io0 is None or io1 is None else io1 - io0)
        allr = comm.gather(mine, root=0)
        if rank == 0:
            rec = make_record(args, allr, hosts, lib, elems, file_bytes, size, rep)
            import json
            sys.stdout.write(json.dumps(rec) + "\n")
            sys.stdout.flush()
    return 0


def make_record(args, per, hosts, lib, elems, file_bytes, size, rep) -> dict:
    """The record of read.c's emit(), from the gathered per-rank outcomes."""
    from ...cache import COLD_THRESHOLD
    from ...records import SCHEMA_VERSION, now_iso
    from .run import check_storage
    from .summary import host_layout, task_rates
    nodes, per_node, host_idx = host_layout(hosts)
    total = [p["total"] for p in per]
    nbytes = sum(p["bytes"] for p in per)
    rates = task_rates(nbytes, total)
    cold = [p["resident"] <= COLD_THRESHOLD for p in per]
    storage = [p.get("storage") for p in per]
    return check_storage({
        "study": "parallel-read",
        "params": {"experiment": "tasks", "stack": args.stack, "pattern": "sequential", "access": "independent",
                   "collective": False, "file_set": args.file_set or ("shared" if args.split else "per-task"),
                   "files": 1 if args.split else size, "ranks": size, "nodes": nodes, "tasks_per_node": per_node,
                   "hosts": hosts, "buffer_bytes": args.buffer, "file_bytes": file_bytes, "elements": elems,
                   "dtype": "float64", "library": lib, "hints_requested": {}, "hints": {}},
        "metrics": {"bytes": nbytes, "wall_s": max(p["end"] for p in per) - min(p["start"] for p in per),
                    "task_max_s": max(total), "task_mean_s": sum(total) / len(total),
                    "rate_MBps": rates["slowest_MBps"], "rate_mean_task_MBps": rates["mean_task_MBps"],
                    "rate_slowest_task_MBps": rates["slowest_MBps"],
                    "epoch_start_us": int(min(p["start"] for p in per) * 1e6),
                    "epoch_end_us": int(max(p["end"] for p in per) * 1e6),
                    "per_rank": {k: [p[k] for p in per] for k in ("open", "read", "close", "total", "bytes", "ops",
                                                                   "checksum")}
                    | {"rate_MBps": rates["per_task_MBps"], "host": host_idx},
                    "imbalance": max(total) / (sum(total) / len(total)),
                    "verified": all(p["mismatches"] == 0 for p in per),
                    "mismatches": sum(p["mismatches"] for p in per)}
        | ({"storage_read_bytes": sum(storage)} if None not in storage else {}),
        "cache": {"state": "cold" if all(cold) else "warm", "requested": "cold",
                  "method": "posix_fadvise(DONTNEED) of each rank's byte ranges, checked with mincore",
                  "resident_fraction_max": max(p["resident"] for p in per),
                  "per_rank": ["cold" if c else "warm" for c in cold],
                  "resident_fraction": [p["resident"] for p in per]},
        "rep": rep, "status": "ok", "time": now_iso(), "platform_id": args.platform_id, "schema": SCHEMA_VERSION,
    })


def fail(rank, msg) -> int:
    if rank == 0:
        sys.stderr.write(f"{TASK_PROG}: error: {msg}\n")
        sys.stderr.flush()
    return 2


if __name__ == "__main__":
    sys.exit(main())
