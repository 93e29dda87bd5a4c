"""Cold/warm page-cache control for the files a measurement touches.

Eviction is posix_fadvise(POSIX_FADV_DONTNEED) and is *verified*: mincore(2) on a
mapping of the file tells which pages are still resident. A file that could not be
evicted is reported as warm, never silently as cold. The C probes carry their own copy
of this logic (csrc/common/cache.c) because they must run stand-alone. storage_read_bytes(pid)
says what a process really fetched from storage, the check that a cold read was cold.
"""

import ctypes
import ctypes.util
import mmap
import os

import numpy as np

# A file counts as cold when at most this fraction of its pages is resident.
COLD_THRESHOLD = 0.01
EVICT_METHOD = "posix_fadvise(DONTNEED)"

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.mmap.restype = ctypes.c_void_p
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
_PAGE = mmap.PAGESIZE
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_fraction(path, offset=0, length=None) -> float:
    """Fraction of the file's pages in the page cache (0.0 for an empty file or range); with
    ``offset``/``length``, of the pages holding those bytes only."""
    size = os.path.getsize(path)
    start = max(0, min(int(offset), size)) // _PAGE * _PAGE
    end = size if length is None else max(start, min(size, int(offset) + int(length)))
    if end <= start:
        return 0.0
    span = end - start
    npages = (span + _PAGE - 1) // _PAGE
    vec = (ctypes.c_ubyte * npages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        # Python's mmap object hides its address for read-only maps, so map through libc.
        addr = _libc.mmap(None, span, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap failed on {path}")
        try:
            if _libc.mincore(addr, span, vec) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"mincore failed on {path}: {os.strerror(err)}")
        finally:
            _libc.munmap(addr, span)
    finally:
        os.close(fd)
    return int((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) / npages


def evict(path) -> None:
    """Ask the kernel to drop the file's clean pages (dirty ones are flushed first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        # Dirty pages cannot be dropped; flushing first makes a just-written file evictable.
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path, block=1 << 24) -> None:
    """Read the whole file once so that it is resident."""
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(block)
        while fh.readinto(buf):
            pass


def will_need(path, length: int = 0) -> int:
    """Hand the first `length` bytes of `path` (0: all of it) to the kernel's readahead
    (posix_fadvise WILLNEED); the bytes advised, 0 when the file cannot be opened or advised."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    try:
        size = os.fstat(fd).st_size
        n = size if length <= 0 else min(length, size)
        os.posix_fadvise(fd, 0, n, os.POSIX_FADV_WILLNEED)
        return n
    except OSError:
        return 0
    finally:
        os.close(fd)


EVICT_TRIES = 3


def prepare(paths, state: str) -> dict:
    """Bring `paths` into `state` ("cold" or "warm"); return the record's `cache` field."""
    if state not in ("cold", "warm"):
        raise ValueError(f"cache state must be cold or warm, not {state!r}")
    # A running server (the S3 study's) can touch its files again between the eviction and the
    # check, more often on a loaded machine (CI once saw "warm"): evict again, at most EVICT_TRIES
    # times; the record still says what mincore found after the last try.
    for _ in range(EVICT_TRIES if state == "cold" else 1):
        for p in paths:
            evict(p) if state == "cold" else warm(p)
        fractions = [resident_fraction(p) for p in paths]
        frac = max(fractions) if fractions else 0.0
        if state == "warm" or frac <= COLD_THRESHOLD:
            break
    measured = "cold" if frac <= COLD_THRESHOLD else "warm"
    return {
        "state": measured,
        "requested": state,
        "method": EVICT_METHOD if state == "cold" else "pre-read",
        "resident_fraction": round(frac, 6),
        "verified_by": "mincore",
    }


def storage_read_bytes(pid="self"):
    """Bytes process `pid` (this one by default) fetched from storage (/proc/PID/io read_bytes;
    page-cache hits do not count), or None where the kernel does not account task I/O."""
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
