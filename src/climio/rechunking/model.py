"""The nouns shared by the rechunk modules: what a source variable is, and what it should become."""

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from climio.dataset.compression import Compression


@dataclass(frozen=True)
class VarInfo:
    """One variable of the source file, as `meta.scan` finds it (file order, groups depth-first)."""
    path: str                      # netCDF path: "/temp" or "/ocean/deep/temp"
    dims: tuple                    # dimension names, outermost first
    shape: tuple                   # current lengths (unlimited dims at their current length)
    unlimited: tuple               # per dimension: is it unlimited
    dtype: str                     # numpy dtype string ("<f4", ">i2", ...) or "str", "vlen", "compound", "enum", "opaque"
    itemsize: int                  # bytes per value (0 for str/vlen)
    chunks: Optional[tuple]        # None = contiguous (or netCDF-3, or scalar)
    compression: Compression       # what the source uses (Compression() = none)
    filters: tuple = ()            # HDF5 filter ids in pipeline order, e.g. (2, 1) = shuffle, deflate
    fill_value: object = None      # the _FillValue attribute if set, else None
    hdf5_path: str = ""            # dataset path inside the HDF5 file ("" for netCDF-3 sources)
    attrs: dict = field(default_factory=dict, compare=False)  # attribute name -> value (for CF axis lookup)

    @property
    def numeric(self) -> bool:
        """A primitive numeric type: the only kind climio re-lays out (strings etc. are copied as they are)."""
        if self.itemsize <= 0 or self.dtype in ("str", "vlen", "compound", "enum", "opaque"):
            return False
        return np.dtype(self.dtype).kind in "biuf"  # NC_CHAR (S1) is text: copied as it is

    @property
    def nbytes(self) -> int:
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Target:
    """What one variable should become: chunks (None = contiguous) and compression."""
    chunks: Optional[tuple]
    compression: Compression

    def label(self) -> str:
        chunks = "[" + ",".join(map(str, self.chunks)) + "]" if self.chunks else "contiguous"
        return f"{chunks} {self.compression.label}"
