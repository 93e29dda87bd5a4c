"""The converted copy a layout fix is tried on: `climio rechunk` (the command the advice prints, run as
a command: the trace package does not import the rechunker), same format, into scratch space that
is checked first.

    convert_copy(candidate, copies_dir, say) -> (copy path or None, seconds, CPU seconds, why not tried or None)
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from climio.base.units import format_size
from .runs import child_cpu_s

SPACE_FACTOR = 1.5            # a copy may compress less well than the original
SPACE_MARGIN = 64 << 20


def climio_argv() -> list:
    """The `climio` command of this installation (the console script beside this Python)."""
    exe = Path(sys.executable).with_name("climio")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from climio.cli import main; main()"]


def convert_copy(c, copies_dir, say=None) -> tuple:
    copies_dir = Path(copies_dir)
    copies_dir.mkdir(parents=True, exist_ok=True)
    dst = copies_dir / c.convert["dst_name"]
    need = int(os.path.getsize(c.file) * SPACE_FACTOR) + SPACE_MARGIN
    free = shutil.disk_usage(copies_dir).free
    if free < need:
        return None, None, None, (f"not enough scratch space for the copy in {copies_dir}: {format_size(free)} free, "
                            f"{format_size(need)} needed (give --scratch DIR)")
    if dst.exists():
        dst.unlink()
    argv = [*climio_argv(), "rechunk", c.file, str(dst), "-c",
            f"{c.convert['var'].lstrip('/')}:{','.join(map(str, c.convert['chunks']))}"]
    if say:
        say(f"converting for item {c.id}: climio rechunk ... -c {argv[-1]}")
    t0, c0 = time.perf_counter(), child_cpu_s()
    p = subprocess.run(argv, capture_output=True, text=True)
    secs, cpu = time.perf_counter() - t0, child_cpu_s() - c0
    if p.returncode != 0 or not dst.exists():
        return None, None, None, f"the conversion failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return str(dst), secs, cpu, None
