"""climio: measure, explain and fix the I/O performance of climate data work."""

import os as _os

__version__ = "0.1.0"

# netCDF4-python points HDF5_PLUGIN_PATH at its wheel's filter plugins when imported; those are
# built for the wheel's HDF5, not the C layer's. Kept as the user had it for native programs.
USER_HDF5_PLUGIN_PATH = _os.environ.get("HDF5_PLUGIN_PATH")


def __getattr__(name):
    """The Python API, imported on first use so that `import climio` stays cheap."""
    import importlib
    if name == "rechunk":   # the package is callable: climio.rechunk(src, dst, chunks=..., ...)
        return importlib.import_module("climio.rechunk")
    if name == "predict":   # climio.predict(path | Dataset, var=..., read="xt", tasks=...)
        return importlib.import_module("climio.advise.predict").predict_api
    if name in ("run_study", "load_records"):
        return getattr(importlib.import_module("climio.api"), name)
    raise AttributeError(f"module 'climio' has no attribute {name!r}")
