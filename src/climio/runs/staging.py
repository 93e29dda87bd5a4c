"""Outputs are written under a temporary name beside their final one and renamed on success:
readers never see half a file, and a failed or interrupted write leaves nothing under the name.

    with staged(a, b) as (tmp_a, tmp_b): ...     several files renamed together
    check_output_dir(d, force); with staged_dir(d, force) as tmp_d: ...   a directory, replaced whole
    write_via_temp(path, lambda tmp: ...)        one file; an OSError becomes one DataError line
    stale_temporaries(path) / remove_stale(...)  what a SIGKILLed writer left, found and removed
    make_marked_dir(tmp)                         a temporary directory (a Zarr store) those may remove
    replace_output(tmp, final)                   the rename, moving an existing directory aside first

An error or a signal Python sees removes the temporaries; SIGKILL (the OOM killer, a batch
system's hard limit) does not. The next run of the command finds those whose process is gone by
the pid in their name, names them in one line and removes them; a live process's are left alone.
An output replaced (--force) by a directory, or replaced as a directory, is moved aside to
`.NAME.old-PID` for the moment of the rename: the next run puts it back when a kill left nothing at
NAME, and removes it when the new output had landed.
"""

import os
import re
from contextlib import contextmanager
from pathlib import Path

from climio.base.errors import DataError, DiskSpaceError, disk_full_error
from climio.base.units import format_size


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
    try:
        (tmp / MARKER).write_text(f"{os.getpid()}\n")
    except BaseException:   # a full disk: nothing left behind
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        raise
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
        try:
            for tmp, final in zip(tmps, finals):
                os.replace(tmp, final)
        except FileNotFoundError:   # the directory was removed under us (a kill point's rm -r)
            raise DataError(f"{finals[0].parent} vanished while {finals[0].name} was written: nothing written") from None
    except BaseException as exc:
        # judged before the temporaries go: removing them frees the space that shows the disk was
        # full (netCDF-C reports a full disk as "NetCDF: HDF error", never ENOSPC)
        full = (disk_full_error(exc, finals[0].parent, f"writing {finals[0].parent}")
                if isinstance(exc, (OSError, RuntimeError, DiskSpaceError)) else None)
        for tmp in tmps:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        if full is not None:
            raise full from None
        raise


def check_output_dir(path, force: bool = False) -> Path:
    """Refuse a non-empty output directory unless `force` (which will replace it whole, so no
    earlier run's files stay beside the new ones): called before any work is done."""
    final = Path(path)
    if final.exists() and not final.is_dir():
        raise DataError(f"{final} is a file, not a directory")
    if final.is_dir() and any(final.iterdir()) and not force:
        from climio.base.errors import InputError
        raise InputError(f"{final} already holds files: choose another output directory, or --force to replace it whole")
    return final


