"""`climio rechunk IN OUT`: check, plan, define the output, convert, verify, rename."""

import math
import os
import re
import resource
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from climio.dataset import integrity
from ..data.writer import check_space
from .shape_check import least_output_bytes, refuse_impossible
from climio.runs.staging import remove_stale, stale_temporaries
from climio.base.errors import ClimioError, DataError, DiskSpaceError, InputError, Interrupted, TerminatedError, disk_full_in
from ..rules.chunks import SMALL_CHUNK_BYTES  # chunks below it are warned about here and never advised
from climio.base.units import format_size, rate_MBps
from . import child, execute, formats, phases, spec, warm
from .remote_nc import is_netcdf_object
from ..stores.endpoint import is_s3_url
from .plan import Layout, Rates, conversion_plan, default_max_mem

MAX_WARNED = 8               # small-chunk warnings listed one per line; the rest are counted
# Codecs HDF5 reads only through a filter plugin (netCDF4-python and h5py bring theirs; ncdump,
# h5dump and other netCDF-C / HDF5 programs look in HDF5_PLUGIN_PATH).
PLUGIN_CODECS = ("zstd", "bzip2", "blosc")


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
    out_format: Optional[str] = None   # "netcdf4" | "zarr"; None: from OUT's suffix
    zarr_format: int = 3
    shards: tuple = ()                 # --shards specs (Zarr v3)
    endian: str = ""                   # --endian of the Zarr v3 bytes codec
    remote_out: str = ""               # s3://BUCKET/STORE: chunks go there (rechunk.remote publishes the rest)
    resume: bool = False               # --resume: skip the blocks a killed run wrote (rechunk.resume)
    scheduler: str = ""                # --scheduler: a Dask scheduler address or "local" (rechunk.cluster)
    strict: bool = False               # --strict: refuse a Zarr input with absent chunks


def zarr_settings(opts: Options):
    from .formats.zarr import Settings
    return Settings(opts.zarr_format, tuple(opts.shards or ()), opts.endian or "")


def _check_paths(in_path: Path, out_path: Path, force: bool, in_fmt="netcdf4", out_fmt="netcdf4") -> None:
    if in_path.is_dir() and in_fmt != "zarr":
        raise DataError(f"input {in_path} is a directory, not a netCDF file or a Zarr store")
    if out_path.is_dir() and out_fmt != "zarr":
        raise InputError(f"output {out_path} is a directory: give the name of the file to write")
    if not in_path.is_file() and in_fmt != "zarr":
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


def check_tmp_dir(tmp_dir: Path) -> Path:
    """--tmp must be an existing, writable directory (the space is checked with the output's)."""
    if not tmp_dir.exists():
        raise DataError(f"--tmp {tmp_dir} does not exist")
    if not tmp_dir.is_dir():
        raise DataError(f"--tmp {tmp_dir} is not a directory")
    if not os.access(tmp_dir, os.W_OK | os.X_OK):
        raise DataError(f"--tmp {tmp_dir} is not writable")
    return tmp_dir


# ---------------------------------------------------------------- what killed runs leave behind
#
# A run writes OUTPUT under staging.tmp_name (".OUT.tmp-PID" next to it) and two-pass
# intermediates as ".climio-rechunk-PID-VAR.h5" in --tmp. An error or a signal that Python sees
# removes them; SIGKILL (the OOM killer, a batch system's hard limit) does not. The next run finds
# those of processes that no longer exist and removes them, saying so in one line. A file of a
# process that is still running (another rechunk to the same name) is left alone.

_INTERMEDIATE = re.compile(r"\.climio-rechunk-(\d+)-.+\.h5")


def leftovers(out_path: Path, tmp_dir: Path) -> list:
    """Temporary files of killed runs: this output's temporary name and our own intermediates."""
    return stale_temporaries(out_path, also=((tmp_dir, _INTERMEDIATE),))


