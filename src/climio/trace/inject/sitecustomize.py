"""climio's injection dispatcher, imported by the job's Python as `sitecustomize` (from a scratch
directory first on its PYTHONPATH). Each feature is a sibling module enabled by its own environment
variable; a feature's failure never stops the job (it is reported, not raised). Then any
`sitecustomize` this file shadows is imported, as Python would have.

Not run at all when Python starts with -I, -E (PYTHONPATH ignored) or -S (no site): `climio trace
try` reports the fix as not applied then. Imports nothing of climio (the job's Python may lack it).
"""

import importlib.machinery
import importlib.util
import os
import sys

# environment variable -> feature module (a sibling file); one line per feature
FEATURES = {
    "CLIMIO_INJECT_XARRAY": "xarray_open",      # trace try: open_dataset/open_mfdataset arguments
    "CLIMIO_TRACE_OBJECTS": "objects",          # the object-store tracer: its output directory
}

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_climio_inject_{name}", os.path.join(_HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _features():
    for var, name in FEATURES.items():
        if os.environ.get(var):
            try:
                _load(name).enable(os.environ[var])
            except Exception as exc:   # never break the job: say so on stderr
                sys.stderr.write(f"climio inject: {name} not applied: {type(exc).__name__}: {exc}\n")


def _chain():
    """Import the sitecustomize this one shadows (the next one on sys.path), under its own name."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or not spec.origin or os.path.dirname(os.path.abspath(spec.origin)) == _HERE:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_features()
_chain()
