"""Lustre striping of an output directory: set with `lfs setstripe` where it exists, recorded either way.

New files inherit the directory's layout, so the study stripes the directory it writes into
before launching; on any other file system the setting is recorded as not applicable rather
than silently dropped.
"""

import shutil
import subprocess

from climio.base.errors import NativeError
from climio.machine.platform import filesystem_of


def apply(directory, count=None, size=None) -> dict:
    """Set stripe count/size on `directory` when asked and possible; return what is in effect."""
    fs = filesystem_of(directory)
    asked = {"count": count, "size": size}
    if fs["type"] != "lustre":
        return {"applied": False, "requested": asked, "reason": f"{fs['type']} has no stripes"}
    lfs = shutil.which("lfs")
    if not lfs:
        return {"applied": False, "requested": asked, "reason": "lfs not found"}
    if count is not None or size is not None:
        cmd = [lfs, "setstripe"] + (["-c", str(count)] if count is not None else []) \
            + (["-S", str(size)] if size is not None else []) + [str(directory)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise NativeError(f"lfs setstripe failed on {directory}: {(out.stderr or out.stdout).strip()}")
    got = subprocess.run([lfs, "getstripe", "-d", str(directory)], capture_output=True, text=True)
    return {"applied": count is not None or size is not None, "requested": asked,
            "getstripe": (got.stdout or got.stderr).strip()}
