"""Read a suspect input in a forked child first, so that a crash inside a C library is one line.

netCDF-C, HDF5 and darshan-util parse headers in C: a damaged file can make them dereference a wild
pointer (SIGSEGV), abort on an assertion (SIGABRT) or believe a header claiming 10^15 elements and
allocate it. No Python handler catches any of that. So a command first lets a forked child do the
library's parse (open, walk the metadata) under RLIMIT_AS (the parent's size + MEMORY_BYTES) and a
timeout (TIMEOUT_S); a child that dies of a signal, runs out of memory or hangs is one DataError
line (exit 3) naming what happened. The child's Python exceptions are not reported here: the
command's own open meets them and says them its way.

CLIMIO_ISOLATE=off skips the child (a platform where fork is not wanted).
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import sys
import tempfile
import time

from climio.base.errors import DataError

# A header walk takes milliseconds, seconds on a slow parallel file system; a damaged header can make
# netCDF-C/HDF5 loop for ever (the seed-38 fuzz run: two files). Stated below the fuzz bench's 60 s.
TIMEOUT_S = float(os.environ.get("CLIMIO_ISOLATE_TIMEOUT", 20))
MEMORY_BYTES = 2 << 30     # what a header parse may allocate above the parent's own size


def enabled() -> bool:
    return os.environ.get("CLIMIO_ISOLATE", "on").lower() not in ("off", "0", "no")


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_isolated(fn, *args, what: str, timeout: float = None, memory: int = MEMORY_BYTES):
    """fn(*args) in a forked child; ("ok", its pickled value) or ("error", a one-line reason) for a
    Python exception there. DataError(what + the reason) when the child dies of a signal, exceeds
    `memory` bytes of address space or runs past `timeout` seconds. The child's stderr (C libraries
    print there) is kept out of the user's; its last line goes into the message."""
    timeout = TIMEOUT_S if timeout is None else timeout
    rfd, wfd = os.pipe()
    errf = tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    limit = _vm_bytes() + memory
    pid = os.fork()
    if pid == 0:   # the child: never returns
        code = 0
        try:
            os.close(rfd)
            os.dup2(errf.fileno(), 2)
            import faulthandler
            faulthandler.disable()   # a crash here is reported by the parent, in one line
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            if hard != resource.RLIM_INFINITY:   # under a limit already (ulimit -v, a batch job): stay inside it
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            try:
                answer = ("ok", fn(*args))
            except MemoryError:
                answer = ("memory", "")
            except BaseException as exc:  # noqa: BLE001  (any failure is the answer)
                answer = ("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            with os.fdopen(wfd, "wb") as fh:
                fh.write(pickle.dumps(answer))
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    os.close(wfd)
    return _collect(pid, rfd, errf, what, timeout, memory)


def _collect(pid, rfd, errf, what, timeout, memory):
    chunks, deadline = [], time.monotonic() + timeout
    os.set_blocking(rfd, False)
    status = None
    try:
        while True:
            try:
                b = os.read(rfd, 1 << 16)
                if b:
                    chunks.append(b)
                    continue
            except BlockingIOError:
                pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise DataError(f"{what}: reading its header took longer than {timeout:.0f} s (a corrupt header? "
                                "CLIMIO_ISOLATE_TIMEOUT=SECONDS allows more on a slow file system)")
            time.sleep(0.005)
        while True:   # what the child wrote after the last poll
            try:
                b = os.read(rfd, 1 << 16)
            except BlockingIOError:
                break
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(rfd)
    errf.seek(0)
    lines = [ln.strip() for ln in errf.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    errf.close()
    last = lines[-1] if lines else ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        raise DataError(f"{what}: the library crashed reading it ({name}{'; ' + last if last else ''})")
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001  (the child died before it answered)
        raise DataError(f"{what}: the library could not read it{' (' + last + ')' if last else ''}") from None
    if kind == "memory":
        raise DataError(f"{what}: reading it needs more than {memory >> 20} MiB (a header claiming a huge size?)")
    return kind, value


# --- netCDF / HDF5 ----------------------------------------------------------------------------------

def _walk_netcdf(path: str) -> int:
    """What the commands ask of netCDF-C when they open a file: every group's dimensions, variables,
    attributes, chunking and filters. The number of variables seen."""
    import netCDF4
    n = 0
    with netCDF4.Dataset(path, "r") as ds:
        stack = [ds]
        while stack:
            g = stack.pop()
            g.ncattrs()
            for d in g.dimensions.values():
                len(d)
            for v in g.variables.values():
                v.ncattrs()
                v.shape, v.dtype
                if g.data_model == "NETCDF4":
                    v.chunking()
                    v.filters()
                n += 1
            stack.extend(g.groups.values())
    return n


def probe_netcdf(path) -> None:
    """DataError when netCDF-C/HDF5 crash, hang or exhaust memory opening `path` (see the module)."""
    if enabled():
        run_isolated(_walk_netcdf, str(path), what=str(path))
