"""How climio starts worker processes: one policy for every pool it makes.

climio's workers run climio's own functions, so they never need the user's main module. But
multiprocessing's spawn (and forkserver) start method imports `__main__` again in every child, and
a plain script without `if __name__ == "__main__":` then runs again in each worker: the README's
`climio.run_study(...)` in such a script ran for 10 minutes and appended 2,736 records instead of
72, with "safe importing of main module" tracebacks (issue 27).

context() is the spawn context every climio pool uses (rechunk's worker pool, the measuring tasks'
ProcessPoolExecutor and their Manager); its processes start without importing `__main__`, so
library calls are safe in a plain script and in a notebook, and a guard is not needed. dask_workers()
makes the Dask LocalCluster's worker processes start the same way. Spawn and not fork: a forked
child would inherit the parent's open HDF5 state and its threads. The one exception,
first_step_context(), forks a child started at a command's first step from a process with no other
thread and no file open (rechunk's define child): there is nothing to inherit there but imports.

Only processes started through this context skip `__main__`; the user's own multiprocessing is
untouched.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from multiprocessing import context as _mp_context
from multiprocessing import popen_spawn_posix, spawn

_local = threading.local()
_lock = threading.Lock()
_patched = False


def _install() -> None:
    """Wrap multiprocessing's preparation data once: for a process this module starts, leave out
    the instruction to import the parent's main module (by path or by name)."""
    global _patched
    with _lock:
        if _patched:
            return
        original = spawn.get_preparation_data

        def get_preparation_data(name):
            data = original(name)
            if getattr(_local, "starting", False):
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        spawn.get_preparation_data = get_preparation_data
        _patched = True


class _Popen(popen_spawn_posix.Popen):
    def _launch(self, process_obj):
        _local.starting = True      # read by get_preparation_data, in this thread, during this launch
        try:
            super()._launch(process_obj)
        finally:
            _local.starting = False


class _Process(_mp_context.SpawnProcess):
    _start_method = "spawn"

    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


class _Context(_mp_context.SpawnContext):
    _name = "spawn"
    Process = _Process


_CONTEXT = _Context()


def context():
    """The multiprocessing context of every climio worker process (spawn, without `__main__`)."""
    _install()
    return _CONTEXT


def first_step_context():
    """The context of a child started at a command's first step, before any file is open: fork
    when this process has no other thread (nothing to inherit but its imports, and no lock another
    thread could hold; the child then has numpy and climio's modules already, the 0.3 s of CPU a
    spawned child spends importing them), else context(). rechunk's define child uses it."""
    import multiprocessing
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return context()


def dask_workers() -> None:
    """Start the worker processes of Dask LocalClusters made in this process with context()
    (distributed takes its multiprocessing context from one function; Dask pickles a task's
    functions by value, so its workers need no `__main__` either)."""
    import distributed.process
    _install()
    distributed.process.get_mp_context = context


STOP_GRACE_S = 5.0


def kill_group(proc, grace_s=STOP_GRACE_S) -> None:
    """Stop the child's process group: SIGTERM, up to `grace_s` for the leader to exit, then
    SIGKILL for whatever is left. The grace lets mpirun forward the stop to its ranks and remove
    its session directory (ompi.HOST.N/ in TMPDIR, with shared-memory segments), which a SIGKILL
    leaves behind."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        if sig == signal.SIGTERM:
            end = time.monotonic() + grace_s
            while proc.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
