"""A stop the user asked for (Ctrl-C, SIGTERM from scancel or a walltime), remembered as well as raised.

The handlers raise KeyboardInterrupt / Terminated in the main thread so that every `with` and
`finally` runs, but library code can swallow them: netCDF4-python's Variable.__getitem__ has a bare
`except:` around a netCDF-C call, and an exception raised inside a garbage-collector callback is
only printed. Measured: 1 Ctrl-C in 5-8 was lost so during `climio bench predict`, which then ran to
the end. So the handlers also record the signal, and the places every long command passes through
(a record written, a progress line) call check(), which raises it again.
"""

from __future__ import annotations

import signal
import sys
from typing import Optional


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that every `with` and `finally` runs as for Ctrl-C."""


_requested: list = []


def _on_signal(signum, frame):
    _requested.append(signum)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _unraisable(unraisable) -> None:
    """sys.unraisablehook: a stop raised inside a __del__ or a gc callback (a Dask Future released
    while the signal arrived) is not printed as "Exception ignored ... Traceback": it was recorded
    and check() raises it again. Anything else goes to the hook that was there before."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _requested:
        return
    _previous_unraisable(unraisable)


_previous_unraisable = sys.unraisablehook


def install() -> dict:
    """Handle SIGINT and SIGTERM in this (main) thread: record the signal, raise its exception.
    Forgets an earlier stop; returns the handlers it replaced (for restore)."""
    global _previous_unraisable
    _requested.clear()
    if sys.unraisablehook is not _unraisable:
        _previous_unraisable = sys.unraisablehook
        sys.unraisablehook = _unraisable
    return {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}


def restore(previous: dict) -> None:
    """Put back the handlers install() replaced and forget the stop (climio called in-process, e.g.
    from a test or a notebook, must not leave its handlers or a stop behind)."""
    _requested.clear()
    if sys.unraisablehook is _unraisable:
        sys.unraisablehook = _previous_unraisable
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def requested() -> Optional[int]:
    """The first stop signal received, or None."""
    return _requested[0] if _requested else None


def check() -> None:
    """Raise the stop again if one was asked for (in case the first raise was swallowed)."""
    if _requested:
        raise Terminated() if _requested[0] == signal.SIGTERM else KeyboardInterrupt()
