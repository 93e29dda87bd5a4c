"""`climio trace run [-o DIR] [--layers ...] [--exclude PREFIX ...] [--max-events N] [--mode full|counters[:N]] -- COMMAND ...`

--mode counters: the tracer keeps Darshan-style counters per process, file, function and layer in
bounded memory (CLIMIO_TRACE_MODE=counters) instead of an event per call, for runs of any length;
counters:N also keeps every Nth call as an event (CLIMIO_TRACE_SAMPLE=N). A full trace that reaches
--max-events goes on counting its calls in counters.

Runs COMMAND with libclimio-trace.so preloaded and the CLIMIO_TRACE_* variables of
csrc/trace/FORMAT.md set, writes DIR/meta.json and returns COMMAND's exit status (128 + N when
it died of signal N).

MPI, both ways round:
  * `climio trace run -o DIR -- mpirun -n 4 prog`: processes started by a launcher inherit its
    environment on the local node, but Open MPI starts remote ranks through its daemons, which do
    not pass LD_PRELOAD on. So for Open MPI (mpirun/mpiexec/orterun answering "Open MPI" to
    --version) the variables go to the ranks as `-x NAME=VALUE` and are *not* set for mpirun itself,
    which keeps the launcher and its daemons out of the trace; MPICH/Intel MPI (Hydra) get
    `-genv NAME VALUE`. Other launchers (srun exports the environment by default) just inherit it;
    the launcher is then traced too and shows in the report as a process without a rank.
  * `mpirun -n 4 climio trace run -o DIR -- prog`: every rank runs its own `climio trace run`; each
    traced process writes its own files into DIR (no locking needed). Give -o: the default name
    holds a timestamp, which ranks starting a second apart would not share. Only rank 0 (or a
    process without a rank) writes meta.json.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from .. import __version__
from climio.base.errors import ClimioError, InputError
from climio.dataset.options import parse_choice, parse_mode
from ..measure.mpi import HYDRA, OPENMPI, env_rank, launcher_flavour
from climio.runs.records import atomic_write_text, iso_utc
from climio.runs.rundir import claim_dir, default_run_dir, writable_dir

TRACEABLE_LAYERS = ("posix", "mpiio", "netcdf", "hdf5")  # what --layers may name (stdio counts as posix)


class CommandNotFound(ClimioError):
    """The command to trace does not exist (the shell's exit status for that)."""

    exit_code = 127


def default_excludes() -> list:
    """Path prefixes never traced: kernel pseudo-files, Python's own installation (imports) and the
    sources of editable installs (climio's own, when the traced program imports it)."""
    return list(dict.fromkeys(["/proc", "/sys", "/dev", sys.prefix, sys.base_prefix, *_editable_sources()]))


# Run by the traced program's interpreter: its installation and its editable-install source
# directories (setuptools' and scikit-build-core's finders map package names to them).
_ASK_PYTHON = r"""
import os, site, sys, sysconfig
paths = sysconfig.get_paths()
out = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
out.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
if sys.prefix != sys.base_prefix:
    out.add(sys.prefix)          # a virtual environment: all of it is the interpreter's
for f in sys.meta_path:
    for attr in ("MAPPING", "known_source_files", "mapping"):
        m = getattr(f, attr, None)
        if isinstance(m, dict):
            for v in m.values():
                v = str(v)
                out.add(os.path.dirname(v) if v.endswith(".py") else v)
for p in sorted(p for p in out if p and p != "/"):
    print(p)
"""


def _editable_sources() -> list:
    out = []
    for f in sys.meta_path:
        for attr in ("MAPPING", "known_source_files", "mapping"):
            m = getattr(f, attr, None)
            if isinstance(m, dict):
                out += [os.path.dirname(str(v)) if str(v).endswith(".py") else str(v) for v in m.values()]
    import climio
    out.append(os.path.dirname(os.path.abspath(climio.__file__)))
    return outermost([p for p in out if p and p != "/"])


def outermost(prefixes) -> list:
    """The prefixes not inside another one (the tracer matches by prefix), in their given order."""
    uniq = list(dict.fromkeys(prefixes))
    return [p for p in uniq if not any(q != p and p.startswith(q.rstrip("/") + "/") for q in uniq)]


def interpreter_excludes(command) -> list:
    """When the traced command is a Python interpreter (python, python3.11, a venv's python),
    its own installation and editable sources: asked from that interpreter, which may be another
    Python than climio's. Nothing when it is not Python or does not answer in 10 s."""
    exe = shutil.which(command[0]) if command else None
    if not exe or not os.path.basename(exe).startswith("python"):
        return []
    try:
        out = subprocess.run([exe, "-c", _ASK_PYTHON], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    return outermost([l for l in out.stdout.splitlines() if l.startswith("/") and l != "/"]) if out.returncode == 0 else []


def tracer_library() -> str:
    """Path of libclimio-trace.so (CLIMIO_NATIVE_LIB, a directory, overrides the installed one)."""
    from climio.machine import native
    return native.library("climio-trace")


def preload(existing, lib) -> str:
    """LD_PRELOAD with `lib` appended (libraries the user preloads keep their precedence)."""
    parts = [p for p in (existing or "").replace(" ", ":").split(":") if p]
    return ":".join(parts if lib in parts else [*parts, lib])


INJECT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inject")


def python_path(existing) -> str:
    """PYTHONPATH with climio's injection directory first (its sitecustomize dispatcher,
    climio.trace.inject, loads the object tracer by path: the job's Python may lack climio)."""
    parts = [p for p in (existing or "").split(os.pathsep) if p and p != INJECT_DIR]
    return os.pathsep.join([INJECT_DIR, *parts])


def trace_vars(lib, out_dir, layers, excludes, max_events, existing_preload=None, mode="full", sample=0,
               existing_pythonpath=None) -> dict:
    """The variables of a traced job: the preload's, and for Python jobs the object-store tracer's
    (CLIMIO_TRACE_OBJECTS, written by climio.trace.inject.objects into the same directory)."""
    env = {"LD_PRELOAD": preload(existing_preload, lib), "CLIMIO_TRACE_DIR": str(out_dir),
           "CLIMIO_TRACE_LAYERS": ",".join(layers), "CLIMIO_TRACE_EXCLUDE": ":".join(excludes),
           "CLIMIO_TRACE_OBJECTS": str(out_dir), "PYTHONPATH": python_path(existing_pythonpath)}
    if max_events is not None:
        env["CLIMIO_TRACE_MAX_EVENTS"] = str(max_events)
    if mode == "counters":
        env["CLIMIO_TRACE_MODE"] = "counters"
        if sample:
            env["CLIMIO_TRACE_SAMPLE"] = str(sample)
    return env


def wrap_command(command, env_vars, kind) -> list:
    """`command` with the launcher flags that hand `env_vars` to every rank (see module doc)."""
    if kind == OPENMPI:
        flags = [x for k, v in env_vars.items() for x in ("-x", f"{k}={v}")]
    elif kind == HYDRA:
        flags = [x for k, v in env_vars.items() for x in ("-genv", k, v)]
    else:
        return list(command)
    return [command[0], *flags, *command[1:]]


def _resolve(command) -> str:
    exe = command[0]
    if os.sep in exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CommandNotFound(f"cannot execute {exe}: no such executable file")
        return exe
    found = shutil.which(exe)
    if not found:
        raise CommandNotFound(f"command not found: {exe}")
    return found


def run_trace(command, out=None, layers=None, excludes=(), max_events=None, say=None, force=False,
              mode="full", append=False) -> int:
    """Trace `command`; return its exit status. `say(msg)` reports where the trace went.

    A non-empty trace directory is refused (two runs would merge into one report) unless `force`
    (it is replaced whole) or `append` (the traces merge); under an MPI launcher every rank writes
    into the same directory, so the ranks neither check nor remove."""
    command = list(command or [])
    if not command:
        raise InputError("no command to trace: use climio trace run [-o DIR] -- COMMAND [ARGS ...]")
    layer_list = parse_choice(layers, TRACEABLE_LAYERS, "trace layer") if layers else list(TRACEABLE_LAYERS)
    if max_events is not None and max_events < 1:
        raise InputError(f"--max-events must be at least 1, got {max_events}")
    mode_name, sample = parse_mode(mode)
    _resolve(command)
    rank = env_rank()
    if out is None and rank is not None:
        raise InputError("running under an MPI launcher: give -o DIR so that every rank writes into the "
                         "same trace directory")
    lib = tracer_library()
    if out is not None and rank is None:
        claim_dir(out, append, force, marks=("meta.json",), what="trace",
                  options="--append to merge a second trace into its report, or --force to replace it")
    out_dir = writable_dir(out or default_run_dir("trace")).resolve()
    excl = outermost([*default_excludes(), *interpreter_excludes(command), *excludes])
    env = dict(os.environ)
    kind = launcher_flavour(command)
    tvars = trace_vars(lib, out_dir, layer_list, excl, max_events, env.get("LD_PRELOAD"), mode_name, sample,
                       env.get("PYTHONPATH"))
    if kind:
        argv = wrap_command(command, tvars, kind)  # the ranks get the variables, the launcher does not
    else:
        argv = command
        env.update(tvars)
    write_meta = rank in (None, 0)
    meta = {"format": 1, "command": command, "argv": argv, "cwd": os.getcwd(), "host": socket.gethostname(),
            "layers": layer_list, "exclude": excl, "max_events": max_events, "mode": mode_name, "sample": sample, "library": lib, "launcher": kind,
            "climio_version": __version__, "env": tvars, "start_ns": time.time_ns(), "end_ns": None,
            "exit_status": None}
    meta["start"] = iso_utc(meta["start_ns"] / 1e9, "microseconds")
    if write_meta:  # written first too, so a run that dies with climio still says what it was
        atomic_write_text(out_dir / "meta.json", json.dumps(meta, indent=2))
    stops = []
    status = _run(argv, env, stops)
    meta["end_ns"] = time.time_ns()
    meta["end"] = iso_utc(meta["end_ns"] / 1e9, "microseconds")
    meta["exit_status"] = status
    if write_meta:
        atomic_write_text(out_dir / "meta.json", json.dumps(meta, indent=2))
        if say:
            n = len({re.sub(r"(\.exec\d+)?\.(events|counters)$", "", f.name) for f in out_dir.iterdir()
                     if f.name.endswith((".events", ".counters"))})
            stopped = ("" if not stops else "terminated (SIGTERM), " if stops[0] == signal.SIGTERM
                       else "interrupted (Ctrl-C), ")
            say(f"trace: {out_dir} ({n} traced process{'es' if n != 1 else ''}; {stopped}exit status {status}); "
                + ("the trace is kept; " if stops else "") + f"report with: climio trace report {out_dir}")
    return status


def _run(argv, env, stops) -> int:
    """Run argv to the end. Ctrl-C reaches the child from the terminal (same process group), so
    climio ignores it and waits for the child to finish and its tracer to write .done.json;
    SIGTERM sent to climio alone is passed on. The stop signals climio received go to `stops`."""
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as exc:
        raise CommandNotFound(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    def on_term(sig, _frame):
        stops.append(sig)
        child.send_signal(sig)
    old_int = signal.signal(signal.SIGINT, lambda sig, _f: stops.append(sig))
    old_term = signal.signal(signal.SIGTERM, on_term)
    try:
        while True:
            try:
                rc = child.wait()
                break
            except InterruptedError:
                continue
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    return 128 - rc if rc < 0 else rc