@contextmanager
def staged_dir(path, force: bool = False, say=None, what: str = "run"):
    """A directory of outputs written whole or not at all: yield a temporary directory beside
    `path` (marked as climio's: a run killed meanwhile leaves it to the next one, which removes it
    first, saying so with `say`), put in its place on success (replacing it whole), removed on
    any failure."""
    import shutil
    path = Path(path)
    remove_stale(stale_temporaries(path), say or (lambda *_: None), what)   # may put back an output
    final = check_output_dir(path, force)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(final)
    shutil.rmtree(tmp, ignore_errors=True)
    make_marked_dir(tmp)
    try:
        yield tmp
        replace_output(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def old_name(path) -> Path:
    """`.NAME.old-PID` beside `path`: where replace_output keeps the output it replaces meanwhile."""
    path = Path(path)
    return path.with_name(f".{path.name}.old-{os.getpid()}")


_OLD = re.compile(r"\.(.+)\.old-(\d+)")   # old_name's form: group 1 the output's name, 2 the pid


def replace_output(tmp, final) -> None:
    """Rename the complete `tmp` to `final`, then remove its MARKER. A file over a file is one
    atomic rename; an existing output that is or becomes a directory is moved aside to old_name
    (marked when a directory, so the next run may remove it), the new one renamed in, the old
    removed (its marker last). A SIGKILL between those steps leaves old_name for the next run."""
    tmp, final = Path(tmp), Path(final)
    old = None
    if os.path.lexists(final) and (tmp.is_dir() or final.is_dir()):
        old = old_name(final)
        os.replace(final, old)
        if old.is_dir() and not old.is_symlink():
            try:
                (old / MARKER).write_text(f"{os.getpid()}\n")
            except OSError:
                pass   # unmarked, it is still put back if the rename below never happens
    os.replace(tmp, final)
    if final.is_dir() and not final.is_symlink():
        # unmarked only now: killed before, the temporary was still the next run's to remove, and
        # killed here, the next run removes the marker (stale_temporaries)
        (final / MARKER).unlink(missing_ok=True)
    if old is not None:
        _remove_old(old)


def _remove_old(old: Path) -> None:
    """Remove a moved-aside output, its MARKER last: killed midway, what is left is still marked."""
    import shutil
    if not old.is_dir() or old.is_symlink():
        old.unlink(missing_ok=True)
        return
    for e in os.scandir(old):
        if e.name != MARKER:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                try:
                    os.unlink(e.path)
                except OSError:
                    pass
    try:
        (old / MARKER).unlink(missing_ok=True)
        old.rmdir()
    except OSError:
        pass


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
    """Files of writers that no longer run: `path`'s temporary names (tmp_name), the output it
    replaced while moved aside (old_name), a MARKER left in `path` and, for each (directory,
    pattern) in `also`, the files in `directory` whose whole name matches the compiled `pattern`
    (group 1: the writer's pid). Only this user's, and only what _ours allows; sorted paths."""
    path = Path(path)
    own = re.compile(r"\." + re.escape(path.name) + r"\.(?:tmp|old)-(\d+)")
    found = []
    for directory, pattern in ((path.parent, own), *also):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for e in entries:
            m = pattern.fullmatch(e.name)
            try:
                if m and _ours(e) and e.stat(follow_symlinks=False).st_uid == os.getuid() \
                        and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
                    found.append(Path(e.path))
            except OSError:
                continue
    mark = path / MARKER    # a store renamed in by replace_output, killed before it was unmarked
    try:
        pid = int(mark.read_text().split()[0])
        if mark.is_file() and not mark.is_symlink() and mark.stat().st_uid == os.getuid() \
                and pid != os.getpid() and not pid_alive(pid):
            found.append(mark)
    except (OSError, ValueError, IndexError):
        pass
    return sorted(set(found))


def _ours(e) -> bool:
    """Whether climio may remove (or put back) the entry: a regular file, a directory holding MARKER;
    an output moved aside (old_name) also when its name is free (it is put back, nothing lost), or
    when it is a symlink or an empty directory (killed as its removal ended)."""
    if e.is_file(follow_symlinks=False) or (e.is_dir(follow_symlinks=False)
                                            and os.path.isfile(os.path.join(e.path, MARKER))):
        return True
    m = _OLD.fullmatch(e.name)
    if m is None:
        return False
    if not os.path.lexists(os.path.join(os.path.dirname(e.path), m.group(1))):
        return True
    return e.is_symlink() or (e.is_dir(follow_symlinks=False) and not os.listdir(e.path))


def _put_back(found) -> dict:
    """{moved-aside output: its final name} for those whose final name is free (one per name)."""
    back = {}
    for p in found:
        m = _OLD.fullmatch(p.name)
        final = p.with_name(m.group(1)) if m else None
        if final is not None and not os.path.lexists(final) and final not in back.values():
            back[p] = final
    return back


def remove_stale(found, say, what: str, remove: bool = True) -> list:
    """Remove the files `found` (stale_temporaries) that an interrupted `what` ("rechunk") left,
    and put back an output it had moved aside (old_name) when nothing took its name, saying so in
    one line (with the sizes of what is removed); with remove=False (a dry run) only name them."""
    if not found:
        return []
    back = _put_back(found)
    gone = [p for p in found if p not in back]
    sizes = {}
    for p in gone:
        try:
            sizes[p] = _tree_bytes(p)
        except OSError:
            sizes[p] = 0
    names = ", ".join(f"{p} ({format_size(sizes[p])})" for p in gone)
    if not remove:
        said = ([f"{names}; a real run removes it"] if gone else []) + \
               [f"{old}; a real run puts it back as {final}" for old, final in back.items()]
        say(f"left by an interrupted {what} (process gone): {'; '.join(said)}")
        return found
    for old, final in back.items():
        try:
            if old.is_dir() and not old.is_symlink():
                (old / MARKER).unlink(missing_ok=True)
            os.replace(old, final)
        except OSError as exc:
            raise DataError(f"cannot put back {final} from {old}, left by an interrupted {what}: "
                            f"{exc.strerror or exc}") from None
    for p in gone:
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
    said = ([f"removed what an interrupted {what} left (its process is gone): {names}"] if gone else []) + \
           [f"put back {final}, which an interrupted {what} had moved aside to {old.name} (its process is gone)"
            for old, final in back.items()]
    say("; ".join(said))
    return found
