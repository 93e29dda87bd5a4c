"""User-facing failures. The CLI turns each into one line on stderr and an exit code.

EXIT_CODES is the one table of exit codes: every command uses it (cli/__init__.py prints it in
`climio --help`, README.md's "Exit codes" repeats it, tests/test_exit_codes.py checks every command
against it). One kind of failure has one code everywhere: a missing file is DATA whether `advise`,
`predict` or `rechunk` meets it; an unknown --var is DATA; a malformed option value is INPUT.
"""

import enum
import errno
import os

class Exit(enum.IntEnum):
    """The exit codes, by kind of outcome (EXIT_CODES says each in words)."""

    OK = 0
    FAILURE = 1
    INPUT = 2
    DATA = 3
    DISK = 4
    NATIVE = 5
    INTERRUPTED = 130   # 128 + SIGINT
    TERMINATED = 143    # 128 + SIGTERM


EXIT_CODES = {
    Exit.OK: "ok",
    Exit.FAILURE: "other failure",
    Exit.INPUT: "bad input: an unknown or malformed option or value (a read shape, a size, a chunk shape)",
    Exit.DATA: "data: a missing, unreadable, truncated or corrupt file, or an unknown variable",
    Exit.DISK: "disk space: too little free space, or the disk filled up while writing",
    Exit.NATIVE: "a native program or an MPI/Dask launch failed",
    Exit.INTERRUPTED: "interrupted (Ctrl-C, SIGINT)",
    Exit.TERMINATED: "terminated (SIGTERM, as scancel or a batch walltime sends)",
}


def exit_codes_text() -> str:
    """The table as one paragraph (for --help)."""
    return "exit codes: " + "; ".join(f"{int(code)} {what}" for code, what in EXIT_CODES.items()) + "."


class ClimioError(Exception):
    """A failure the user can act on; never shown as a traceback."""

    exit_code = Exit.FAILURE


class InputError(ClimioError):
    """Malformed or unknown option values (sizes, layer names, patterns, read shapes)."""

    exit_code = Exit.INPUT


class DataError(ClimioError):
    """A missing, unreadable, truncated or corrupt file, a missing variable, an unwritable directory."""

    exit_code = Exit.DATA


class DiskSpaceError(ClimioError):
    """Too little free space for the files a command plans to write, or the disk filled up."""

    exit_code = Exit.DISK


class NativeError(ClimioError):
    """A native probe or launcher failed (missing binary, non-zero exit)."""

    exit_code = Exit.NATIVE


class Interrupted(ClimioError):
    """SIGINT arrived; whatever was being written has been removed."""

    exit_code = Exit.INTERRUPTED


class TerminatedError(Interrupted):
    """SIGTERM arrived (scancel, a walltime); whatever was being written has been removed."""

    exit_code = Exit.TERMINATED


def no_such_file(path) -> DataError:
    """The one message and code for an input file or directory that does not exist."""
    return DataError(f"no such file or directory: {path}")


def disk_full_in(exc: BaseException):
    """The OSError(ENOSPC/EDQUOT) behind `exc` (itself, its cause or context: h5py turns a failed
    flush into RuntimeError("... failed") raised while handling it), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and (exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)):
            return exc
        if "No space left on device" in str(exc):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _no_space_at(path) -> bool:
    """The file system holding `path` (or its nearest existing parent) has under 1 MiB left."""
    p = os.path.abspath(str(path))
    while p and not os.path.exists(p):
        p = os.path.dirname(p)
    try:
        st = os.statvfs(p or "/")
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < (1 << 20)


def disk_full_error(exc: BaseException, path, doing: str = ""):
    """A DiskSpaceError for `exc` when a full disk caused it, else None. netCDF-C does not pass
    ENOSPC on: a write to a full disk comes back as "NetCDF: HDF error" or even "Permission
    denied", so besides ENOSPC in the exception's chain, a failure while the file system at `path`
    has no space left is taken for a full disk."""
    if isinstance(exc, DiskSpaceError):
        return exc
    if not isinstance(exc, Exception) or isinstance(exc, (InputError, NativeError)):
        return None
    if disk_full_in(exc) is not None or _no_space_at(path):
        return DiskSpaceError(f"disk full while {doing or f'writing {path}'}")
    return None