def clean_leftovers(out_path: Path, tmp_dir: Path, say, remove: bool = True) -> list:
    """Remove (or, for --dry-run, only name) what killed runs left; one line if anything."""
    return remove_stale(leftovers(out_path, tmp_dir), say, "rechunk", remove)


def platform_profile(in_path: Path, say=None):
    """The profile the plans are priced with, found as `climio advise` finds it for this file
    (climio.profiles.for_data; an unreadable profile file: the built-in rates, as with none,
    whose rates the rate lines name). `say` hears which calibrated profile is used."""
    from climio import profiles
    from climio.machine.platform import platform_id_here
    from ..model.profile import default_profile
    try:
        prof, line = profiles.for_data(in_path)
    except DataError:
        return default_profile(platform_id_here(in_path))
    if say and prof.source != "defaults":
        say(line or f"predicted times use this platform's calibrated profile {prof.platform_id} "
                    f"({profiles.path_for(prof.platform_id)})")
    return prof


def make_plans(infos, targets: dict, stored: dict, max_mem: int, workers: int, two_pass: bool,
               profile=None, own_writes=frozenset()) -> dict:
    """A plan per variable, priced with `profile`'s rates (None: the planner's defaults): the
    conversion plan the advisor's one-off cost is (climio.model.convert.conversion_plan).
    `own_writes`: the paths whose chunks the workers write themselves (see _own_writes)."""
    from climio.machine.memory import here
    plans, machine = {}, here()
    for v in infos:
        if v.path not in targets:
            continue
        t = targets[v.path]
        src = Layout(tuple(v.shape), v.itemsize, tuple(v.chunks) if v.chunks else None,
                     v.compression.codec != "none", stored.get(v.path))
        dst = Layout(tuple(v.shape), v.itemsize, tuple(t.chunks) if t.chunks else None, t.compression.codec != "none")
        try:
            plans[v.path] = conversion_plan(src, dst, profile, v.compression.label, t.compression.label, max_mem,
                                            workers, allow_two_pass=two_pass, machine=machine,
                                            own_writes=v.path in own_writes)
        except InputError as exc:
            raise InputError(f"{v.path}: {exc}") from None
    return plans


def _estimate_output(in_bytes: int, infos, targets, stored) -> int:
    """Bytes the output will take: the input's size, with each target variable at its uncompressed size
    when the target is uncompressed or the source was (an upper bound for compressed output)."""
    total = in_bytes
    for v in infos:
        if v.path in targets:
            t = targets[v.path]
            compressed_both = t.compression.codec != "none" and v.compression.codec != "none"
            compressed = max(stored[v.path], least_output_bytes(v))   # stored bytes of an absent-chunk store: 0
            total += (compressed if compressed_both else v.nbytes) - stored[v.path]
    return total


@contextmanager
def _sigterm_raises():
    """SIGTERM unwinds like Ctrl-C, so temporary files are removed on the way out."""
    def handler(signum, frame):
        raise TerminatedError("terminated")
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
    warnings: list = None      # "warning: ..." lines, said once every check has passed
    rates_note: str = ""       # which rates the predicted times use (said by --dry-run)
    rates: dict = None         # (source, target codec label) -> the Rates its variables are planned with
    in_fmt: str = "netcdf4"    # formats of the input and the output (rechunk.formats)
    out_fmt: str = "netcdf4"
    in_bytes: int = 0          # the input's size on disk

    def rate_lines(self) -> list:
        """One line per rate the plans use (a decode rate per source codec, an encode rate per target
        codec), each saying whether it came from the calibrated profile or is a built-in default."""
        return list(dict.fromkeys(line for (codec, target), r in (self.rates or {}).items()
                                  for line in r.describe(codec, target)))

    def output_bytes(self, in_path: Path) -> int:
        return _estimate_output(self.in_bytes, self.infos, self.targets, self.stored)


