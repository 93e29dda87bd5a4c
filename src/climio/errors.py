"""User-facing failures. The CLI turns each into one line on stderr and an exit code."""


class ClimioError(Exception):
    """A failure the user can act on; never shown as a traceback."""

    exit_code = 1


class InputError(ClimioError):
    """Malformed or unknown option values (sizes, layer names, patterns)."""

    exit_code = 2


class DataError(ClimioError):
    """A missing or unreadable file, a missing variable, an unwritable directory."""

    exit_code = 3


class DiskSpaceError(ClimioError):
    """Too little free space for the files a command plans to write."""

    exit_code = 4


class NativeError(ClimioError):
    """A native probe or launcher failed (missing binary, non-zero exit)."""

    exit_code = 5


class Interrupted(ClimioError):
    """SIGINT or SIGTERM arrived; whatever was being written has been removed."""

    exit_code = 130
