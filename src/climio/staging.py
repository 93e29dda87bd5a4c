"""Outputs are written under a temporary name beside their final one and renamed on success:
readers never see half a file, and a failed or interrupted write leaves nothing under the name.

    with staged(a, b) as (tmp_a, tmp_b): ...     several files renamed together
    write_via_temp(path, lambda tmp: ...)        one file; an OSError becomes one DataError line
"""

import errno
import os
from contextlib import contextmanager
from pathlib import Path

from .errors import DataError, DiskSpaceError


def tmp_name(path) -> Path:
    """`.NAME.tmp-PID` beside `path` (the pid tells a later run whether its writer is gone)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


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


def write_via_temp(path, write) -> Path:
    """`write(tmp)` under a temporary name, renamed to `path` on success; one-line DataError."""
    try:
        with staged(path) as (tmp,):
            write(tmp)
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Path(path)
