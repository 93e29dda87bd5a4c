"""Is an input file whole? A cheap check of a netCDF or HDF5 file before a command reads it.

The libraries accept some damaged files without a word: netCDF-C opens a netCDF-3 file cut short
and reads zeros where its data are missing (issue 27: `rechunk` wrote them out and exited 0). The
file's own header says how long it must be, so every command that reads a file calls check() where
it opens its input; a damaged file is one DataError line (exit 3):

  netCDF-3 (CDF-1, CDF-2, CDF-5)  the header fixes the size: the end of the last fixed-size
                                  variable (begin + size) and of the last record
                                  (begin + (numrecs - 1) x recsize + size); a file shorter than
                                  that is "truncated: N of M bytes"; a header cut short is said too
  HDF5 / netCDF-4                 the superblock records the end-of-file address; a file shorter
                                  than it (cut inside a chunk, a partial copy) is "truncated"
  neither, first bytes all zero   "zeroed or overwritten header"

Other files (raw binary, Zarr directories, formats a command takes through another library) pass:
check() only rejects what it can prove damaged. Reads the header only (a few KiB at most). A netCDF
or HDF5 file whose header looks whole is then opened once in a forked child (climio.dataset.isolate)
so that a crash, a hang or a huge allocation inside netCDF-C/HDF5 is one line, not a dead process.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from climio.base.errors import DataError, no_such_file
from climio.dataset import isolate

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_NC_TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
_ABSENT, _NC_DIMENSION, _NC_VARIABLE, _NC_ATTRIBUTE = 0, 10, 11, 12
_STREAMING = 0xFFFFFFFF


def check(*paths) -> None:
    """DataError (exit 3, one line) for the first path that is missing or provably damaged."""
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise no_such_file(path)
        if path.is_dir():
            continue            # a Zarr store: not a single file with a header of its own
        problem = problem_of(path)
        if problem:
            raise DataError(f"{path}: {problem}")
        if _netcdf_or_hdf5(path):   # the header is whole; the libraries' parse of it, in a child first
            isolate.probe_netcdf(path)


def _netcdf_or_hdf5(path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4)
        return head[:3] == b"CDF" or _hdf5_superblock_offset(fh, os.path.getsize(path)) is not None


def problem_of(path) -> str:
    """What is wrong with the file, in a few words, or "" when nothing provable is."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(8)
        if head[:3] == b"CDF" and len(head) >= 4 and head[3] in (1, 2, 5):
            return _netcdf3(fh, size, head[3])
        sb = _hdf5_superblock_offset(fh, size)
        if sb is not None:
            return _hdf5(fh, size, sb)
    if size == 0:
        return "empty file (0 bytes)"
    if head and not any(head):
        return "zeroed or overwritten header (the first bytes are zeros, no netCDF or HDF5 signature)"
    return ""


def _truncated(have: int, need: int) -> str:
    return f"truncated: {have} of {need} bytes"


# --- netCDF-3 --------------------------------------------------------------------------------------

class _Short(Exception):
    """The header ends before it says it does."""


