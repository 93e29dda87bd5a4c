"""Did a fix change the job's result? Exit status, the numbers it printed (rtol 1e-6, the text around
them equal) and the files it wrote (bytes, or for netCDF/HDF5 every variable's values), against the
baseline's; or the user's own `--compare CMD BASE_DIR RUN_DIR` (exit 0: the same).

    same_result(base, run, rtol, compare_cmd) -> (bool, why)
"""

import math
import re
import shlex
import subprocess
from pathlib import Path

RTOL = 1e-6
_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b", re.I)


def numbers(text) -> tuple:
    """(the text with every number replaced by '#', the numbers)."""
    vals = [float(m.group()) for m in _NUM.finditer(text)]
    return _NUM.sub("#", text), vals


def same_numbers(a, b, rtol=RTOL) -> tuple:
    ta, va = numbers(a)
    tb, vb = numbers(b)
    if ta != tb or len(va) != len(vb):
        return False, "printed different text"
    for k, (x, y) in enumerate(zip(va, vb)):
        if not (x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=rtol, abs_tol=0.0)):
            return False, f"printed number {k + 1} differs: {x!r} against the baseline's {y!r} (rtol {rtol:g})"
    return True, ""


def _same_array_file(a, b, rtol) -> bool:
    import numpy as np
    import netCDF4
    with netCDF4.Dataset(a) as da, netCDF4.Dataset(b) as db:
        if set(da.variables) != set(db.variables):
            return False
        for name in da.variables:
            x, y = np.ma.filled(da[name][:], np.nan), np.ma.filled(db[name][:], np.nan)
            if x.shape != y.shape or not np.allclose(x, y, rtol=rtol, atol=0.0, equal_nan=True):
                return False
    return True


def same_files(base_out, run_out, rtol=RTOL) -> tuple:
    a = {p.name: p for p in Path(base_out).glob("*")} if Path(base_out).is_dir() else {}
    b = {p.name: p for p in Path(run_out).glob("*")} if Path(run_out).is_dir() else {}
    if set(a) != set(b):
        return False, f"wrote other files ({sorted(set(a) ^ set(b))})"
    for name in sorted(a):
        if a[name].read_bytes() == b[name].read_bytes():
            continue
        try:
            ok = _same_array_file(a[name], b[name], rtol)
        except (OSError, RuntimeError, ImportError):
            ok = False
        if not ok:
            return False, f"wrote a different {name.split('-', 1)[-1]}"
    return True, ""


def same_result(base, run, rtol=RTOL, compare_cmd=None) -> tuple:
    """(same, why not) of a run against the baseline run (run_job records)."""
    if run["exit_status"] != base["exit_status"]:
        return False, f"exit status {run['exit_status']} (baseline {base['exit_status']})"
    if compare_cmd:
        p = subprocess.run([*shlex.split(compare_cmd), base["dir"], run["dir"]], capture_output=True, text=True)
        return (p.returncode == 0, "" if p.returncode == 0 else f"--compare said different: {p.stdout.strip()[-200:]}")
    ok, why = same_numbers(run["stdout"], base["stdout"], rtol)
    if not ok:
        return ok, why
    return same_files(Path(base["dir"]) / "out", Path(run["dir"]) / "out", rtol)
