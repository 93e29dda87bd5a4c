"""`climio rechunk IN... OUTDIR`: several inputs (or a glob) converted into one output per input.

Each output is OUTDIR/<input's name with the output format's suffix> (tas_185001-194912.nc ->
OUTDIR/tas_185001-194912.zarr with --format zarr). Every name is checked before anything runs
(a URL, a missing input, two inputs with one output name, an existing output without --force),
so a bad list fails before the first file is written.

The files run one after another, each with every worker and the whole --max-mem budget, not
side by side with the budget split between them: one file's conversion already keeps every core
busy (its workers decode and encode in parallel), so running files at once would add no CPU, and
a budget cut K ways makes each plan re-decode chunks or take two passes (more CPU for the same
bytes). Peak memory stays what one file's plan says. A file whose data cannot be converted
(corrupt, an unknown --var) is reported and the others still run; a full disk, Ctrl-C or SIGTERM
stops the run (the file being written is removed, finished outputs stay).
"""

import glob
import os
import re
import time
from pathlib import Path

from climio.base.errors import ClimioError, DataError, DiskSpaceError, InputError, Interrupted
from climio.base.units import format_size, rate_MBps
from . import formats

# A URL scheme (https://, gs://, file://): refused, never read as a relative path. s3:// is the
# object-store support's (rechunk.remote moves the store through a local directory and calls
# entry.convert with local paths), so it is let through here.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
OBJECT_STORE_SCHEMES = ("s3",)
SUPPORTED = ("local paths (netCDF-4, netCDF-3 or CDF-5 files and Zarr store directories) and Zarr stores "
             "in object storage as s3://BUCKET/NAME.zarr")
SUFFIX = {"netcdf4": ".nc", "zarr": ".zarr"}


def refuse_url(text, role: str) -> None:
    """A URL as IN or OUT is one line naming what is supported (Path() would make https://host/x
    the relative path https:/host/x)."""
    m = _SCHEME.match(str(text))
    if m and m.group(1).lower() not in OBJECT_STORE_SCHEMES:
        raise InputError(f"{role} {text}: {m.group(1)}:// addresses are not supported: climio rechunk "
                         f"reads and writes {SUPPORTED}; copy the data to a local disk first")


def _is_glob(text: str) -> bool:
    return glob.has_magic(text) and not os.path.lexists(text)


def expand(inputs) -> list:
    """The inputs as paths: URLs refused, a pattern that is not itself a file name expanded (in
    sorted order; no match is an error), a file named twice refused."""
    paths = []
    for text in [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs:
        text = str(text)
        refuse_url(text, "input")
        if _is_glob(text):
            hits = sorted(glob.glob(os.path.expanduser(text)))
            if not hits:
                raise DataError(f"input {text}: no file or Zarr store matches the pattern")
            paths += [Path(h) for h in hits]
        else:
            paths.append(Path(text))
    seen = {}
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            raise InputError(f"input {p} is given twice (also as {seen[key]})")
        seen[key] = p
    return paths


def is_many(inputs) -> bool:
    """Several inputs or a pattern: the output is a directory."""
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    return len(inputs) != 1 or _is_glob(str(inputs[0]))


def output_name(in_path: Path, out_fmt: str) -> str:
    """The input's name with the output format's suffix (a Zarr store's trailing slash ignored)."""
    name = Path(os.path.normpath(in_path)).name
    return str(Path(name).with_suffix(SUFFIX[out_fmt])) if Path(name).suffix else name + SUFFIX[out_fmt]


def outputs_for(paths: list, out_dir: Path, opts) -> list:
    """[(input, output)] in OUT_DIR, checked before anything runs."""
    from .command import _check_paths, io_formats
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"output {out_dir} is not a directory: with several inputs OUT is the directory "
                         "the outputs are written into (one per input, same names)")
    if not out_dir.exists() and not out_dir.parent.is_dir():
        raise DataError(f"output directory {out_dir.parent} does not exist")
    out_fmt = formats.output_format(Path("x"), opts.out_format)
    pairs, by_name = [], {}
    for p in paths:
        out = out_dir / output_name(p, out_fmt)
        if out.name in by_name:
            raise InputError(f"inputs {by_name[out.name]} and {p} would both be written to {out}: "
                             "convert them into different directories")
        by_name[out.name] = p
        in_fmt, _ = io_formats(p, out, opts)
        if out_dir.is_dir():
            _check_paths(p, out, opts.force, in_fmt, out_fmt)
        elif not (p.is_file() or in_fmt == "zarr"):
            raise DataError(f"input {p} does not exist or is not a file")
        pairs.append((p, out))
    return pairs


