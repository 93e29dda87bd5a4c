"""The software layers of the read-stack study (thesis ch. 3) and how each reads bytes [off, off+n).

Native layers are separate C programs (csrc/probes); Python layers are classes run by
read_stack_worker in their own process, so every layer is measured the same way: one
process per series, imports and file opening outside the timed region.
"""

from importlib import metadata

import numpy as np

NATIVE_LAYERS = {"c-posix": "climio-probe-posix", "c-netcdf": "climio-probe-netcdf"}
PYTHON_LAYERS = ("py-file", "numpy", "netcdf4-python", "h5py", "h5netcdf", "xarray")
LAYERS = tuple(NATIVE_LAYERS) + PYTHON_LAYERS
# Which of the two test files (plain binary or netCDF-4) a layer reads.
BINARY_LAYERS = ("c-posix", "py-file", "numpy")
ITEMSIZE = 8  # the 1-D variable is float64, so netCDF layers index elements of 8 bytes


def file_kind(layer: str) -> str:
    return "bin" if layer in BINARY_LAYERS else "nc"


class _Sequential:
    """Skips the seek when a read continues where the previous one ended, as the thesis's
    sequential loop did (read after read, no seeks)."""

    def _seek(self, fh, off):
        if off != self.pos:
            fh.seek(off)
        self.pos = off


class PyFile(_Sequential):
    api = "file.seek/file.read"

    def open(self, path, var):
        self.fh = open(path, "rb")
        self.pos = 0

    def read(self, off, n):
        self._seek(self.fh, off)
        data = self.fh.read(n)
        self.pos += len(data)
        return data

    def close(self):
        self.fh.close()

    def library(self):
        return "Python io (BufferedReader)"


class NumpyFromfile(_Sequential):
    api = "np.fromfile"

    def open(self, path, var):
        self.fh = open(path, "rb")
        self.pos = 0

    def read(self, off, n):
        self._seek(self.fh, off)
        data = np.fromfile(self.fh, dtype="<f8", count=n // ITEMSIZE)
        self.pos += data.nbytes
        return data

    def close(self):
        self.fh.close()

    def library(self):
        return f"numpy {np.__version__}"


class _Slicing:
    """Libraries that read element ranges of a 1-D variable by slicing."""

    def read(self, off, n):
        return self.var[off // ITEMSIZE:(off + n) // ITEMSIZE]


class NetCDF4Python(_Slicing):
    api = "Variable.__getitem__"

    def open(self, path, var):
        import netCDF4
        self.ds = netCDF4.Dataset(path, "r")
        self.var = self.ds.variables[var]

    def close(self):
        self.ds.close()

    def library(self):
        import netCDF4
        return (f"netCDF4-python {netCDF4.__version__} (netCDF-C {netCDF4.__netcdf4libversion__},"
                f" HDF5 {netCDF4.__hdf5libversion__})")


class H5py(_Slicing):
    api = "Dataset.__getitem__"

    def open(self, path, var, **file_kw):
        import h5py
        self.fh = h5py.File(path, "r", **file_kw)
        self.var = self.fh[var]

    def close(self):
        self.fh.close()

    def library(self):
        import h5py
        return f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version})"


class H5netcdf(_Slicing):
    api = "Variable.__getitem__"

    def open(self, path, var):
        import h5netcdf
        self.ds = h5netcdf.File(path, "r")
        self.var = self.ds.variables[var]

    def close(self):
        self.ds.close()

    def library(self):
        import h5py
        return f"h5netcdf {metadata.version('h5netcdf')} (h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version})"


class Xarray:
    api = "DataArray[slice].values"

    def open(self, path, var):
        import xarray as xr
        # cache=False: every slice goes to the file, as an analysis script streaming data does.
        self.ds = xr.open_dataset(path, engine="netcdf4", cache=False)
        self.var = self.ds[var]

    def read(self, off, n):
        return self.var[off // ITEMSIZE:(off + n) // ITEMSIZE].values

    def close(self):
        self.ds.close()

    def library(self):
        import netCDF4
        return f"xarray {metadata.version('xarray')} over netCDF4-python {netCDF4.__version__}"


READERS = {
    "py-file": PyFile, "numpy": NumpyFromfile, "netcdf4-python": NetCDF4Python,
    "h5py": H5py, "h5netcdf": H5netcdf, "xarray": Xarray,
}