def io_formats(in_path: Path, out_path: Path, opts: Options) -> tuple:
    """(input format, output format); Zarr-only options without Zarr output are errors."""
    out_fmt = formats.output_format(out_path, opts.out_format)
    if out_fmt != "zarr":
        given = [f for f, on in (("--shards", opts.shards), ("--endian", opts.endian),
                                 ("--zarr-format", opts.zarr_format != 3)) if on]
        if given:
            raise InputError(f"{given[0]} is for Zarr output: name OUT *.zarr or pass --format zarr")
    else:
        formats.module("zarr").check_settings(zarr_settings(opts))
    return formats.input_format(in_path), out_fmt


def _targets(infos, opts: Options, in_path: Path, out_fmt: str) -> dict:
    comp, check = opts.compression, None
    if out_fmt == "zarr":
        zmod = formats.module("zarr")
        comp = zmod.parse_compression(comp).label if comp is not None else None
        check = zmod.check_compression
    return spec.resolve_targets(infos, list(opts.chunk_specs), opts.for_axes, opts.balanced, opts.chunk_bytes,
                                opts.contiguous, comp, list(opts.variables) or None, source=str(in_path),
                                check=check)


def prepare(in_path: Path, out_path: Path, opts: Options, workers: int, two_pass: bool, say, force=False,
            dry_run=False) -> Prepared:
    """Check paths and options, clean up after killed runs, scan the input, resolve targets, plan
    every variable and warn about what the user may not want (no change, tiny chunks)."""
    in_fmt, out_fmt = io_formats(in_path, out_path, opts)
    tmp_dir = check_tmp_dir(Path(opts.tmp_dir)) if opts.tmp_dir else out_path.parent
    # first: it may put back an output a killed --force run had moved aside, which the check must see
    clean_leftovers(out_path, tmp_dir, say, remove=not dry_run)   # (and it frees space before the space check)
    if is_s3_url(in_path):   # a Zarr store in a bucket, read object by object (rechunk.remote)
        _check_paths(out_path.parent, out_path, opts.force or force, "zarr", out_fmt)
    else:
        _check_paths(in_path, out_path, opts.force or force, in_fmt, out_fmt)
        # the reader (netCDF4, h5py) imported before the header probe forks: the probe's child then
        # finds them loaded instead of importing them again (0.5 s of CPU, serially, at start-up)
        reader = formats.module(in_fmt)
        integrity.check(in_path)   # a truncated netCDF-3 file would be read as zeros (issue 27)
    if workers < 1:
        raise InputError("--workers must be at least 1")
    max_mem = opts.max_mem or default_max_mem()
    reader = formats.module(in_fmt)
    infos = reader.scan(in_path)
    if not opts.remote_out:   # a store written to a bucket: its size is the bucket's business
        refuse_impossible(in_path, infos, out_path)   # before anything walks or sizes the claimed shape
    targets = _targets(infos, opts, in_path, out_fmt)
    stored = reader.stored_bytes(in_path, infos)
    notes = []
    profile = platform_profile(out_path.parent if is_s3_url(in_path) else in_path, notes.append)
    labels = {(v.compression.label, targets[v.path].compression.label) for v in infos if v.path in targets}
    rates = {(c, t): Rates.from_profile(profile, c, t) for c, t in sorted(labels)}
    units = targets   # what blocks align to: the target chunks (Zarr: the shards when sharded)
    if out_fmt == "zarr":
        units = formats.module("zarr").layout_targets(infos, targets, zarr_settings(opts))
    absent = absent_warnings(in_path, in_fmt, infos, opts.strict)
    prep = Prepared(max_mem, infos, targets, stored,
                    make_plans(infos, units, stored, max_mem, workers, two_pass, profile,
                               _own_writes(out_fmt, opts, infos, targets)),
                    absent + layout_warnings(in_path, infos, targets), "".join(notes), rates, in_fmt, out_fmt,
                    reader.total_bytes(in_path))
    return prep


