"""The HDF5 filter plugins h5py's HDF5 uses: hdf5plugin's Blosc filter, not netCDF4-python's.

Why: importing netCDF4 points HDF5_PLUGIN_PATH at its wheel's plugins, and hdf5plugin registers
only the filters HDF5 cannot load already, so h5py's HDF5 loaded netCDF-C's Blosc filter
(lib__nch5blosc.so, netCDF-C 4.10.1). That filter gives Blosc a destination exactly the chunk's
size, so Blosc cannot shrink noisy float32 and returns 0; the filter then prints "Buffer is
uncompressible", frees the chunk buffer and hands HDF5 a NULL one. HDF5 keeps going (netCDF-C
marks the filter optional, H5Z_FLAG_OPTIONAL) and writes the chunk from NULL: EFAULT, then a
segmentation fault. hdf5plugin's filter returns 0 and leaves the buffer alone, so HDF5 stores such
a chunk unfiltered and says so in the chunk's filter mask, which every HDF5 reader honours.

netCDF-C's own HDF5 (the one netCDF4-python writes through) keeps its filter: writers that may
meet incompressible data with Blosc write the values through h5py instead (needs_h5py_write).
"""

_registered = False


def use_hdf5plugin_blosc() -> None:
    """Register hdf5plugin's filters with h5py's HDF5, and its Blosc filter in place of any
    already loaded (force: replaces netCDF-C's). Filters are looked up per chunk, so this also
    holds for datasets opened before it."""
    global _registered
    if _registered:
        return
    import hdf5plugin
    if not hdf5plugin.register("blosc", force=True):
        raise RuntimeError("hdf5plugin could not register its Blosc filter with h5py's HDF5")
    _registered = True


def needs_h5py_write(codec: str) -> bool:
    """Whether values compressed with `codec` must be written through h5py (see the module note)."""
    return codec.startswith("blosc_")