class _Header:
    """A cursor over the netCDF-3 header (big-endian XDR)."""

    def __init__(self, fh, version: int, size: int):
        self.fh, self.big, self.size = fh, version == 5, size   # CDF-5: 64-bit counts
        self.offset_size = 4 if version == 1 else 8     # CDF-1: 32-bit begin offsets

    def read(self, n: int) -> bytes:
        if n < 0 or self.fh.tell() + n > self.size:   # a count claiming more than the file holds
            raise _Short()                              # (never read 2^64 bytes: MemoryError)
        b = self.fh.read(n)
        if len(b) < n:
            raise _Short()
        return b

    def u32(self) -> int:
        return struct.unpack(">I", self.read(4))[0]

    def count(self) -> int:
        return struct.unpack(">Q", self.read(8))[0] if self.big else self.u32()

    def offset(self) -> int:
        return struct.unpack(">Q" if self.offset_size == 8 else ">I", self.read(self.offset_size))[0]

    def name(self) -> bytes:
        n = self.count()
        return self.read(_pad4(n))[:n]

    def list_len(self, tag: int) -> int:
        t, n = self.u32(), self.count()
        if t not in (tag, _ABSENT) or (t == _ABSENT and n != 0):
            raise ValueError(f"bad list tag {t}")
        return n

    def skip_attributes(self) -> None:
        for _ in range(self.list_len(_NC_ATTRIBUTE)):
            self.name()
            nc_type, n = self.u32(), self.count()
            if nc_type not in _NC_TYPE_SIZES:
                raise ValueError(f"bad attribute type {nc_type}")
            self.read(_pad4(n * _NC_TYPE_SIZES[nc_type]))


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def _netcdf3(fh, size: int, version: int) -> str:
    """The size the header fixes, against the file's. netCDF-C's layout (NC_computeshapes): fixed
    variables at `begin`, records interleaved from the first record variable's `begin`, each record
    the record variables' padded sizes (unpadded when there is only one)."""
    fh.seek(4)
    h = _Header(fh, version, size)
    try:
        numrecs = h.count()
        dims = []
        for _ in range(h.list_len(_NC_DIMENSION)):
            h.name()
            dims.append(h.count())
        h.skip_attributes()
        variables = []
        for _ in range(h.list_len(_NC_VARIABLE)):
            h.name()
            ids = [h.count() for _ in range(h.count())]
            h.skip_attributes()
            nc_type, _vsize, begin = h.u32(), h.count() if h.big else h.u32(), h.offset()
            if nc_type not in _NC_TYPE_SIZES or any(i >= len(dims) for i in ids):
                raise ValueError("bad variable entry")
            is_record = bool(ids) and dims[ids[0]] == 0
            n = _NC_TYPE_SIZES[nc_type]
            for i in ids[1:] if is_record else ids:
                n *= dims[i]
            variables.append((is_record, begin, n))
        header_end = fh.tell()
    except _Short:
        return f"truncated inside its header: {size} bytes"
    except ValueError as exc:
        return f"corrupt netCDF-3 header ({exc})"
    need = header_end
    fixed = [(b, n) for rec, b, n in variables if not rec]
    records = [(b, n) for rec, b, n in variables if rec]
    for begin, n in fixed:
        need = max(need, begin + n)
    if records and numrecs and numrecs not in (_STREAMING, (1 << 64) - 1):
        recsize = records[0][1] if len(records) == 1 else sum(_pad4(n) for _, n in records)
        for begin, n in records:
            need = max(need, begin + (numrecs - 1) * recsize + n)
    return _truncated(size, need) if size < need else ""


# --- HDF5 ------------------------------------------------------------------------------------------

def _hdf5_superblock_offset(fh, size: int):
    """Where the HDF5 signature is: 0, 512, 1024, 2048, ... (after a user block), or None."""
    at = 0
    while at + 8 <= size:
        fh.seek(at)
        if fh.read(8) == HDF5_SIGNATURE:
            return at
        at = 512 if at == 0 else at * 2
    return None


def _hdf5(fh, size: int, at: int) -> str:
    """The superblock's end-of-file address (relative to its base address) against the file size."""
    fh.seek(at + 8)
    b = fh.read(96)
    try:
        version = b[0]
        if version in (0, 1):
            o = b[5]                                   # size of offsets
            fields = 16 + (4 if version == 1 else 0)  # to the base address
        elif version in (2, 3):
            o = b[1]
            fields = 4
        else:
            return ""                                  # a superblock this check does not know
        if o not in (2, 4, 8):
            return f"corrupt HDF5 superblock (offset size {o})"
        fmt = {2: "<H", 4: "<I", 8: "<Q"}[o]
        base = struct.unpack(fmt, b[fields:fields + o])[0]
        eof_at = fields + 2 * o                        # after the free-space / extension address
        eof = struct.unpack(fmt, b[eof_at:eof_at + o])[0]
    except (IndexError, struct.error):
        return f"truncated inside its HDF5 superblock: {size} bytes"
    if eof == (1 << (8 * o)) - 1:
        return ""                                      # undefined address: nothing to compare
    need = max(base, at) + eof                        # addresses are relative to the base (the user block's end)
    return _truncated(size, need) if size < need else ""
