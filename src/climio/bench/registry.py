"""The built-in studies, found by name: the registry of climio.bench.base filled on first use.

Apart from base so that base, which every study imports, imports no study (no import cycle)."""

from typing import Optional

from climio.base.errors import InputError
from climio.bench.base import _REGISTRY, Study

_loaded = False


def _load() -> None:
    """The built-in studies, registered once, in the report's order: one line per study (its
    package calls register() on import). Imported here, on first use, so that importing this
    module stays cheap; static, so that the import linter sees them."""
    global _loaded
    if not _loaded:
        from climio.bench import read_stack  # noqa: F401
        from climio.bench import chunking  # noqa: F401
        from climio.bench import parallel_write  # noqa: F401
        from climio.bench import parallel_read  # noqa: F401
        from climio.bench import stsa  # noqa: F401
        from climio.bench import calibrate  # noqa: F401
        from climio.bench import predict  # noqa: F401
        from climio.bench import layouts  # noqa: F401
        from climio.bench import object_read  # noqa: F401
        from climio.bench import object_chunking  # noqa: F401
        from climio.bench import advice  # noqa: F401
        _loaded = True


def studies() -> list:
    """Every registered study, the built-in ones first in _load's order."""
    _load()
    return list(_REGISTRY.values())


def get(name: str) -> Study:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown study '{name}': choose from {', '.join(_REGISTRY)}") from None


def find(name: str) -> Optional[Study]:
    """The study that wrote records named `name`, or None (records of an unknown study)."""
    _load()
    return _REGISTRY.get(name)
