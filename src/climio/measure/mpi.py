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
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from climio.base.errors import InputError, NativeError
from climio.dataset.options import check_mpi_io
from climio.machine.memory import cores
from .procs import failure_line, stream_records  # noqa: F401  (failure_line: re-exported)


# Open MPI refuses root unless told twice; a benchmark the user started as root is their call.
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


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
        from climio.machine.native import child_env
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
        check_mpi_io(self.mpi_io)
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


def _is_open_mpi(exe) -> bool:
    return _flavour_of(exe) == OPENMPI


@functools.lru_cache(maxsize=None)
def _flavour_of(exe):
    return launcher_flavour([exe])


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


def stream_mpi(launcher: Launcher, argv, on_record, cwd=None) -> None:
    """Launch `argv` under `launcher` and stream its records (measure.procs: timeout, group kill,
    one-line NativeError naming the launch)."""
    program = Path(argv[0]).name
    stream_records(launcher.command(argv), on_record, env=launcher.env(), cwd=cwd, timeout_s=launcher.timeout_s,
                   what=f"{launcher.describe()} {program}", program=program)


# --- where this process runs: rank, size and launcher flavour from the environment ------------------

# Set in every rank by Open MPI, PMIx and PMI launchers (srun sets PMI_RANK/PMIX_RANK with its MPI
# plugins). SLURM_PROCID alone is not used: a batch script has it too, outside any step.
RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
OPENMPI, HYDRA = "openmpi", "hydra"
LAUNCHER_NAMES = ("mpirun", "mpiexec", "orterun")


def _env_int(env, name):
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def env_rank(env=None):
    """This process's rank when an MPI launcher (or srun with an MPI plugin) started it, else None."""
    env = os.environ if env is None else env
    for name in RANK_VARS:
        if env.get(name, "").isdigit():
            return int(env[name])
    return None


def env_size(env=None):
    """The number of ranks the launcher started, from its environment; None when none says so.

    Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH/Intel MPI's hydra PMI_SIZE, and srun
    SLURM_STEP_NUM_TASKS together with SLURM_PROCID. SLURM_NTASKS is not used: an sbatch script
    with -n 4 has it (and SLURM_PROCID=0) but is one process, not a launch."""
    env = os.environ if env is None else env
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        n = _env_int(env, name)
        if n is not None:
            return n
    if "SLURM_PROCID" in env:
        return _env_int(env, "SLURM_STEP_NUM_TASKS")
    return None


def under_mpi(env=None) -> bool:
    """True only in a process that a launcher started as one rank of a multi-rank job.

    A launcher that gives a size decides (a 1-rank mpirun is not parallel). PMIX_RANK without any
    size (a PMIx-only launcher) counts as parallel: every rank then decides the same way, and a
    1-rank run of the parallel path is still correct. Child processes of a rank inherit these
    variables, so ask in the rank itself, not in a program it starts."""
    env = os.environ if env is None else env
    n = env_size(env)
    if n is not None:
        return n > 1
    return "PMIX_RANK" in env


def launcher_flavour(command):
    """OPENMPI or HYDRA when command[0] is an MPI launcher whose variable-passing flags we know
    (`mpirun --version` says which)."""
    if Path(command[0]).name not in LAUNCHER_NAMES:
        return None
    try:
        out = subprocess.run([command[0], "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stdout + out.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return OPENMPI
    if "HYDRA" in text or "Intel(R) MPI" in text:
        return HYDRA
    return None