def _own_writes(out_fmt: str, opts: Options, infos, targets: dict) -> frozenset:
    """The variables whose workers encode and write their block's chunks one by one into a local
    Zarr store (blocks._write_zarr through zarr_chunks.ChunkIO) and hand nothing back: the planner
    counts a block and a chunk per worker for them, not the parent-written model's four blocks.
    Not for sharded arrays (a shard goes through zarr-python whole), a store in a bucket (a block's
    chunks queue for upload) or a Dask cluster (its workers' memory is stated per worker there)."""
    if out_fmt != "zarr" or opts.remote_out or opts.scheduler:
        return frozenset()
    shards = formats.module("zarr").shard_shapes(infos, targets, tuple(opts.shards or ()))
    return frozenset(p for p in targets if not shards[p])


def absent_warnings(in_path: Path, in_fmt: str, infos, strict: bool) -> list:
    """A Zarr input's chunks without an object are read as the fill value: one warning line saying
    how many, or with --strict one DataError (a lost chunk file would otherwise pass unnoticed)."""
    if in_fmt != "zarr":
        return []
    absent = formats.module("zarr").absent_chunks(in_path, [v for v in infos if v.numeric])
    if not absent:
        return []
    n = sum(a for a, _, _ in absent.values())
    which = ", ".join(f"{p} {a} of {t}, fill value {fill}" for p, (a, t, fill) in list(absent.items())[:MAX_WARNED])
    line = f"{in_path}: {n} chunks absent, read as the fill value ({which})"
    if strict:
        raise DataError(f"{line}: --strict refuses a store with absent chunks")
    return [f"warning: {line}"]


def changed(infos, targets) -> list:
    """Paths of the targets whose chunks or compression differ from the source's."""
    by_path = {v.path: v for v in infos}
    return [p for p, t in targets.items()
            if (tuple(t.chunks) if t.chunks else None) != (tuple(by_path[p].chunks) if by_path[p].chunks else None)
            or t.compression != by_path[p].compression]