def rechunk_many(inputs, out_dir, opts, dry_run=False, progress_factory=None, say=print, mpi=False) -> dict:
    """Convert every input into `out_dir`, one after another (module docstring: why); the summary
    of all of them. A file that fails with a data error is said and skipped; the first such error
    is raised at the end (after the summary line) with how many failed (raise_failed)."""
    from .command import rechunk
    out_dir = Path(out_dir)
    refuse_url(out_dir, "output")
    pairs = outputs_for(expand(inputs), out_dir, opts)
    opts.out_format = formats.output_format(Path("x"), opts.out_format)
    if not dry_run:
        out_dir.mkdir(exist_ok=True)
    n, done, failed, t0 = len(pairs), [], [], time.perf_counter()
    for i, (src, dst) in enumerate(pairs, 1):
        tag = f"[{i}/{n}] {src.name}"
        try:
            if mpi:
                from .mpi_exec import rechunk_mpi
                summary = rechunk_mpi(src, dst, opts, say=lambda line, tag=tag: say(f"{tag}: {line}"))
            else:
                # a dry run creates no directory: a new OUT_DIR's files are planned beside it (same disk)
                plan_as = dst if out_dir.is_dir() else out_dir.parent / f".{out_dir.name}-{dst.name}"
                summary = rechunk(src, plan_as, opts, dry_run=dry_run, say=lambda line, tag=tag: say(f"{tag}: {line}"),
                                  progress_factory=progress_factory)
                summary["output"] = str(dst)
            done.append(summary)
        except (DiskSpaceError, Interrupted) as exc:   # stops everything: nothing after it could finish
            raise type(exc)(f"{exc} ({len(done)} of {n} files converted before it, in {out_dir})") from None
        except ClimioError as exc:
            if mpi:          # every rank must take the same path: no skipping under MPI
                raise
            say(f"{tag}: failed: {exc}")
            failed.append({"input": str(src), "error": str(exc), "exit": int(exc.exit_code), "_exc": exc})
    summary = _summary(done, failed, out_dir, opts, time.perf_counter() - t0, dry_run)
    if not dry_run:
        say(summary_line(summary, n))
    raise_failed(summary)
    return public(summary)


def _summary(done, failed, out_dir, opts, seconds, dry_run) -> dict:
    nbytes = sum(s.get("bytes", 0) for s in done)
    from .plan import default_max_mem
    out = {"inputs": len(done) + len(failed), "output_dir": str(out_dir), "max_mem": opts.max_mem or default_max_mem(),
           "workers": opts.workers, "files": done, "failed": failed,
           "order": "one file after another, each with every worker and the whole --max-mem"}
    if not dry_run:
        out.update(seconds=seconds, bytes=nbytes, rate_MBps=rate_MBps(nbytes, seconds),
                   peak_rss=max((s.get("peak_rss", 0) for s in done), default=0), verified=opts.verify)
    return out


def summary_line(summary: dict, n: int) -> str:
    ok = len(summary["files"])
    line = (f"rechunked {ok} of {n} files, {format_size(summary['bytes'])} in {summary['seconds']:.1f} s "
            f"({summary['rate_MBps']:.0f} MB/s), peak RSS {format_size(summary['peak_rss'])}"
            f"{', verified' if summary['verified'] else ''} -> {summary['output_dir']}")
    if summary["failed"]:
        line += f"; {len(summary['failed'])} failed: " + ", ".join(Path(f["input"]).name for f in summary["failed"])
    return line


def raise_failed(summary: dict) -> None:
    """After the summary line: the first failure, with how many failed, as its own error kind; the
    error's `summary` is the whole run's (the CLI still prints it with --json)."""
    failed = summary.get("failed") or []
    if failed:
        first = failed[0]["_exc"]
        where = "" if failed[0]["input"] in str(first) else f"{failed[0]['input']}: "
        exc = type(first)(f"{len(failed)} of {summary['inputs']} files not converted; first: {where}{first}")
        exc.summary = public(summary)
        raise exc from None


def public(summary: dict) -> dict:
    """The summary as JSON can carry it (the failures' exception objects dropped)."""
    return {**summary, "failed": [{k: v for k, v in f.items() if k != "_exc"} for f in summary.get("failed", [])]}
