"""The `climio` command: thin typer apps, one module per command group, over the Python API.

Every failure a user can act on is a ClimioError: one line on stderr and its exit code. Ctrl-C
(SIGINT) and SIGTERM (scancel, a batch walltime) end with one line and 130 / 143 after the
records written so far are flushed, the report rendered from them and generated data removed.
"""

import signal
import sys

import typer

from .. import __version__
from climio.runs import stopping
from climio.base import errors
from climio.base.errors import ClimioError
from ..measure.progress import err_line

EXIT_HELP = errors.exit_codes_text()   # the one table, errors.EXIT_CODES
CONTEXT = {"help_option_names": ["-h", "--help"]}


def _plain_argument_help() -> None:
    """Arguments show their metavar (RUN_DIR, FILE...) alone: typer would add the Python type
    ("RUN_DIR <path>") in help and braces ("{RUN_DIR}") in the usage line."""
    from typer.core import TyperArgument
    if getattr(TyperArgument, "_climio_plain", False) or not hasattr(TyperArgument, "_usage_display_name"):
        return   # already done, or a typer without these hooks (its default help is kept)
    type_of, usage_of = TyperArgument.display_type_rich, TyperArgument._usage_display_name

    def display_type_rich(self, ctx):
        return None if self.metavar else type_of(self, ctx)

    def usage_name(self):
        if not self.metavar:
            return usage_of(self)
        return self.metavar if self.required else f"[{self.metavar}]"

    TyperArgument.display_type_rich, TyperArgument._usage_display_name = display_type_rich, usage_name
    TyperArgument._climio_plain = True


_plain_argument_help()


def _version(value: bool):
    if value:
        print(f"climio {__version__}")
        # the Python wheels bundle their own netCDF-C and HDF5, the native programs use the
        # system's: a measurement depends on which one read the file, so say both
        from climio.machine.native import build_info
        from climio.machine.platform import python_versions
        py = python_versions()
        print(f"python layer: netCDF4 {py.get('netCDF4')} (netCDF-C {py.get('netCDF4.netcdf_c')}, "
              f"HDF5 {py.get('netCDF4.hdf5')}), h5py {py.get('h5py')} (HDF5 {py.get('h5py.hdf5')})")
        try:
            b = build_info()
            print(f"native layer: netCDF-C {b.get('netcdf_c_version')} (parallel {b.get('netcdf_c_parallel')}), "
                  f"HDF5 {b.get('hdf5_c_version')} (parallel {b.get('hdf5_c_parallel')}), {b.get('c_compiler')}")
        except Exception as exc:   # noqa: BLE001  (--version must answer even without the native build)
            print(f"native layer: not built ({str(exc).splitlines()[0]})")
        raise typer.Exit(0)


app = typer.Typer(add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings=CONTEXT,
                  help="Measure, explain and fix the I/O performance of climate data work "
                       "(netCDF-4/HDF5, MPI-IO, parallel file systems). Results are JSON lines "
                       "(records.jsonl) plus an HTML report in a run directory.\n\n" + EXIT_HELP)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context,
          version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="Print climio's version and exit.")):
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
        raise typer.Exit(0)


def _interrupt_exit(exc) -> None:
    if isinstance(exc, stopping.Terminated) or stopping.requested() == signal.SIGTERM:
        err_line("climio: terminated (SIGTERM); records and outputs finished so far are kept")
        sys.exit(errors.Exit.TERMINATED)
    err_line("climio: interrupted; records and outputs finished so far are kept")
    sys.exit(errors.Exit.INTERRUPTED)


# The module of each command (importing it registers the command on `app`). main() imports only
# the one a command line names: all of them cost about 0.15 s (the studies' registry, their
# options), a quarter of `climio rechunk`'s start-up before its workers get their first block.
COMMAND_MODULES = {"calibrate": "advise", "predict": "advise", "advise": "advise", "bench": "bench",
                   "make-data": "data", "export": "export", "rechunk": "rechunk", "make-refs": "refs",
                   "report": "report", "survey": "report", "stsa": "stsa", "trace": "trace", "tune": "tune"}


def register_commands(argv=None) -> None:
    """Import the module of the command `argv` names, or every command module (for --help, a
    bare `climio` or a name that is no command, which typer then answers with the list)."""
    import importlib
    args = sys.argv[1:] if argv is None else list(argv)
    first = next((a for a in args if not a.startswith("-")), None)
    names = [COMMAND_MODULES[first]] if first in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for name in names:
        importlib.import_module(f"{__name__}.{name}")


_QUICK_EXIT = []   # a command's work is done and reported: main() ends the process without the teardown


def exit_quickly() -> None:
    """Called by a command whose output is complete and whose summary is printed: main() then runs
    the atexit handlers, flushes stdout and stderr and ends the process with os._exit, skipping the
    interpreter's teardown of the modules and objects a rechunk to object storage loads (xarray,
    pandas, dask, distributed, zarr, obstore): 1.3-4.5 s of a 12-20 s command at load 12-16 on
    2 cores, measured (bench/rechunk_s3_vs_peers.py prints it as the "exit" phase). Only from
    main(), the console script: in-process callers (tests, CliRunner) never get here."""
    _QUICK_EXIT.append(True)


def main(argv=None) -> None:
    """Entry point: ClimioError -> one line on stderr and its exit code; Ctrl-C -> 130; SIGTERM -> 143."""
    from .library_warnings import install as quiet_library_warnings
    quiet_library_warnings()   # before the commands import zarr and the rest
    register_commands(argv)
    previous = stopping.install()
    _QUICK_EXIT.clear()
    try:
        _main(argv)
    finally:
        stopping.restore(previous)
    if _QUICK_EXIT:
        import atexit
        import os
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):   # a reader gone (a closed pipe): nothing more to say to it
                pass
        os._exit(0)


def _main(argv) -> None:
    try:
        rv = app(args=argv, standalone_mode=False)
    except ClimioError as exc:
        code = exc.exit_code
        if isinstance(exc, errors.Interrupted) and stopping.requested() == signal.SIGTERM:
            code = errors.Exit.TERMINATED   # a SIGTERM that a command reported as an interruption
        if not getattr(exc, "quiet", False):  # under MPI, only rank 0 reports a shared failure
            err_line(f"climio: error: {exc}")
        sys.exit(code)
    except KeyboardInterrupt as exc:
        _interrupt_exit(exc)
    except Exception as exc:
        if type(exc).__name__ == "Abort":   # click turns Ctrl-C into Abort; its cause says which signal
            cause = exc.__cause__ or exc.__context__
            _interrupt_exit(cause if isinstance(cause, KeyboardInterrupt) else KeyboardInterrupt())
        full = errors.disk_full_in(exc)
        if full is not None:   # the disk filled up where no command expected it: one line, the disk code
            where = f" ({full.filename})" if getattr(full, "filename", None) else ""
            err_line(f"climio: error: disk full{where}: No space left on device")
            sys.exit(errors.Exit.DISK)
        if type(exc).__name__ == "NoArgsIsHelpError":   # a bare group (`climio bench`): usage is not an error
            print(exc.ctx.get_help())
            return
        # Usage errors of the option parser (typer ships its own copy of click, so match by shape).
        if callable(getattr(exc, "format_message", None)) and hasattr(exc, "exit_code"):
            err_line(f"climio: error: {exc.format_message()}")
            sys.exit(exc.exit_code)
        raise
    if rv == 130:   # typer's own Ctrl-C handling returns 130 without a word: say which signal it was
        _interrupt_exit(KeyboardInterrupt())
    if isinstance(rv, int) and rv:
        sys.exit(rv)
