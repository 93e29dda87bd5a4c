"""The input read ahead while the conversion starts up: once the plan is made, the files the blocks
will read (a netCDF file, a local Zarr store's chunk files of the re-laid-out arrays) are handed
to the kernel's readahead (posix_fadvise WILLNEED) from a background thread, so that the disk
reads while the output is defined and the workers import, instead of idling until the first block
asks for its chunks. At most a quarter of the memory available now (page cache, not the
processes' memory: --max-mem does not count it), files in the order given. Best effort: a file
that cannot be opened or advised is passed over; no fadvise (not Linux), nothing happens.
"""

import os
import threading
from pathlib import Path

SHARE_OF_AVAILABLE = 4     # read ahead at most MemAvailable / this


def input_files(in_path, in_fmt: str, targets) -> list:
    """The local files the blocks of `targets` (variable paths) read: the file itself, or the target
    arrays' chunk files of a Zarr store (their metadata documents left out)."""
    path = Path(in_path)
    if in_fmt != "zarr":
        return [path] if path.is_file() else []
    from .formats.zarr import chunk_files   # the command's one listing of the store
    return chunk_files(path, targets)


def start(files, budget: int = 0):
    """Advise `files` from a daemon thread (returned; None when there is nothing to do)."""
    if not files or not hasattr(os, "posix_fadvise"):
        return None
    if budget <= 0:
        from climio.machine.memory import available_memory
        budget = available_memory() // SHARE_OF_AVAILABLE
    thread = threading.Thread(target=_advise, args=(list(files), budget), name="climio-warm", daemon=True)
    thread.start()
    return thread


def _advise(files, budget: int) -> None:
    from climio.machine.cache import will_need
    for f in files:
        if budget <= 0:
            return
        budget -= will_need(f, budget)