def layout_warnings(in_path: Path, infos, targets) -> list:
    """Lines starting with "warning:": nothing would change, or new chunks are tiny."""
    out = []
    moved = changed(infos, targets)
    if not targets:
        out.append(f"warning: no numeric data variable to re-lay out in {in_path}: the output is a copy of its "
                   "contents")
    elif not moved:
        out.append(f"warning: no variable changes chunks or compression ({len(targets)} already laid out as "
                   "asked): the output is a copy of the input's contents")
    by_path = {v.path: v for v in infos}
    small = []
    for p in moved:
        t, v = targets[p], by_path[p]
        if not t.chunks or 0 in v.shape:
            continue
        nbytes = math.prod(t.chunks) * v.itemsize
        n_chunks = math.prod(-(-d // c) for d, c in zip(v.shape, t.chunks))
        if nbytes < SMALL_CHUNK_BYTES and n_chunks > 1:
            small.append((p, t.chunks, nbytes, n_chunks))
    for p, chunks, nbytes, n_chunks in small[:MAX_WARNED]:
        out.append(f"warning: {p} chunks [{','.join(map(str, chunks))}] are {format_size(nbytes)} ({n_chunks} chunks), "
                   f"below {format_size(SMALL_CHUNK_BYTES)}: HDF5's per-chunk overhead (index entry, filter call, "
                   "I/O request) dominates; ask for larger chunks (--chunk-bytes, longer -c lengths)")
    if len(small) > MAX_WARNED:
        out.append(f"warning: {len(small) - MAX_WARNED} more variable(s) get chunks below "
                   f"{format_size(SMALL_CHUNK_BYTES)}")
    return out


def plugin_note(out_path: Path, infos, targets) -> str:
    """The line telling where other programs find the filter plugins the output needs ("" if none)."""
    codecs = []
    for v in infos:
        c = targets[v.path].compression if v.path in targets else v.compression
        if c.codec.startswith(PLUGIN_CODECS) and c.codec not in codecs:
            codecs.append(c.codec)
    if not codecs:
        return ""
    try:
        import hdf5plugin
        where = f"HDF5_PLUGIN_PATH={hdf5plugin.PLUGIN_PATH}"
    except ImportError:
        where = "HDF5_PLUGIN_PATH set to a directory of HDF5 filter plugins (pip install hdf5plugin)"
    return (f"note: {out_path} uses {', '.join(codecs)} (HDF5 filter plugins): ncdump, h5dump and other "
            f"netCDF-C/HDF5 programs need {where}")


def say_warnings(prep: Prepared, say) -> None:
    for line in prep.warnings or ():
        say(line)


def say_plans(prep: Prepared, say) -> None:
    say_warnings(prep, say)
    for path, p in prep.plans.items():  # one line each; --dry-run gives the whole plan
        pad = (f"; edge chunks pad {format_size(p.padding_bytes)} ({100 * p.padding_fraction:.1f} %)"
               if p.padding_bytes else "")
        say(f"{path} -> {prep.targets[path].label()}: {p.describe()[0]}{pad}")


def rechunk(in_path, out_path, opts: Options, dry_run=False, progress_factory=None, say=print) -> dict:
    """Convert; return a summary dict (plans, seconds, bytes, peak RSS). `say` prints human lines."""
    in_path = str(in_path) if is_s3_url(in_path) else Path(in_path)
    out_path = Path(out_path)
    early = "" if dry_run or is_s3_url(in_path) or opts.scheduler else _early_start(in_path, out_path, opts)
    if opts.scheduler and not dry_run:
        from . import cluster
        cluster.start_early(opts.scheduler, opts.workers,   # connected while the input is scanned and planned
                            xarray_here=not (is_s3_url(in_path) and not is_netcdf_object(in_path)))
    if early == "define":
        _start_define_child(in_path, out_path, opts)   # it imports xarray while the input is scanned and planned
    if early:   # the workers come up while the input is scanned and planned (and the output defined: with
        execute.start_early(opts.workers)   # one process per core, the child alone left a core idle)
    formats.module("zarr").forget_local()   # a local store's listing is taken once per command, fresh
    try:
        return _rechunk(in_path, out_path, opts, dry_run, progress_factory, say)
    finally:
        formats.module("zarr").forget_local()
        execute.discard_early()   # not taken: the plan wanted another pool, or the command failed first
        child.discard()
        if opts.scheduler:
            from . import cluster
            cluster.discard_early()


def _start_define_child(in_path: Path, out_path: Path, opts: Options) -> None:
    """The early define child (child.start_early), forked from this process when it can be: with
    zarr imported here first for a Zarr input (this process scans it with zarr anyway: imported once,
    not again in the child), and without dask for a Zarr output (child.without_dask)."""
    if formats.input_format(in_path) == "zarr":
        import zarr  # noqa: F401
    child.start_early(dask=formats.output_format(out_path, opts.out_format) != "zarr")


EARLY_POOL_BYTES = 64 << 20   # stored inputs this large are cut into several blocks (a guess; see _early_start)


def _early_start(in_path: Path, out_path: Path, opts: Options) -> str:
    """What to start before planning, when several workers are asked for and the input is large
    enough to be cut into several blocks: "define" (Zarr in or out, xarray not loaded here: the
    child that defines the output through xarray, and the pool beside it, its workers importing
    while the child works, see define_and_start) or "pool" (the workers only: netCDF in and out,
    or xarray already loaded, which then defines the output in this process); "" otherwise. A
    wrong guess costs those processes' start-up CPU once; what the plan does not want is stopped."""
    try:
        if opts.workers < 2 or not _at_least(in_path, EARLY_POOL_BYTES):
            return ""
        zarr = "zarr" in (formats.output_format(out_path, opts.out_format), formats.input_format(in_path))
    except (OSError, ClimioError):
        return ""   # the checks in prepare say what is wrong
    return "define" if zarr and "xarray" not in sys.modules else "pool"


def _at_least(path: Path, nbytes: int) -> bool:
    """Whether a file, or the files under a directory (a Zarr store), hold at least `nbytes`."""
    if path.is_file():
        return path.stat().st_size >= nbytes
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.stat(os.path.join(root, name)).st_size
            if total >= nbytes:
                return True
    return False


def _rechunk(in_path: Path, out_path: Path, opts: Options, dry_run, progress_factory, say) -> dict:
    prep = prepare(in_path, out_path, opts, opts.workers, two_pass=True, say=say, force=dry_run, dry_run=dry_run)
    max_mem, infos, targets, plans = prep.max_mem, prep.infos, prep.targets, prep.plans
    phases.mark("scan, targets, plan")
    if opts.remote_out or is_s3_url(in_path):
        _object_store_bounds(prep, opts, say)
    tmp_dir = Path(opts.tmp_dir) if opts.tmp_dir else out_path.parent
    summary = {"input": str(in_path), "output": str(out_path), "max_mem": max_mem, "workers": opts.workers,
               "plans": {k: p.to_dict() for k, p in plans.items()}}
    # --dry-run checks the space too: it says what the real run would refuse
    tmp_bytes = max((p.tmp_bytes for p in plans.values()), default=0)
    check_space([(out_path, prep.output_bytes(in_path))]
                + ([(tmp_dir / ".climio-rechunk-intermediate", tmp_bytes)] if tmp_bytes else []))
    if dry_run:
        say_warnings(prep, say)
        if prep.rates_note:
            say(prep.rates_note)
        for line in prep.rate_lines():
            say(line)
        for path, p in plans.items():
            say(f"{path} -> {targets[path].label()}")
            for line in p.describe():
                say("  " + line)
        if opts.scheduler:
            from .cluster import per_worker_lines, round_trip_s
            store = opts.remote_out or (str(in_path) if is_s3_url(in_path) else "")
            for line in per_worker_lines(plans, opts.workers, max_mem, round_trip_s(store) if store else 0.0):
                say(line)
        return summary

    say_plans(prep, say)
    total = sum(p.src.nbytes for plan in plans.values() for p in plan.passes)
    t0 = time.perf_counter()
    with _sigterm_raises():
        try:
            writer = formats.module(prep.out_fmt)
            with writer.staged(out_path) as tmp:
                bar = progress_factory(total) if progress_factory else None
                with (bar if bar else _null()):
                    runner, jobs, checked = define_and_start(prep, in_path, tmp, zarr_settings(opts), opts)
                    phases.mark("define output, start workers")
                    if opts.remote_out:
                        jobs = _remote_jobs(opts, in_path, jobs, say)
                        phases.mark("manifest")
                    stats = execute.convert(str(in_path), str(tmp), jobs, opts.workers, str(tmp_dir),
                                            bar.callback if bar else None, prep.in_fmt, prep.out_fmt, runner,
                                            out_remote=opts.remote_out)
                phases.mark("tasks")
                _check_written(tmp, jobs, opts.verify, max_mem, in_path, prep.in_fmt, prep.out_fmt, checked)
                phases.mark("check written output")
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: {_nothing(out_path, opts)}") from None
        except DiskSpaceError:   # judged by staging before it removed the temporary output
            raise DiskSpaceError(f"disk full while writing {out_path}: nothing written "
                                 "(temporary output removed)") from None
        except (OSError, RuntimeError) as exc:  # HDF5, h5py (a failed flush) and the workers' I/O failures
            if disk_full_in(exc):
                raise DiskSpaceError(f"disk full while writing {out_path}: nothing written "
                                     "(temporary output removed)") from None
            raise DataError(f"I/O error while converting: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}; "
                            f"{_nothing(out_path, opts)}") from None
        except Interrupted:
            raise TerminatedError(f"terminated: {_nothing(out_path, opts)}") from None
    seconds = time.perf_counter() - t0
    nbytes = sum(j.info.nbytes for j in jobs)
    summary.update(seconds=seconds, bytes=nbytes, rate_MBps=rate_MBps(nbytes, seconds),
                   bytes_read=stats.bytes_read, chunks_decoded=stats.chunks_decoded,
                   peak_rss=_peak_rss(stats), verified=opts.verify, retries=stats.retries,
                   task_processes=len(stats.worker_rss),
                   task_peak_rss=sorted(stats.worker_rss.values(), reverse=True),   # per process, bytes
                   blocks_skipped=stats.skipped, phases=phases.report())
    say(f"rechunked {len(jobs)} variable(s), {format_size(nbytes)} in {seconds:.1f} s "
        f"({summary['rate_MBps']:.0f} MB/s), peak RSS {format_size(summary['peak_rss'])}"
        f"{', verified' if opts.verify else ''} -> {opts.remote_out or out_path}")   # the store, not its local metadata
    written_by_us = [v for v in infos if v.path in targets or prep.in_fmt == "netcdf4"]  # xarray's: no filters
    note = plugin_note(out_path, written_by_us, targets) if prep.out_fmt == "netcdf4" else ""
    if note:
        say(note)
    return summary


def _object_store_bounds(prep: Prepared, opts: Options, say) -> None:
    """Streamed to or from a bucket: the line stating the margin above --max-mem. (A shard is one
    PUT from one block: the planner already refuses a shard whose block does not fit the bound.)"""
    block = max((math.prod(p.block) * p.src.itemsize for plan in prep.plans.values() for p in plan.passes),
                default=0)
    say(f"object storage: memory per worker is the plan's bound plus up to {format_size(block)} of one block's "
        "compressed chunks in flight (GET batch or PUT queue) and the HTTP client's buffers; local disk holds the "
        "output's metadata and coordinates only")


def _nothing(out_path, opts: Options) -> str:
    if opts.remote_out:   # chunk objects may be there, but no metadata: nothing opens
        return f"nothing readable under {opts.remote_out} (run again with --resume to continue)"
    return f"nothing written to {out_path} (temporary output removed)"


def _remote_jobs(opts: Options, in_path, jobs, say) -> list:
    """Jobs writing into the bucket: the run recorded (or checked, --resume) and, resumed, the
    blocks already written marked to be skipped (rechunk.resume)."""
    import dataclasses

    from ..stores.chunks import ObjectChunks
    from . import resume
    objs = ObjectChunks.of(opts.remote_out)
    resume.begin(objs, str(in_path), jobs, opts.resume)
    if not opts.resume:
        return jobs
    done = resume.done_blocks(objs)
    out = [dataclasses.replace(j, skip=frozenset(done.get(j.out_path.strip("/"), ()))) for j in jobs]
    n = sum(len(j.skip) for j in out)
    say(f"--resume: {n} block(s) already written by the earlier run are kept")
    return out


def define_and_start(prep: Prepared, in_path: Path, tmp, settings, opts: Options = None) -> tuple:
    """(execute.Runner, [execute.Job], whether the output's metadata was checked already): the output
    defined and the worker pool started. With worker processes, defining through xarray (a Zarr
    input or output) happens in a child process: imported into this process, xarray and pandas would
    stay for the whole conversion (about 120 MiB of RSS beside the workers'). A pool started early
    (_early_start) comes up beside the child; else it starts once the child has exited. That child also checks a Zarr output as check_written does (opens with xarray,
    every variable at full shape): the workers write chunk objects only, never the metadata, so
    the check holds at the end and xarray is not imported a second time for it. Without the child
    the pool starts first, so that its workers come up while the output is defined."""
    size = execute.pool_size(prep.plans.values())
    scheduler = opts.scheduler if opts is not None else ""
    if not is_s3_url(in_path):   # the disk reads ahead while the output is defined and the workers start
        warm.start(warm.input_files(in_path, prep.in_fmt, prep.targets))
    # Not on a cluster: there the child re-imports dask and distributed (this process has them) besides
    # xarray; tried, bench/rechunk_s3_vs_peers.py --baseline-src measured conversions 1.7x slower on
    # the loaded 2-core machine, for 80 MiB less RSS. Not for a netCDF-4 object in S3: the child would
    # read the file's metadata a second time.
    apart = (size > 1 and "zarr" in (prep.in_fmt, prep.out_fmt) and "xarray" not in sys.modules and not scheduler
             and not is_netcdf_object(in_path))

    def make_runner():
        if scheduler:   # the same tasks on Dask distributed workers (rechunk.cluster)
            from .cluster import DaskRunner
            return DaskRunner(scheduler, opts.workers)
        return execute.Runner(size)
    # an s3:// Zarr input on a cluster: a worker defines the output (cluster.define_on_worker), and
    # checks it as check_written does, so this process never imports xarray
    there = bool(scheduler) and is_s3_url(in_path) and prep.out_fmt == "zarr" and not is_netcdf_object(in_path)
    check = (apart or there) and prep.out_fmt == "zarr"
    args = (prep, in_path, tmp, settings, check)
    # pool workers reading or writing local Zarr chunks with numcodecs alone (rechunk.zarr_lite)
    lite = size > 1 and not scheduler and not (opts is not None and opts.remote_out)
    runner = None if apart else make_runner()
    try:
        if there:
            from .cluster import define_on_worker
            jobs = define_on_worker(runner, _define_output, args)
        elif apart:
            jobs = child.run(_define_output_apart, args + (lite,))
            runner = make_runner()
        else:
            jobs = _define_output(*args, lite=lite)
    except BaseException:
        if runner is not None:
            runner.close(abort=True)
        raise
    return runner, jobs, check


def _define_output_apart(prep: Prepared, in_path, tmp, settings, check: bool, lite: bool) -> list:
    """_define_output in the child (child.run): a Zarr output needs no Dask there (child.without_dask)."""
    if prep.out_fmt == "zarr":
        child.without_dask()
    return _define_output(prep, in_path, tmp, settings, check, lite)


def _define_output(prep: Prepared, in_path, tmp, settings, check: bool, lite: bool = False) -> list:
    """Define the output; its jobs (a variable each); with `check`, the format's check_written;
    with `lite`, the LiteSpecs of their local Zarr arrays (_lite_jobs)."""
    writer = formats.module(prep.out_fmt)
    out_paths = writer.define_output(in_path, prep.in_fmt, tmp, prep.targets, prep.infos, prep.max_mem, settings)
    jobs = [execute.Job(v, prep.targets[v.path], out_paths[v.path], prep.plans[v.path])
            for v in prep.infos if v.path in prep.plans]
    if check:
        writer.check_written(tmp, jobs)
    return _lite_jobs(prep, in_path, tmp, jobs) if lite else jobs


def _lite_jobs(prep: Prepared, in_path, tmp, jobs) -> list:
    """The jobs with the LiteSpecs (rechunk.zarr_lite) of their arrays in a local Zarr input or
    output, made here where zarr is loaded: the pool workers then import numcodecs, not zarr."""
    import dataclasses
    zmod = formats.module("zarr")
    outs = zmod.lite_specs(tmp, [j.out_path for j in jobs]) if prep.out_fmt == "zarr" else {}
    local_in = prep.in_fmt == "zarr" and not is_s3_url(in_path) and not is_netcdf_object(in_path)
    ins = zmod.lite_specs(in_path, [j.info.path for j in jobs]) if local_in else {}
    return [dataclasses.replace(j, lite_in=ins.get(j.info.path), lite_out=outs.get(j.out_path)) for j in jobs]


@contextmanager
def _null():
    yield


def _check_written(tmp: Path, jobs, verify: bool, max_mem: int, in_path: Path, in_fmt="netcdf4",
                   out_fmt="netcdf4", checked=False) -> None:
    """Before the rename: the output must open and hold every variable at its full shape (unless
    `checked` when it was defined: define_and_start); --verify compares every value and all metadata."""
    if not checked:
        formats.module(out_fmt).check_written(tmp, jobs)
    if verify:
        from .verify import compare, compare_formats
        if in_fmt == out_fmt == "netcdf4":
            diffs = compare(in_path, tmp, max_mem=max_mem)
        else:
            diffs = compare_formats(in_path, in_fmt, tmp, out_fmt, [j.info for j in jobs], max_mem=max_mem)
        if diffs:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise DataError(f"verification failed: {diffs[0]}{more}; output removed")
