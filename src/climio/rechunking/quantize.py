"""netCDF-C's quantization of a block without writing it through netCDF-C.

New quantization is netCDF-C's (applied in nc_put_vara to the buffer it is given). Variables that
also use Blosc cannot be written through netCDF-C here (climio.dataset.h5filters: its Blosc filter
cannot store a chunk it cannot shrink), so each block is quantized by netCDF-C in a diskless
scratch dataset of the block's shape, read back and written through h5py. netCDF-C quantizes the
buffer element by element (BitGroom by each element's parity in the buffer), so the values are those
a write of the same block into the file would store.
"""

import numpy as np

from climio.dataset.compression import Compression


def quantizer(comp: Compression, fill_value=None):
    """block (ndarray) -> the values netCDF-C stores for it under `comp`'s quantization; fill
    values (the variable's _FillValue, else netCDF's default) are left as they are, as netCDF-C does."""
    import netCDF4

    def quantize(block: np.ndarray) -> np.ndarray:
        if not block.size:
            return block
        with netCDF4.Dataset("climio-quantize.nc", "w", diskless=True, persist=False) as ds:
            dims = [ds.createDimension(f"d{i}", n).name for i, n in enumerate(block.shape)]
            kw = {} if fill_value is None else {"fill_value": fill_value}
            v = ds.createVariable("v", block.dtype, dims, significant_digits=comp.nsd,
                                  quantize_mode=comp.quantize, **kw)
            v.set_auto_maskandscale(False)
            v[...] = block
            return np.asarray(v[...])

    return quantize
