"""Experiment A's Python tasks: one rank of `mpirun -n N python -m climio.bench.parallel_read.task ...`.

The Python twin of `climio-pario-read --mode tasks` (csrc/pario/read.c) for the stacks the C
program does not have (netCDF4-python, h5py), with the same command line and the same record:
each rank reads its own file (--files with %d = rank) or its contiguous piece of one shared file
(--split) sequentially in --buffer slices, with no communication between the two barriers that
frame the read. mpi4py is used only outside the timed region (barriers, the final gather).

Before every repetition the file's first rank evicts the whole file, then every rank evicts its own
byte range (posix_fadvise DONTNEED) and checks it with mincore; every value is compared with the
generator (element i holds float(i)); rank 0 prints one record per repetition.
"""

import argparse
import ctypes
import ctypes.util
import mmap
import os
import socket
import sys
import time

import numpy as np

TASK_PROG = "climio-parallel-read-task"
PY_TASK_STACKS = ("netcdf4-python", "h5py")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


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


def evict_range(path, off, length) -> float:
    """posix_fadvise(DONTNEED) on [off, off+length), then the resident fraction of its pages."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, off, length, os.POSIX_FADV_DONTNEED)
        size = os.fstat(fd).st_size
        if size == 0 or length == 0:
            return 0.0
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap failed on {path}")
        try:
            a = off // _PAGE * _PAGE
            b = min(off + length, size)
            npages = (b - a + _PAGE - 1) // _PAGE
            vec = (ctypes.c_ubyte * npages)()
            if _libc.mincore(addr + a, b - a, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
            return int((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) / npages
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


class PieceReader:
    def __init__(self, stack, path, var):
        self.stack = stack
        if stack == "netcdf4-python":
            import netCDF4
            self.f = netCDF4.Dataset(path, "r")
            self.v = self.f.variables[var]
            self.v.set_auto_mask(False)
        else:
            import h5py
            self.f = h5py.File(path, "r")
            self.v = self.f[var]

    def read(self, first, count):
        return self.v[first:first + count]

    def close(self):
        self.f.close()


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

    from ...measure.series import StreamChecksum
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
    for rep in range(args.reps):
        if not args.split or rank == 0:
            from ...cache import evict
            evict(path)
        comm.Barrier()
        resident = evict_range(path, off0 + lo * 8, (hi - lo) * 8)
        ck = StreamChecksum()
        mism = got = ops = 0
        comm.Barrier()
        t0 = time.perf_counter()
        epoch0 = time.time()
        try:
            rd = PieceReader(args.stack, path, args.var)
            t1 = time.perf_counter()
            for first in range(lo, hi, belems):
                n = min(belems, hi - first)
                data = np.ascontiguousarray(rd.read(first, n), dtype="<f8")
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
        errs = comm.allgather(err)
        if any(errs):
            return fail(rank, next(e for e in errs if e))
        mine = dict(open=t1 - t0, read=t2 - t1, close=t3 - t2, total=t3 - t0, bytes=got, ops=ops,
                    checksum=ck.hexdigest(), mismatches=mism, resident=resident, start=epoch0, end=epoch0 + t3 - t0)
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
    from .summary import host_layout, task_rates
    nodes, per_node, host_idx = host_layout(hosts)
    total = [p["total"] for p in per]
    nbytes = sum(p["bytes"] for p in per)
    rates = task_rates(nbytes, total)
    cold = [p["resident"] <= COLD_THRESHOLD for p in per]
    return {
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
                    "mismatches": sum(p["mismatches"] for p in per)},
        "cache": {"state": "cold" if all(cold) else "warm", "requested": "cold",
                  "method": "posix_fadvise(DONTNEED) of each rank's byte ranges, checked with mincore",
                  "resident_fraction_max": max(p["resident"] for p in per),
                  "per_rank": ["cold" if c else "warm" for c in cold],
                  "resident_fraction": [p["resident"] for p in per]},
        "rep": rep, "status": "ok", "time": now_iso(), "platform_id": args.platform_id, "schema": SCHEMA_VERSION,
    }


def fail(rank, msg) -> int:
    if rank == 0:
        sys.stderr.write(f"{TASK_PROG}: error: {msg}\n")
        sys.stderr.flush()
    return 2


if __name__ == "__main__":
    sys.exit(main())
