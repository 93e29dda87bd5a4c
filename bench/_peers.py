"""Peer tools the benches compare against: find IOR, or build it once from the pinned tarball; and
Python peers in venvs of their own (created with pip on first use).

    from _peers import ior_executable, run_ior, peer_python, PeerError
    ior = ior_executable()          # `ior` on PATH, else ~/.cache/climio-bench/ior/bin/ior (built on first use)
    runs = run_ior(ior, launcher, ["-a", "MPIIO", "-r", ...])   # one dict per IOR iteration, from its JSON summary
    py = peer_python("cubed-0.27.0", ["cubed==0.27.0", "s3fs"], "import cubed, s3fs")   # its venv's python

Python peers (rechunker needs zarr<3, cubed its own pins) each get a venv under the cache
(~/.cache/climio-bench/NAME, or CLIMIO_BENCH_CACHE/NAME), made with `python3 -m venv` and filled
with `pip install` from PyPI; a probe import decides whether an existing venv is usable. A venv
that cannot be made (no wheel, a dependency conflict, no network) raises PeerError with one line,
which the benches print and show in their tables instead of the peer's figures.

The build: the tarball (CLIMIO_IOR_TARBALL, else ../shared/peers/ior-5fcf0ba.tar.gz next to the
checkout, else /work/shared/peers/ior-5fcf0ba.tar.gz) is unpacked in a scratch directory under
the cache, then `./bootstrap`, `./configure MPICC=mpicc --prefix=...`, `make`, `make install`.
When autoreconf/automake/aclocal are missing they are installed with apt-get (autoconf automake
libtool), and only then. The prefix is filled in a scratch directory and renamed into place when
the build succeeded, so a failed or interrupted build leaves nothing under the final name; a
stamp file names the tarball the binary came from, and a different tarball rebuilds.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

TARBALL_NAME = "ior-5fcf0ba.tar.gz"
CACHE = Path(os.environ.get("CLIMIO_BENCH_CACHE", Path.home() / ".cache" / "climio-bench"))
IOR_PREFIX = CACHE / "ior"
BUILD_TOOLS = ("autoreconf", "automake", "aclocal")
APT_PACKAGES = ("autoconf", "automake", "libtool")


class PeerError(RuntimeError):
    """A peer tool is missing and could not be built; the message is one line."""


def peer_python(name: str, packages, probe: str, say=print) -> str:
    """The python of the venv CACHE/name holding `packages` (pip-installed on first use); `probe` is
    Python code that must run in it (imports, version asserts). PeerError (one line) if it cannot."""
    venv = CACHE / name
    py = venv / "bin" / "python"

    def usable():
        return py.exists() and subprocess.run([str(py), "-c", probe], capture_output=True).returncode == 0
    if usable():
        return str(py)
    say(f"installing {' '.join(packages)} into {venv} (pip, once)")
    for cmd in (["python3", "-m", "venv", str(venv)], [str(py), "-m", "pip", "install", "-q", *packages]):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            last = (out.stderr.strip().splitlines() or ["?"])[-1].strip()
            raise PeerError(f"{name}: `{' '.join(cmd[:4])} ...` failed: {last}")
    if not usable():
        err = subprocess.run([str(py), "-c", probe], capture_output=True, text=True).stderr.strip().splitlines()
        raise PeerError(f"{name}: installed but `{probe}` fails: {(err or ['?'])[-1]}")
    return str(py)


def peer_versions(py: str, dists) -> str:
    """'dist version, ...' of the distributions installed in the venv of `py` (for the bench's header)."""
    code = ("import importlib.metadata as m, sys\n"
            "print(', '.join(f'{d} {m.version(d)}' for d in sys.argv[1:]))")
    out = subprocess.run([py, "-c", code, *dists], capture_output=True, text=True)
    return out.stdout.strip() or f"? ({(out.stderr.strip().splitlines() or ['?'])[-1]})"


def ior_tarball() -> Path:
    here = Path(__file__).resolve().parent.parent          # the checkout
    for cand in (os.environ.get("CLIMIO_IOR_TARBALL"), here.parent / "shared" / "peers" / TARBALL_NAME,
                 Path("/work/shared/peers") / TARBALL_NAME):
        if cand and Path(cand).is_file():
            return Path(cand)
    raise PeerError(f"no `ior` on PATH and no {TARBALL_NAME} to build it from "
                    "(set CLIMIO_IOR_TARBALL or put `ior` on PATH)")


def _stamp(tarball: Path) -> str:
    st = tarball.stat()
    return f"{tarball.name} {st.st_size}\n"


def _run(cmd, cwd, log, env=None):
    with open(log, "ab") as fh:
        fh.write(f"$ {' '.join(cmd)}\n".encode())
        fh.flush()
        rc = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        tail = Path(log).read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise PeerError(f"building IOR: `{' '.join(cmd)}` failed ({tail[0].strip()}); log {log}")


def _ensure_build_tools(say):
    missing = [t for t in BUILD_TOOLS if not shutil.which(t)]
    if not missing:
        return
    apt = shutil.which("apt-get")
    if not apt:
        raise PeerError(f"building IOR needs {', '.join(missing)}: install autoconf, automake and libtool")
    sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if sudo is None:
        raise PeerError(f"building IOR needs {', '.join(missing)} and apt-get needs root: "
                        f"apt-get install {' '.join(APT_PACKAGES)}")
    say(f"IOR build: installing {' '.join(APT_PACKAGES)} with apt-get ({', '.join(missing)} missing)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in ([*sudo, apt, "update", "-qq"], [*sudo, apt, "install", "-y", "-qq", *APT_PACKAGES]):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0 and "install" in cmd:
            raise PeerError(f"apt-get install {' '.join(APT_PACKAGES)} failed: "
                            f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    still = [t for t in BUILD_TOOLS if not shutil.which(t)]
    if still:
        raise PeerError(f"apt-get installed {' '.join(APT_PACKAGES)} but {', '.join(still)} is still missing")


def build_ior(tarball: Path = None, prefix: Path = IOR_PREFIX, say=print) -> str:
    """Build IOR from the tarball into `prefix` (unless already there from the same tarball); return the binary."""
    tarball = Path(tarball) if tarball else ior_tarball()
    exe, stamp = prefix / "bin" / "ior", prefix / "STAMP"
    if os.access(exe, os.X_OK) and stamp.is_file() and stamp.read_text() == _stamp(tarball):
        return str(exe)
    mpicc = shutil.which("mpicc")
    if not mpicc:
        raise PeerError("building IOR needs mpicc (Open MPI or MPICH development files): run `make setup`")
    _ensure_build_tools(say)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="ior-build-", dir=prefix.parent))
    log = scratch / "build.log"
    say(f"IOR build: {tarball} -> {prefix} (log {log})")
    try:
        with tarfile.open(tarball) as tf:
            tf.extractall(scratch / "src", filter="data") if hasattr(tarfile, "data_filter") \
                else tf.extractall(scratch / "src")
        tops = [p for p in (scratch / "src").iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "configure.ac").is_file():
            raise PeerError(f"{tarball} does not hold one IOR source tree")
        src, stage = tops[0], scratch / "prefix"
        env = dict(os.environ, MPICC=mpicc, CC=mpicc)
        _run(["./bootstrap"], src, log, env)
        _run(["./configure", f"MPICC={mpicc}", f"--prefix={prefix}"], src, log, env)
        _run(["make", f"-j{max(1, min(4, os.cpu_count() or 1))}"], src, log, env)
        _run(["make", "install", f"DESTDIR={stage}"], src, log, env)
        built = Path(f"{stage}{prefix}")
        if not os.access(built / "bin" / "ior", os.X_OK):
            raise PeerError(f"building IOR: make install put no bin/ior under {built}; log {log}")
        (built / "STAMP").write_text(_stamp(tarball))
        shutil.copy(log, built / "build.log")
        old = None
        if prefix.exists():                      # a stale build from another tarball: swap, then remove
            old = Path(tempfile.mkdtemp(prefix="ior-old-", dir=prefix.parent))
            os.rename(prefix, old / "ior")
        os.rename(built, prefix)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        say(f"IOR build failed; its log was {log}" if log.exists() else "IOR build failed")
        if log.exists():
            keep = prefix.parent / "ior-build-failed.log"
            shutil.copy(log, keep)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    say(f"IOR build: done, {exe}")
    return str(exe)


def ior_executable(explicit=None, say=print) -> str:
    """--ior PATH if given, `ior` on PATH, else the built one (building it now if needed)."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise PeerError(f"--ior {explicit} is not an executable")
        return explicit
    return shutil.which("ior") or build_ior(say=say)


def run_ior(ior, launcher, argv, timeout=1800):
    """Run IOR under `launcher` with `argv` plus a JSON summary; return (per-iteration results, command).

    Each result is IOR's own dict (access, bwMiB, openTime, wrRdTime, closeTime, totalTime, ...)
    with `MBps` added (IOR's bandwidth is aggregate bytes / totalTime in MiB/s; MBps = 1e6 B/s)."""
    with tempfile.TemporaryDirectory(prefix="climio-ior-") as tmp:
        summary = os.path.join(tmp, "ior.json")
        cmd = launcher.command([ior, *argv, "-O", "summaryFormat=JSON", "-O", f"summaryFile={summary}"])
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, env=launcher.env(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PeerError(f"ior did not finish within {timeout} s: {' '.join(cmd)}") from None
        text = Path(summary).read_text() if os.path.isfile(summary) else ""
        if out.returncode != 0 or not text:
            lines = [l for l in (out.stderr + out.stdout).strip().splitlines() if l.strip() and "---" not in l]
            raise PeerError(f"ior failed (exit {out.returncode}): {(lines or ['no output'])[-1].strip()}")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PeerError(f"ior's JSON summary does not parse ({exc})") from None
    results = []
    for test in doc.get("tests", []):
        for r in test.get("Results", []):
            if isinstance(r, list):              # some IOR versions nest one list per iteration
                results.extend(r)
            else:
                results.append(r)
    for r in results:
        r["MBps"] = float(r["bwMiB"]) * 1.048576
    if not results:
        raise PeerError("ior's JSON summary has no results")
    return results, " ".join(cmd)


if __name__ == "__main__":                      # python bench/_peers.py: build (or find) IOR and print its path
    try:
        print(ior_executable())
    except PeerError as exc:
        sys.exit(f"error: {exc}")
