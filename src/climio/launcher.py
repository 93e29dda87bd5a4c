"""Starting an MPI program: mpirun (Open MPI, MPICH/hydra), a hostfile, or the user's own launcher.

    Launcher(ranks=4)                         -> mpirun -n 4 [--oversubscribe] PROGRAM ARGS
    Launcher(ranks=4, hostfile="hosts")       -> mpirun -n 4 --hostfile hosts PROGRAM ARGS
    Launcher(ranks=64, template="srun -n {ranks} --ntasks-per-node=32")
                                              -> srun -n 64 --ntasks-per-node=32 PROGRAM ARGS

Every launch has a timeout, so a wedged MPI job ends as a one-line error instead of a hang, and
the error names what failed: the program's own `NAME: error: ...` line when it printed one,
otherwise the launcher's first meaningful complaint (mpirun's banners of dashes are skipped).
"""

import functools
import os
import shlex
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .errors import InputError, NativeError
from .records import parse_line

# Open MPI refuses root unless told twice; a benchmark the user started as root is their call.
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def cores() -> int:
    return len(os.sched_getaffinity(0))


@dataclass
class Launcher:
    ranks: int = 2
    hostfile: Optional[str] = None
    template: Optional[str] = None        # e.g. "srun -n {ranks}"; {ranks} is substituted
    mpirun: str = "mpirun"
    timeout_s: float = 3600.0
    extra_env: dict = field(default_factory=dict)
    mpi_io: str = "default"               # Open MPI's MPI-IO component: default, romio or ompio

    def describe(self) -> str:
        return self.template.format(ranks=self.ranks) if self.template else f"{self.mpirun} -n {self.ranks}"

    def prefix(self) -> list:
        """The launcher part of the command line."""
        if self.ranks < 1:
            raise InputError(f"--ranks must be at least 1, not {self.ranks}")
        if self.template:
            try:
                return shlex.split(self.template.format(ranks=self.ranks))
            except (KeyError, IndexError, ValueError) as exc:
                raise InputError(f"--launcher '{self.template}' is not a command template ({exc}); "
                                 "use e.g. 'srun -n {ranks}'") from None
        exe = shutil.which(self.mpirun)
        if not exe:
            raise NativeError(f"{self.mpirun} not found: install Open MPI (make setup) or pass --launcher")
        cmd = [exe, "-n", str(self.ranks)]
        if self.hostfile:
            if not os.path.isfile(self.hostfile):
                raise InputError(f"hostfile {self.hostfile} does not exist")
            cmd += ["--hostfile", self.hostfile]
        elif self.ranks > cores() and _is_open_mpi(exe):
            cmd.append("--oversubscribe")   # more ranks than cores on one machine: Open MPI refuses otherwise
        return cmd

    def env(self) -> dict:
        from .native import child_env
        env = child_env()
        if os.geteuid() == 0:
            env.update(ROOT_ENV)
        env.update(self.extra_env)
        if self.mpi_io != "default" and open_mpi_io_components():
            env["OMPI_MCA_io"] = self.io_component()
        return env

    def io_component(self) -> str:
        """The Open MPI `io` component --mpi-io names (ROMIO's carries its version: romio321, romio341).
        Open MPI 4 defaults to OMPIO, which ignores ROMIO's hints (cb_nodes, romio_cb_write, ...)."""
        if self.mpi_io not in ("default", "romio", "ompio"):
            raise InputError(f"unknown --mpi-io '{self.mpi_io}': use default, romio or ompio")
        if self.mpi_io == "default":
            return "default"
        names = open_mpi_io_components()
        if not names:   # MPICH, Cray MPICH, Intel MPI: ROMIO is their only MPI-IO
            if self.mpi_io == "romio":
                return "romio"
            raise InputError("--mpi-io ompio needs Open MPI, but ompi_info lists no io components")
        match = [n for n in names if n.startswith(self.mpi_io)]
        if not match:
            raise InputError(f"this Open MPI has no {self.mpi_io} io component (it has {', '.join(names)})")
        return match[0]

    def command(self, argv) -> list:
        return [*self.prefix(), *argv]


_OPEN_MPI = {}


def _is_open_mpi(exe) -> bool:
    if exe not in _OPEN_MPI:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
            _OPEN_MPI[exe] = "Open MPI" in out.stdout + out.stderr
        except (OSError, subprocess.SubprocessError):
            _OPEN_MPI[exe] = False
    return _OPEN_MPI[exe]


@functools.lru_cache(maxsize=None)
def open_mpi_io_components() -> tuple:
    """Names of the `MCA io` components `ompi_info` lists, e.g. ('romio321', 'ompio')."""
    exe = shutil.which("ompi_info")
    if not exe:
        return ()
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.split(":", 1)[1].split("(")[0].strip() for line in out.splitlines()
            if line.strip().startswith("MCA io:"))


def failure_line(stderr: str, program: str) -> str:
    """The one line that says why an MPI launch failed."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    own = [l for l in lines if l.startswith(f"{program}: error:")]
    if own:
        return own[0][len(f"{program}: error:"):].strip()
    useful = [l for l in lines if not set(l) <= set("-=*") and not l.startswith(("[", "*** "))]
    return useful[0] if useful else "no message"


def stream_mpi(launcher: Launcher, argv, on_record, cwd=None) -> None:
    """Launch `argv` under `launcher`, hand every record line of stdout to `on_record`, and turn
    a failure (non-zero exit, a launcher that cannot start, a timeout) into a one-line NativeError.
    The whole process group is killed on timeout or interruption, so no rank is left behind."""
    cmd = launcher.command(argv)
    program = Path(argv[0]).name
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                env=launcher.env(), cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise NativeError(f"cannot start {cmd[0]}: {exc.strerror}") from None
    timed_out = threading.Event()

    def on_timeout():
        timed_out.set()
        _kill_group(proc)

    timer = threading.Timer(launcher.timeout_s, on_timeout)
    timer.start()
    stderr_chunks = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                on_record(parse_line(line))
        rc = proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        timer.cancel()
    reader.join(timeout=10)
    stderr = "".join(stderr_chunks)
    if rc != 0:
        if timed_out.is_set():
            raise NativeError(f"{launcher.describe()} {program} did not finish within {launcher.timeout_s:.0f} s "
                              "and was killed")
        raise NativeError(f"{launcher.describe()} {program} failed (exit {rc}): {failure_line(stderr, program)}")


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
