"""One way to run a measuring child process (a C probe, a Python worker, an MPI launch).

    stream_records(cmd, on_record, timeout_s=..., what="climio-probe-posix")

Every child runs in its own process group with a timeout: on timeout, Ctrl-C or any error the
whole group is killed (an MPI launcher's ranks, a probe's own children), so neither a hung
serial probe nor a wedged rank can hang climio. Each JSON line the child prints on stdout is
validated as a record and handed over; stderr is collected on a thread (a chatty child cannot
fill its pipe and block) and a failure becomes one NativeError line naming the cause.
"""

import subprocess
import threading
from pathlib import Path

from climio.machine.spawning import kill_group   # stopping a child is the spawning policy's
from climio.base.errors import NativeError
from climio.runs.records import parse_line

DEFAULT_TIMEOUT_S = 3600.0


def failure_line(stderr: str, program: str) -> str:
    """The one line that says why a child failed: its own `PROGRAM: error: ...` line when it
    printed one, otherwise the first meaningful line (mpirun's banners of dashes are skipped)."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    own = [l for l in lines if l.startswith(f"{program}: error:")]
    if own:
        return own[0][len(f"{program}: error:"):].strip()
    if any(l.startswith("Traceback") for l in lines):
        return lines[-1]   # a Python child's exception: its last line says what it was
    useful = [l for l in lines if not set(l) <= set("-=*") and not l.startswith(("[", "*** "))]
    return useful[0] if useful else "no message"


# Children streaming now, from any thread: each runs in its own session (so a terminal's Ctrl-C does
# not reach it), and only the thread that streams it kills it when interrupted. A caller that
# streams several children on threads kills them all with kill_streaming() when it is interrupted.
_STREAMING: set = set()
_STREAMING_LOCK = threading.Lock()


def kill_streaming() -> None:
    """Kill the process group of every child stream_records is running now (in any thread)."""
    with _STREAMING_LOCK:
        live = list(_STREAMING)
    for proc in live:
        kill_group(proc)


def stream_records(cmd, on_record, env=None, cwd=None, timeout_s=DEFAULT_TIMEOUT_S, what=None, program=None) -> None:
    """Run `cmd`, passing each record line of its stdout to `on_record`.

    `what` names the launch in messages (default: the program), `program` is the name its own
    error lines start with (default: the basename of the last element that is a path, or cmd[0])."""
    if env is None:
        from climio.machine.native import child_env
        env = child_env()
    program = program or Path(cmd[0]).name
    what = what or program
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise NativeError(f"cannot start {cmd[0]}: {exc.strerror}") from None
    with _STREAMING_LOCK:
        _STREAMING.add(proc)
    timed_out = threading.Event()

    def on_timeout():
        timed_out.set()
        kill_group(proc)

    timer = threading.Timer(timeout_s, on_timeout) if timeout_s else None
    if timer:
        timer.daemon = True
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
        kill_group(proc)
        proc.wait()
        raise
    finally:
        if timer:
            timer.cancel()
        with _STREAMING_LOCK:
            _STREAMING.discard(proc)
    reader.join(timeout=10)
    stderr = "".join(stderr_chunks)
    if rc != 0:
        if timed_out.is_set():
            raise NativeError(f"{what} did not finish within {timeout_s:.0f} s and was killed")
        raise NativeError(f"{what} failed (exit {rc}): {failure_line(stderr, program)}")
