"""The libraries' warnings on the command line: those that say nothing the user can act on are
dropped; any other is one line ("warning: Category: first line of the message"), never the
library's file, line number and source line.

zarr-python warns on every open of a store whose codecs are numcodecs' (shuffle, bitround, Blosc
under zarr 3: what climio and xarray write) that they are "not in the Zarr version 3
specification"; every S3 predict and advise of such a store printed it. The filter also goes to
child processes (PYTHONWARNINGS), whose warnings would reach the same stderr.
"""

import os
import warnings

# Message prefixes (as PYTHONWARNINGS matches them) of warnings that do not matter to the user.
NOISE = (
    "Numcodecs codecs are not in the Zarr version 3 specification",
    "Consolidated metadata is currently not part in the Zarr format 3 specification",
)


def install() -> None:
    for prefix in NOISE:
        warnings.filterwarnings("ignore", message=prefix)
    inherited = [f"ignore:{p}" for p in NOISE]
    current = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(([current] if current else []) + inherited)
    warnings.showwarning = _one_line


def _one_line(message, category, filename, lineno, file=None, line=None) -> None:
    import sys
    text = str(message).strip().splitlines()[0] if str(message).strip() else ""
    try:
        (file or sys.stderr).write(f"warning: {category.__name__}: {text}\n")
    except (OSError, ValueError):
        pass
