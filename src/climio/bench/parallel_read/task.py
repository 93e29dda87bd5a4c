"""Experiment A's Python tasks: one rank of `mpirun -n N python -m climio.bench.parallel_read.task ...`.

The Python twin of `climio-pario --op read --mode tasks` (csrc/pario/read.c) for the stacks the C
program does not have (netCDF4-python, h5py), with the same command line and the same record:
each rank reads its own file (--files with %d = rank) or its contiguous piece of one shared file
(--split) sequentially in --buffer slices, with no communication between the two barriers that
frame the read. mpi4py is used only outside the timed region (barriers, the final gather).

The readers are climio.measure.stacks' (the open is timed: it is part of a task's time, as in read.c).
Every repetition is one of measure.tasks.rank_rep: every rank evicts its file (posix_fadvise
DONTNEED on its node) and checks its own byte range with mincore; the bytes each rank fetched from
storage from open to close (/proc/self/io) are summed for the storage-share check; every value is
compared with the generator (element i holds float(i)); rank 0 prints one record per repetition
(run.task_record, the Dask path's too).
"""

import argparse
import json
import os
import socket
import sys
import time

import numpy as np

TASK_PROG = "climio-parallel-read-task"
PY_TASK_STACKS = ("netcdf4-python", "h5py")
METHOD = "posix_fadvise(DONTNEED) of each rank's byte ranges, checked with mincore"


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
    from climio.measure.stacks import STACKS
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


def piece_reader(stack, path, var, lo, hi, belems, stall_s, host):
    """A rank's work: open, read elements [lo, hi) in buffers of `belems` (each checked against the
    generator), sleep `stall_s` (--stall), close; returns the rank's outcome."""
    from ...measure.series import StreamChecksum

    def work() -> dict:
        ck = StreamChecksum()
        mism = got = ops = 0
        t0 = time.perf_counter()
        rd = open_reader(stack, path, var)
        t1 = time.perf_counter()
        for first in range(lo, hi, belems):
            n = min(belems, hi - first)
            data = np.ascontiguousarray(rd.read_bytes(first * 8, n * 8), dtype="<f8")
            mism += int(np.count_nonzero(data != np.arange(first, first + n, dtype=np.float64)))
            ck.update(data)
            got += data.nbytes
            ops += 1
        if stall_s:
            time.sleep(stall_s)
        t2 = time.perf_counter()
        rd.close()
        t3 = time.perf_counter()
        return dict(open=t1 - t0, read=t2 - t1, close=t3 - t2, bytes=got, ops=ops, checksum=ck.hexdigest(),
                    mismatches=mism, host=host)
    return work


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    from mpi4py import MPI

    from ...measure.tasks import rank_rep
    from .run import task_record
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
    host = socket.gethostname()
    file_bytes = fbytes if args.split else comm.allreduce(fbytes)
    stall = 0.0
    if args.stall:
        r, s = args.stall.split(":")
        stall = float(s) if int(r) == rank else 0.0
    lib = library(args.stack)
    # What the readers import on first use (climio.measure.stacks ~40 ms, hdf5plugin ~90 ms), imported here:
    # not inside the first repetition's timed open.
    from climio.measure import stacks  # noqa: F401
    if args.stack == "h5py":
        import hdf5plugin  # noqa: F401

    work = piece_reader(args.stack, path, args.var, lo, hi, max(1, args.buffer // 8), stall, host)
    params = {"experiment": "tasks", "stack": args.stack, "pattern": "sequential", "access": "independent",
              "collective": False, "file_set": args.file_set or ("shared" if args.split else "per-task"),
              "files": 1 if args.split else size, "ranks": size, "buffer_bytes": args.buffer,
              "file_bytes": file_bytes, "elements": elems, "dtype": "float64", "library": lib}
    for rep in range(args.reps):
        per, err = rank_rep(comm, path, (off0 + lo * 8, (hi - lo) * 8), args.split, work,
                            f"{args.stack} read of {path} failed: ")
        if err:
            return fail(rank, err)
        if rank == 0:
            rec = task_record(params, per, rep, args.platform_id, METHOD)
            sys.stdout.write(json.dumps(rec) + "\n")
            sys.stdout.flush()
    return 0


def fail(rank, msg) -> int:
    if rank == 0:
        sys.stderr.write(f"{TASK_PROG}: error: {msg}\n")
        sys.stderr.flush()
    return 2


if __name__ == "__main__":
    sys.exit(main())
