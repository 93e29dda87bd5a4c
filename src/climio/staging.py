"""Outputs are written under a temporary name beside their final one and renamed on success:
readers never see half a file, and a failed or interrupted write leaves nothing under the name.

    with staged(a, b) as (tmp_a, tmp_b): ...     several files renamed together
    check_output_dir(d, force); with staged_dir(d, force) as tmp_d: ...   a directory, replaced whole
    write_via_temp(path, lambda tmp: ...)        one file; an OSError becomes one DataError line
    stale_temporaries(path) / remove_stale(...)  what a SIGKILLed writer left, found and removed
    make_marked_dir(tmp)                         a temporary directory (a Zarr store) those may remove

An error or a signal Python sees removes the temporaries; SIGKILL (the OOM killer, a batch
system's hard limit) does not. The next run of the command finds those whose process is gone by
the pid in their name, names them in one line and removes them; a live process's are left alone.
"""

import errno
import os
import re
from contextlib import contextmanager
from pathlib import Path

from .errors import DataError, DiskSpaceError
from .units import format_size


def tmp_name(path) -> Path:
    """`.NAME.tmp-PID` beside `path` (the pid tells a later run whether its writer is gone)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


# A temporary *directory* (a Zarr store being written) holds this file from its creation until just
# before its rename: the stale-temporary scan removes a directory only if climio marked it as its own.
MARKER = ".climio-staging"


def make_marked_dir(tmp) -> Path:
    """Create the temporary directory `tmp` (tmp_name) with the marker that makes it climio's."""
    tmp = Path(tmp)
    tmp.mkdir()
    (tmp / MARKER).write_text(f"{os.getpid()}\n")
    return tmp


def _tree_bytes(path: Path) -> int:
    if not path.is_dir():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


@contextmanager
def staged(*paths):
    """Yield temporary names for `paths`; rename all on success, delete all on any failure."""
    finals = [Path(p) for p in paths]
    tmps = [tmp_name(p) for p in finals]
    try:
        yield tmps
        for tmp, final in zip(tmps, finals):
            os.replace(tmp, final)
    except BaseException as exc:
        for tmp in tmps:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise DiskSpaceError(f"disk full while writing {finals[0].parent}") from None
        raise


def check_output_dir(path, force: bool = False) -> Path:
    """Refuse a non-empty output directory unless `force` (which will replace it whole, so no
    earlier run's files stay beside the new ones): called before any work is done."""
    final = Path(path)
    if final.exists() and not final.is_dir():
        raise DataError(f"{final} is a file, not a directory")
    if final.is_dir() and any(final.iterdir()) and not force:
        from .errors import InputError
        raise InputError(f"{final} already holds files: choose another output directory, or --force to replace it whole")
    return final


@contextmanager
def staged_dir(path, force: bool = False):
    """A directory of outputs written whole or not at all: yield a temporary directory beside
    `path`, put in its place on success (replacing it whole), removed on any failure."""
    import shutil
    final = check_output_dir(path, force)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(final)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_via_temp(path, write) -> Path:
    """`write(tmp)` under a temporary name, renamed to `path` on success; one-line DataError."""
    try:
        with staged(path) as (tmp,):
            write(tmp)
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Path(path)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's counts: it cannot be signalled, but it lives)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_temporaries(path, also=()) -> list:
    """Files of writers that no longer run: `path`'s temporary names (tmp_name) and, for each
    (directory, pattern) in `also`, the files in `directory` whose whole name matches the compiled
    `pattern` (group 1: the writer's pid). Only this user's regular files, and directories that
    hold MARKER (make_marked_dir); sorted paths."""
    path = Path(path)
    own = re.compile(r"\." + re.escape(path.name) + r"\.tmp-(\d+)")
    found = []
    for directory, pattern in ((path.parent, own), *also):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for e in entries:
            m = pattern.fullmatch(e.name)
            try:
                ours = e.is_file(follow_symlinks=False) or (e.is_dir(follow_symlinks=False)
                                                             and os.path.isfile(os.path.join(e.path, MARKER)))
                if m and ours and e.stat(follow_symlinks=False).st_uid == os.getuid() \
                        and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
                    found.append(Path(e.path))
            except OSError:
                continue
    return sorted(set(found))


def remove_stale(found, say, what: str, remove: bool = True) -> list:
    """Remove the files `found` (stale_temporaries) that an interrupted `what` ("rechunk") left,
    saying so in one line with their sizes; with remove=False (a dry run) only name them."""
    if not found:
        return []
    sizes = {}
    for p in found:
        try:
            sizes[p] = _tree_bytes(p)
        except OSError:
            sizes[p] = 0
    names = ", ".join(f"{p} ({format_size(sizes[p])})" for p in found)
    if not remove:
        say(f"left by an interrupted {what} (process gone): {names}; a real run removes it")
        return found
    for p in found:
        try:
            if p.is_dir() and not p.is_symlink():
                import shutil
                shutil.rmtree(p)
            else:
                p.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise DataError(f"cannot remove {p}, left by an interrupted {what}: {exc.strerror or exc}") from None
    say(f"removed what an interrupted {what} left (its process is gone): {names}")
    return found
