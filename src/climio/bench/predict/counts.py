"""Chunk reads counted from the HDF5 library itself, to set beside the model's simulated counts.

HDF5 keeps its chunk-cache statistics private, so the reads are replayed through h5py on a file
object that records every read the library makes (offset, length): a read of exactly one chunk's
stored bytes at that chunk's address is one chunk read from storage, i.e. one decode when the
variable is filtered (tests/test_chunk_cache.py checks the simulation against this count). The
replay uses the cache the measured stack reported for the variable; each task's reads are
replayed on a fresh open, as each task opens the file.
"""

import io


class CountingFile(io.RawIOBase):
    """A read-only file object that records (offset, length) of every read made through it."""

    def __init__(self, path):
        self.f = open(path, "rb")
        self.reads = []

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, off, whence=0):
        return self.f.seek(off, whence)

    def tell(self):
        return self.f.tell()

    def readinto(self, b):
        self.reads.append((self.f.tell(), len(b)))
        return self.f.readinto(b)

    def close(self):
        self.f.close()
        super().close()


def chunk_reads(path, var, groups, spec, per_read=False) -> int:
    """Whole-chunk reads HDF5 makes for `groups` (one list of (start, count) per task) of `var`,
    each group on a fresh open with the chunk cache `spec` ({nbytes, nslots, w0}). `per_read`: the
    dataset is looked up for each read and let go, as h5netcdf does (model.predict.DATASET_PER_READ),
    so HDF5 frees its chunk cache between reads."""
    import h5py
    import hdf5plugin  # noqa: F401  (zstd and the other filters netCDF-C may have written)
    total = 0
    for reads in groups:
        cf = CountingFile(path)
        try:
            with h5py.File(cf, "r", rdcc_nbytes=int(spec["nbytes"]), rdcc_nslots=int(spec["nslots"]),
                           rdcc_w0=float(spec["w0"])) as f:
                d = f[var]
                addr = set()
                # one walk of the chunk index (get_chunk_info(i) walks it again for every i)
                d.id.chunk_iter(lambda ci: addr.add((ci.byte_offset, ci.size)))
                if per_read:
                    del d          # no handle held between reads: each read's lookup opens the dataset
                cf.reads.clear()
                for s, c in reads:
                    (f[var] if per_read else d)[tuple(slice(a, a + b) for a, b in zip(s, c))]
                total += sum(1 for r in cf.reads if r in addr)
        finally:
            cf.close()
    return total
