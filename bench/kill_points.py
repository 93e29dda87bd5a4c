"""Kill points while writing (issue 38 item 3): SIGKILL, a disk that fills up, and an output directory
that vanishes, at seeded points of the commands that write.

  rechunk-nc    rechunk to one netCDF-4 file         rechunk-zarr  rechunk to a Zarr store
  rechunk-many  two inputs into a directory          make-data     the 4-D generator
  stsa          spectra + figures into a directory   records       a study's records.jsonl

A point is (command, kind, delay): the command starts, and `delay` seconds later (drawn from the
seed within the command's usual run time) it is SIGKILLed (kill), its output directory is removed
(vanish), or the small tmpfs it writes to is filled (full). Then:
  - under the final name there is nothing readable, or the complete output (values equal to the
    source's, every file there and readable);
  - a failure other than SIGKILL is one `climio: error:` line with a documented code, no traceback;
  - records.jsonl is whole line by line (every line a record);
  - the next run of the same command, without --resume, exits 0 and leaves no temporary behind.

    python bench/kill_points.py --points 20 --seed 38          (the issue's 20 per command)
tests/test_kill_points.py runs a few points of each command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EXE = os.path.join(os.path.dirname(sys.executable), "climio")
KINDS = ("kill", "vanish", "full")
DOCUMENTED = {0, 1, 2, 3, 4, 5, 130, 143}


# --- inputs --------------------------------------------------------------------------------------------

def rechunk_source(path: Path, t=32) -> Path:
    """A map-chunked, deflated [t,4,128,128] float32 file of random values: rechunked to series in a
    small budget it takes a few seconds."""
    if not path.exists():
        from climio.data.writer import write_4d
        write_4d(path, (t, 4, 128, 128), chunks=[1, 1, 128, 128], dtype="f4", deflate=1, shuffle=True, seed=1,
                 random=True)
    return path


def stsa_source(path: Path) -> Path:
    if not path.exists():
        import xarray as xr
        nt, ny, nx = 4 * 200, 16, 64
        coords = {"time": np.datetime64("2001-01-01") + (np.arange(nt) * 6).astype("timedelta64[h]"),
                  "lat": ("lat", -90 + (np.arange(ny) + 0.5) * 180 / ny, {"units": "degrees_north"}),
                  "lon": ("lon", np.arange(nx) * 360.0 / nx, {"units": "degrees_east"})}
        xr.DataArray(np.random.default_rng(0).standard_normal((nt, ny, nx)).astype("f4"),
                     dims=("time", "lat", "lon"), coords=coords, name="u").to_dataset().to_netcdf(path)
    return path


@dataclass
class Command:
    name: str
    final: str                 # the output's name inside the output directory
    span: float                # seconds over which kill points are drawn (its usual run time)
    full_mib: tuple            # tmpfs sizes (MiB) between which a "full" point's size is drawn

    def argv(self, inputs: Path, outdir: Path) -> list:
        out = outdir / self.final
        c = ["-c", "time/32,lev/1,lat/1,lon/128", "--max-mem", "400KiB", "--workers", "1"]
        if self.name == "rechunk-nc":
            return ["rechunk", rechunk_source(inputs / "a.nc"), out, *c]
        if self.name == "rechunk-zarr":
            return ["rechunk", rechunk_source(inputs / "a.nc"), out, *c]
        if self.name == "rechunk-many":
            rechunk_source(inputs / "a.nc")
            if not (inputs / "many").is_dir():
                (inputs / "many").mkdir()
                for n in ("x", "y"):
                    shutil.copy(inputs / "a.nc", inputs / "many" / f"{n}.nc")
            return ["rechunk", f"{inputs / 'many'}/*.nc", out, *c]
        if self.name == "make-data":
            return ["make-data", "-o", out, "--kind", "4d", "--size", "16MiB"]
        if self.name == "stsa":
            return ["stsa", stsa_source(inputs / "u.nc"), "--var", "u", "--ndaywin", "16", "--ndayskip", "-8",
                    "--lat-band", "all", "--workers", "1", "--no-progress", "-o", out]
        if self.name == "records":
            return ["bench", "read-stack", "--size", "1MiB", "--stacks", "numpy,py-file", "--patterns", "sequential",
                    "--buffers", "4KiB,64KiB,1MiB", "--reps", "4", "--page-cache", "warm", "--no-report",
                    "--no-syscalls", "-o", out, "--data-dir", inputs / "rsdata"]
        raise ValueError(self.name)


COMMANDS = {
    "rechunk-nc": Command("rechunk-nc", "o.nc", 4.0, (2, 8)),
    "rechunk-zarr": Command("rechunk-zarr", "o.zarr", 4.0, (2, 8)),
    "rechunk-many": Command("rechunk-many", "out", 8.0, (4, 14)),
    "make-data": Command("make-data", "d", 3.0, (2, 14)),
    "stsa": Command("stsa", "s", 8.0, (1, 2)),
    "records": Command("records", "run", 6.0, (1, 1)),
}


# --- one point -----------------------------------------------------------------------------------------

@dataclass
class Point:
    command: str
    kind: str
    delay: float
    size_mib: int = 0

    def text(self) -> str:
        return json.dumps(self.__dict__)


def draw_points(command: str, n: int, seed: int, kinds=KINDS) -> list:
    c = COMMANDS[command]
    rng = random.Random(f"{seed}-{command}")
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        out.append(Point(command, kind, round(rng.uniform(0.2, c.span), 2),
                         rng.randint(*c.full_mib) if kind == "full" else 0))
    return out


def _mount(where: Path, mib: int) -> None:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"cannot mount a {mib} MiB tmpfs at {where} (run as root): {r.stderr.strip()}")


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def run_point(p: Point, inputs: Path, work: Path, rerun: bool = True) -> list:
    """Run one kill point; the list of what went wrong (empty: the point passed)."""
    c = COMMANDS[p.command]
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    outdir = work / "outdir"
    mounted = p.kind == "full"
    if mounted:
        _mount(outdir, p.size_mib)
    else:
        outdir.mkdir()
    try:
        return _run_point(p, c, inputs, outdir, rerun)
    finally:
        if mounted:
            _umount(outdir)


def _run_point(p: Point, c: Command, inputs: Path, outdir: Path, rerun: bool) -> list:
    argv = [EXE, *map(str, c.argv(inputs, outdir))]
    env = dict(os.environ, TMPDIR=str(outdir.parent))
    if p.kind == "full":   # write until the disk is full at the drawn size, not be refused up front
        env["CLIMIO_SPACE_CHECK"] = "off"
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    time.sleep(p.delay)
    if proc.poll() is None:
        if p.kind == "kill":
            os.killpg(proc.pid, signal.SIGKILL)
        elif p.kind == "vanish":
            shutil.rmtree(outdir, ignore_errors=True)
        elif p.kind == "full":
            _fill(outdir)
    try:
        _, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return [f"hang: no exit 600 s after the {p.kind}"]
    _reap(proc.pid)
    problems = _check_exit(p, proc.returncode, err)
    final = outdir / c.final
    LEFT[p.text()] = left_behind(p, proc.returncode, c, final, outdir, inputs)
    problems += _check_final(c, final, inputs)
    if p.command == "records" and (final / "records.jsonl").is_file():
        problems += _check_records(final / "records.jsonl")
    if not rerun:   # an error or a full disk Python saw: climio removed its temporaries itself
        if p.kind != "kill" and outdir.is_dir():
            left = [x.name for x in outdir.rglob("*") if x.name.startswith(".") and ".tmp-" in x.name]
            problems += [f"temporaries left behind: {left}"] if left else []
        return problems
    # the next run without --resume: exit 0, temporaries gone, a complete output
    if p.kind == "vanish":
        outdir.mkdir(exist_ok=True)
    for f in outdir.glob("filler"):
        f.unlink()
    env.pop("CLIMIO_SPACE_CHECK", None)
    if p.kind == "full":   # room for the next run
        subprocess.run(["mount", "-o", "remount,size=96m", str(outdir)], check=True, capture_output=True)
    again = subprocess.run([*argv, "--force"], capture_output=True, text=True, env=env, timeout=900)
    if again.returncode != 0:
        problems.append(f"the next run failed (exit {again.returncode}): {again.stderr.strip()[-300:]}")
    else:
        left = sorted(x.name for x in outdir.iterdir() if x.name not in (c.final, "rsdata", "lost+found"))
        left += sorted(x.name for x in outdir.parent.iterdir() if x.name.startswith("climio-"))
        if left:
            problems.append(f"temporaries left after the next run: {left}")
        if not _complete(c, final, inputs):
            problems.append("the next run's output is not complete")
    return problems


LEFT = {}   # point -> what it left behind (the bench prints it)


def left_behind(p: Point, code: int, c: Command, final: Path, outdir: Path, inputs: Path) -> str:
    """One line: how the command ended and what the point left in the output directory."""
    how = "killed" if code == -signal.SIGKILL else f"exit {code}"
    if not outdir.is_dir():
        return f"{how}; the output directory is gone"
    names = sorted(x.name for x in outdir.iterdir() if x.name not in ("rsdata", "lost+found", "filler"))
    state = "absent" if not final.exists() else ("complete" if _complete(c, final, inputs) else "partial")
    if state == "partial" and final.is_dir():
        state += f" (holding {sorted(x.name for x in final.iterdir()) or 'nothing'})"
    if c.name == "records" and final.exists():
        n = len((final / "records.jsonl").read_bytes().splitlines()) if (final / "records.jsonl").is_file() else 0
        state = f"kept with {n} whole record lines"
    return f"{how}; final name {state}; in the directory: {names or 'nothing'}"


def _reap(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)   # a worker the command started and a kill orphaned
    except (ProcessLookupError, PermissionError):
        pass


def _fill(where: Path) -> None:
    try:
        with open(where / "filler", "ab") as f:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
    except OSError:
        pass


def _check_exit(p: Point, code: int, err: str) -> list:
    if code == -signal.SIGKILL and p.kind == "kill":
        return []
    if code < 0:
        return [f"died of signal {-code}"]
    lines = [ln for ln in err.splitlines() if ln.startswith("climio: error")]
    if "Traceback" in err:
        return [f"traceback (exit {code}): {err.strip()[-400:]}"]
    if code not in DOCUMENTED:
        return [f"undocumented exit {code}"]
    if code and len(lines) != 1:
        return [f"exit {code} with {len(lines)} error lines: {err.strip()[-300:]}"]
    if p.kind == "full" and code not in (0, 4):
        return [f"disk full gave exit {code}, not 4: {lines}"]
    return []


def _check_final(c: Command, final: Path, inputs: Path) -> list:
    """Nothing under the final name, or a complete output (a study's run directory is kept on
    purpose: its records are checked line by line instead)."""
    if not final.exists() or c.name == "records":
        return []
    if c.name == "rechunk-many":   # each input's output is renamed when it is complete: each all or nothing
        return [f"incomplete {f.name} under its final name" for f in final.iterdir()
                if not f.name.startswith(".") and not _same(inputs / "a.nc", f)]
    if c.name == "stsa" and final.is_dir() and not any(final.iterdir()):
        return []
    if c.name == "make-data":   # the directory comes first, each file in it is renamed in when complete
        return [f"incomplete {f.name} under its final name" for f in final.iterdir()
                if not f.name.startswith(".") and not _readable_nc(f)]
    return [] if _complete(c, final, inputs) else [f"incomplete output under the final name {final.name}"]


def _complete(c: Command, final: Path, inputs: Path) -> bool:
    try:
        if c.name in ("rechunk-nc", "rechunk-zarr"):
            return _same(inputs / "a.nc", final)
        if c.name == "rechunk-many":
            return all(_same(inputs / "a.nc", final / n) for n in ("x.nc", "y.nc"))
        if c.name == "make-data":
            files = sorted(final.glob("*.nc"))
            return bool(files) and all(_readable_nc(f) for f in files)
        if c.name == "stsa":
            return (final / "stsa.html").is_file() and any(final.glob("*.nc"))
        if c.name == "records":
            return not _check_records(final / "records.jsonl")
    except Exception:  # noqa: BLE001  (unreadable: not complete)
        return False
    return False


def _readable_nc(f: Path) -> bool:
    import netCDF4
    try:
        with netCDF4.Dataset(f) as ds:
            for v in ds.variables.values():
                v[...]
    except Exception:  # noqa: BLE001  (unreadable: not complete)
        return False
    return True


def _same(src: Path, out: Path) -> bool:
    import netCDF4
    with netCDF4.Dataset(src) as a:
        want = a["ta"][...]
    if out.suffix == ".zarr":
        import zarr
        got = zarr.open_group(str(out), mode="r")["ta"][...]
    else:
        with netCDF4.Dataset(out) as b:
            got = b["ta"][...]
    return np.array_equal(np.asarray(want), np.asarray(got))


def _check_records(path: Path) -> list:
    from climio.runs.records import validate
    bad = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            validate(json.loads(line))
        except Exception as exc:  # noqa: BLE001
            bad.append(f"records.jsonl line {n} not whole: {str(exc)[:80]}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=20, help="points per command (kill, vanish, full in turn)")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--dir", default="/tmp/climio-kill-points")
    a = ap.parse_args(argv)
    base = Path(a.dir)
    inputs = base / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    print(f"{'command':13} {'kind':7} {'points':>6} {'passed':>6} seed {a.seed}")
    failed = 0
    for name in a.commands.split(","):
        tally = {}
        for p in draw_points(name, a.points, a.seed):
            problems = run_point(p, inputs, base / "work")
            print(f"  {p.kind:6} at {p.delay:5.2f} s{f' ({p.size_mib} MiB)' if p.size_mib else ''}: "
                  f"{LEFT.get(p.text(), '?')}{'' if problems else '; next run ok'}", flush=True)
            t = tally.setdefault(p.kind, [0, 0])
            t[0] += 1
            t[1] += not problems
            if problems:
                failed += 1
                print(f"FAIL {p.text()}: " + "; ".join(problems), flush=True)
        for kind, (n, ok) in tally.items():
            print(f"{name:13} {kind:7} {n:6} {ok:6}", flush=True)
    print(f"command: python bench/kill_points.py --points {a.points} --seed {a.seed} --commands {a.commands}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
