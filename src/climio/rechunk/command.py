"""`climio rechunk IN OUT`: check, plan, define the output, convert, verify, rename."""

import errno
import os
import resource
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..data.writer import check_space, staged
from ..errors import DataError, DiskSpaceError, InputError, Interrupted
from ..units import format_size, rate_MBps
from . import execute, meta, spec
from .plan import Layout, Rates, plan_variable

# Default --max-mem: a quarter of the RAM, and no more than half of what is available now, so the
# converter shares a node politely.
DEFAULT_MEM_FRACTION = 0.25


@dataclass
class Options:
    chunk_specs: tuple = ()
    for_axes: Optional[str] = None
    balanced: bool = False
    chunk_bytes: Optional[int] = None
    contiguous: bool = False
    compression: Optional[str] = None
    variables: tuple = ()
    max_mem: Optional[int] = None
    workers: int = 1
    tmp_dir: Optional[str] = None
    verify: bool = False
    force: bool = False


def default_max_mem() -> int:
    info = {}
    with open("/proc/meminfo") as fh:
        for line in fh:
            key, val = line.split(":", 1)
            info[key] = int(val.split()[0]) * 1024
    return int(min(info["MemTotal"] * DEFAULT_MEM_FRACTION, info.get("MemAvailable", info["MemTotal"]) / 2))


