"""climio: measure, explain and fix the I/O performance of climate data work."""

import os as _os
import sys as _sys
import types as _types

__version__ = "0.1.0"

# netCDF4-python points HDF5_PLUGIN_PATH at its wheel's filter plugins when imported; those are
# built for the wheel's HDF5, not the C layer's. Kept as the user had it for native programs.
USER_HDF5_PLUGIN_PATH = _os.environ.get("HDF5_PLUGIN_PATH")


def rechunk(src, dst, **options) -> dict:
    """climio.rechunk(src, dst, chunks=..., compression=..., ...): the `climio rechunk` command from
    Python, i.e. climio.rechunk.convert (see its docstring); returns the summary --json prints."""
    import importlib   # (imported on use, as the rest of the API: the core imports this package's face)
    return importlib.import_module("climio.rechunk").convert(src, dst, **options)


def advise(target, **options):
    """climio.advise(path | workflow | trace dir | Darshan log, var=..., read=..., passes=...) -> Advice
    (the numbers, ranked(), best, to_dict()): `climio advise` from Python (climio.api.advise)."""
    import importlib
    return importlib.import_module("climio.api").advise(target, **options)


class _Face(_types.ModuleType):
    """The package's face keeps `climio.rechunk` and `climio.advise` the functions above. The
    subpackages of the same names stay in sys.modules ("climio.rechunk", "climio.advise"), where
    `from climio.rechunk import convert` finds them; the import system's setattr of a subpackage
    onto this package is what is declined."""

    def __setattr__(self, name, value):
        if name in ("rechunk", "advise") and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Face


def __getattr__(name):
    """The Python API, imported on first use so that `import climio` stays cheap."""
    import importlib
    if name in ("run_study", "load_records", "predict"):   # climio.predict(path | URL | Dataset, read=...)
        return getattr(importlib.import_module("climio.api"), name)
    raise AttributeError(f"module 'climio' has no attribute {name!r}")
