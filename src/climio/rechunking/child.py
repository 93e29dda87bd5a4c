"""The child process that defines a Zarr output (or reads a Zarr input's metadata) through xarray,
so that xarray and pandas never load into the process that runs the conversion (about 120 MiB of
RSS beside the workers', for the whole run; command.define_and_start).

Importing what that child needs (xarray, pandas, zarr; dask too for a netCDF-4 output, not for a
Zarr one: without_dask) takes it about 0.6 s on this 2-core machine, the longest part of a Zarr
conversion's start-up. start_early() starts the child
when the command begins, so that those imports run while the parent scans and plans; run() then
hands it its work, or starts a child then and there. A child started early and not used is
stopped by discard(). A pipe and not a pool: no semaphores for the resource tracker to report as
leaked.
"""

import signal

from climio.base.errors import DataError

_early = {}   # "child": (process, pipe end) started by start_early and not yet used


def start_early(dask: bool = True) -> None:
    """Start the child now; it imports what defining a Zarr store needs and waits for run().
    dask=False (a Zarr output): dask is not there for it (without_dask), before xarray is imported.
    Forked when this process has no other thread (the command's first step: no file open, no
    thread holding a lock): it then has numpy and climio's modules already, 0.3 s of CPU a spawned
    child spends importing them before xarray, on the path to the first block. Else spawned."""
    from climio.machine import spawning
    discard()
    ctx = spawning.first_step_context()
    here, there = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_waiting_child, args=(there, dask), daemon=True)
    proc.start()
    there.close()
    _early["child"] = (proc, here)


def discard() -> None:
    """Stop a child start_early started that run() did not use."""
    early = _early.pop("child", None)
    if early is not None:
        proc, conn = early
        try:
            conn.send(None)        # nothing to do: it exits
        except OSError:
            pass
        conn.close()
        _join(proc)


def run(fn, args):
    """fn(*args) in a child process (the one start_early started, or a new one), which then exits;
    its exception is raised here."""
    early = _early.pop("child", None)
    if early is not None:
        proc, conn = early
        try:
            conn.send((fn, args))
        except OSError:            # it died while importing: a new one
            conn.close()
            _join(proc)
            early = None
    if early is None:
        from climio.machine import spawning
        ctx = spawning.context()
        conn, there = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child_main, args=(there, fn, args), daemon=True)
        proc.start()
        there.close()
    try:
        try:
            ok, value = conn.recv()
        except EOFError:
            raise DataError(f"defining the output failed: its process ended with exit code {proc.exitcode}") from None
    finally:
        conn.close()
        _join(proc)
    if not ok:
        raise value
    return value


def _join(proc) -> None:
    proc.join(timeout=5)
    if proc.is_alive():
        proc.terminate()
        proc.join()


def without_dask() -> None:
    """In the child only (never a user's process): dask is not there for the rest of its life.
    Defining a Zarr output needs no Dask (formats.zarr._define_like_xarray), but xarray imports
    dask.base (0.15 s of CPU) just to ask whether each array it meets is a Dask collection. Only
    before xarray is imported: xarray decides once, at its import, whether dask is installed."""
    import sys
    if "dask" not in sys.modules and "xarray" not in sys.modules:
        sys.modules["dask"] = None


def _no_distributed() -> None:
    """This process has no Dask client and never will: dask and xarray, which import
    `distributed` only to look for one when the targets' graph is built, are told it is not
    there (a None in sys.modules makes the import fail), instead of loading it (0.25 s of CPU
    and 13 MiB, for a lookup that finds nothing)."""
    import sys
    for name in ("distributed", "dask.distributed"):
        if name not in sys.modules:
            sys.modules[name] = None


def _waiting_child(conn, dask: bool = True) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's: it stops this process
    _no_distributed()
    if not dask:
        without_dask()
    try:
        import xarray  # noqa: F401  (and dask.array only when the work needs it: a netCDF-4 output)
        import zarr  # noqa: F401

        from .formats import xarray_io, zarr as zarr_format  # noqa: F401
    except Exception:   # noqa: BLE001  (the work itself then says what is missing)
        pass
    try:
        work = conn.recv()
    except (EOFError, OSError):
        return
    if work is not None:
        _child_main(conn, *work)


def _child_main(conn, fn, args) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _no_distributed()
    try:
        result = (True, fn(*args))
    except BaseException as exc:   # handed to the parent, which raises it
        result = (False, exc)
    try:
        conn.send(result)
    except Exception as exc:       # an exception that does not pickle: its text
        conn.send((False, DataError(f"defining the output failed: {result[1] if not result[0] else exc}")))
    conn.close()
