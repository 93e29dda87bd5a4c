"""Imported by every Python process of a traced job (this directory is first on its PYTHONPATH):
enables the features whose variables are set, then runs the sitecustomize this one shadows."""
import os
import sys


def _shadowed() -> None:
    """Run the next `sitecustomize` on sys.path (the user's or the distribution's), if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    from importlib.machinery import PathFinder
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        from importlib.util import module_from_spec
        spec.loader.exec_module(module_from_spec(spec))


def _local(name):
    """A module of this directory by its path: for a job whose Python cannot import climio
    (another interpreter); the injected modules import nothing of climio."""
    from importlib.util import module_from_spec, spec_from_file_location
    spec = spec_from_file_location(f"_climio_inject_{name}", os.path.join(os.path.dirname(__file__), f"{name}.py"))
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if os.environ.get("CLIMIO_TRACE_OBJECTS"):
    try:
        from climio.trace.inject import objects
    except ImportError:
        objects = _local("objects")
    objects.install()

_shadowed()
