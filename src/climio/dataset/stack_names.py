"""The names of climio's software stacks and their order, apart from the readers themselves
(climio.measure.stacks and stacks_s3, which load libraries), so that records, summaries and tables can name and sort
stacks without importing what measures them.

Native stacks are separate C programs (csrc/probes), named here with their program; the Python
stacks follow from the plainest (a file object) to the highest level (xarray): the thesis's
software stack, binary first, then netCDF-4.
"""

NATIVE_STACKS = {"c-posix": "climio-probe-posix", "c-netcdf": "climio-probe-netcdf"}
PYTHON_STACKS = ("py-file", "numpy", "netcdf4-python", "h5py", "h5netcdf", "xarray")
STACK_NAMES = tuple(NATIVE_STACKS) + PYTHON_STACKS
# the stacks that read hyperslabs of a variable: the read-time model prices them, calibrate measures
# them, predict --check and the tasks runner run them
HYPERSLAB_STACKS = ("netcdf4-python", "h5py", "h5netcdf", "xarray", "c-netcdf")
# object storage (climio.measure.stacks_s3): zarr-python over obstore or fsspec, and xarray on top
ZARR_STACKS = ("zarr-obstore", "zarr-fsspec", "xarray-zarr")
OBJECT_READ_STACKS = ZARR_STACKS[:2]
# a traced program's stack (Facts.stack) -> the model's stack its reads are priced with
MODEL_STACK = {"xarray": "xarray", "netcdf4-python": "netcdf4-python", "h5py": "h5py", "h5netcdf": "h5netcdf",
               "native": "c-netcdf"}


def stack_sort_key(name) -> tuple:
    """Sort key of a stack name: STACK_NAMES' order, names not in it after, alphabetically."""
    return (STACK_NAMES.index(name), "") if name in STACK_NAMES else (len(STACK_NAMES), str(name))