def _check_paths(in_path: Path, out_path: Path, force: bool) -> None:
    if not in_path.is_file():
        raise DataError(f"input {in_path} does not exist or is not a file")
    if not os.access(in_path, os.R_OK):
        raise DataError(f"input {in_path} is not readable")
    if out_path.exists():
        if out_path.resolve() == in_path.resolve() or os.path.samefile(out_path, in_path):
            raise InputError(f"output {out_path} is the input file: choose another name")
        if not force:
            raise InputError(f"output {out_path} exists: remove it or pass --force")
    parent = out_path.parent
    if not parent.is_dir():
        raise DataError(f"output directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DataError(f"output directory {parent} is not writable")


def _stored_bytes(in_path: Path, infos) -> dict:
    """Bytes each variable occupies in the file (compressed size), for the cost model and disk check."""
    import h5py
    if not h5py.is_hdf5(in_path):
        return {v.path: v.nbytes for v in infos}
    with h5py.File(in_path, "r") as f:
        return {v.path: (f[v.hdf5_path].id.get_storage_size() if v.hdf5_path else v.nbytes) for v in infos}


def make_plans(infos, targets: dict, stored: dict, max_mem: int, workers: int, two_pass: bool) -> dict:
    plans = {}
    for v in infos:
        if v.path not in targets:
            continue
        t = targets[v.path]
        src = Layout(tuple(v.shape), v.itemsize, tuple(v.chunks) if v.chunks else None,
                     v.compression.codec != "none", stored.get(v.path))
        dst = Layout(tuple(v.shape), v.itemsize, tuple(t.chunks) if t.chunks else None, t.compression.codec != "none")
        try:
            plans[v.path] = plan_variable(src, dst, max_mem, workers, Rates(), allow_two_pass=two_pass)
        except InputError as exc:
            raise InputError(f"{v.path}: {exc}") from None
    return plans


def _estimate_output(in_path: Path, infos, targets, stored) -> int:
    """Bytes the output will take: the input's size, with each target variable at its uncompressed size
    when the target is uncompressed or the source was (an upper bound for compressed output)."""
    total = in_path.stat().st_size
    for v in infos:
        if v.path in targets:
            t = targets[v.path]
            compressed_both = t.compression.codec != "none" and v.compression.codec != "none"
            total += (stored[v.path] if compressed_both else v.nbytes) - stored[v.path]
    return total


@contextmanager
def _sigterm_raises():
    """SIGTERM unwinds like Ctrl-C, so temporary files are removed on the way out."""
    def handler(signum, frame):
        raise Interrupted("terminated")
    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _peak_rss(stats) -> int:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return own + sum(stats.worker_rss.get(pid, 0) for pid in stats.worker_rss if pid != os.getpid())


@dataclass
class Prepared:
    """What both the serial and the MPI path work from: the checked inputs and a plan per variable."""
    max_mem: int
    infos: list
    targets: dict
    stored: dict
    plans: dict

    def output_bytes(self, in_path: Path) -> int:
        return _estimate_output(in_path, self.infos, self.targets, self.stored)


def prepare(in_path: Path, out_path: Path, opts: Options, workers: int, two_pass: bool, say, force=False) -> Prepared:
    """Check paths and options, scan the input, resolve targets and plan every variable."""
    _check_paths(in_path, out_path, opts.force or force)
    if workers < 1:
        raise InputError("--workers must be at least 1")
    max_mem = opts.max_mem or default_max_mem()
    infos = meta.scan(in_path)
    targets = spec.resolve_targets(infos, list(opts.chunk_specs), opts.for_axes, opts.balanced, opts.chunk_bytes,
                                   opts.contiguous, opts.compression, list(opts.variables) or None,
                                   source=str(in_path))
    if not targets:
        say(f"no numeric data variable to re-lay out in {in_path}: copying its contents as they are")
    stored = _stored_bytes(in_path, infos)
    return Prepared(max_mem, infos, targets, stored, make_plans(infos, targets, stored, max_mem, workers, two_pass))


def say_plans(prep: Prepared, say) -> None:
    for path, p in prep.plans.items():  # one line each; --dry-run gives the whole plan
        say(f"{path} -> {_target_label(prep.targets[path])}: {p.describe()[0]}")


def rechunk(in_path, out_path, opts: Options, dry_run=False, progress_factory=None, say=print) -> dict:
    """Convert; return a summary dict (plans, seconds, bytes, peak RSS). `say` prints human lines."""
    in_path, out_path = Path(in_path), Path(out_path)
    prep = prepare(in_path, out_path, opts, opts.workers, two_pass=True, say=say, force=dry_run)
    max_mem, infos, targets, plans = prep.max_mem, prep.infos, prep.targets, prep.plans
    tmp_dir = Path(opts.tmp_dir) if opts.tmp_dir else out_path.parent
    summary = {"input": str(in_path), "output": str(out_path), "max_mem": max_mem, "workers": opts.workers,
               "plans": {k: p.to_dict() for k, p in plans.items()}}
    if dry_run:
        for path, p in plans.items():
            say(f"{path} -> {_target_label(targets[path])}")
            for line in p.describe():
                say("  " + line)
        return summary

    check_space([(out_path, prep.output_bytes(in_path))]
                + [(tmp_dir / ".climio-rechunk-intermediate", max((p.tmp_bytes for p in plans.values()), default=0))])
    say_plans(prep, say)
    total = sum(p.src.nbytes for plan in plans.values() for p in plan.passes)
    t0 = time.perf_counter()
    with _sigterm_raises():
        try:
            with staged(out_path) as (tmp,):
                bar = progress_factory(total) if progress_factory else None
                with (bar if bar else _null()):
                    out_paths = meta.define_output(in_path, tmp, targets, max_mem)
                    jobs = [execute.Job(v, targets[v.path], out_paths[v.path], plans[v.path])
                            for v in infos if v.path in plans]
                    stats = execute.convert(str(in_path), str(tmp), jobs, opts.workers, str(tmp_dir),
                                            bar.callback if bar else None)
                _check_written(tmp, jobs, opts.verify, max_mem, in_path)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: nothing written to {out_path} (temporary output removed)") from None
        except OSError as exc:  # HDF5 and the workers report I/O failures as OSError
            if exc.errno == errno.ENOSPC or "No space left" in str(exc):
                raise DiskSpaceError(f"disk full while writing {out_path}: nothing written "
                                     "(temporary output removed)") from None
            raise DataError(f"I/O error while converting: {exc}; nothing written to {out_path}") from None
        except Interrupted:
            raise Interrupted(f"terminated: nothing written to {out_path} (temporary output removed)") from None
    seconds = time.perf_counter() - t0
    nbytes = sum(j.info.nbytes for j in jobs)
    summary.update(seconds=seconds, bytes=nbytes, rate_MBps=rate_MBps(nbytes, seconds),
                   bytes_read=stats.bytes_read, chunks_decoded=stats.chunks_decoded,
                   peak_rss=_peak_rss(stats), verified=opts.verify)
    say(f"rechunked {len(jobs)} variable(s), {format_size(nbytes)} in {seconds:.1f} s "
        f"({summary['rate_MBps']:.0f} MB/s), peak RSS {format_size(summary['peak_rss'])}"
        f"{', verified' if opts.verify else ''} -> {out_path}")
    return summary


def _target_label(t) -> str:
    chunks = "[" + ",".join(map(str, t.chunks)) + "]" if t.chunks else "contiguous"
    return f"{chunks} {t.compression.label}"


@contextmanager
def _null():
    yield


def _check_written(tmp: Path, jobs, verify: bool, max_mem: int, in_path: Path) -> None:
    """Before the rename: the output must open and hold every variable at its full shape; --verify
    compares every value and all metadata."""
    import netCDF4
    try:
        with netCDF4.Dataset(tmp, "r") as ds:
            for j in jobs:
                shape = tuple(ds[j.info.path].shape)
                if shape != tuple(j.info.shape):
                    raise DataError(f"{j.info.path}: output shape {shape} != input {tuple(j.info.shape)}")
    except OSError as exc:
        raise DataError(f"the output does not open as netCDF: {exc}") from None
    if verify:
        from .verify import compare
        diffs = compare(in_path, tmp, max_mem=max_mem)
        if diffs:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise DataError(f"verification failed: {diffs[0]}{more}; output removed")
