"""Fuzz every input climio reads: mutated real files through the commands that read them (issue 38 item 2).

Seed files are written here by the real libraries (netCDF4 for CDF-1/2/5 and netCDF-4, zarr-python
for Zarr v2/v3, `climio make-refs` for kerchunk JSON, the darshan wheel's sample log, `climio trace
run` for a climio trace, a study's records.jsonl). Each input is one seed with one mutation, drawn by
hypothesis strategies aimed at the structures that matter (netCDF-3 headers; HDF5 superblock, object
headers, B-tree nodes and chunk bytes; Zarr metadata and chunk files; JSON numbers and fields):

  flip      xor 1-4 bytes at an offset         truncate  cut the file at an offset
  extend    append bytes                       swap      exchange two 2/4/8-byte fields
  huge      write 2^31-1 .. 2^64-1 or 10^15 over a 4/8-byte field (a header claiming 10^15 elements)
  json      a JSON number made huge/negative/fractional, or two fields' values swapped

Each mutated input goes through one seeded climio command (rechunk to netCDF-4 or Zarr, predict,
advise, stsa, make-refs, trace report, bench chunking --source, export), called in-process in a
forked child (the parent imports climio once) under RLIMIT_AS (--mem-mib above the parent's size)
and a timeout (--timeout). The outcome must be one of
  ok      exit 0, and for a conversion the output's values equal the libraries' own reading of
          the mutated input
  data    exit 3 (errors.Exit.DATA) with one line on stderr
  input   exit 2 (errors.Exit.INPUT) with one line: the command line names something the damage
          renamed (the chunk spec's 'lat' in a file whose 'lat' became 'l`t'), as a typo would
and anything else (a signal, a traceback, another exit code, more lines, a hang, data that differ)
is counted in `other` and printed with its replay line:
  python bench/fuzz_inputs.py --replay '<json>'
The full run of the issue's target:  python bench/fuzz_inputs.py --per-format 2000 --seed 38
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field, asdict
from pathlib import Path

import numpy as np

EXE = os.path.join(os.path.dirname(sys.executable), "climio")
FORMATS = ("cdf1", "cdf2", "cdf5", "nc4", "zarr2", "zarr3", "kerchunk", "darshan", "trace", "records")
# The commands that read each format; a seeded draw picks one per input.
COMMANDS = {
    "cdf1": ("rechunk-nc", "rechunk-zarr", "predict", "stsa"),
    "cdf2": ("rechunk-nc", "predict", "advise"),
    "cdf5": ("rechunk-nc", "rechunk-zarr", "advise"),
    "nc4": ("rechunk-nc", "rechunk-zarr", "predict", "advise", "make-refs", "bench-source", "stsa"),
    "zarr2": ("rechunk-nc", "rechunk-zarr", "predict", "advise"),
    "zarr3": ("rechunk-nc", "rechunk-zarr", "predict", "advise"),
    # rechunk refuses a reference at the door; predict/advise describe it (a JSON without "refs" is
    # taken as a workflow file and refused as one)
    "kerchunk": ("rechunk-nc", "rechunk-zarr", "predict", "advise"),
    "darshan": ("trace-report",),
    "trace": ("trace-report",),
    "records": ("export",),
}
NT, NZ, NY, NX = 32, 2, 4, 6
HDF5_SIGNATURES = (b"\x89HDF\r\n\x1a\n", b"OHDR", b"OCHK", b"TREE", b"BTHD", b"BTLF", b"HEAP", b"GCOL",
                   b"SNOD", b"FRHP", b"FHDB", b"FHIB", b"FSHD", b"FSSE", b"SMTB", b"SMLI", b"EAHD", b"FAHD")
# stsa starts a Dask LocalCluster per input: its worker's imports alone took 9-15 s on the shared
# 2-core machine at load 13 (one undamaged input 17 s), so its timeout is this many times --timeout
SLOW = {"stsa": 3}
# stsa's figures read nothing more and take seconds of matplotlib per input (tests turn them on)
STSA_PLOTS = ("--no-plots",)
HUGE = (2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1, 10**15, 0, 1)


# --- seeds ---------------------------------------------------------------------------------------------

def _field():
    t = np.arange(NT * NZ * NY * NX, dtype="f4").reshape(NT, NZ, NY, NX)
    return (np.sin(t / 7.0) * 10 + 280).astype("f4")


def _write_nc(path, fmt, unlimited=False, chunked=False):
    import netCDF4
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None if unlimited else NT)
        for name, n in (("lev", NZ), ("lat", NY), ("lon", NX)):
            ds.createDimension(name, n)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 2000-01-01", "standard"
        t[:] = np.arange(NT) * 0.25
        lev = ds.createVariable("lev", "f8", ("lev",))
        lev.units, lev.positive, lev[:] = "hPa", "down", [850.0, 500.0]
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units, lat[:] = "degrees_north", np.linspace(-12, 12, NY)
        lon = ds.createVariable("lon", "f8", ("lon",))
        lon.units, lon[:] = "degrees_east", np.arange(NX) * 360.0 / NX
        kw = dict(chunksizes=(4, 1, NY, NX), zlib=True, complevel=1, shuffle=True) if chunked else {}
        v = ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"), **kw)
        v.units, v.standard_name = "K", "air_temperature"
        v[:] = _field()


def _write_zarr(path, zarr_format):
    import zarr
    root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
    a = root.create_array("ta", shape=(NT, NZ, NY, NX), chunks=(8, 1, NY, NX), dtype="f4",
                          dimension_names=("time", "lev", "lat", "lon") if zarr_format == 3 else None,
                          attributes={"units": "K"} if zarr_format == 3 else
                          {"units": "K", "_ARRAY_DIMENSIONS": ["time", "lev", "lat", "lon"]})
    a[:] = _field()


def _darshan_log() -> Path:
    import darshan
    pkg = Path(darshan.__file__).parent
    for d in ("tests/input", "examples/example_logs"):
        p = pkg / d / "ior_hdf5_example.darshan"
        if p.is_file():
            return p
    raise SystemExit("the darshan wheel's ior_hdf5_example.darshan is missing")


def _run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode:
        raise SystemExit(f"seed command failed: {' '.join(map(str, argv))}: {r.stderr[-2000:]}")
    return r


def build_seeds(d: Path, formats=FORMATS) -> dict:
    """The seed input of each format under d: a file or a directory (Zarr store, trace, run directory)."""
    d.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for fmt, nc in (("cdf1", "NETCDF3_CLASSIC"), ("cdf2", "NETCDF3_64BIT_OFFSET"), ("cdf5", "NETCDF3_64BIT_DATA")):
        if fmt in formats:
            seeds[fmt] = d / f"{fmt}.nc"
            _write_nc(seeds[fmt], nc, unlimited=fmt == "cdf1")
    if {"nc4", "kerchunk"} & set(formats):
        seeds["nc4"] = d / "nc4.nc"
        _write_nc(seeds["nc4"], "NETCDF4", chunked=True)
    for fmt, zf in (("zarr2", 2), ("zarr3", 3)):
        if fmt in formats:
            seeds[fmt] = d / f"{fmt}.zarr"
            _write_zarr(seeds[fmt], zf)
    if "kerchunk" in formats:
        seeds["kerchunk"] = d / "nc4.kerchunk.json"
        _run([EXE, "make-refs", seeds["nc4"], "-o", seeds["kerchunk"]])
    if "darshan" in formats:
        seeds["darshan"] = d / "ior.darshan"
        shutil.copy(_darshan_log(), seeds["darshan"])
    if "trace" in formats:
        seeds["trace"] = d / "trace"
        _run([EXE, "trace", "run", "-o", seeds["trace"], "--", sys.executable, "-c",
              f"import netCDF4; ds = netCDF4.Dataset({str(seeds.get('nc4', seeds.get('cdf1')))!r}); "
              "ds['ta'][:]; ds.close(); open('/etc/hostname').read()"])
    if "records" in formats:
        seeds["records"] = d / "run"
        _run([EXE, "bench", "read-stack", "--size", "64KiB", "--stacks", "numpy", "--patterns", "sequential",
              "--buffers", "4KiB,64KiB", "--reps", "2", "--page-cache", "warm", "--no-report", "--no-syscalls",
              "-o", seeds["records"], "--data-dir", d / "rsdata"])
    return {k: v for k, v in seeds.items() if k in formats}


def targets(fmt: str, seed: Path) -> list:
    """(relative file, [(start, end) hot regions]) of the seed: the files worth mutating and, within
    each, the structures to aim at (whole file when the list is empty)."""
    if fmt in ("zarr2", "zarr3", "trace", "records"):
        out = []
        for p in sorted(seed.rglob("*")):
            if p.is_file():
                out.append((str(p.relative_to(seed)), []))
        return out
    data = seed.read_bytes()
    if fmt in ("cdf1", "cdf2", "cdf5"):
        return [("", [(0, _nc3_header_end(seed))])]
    if fmt == "nc4":
        return [("", _hdf5_regions(seed, data))]
    return [("", [])]


def _nc3_header_end(path) -> int:
    import netCDF4   # the first variable's begin is where the header ends; read it as netCDF-C does
    data = Path(path).read_bytes()
    # the smallest 'begin' is at least the header's end: find the data of 'time' (0.0, 0.25) instead
    pos = data.find(np.array([0.0, 0.25], ">f8").tobytes())
    return pos if pos > 0 else min(len(data), 1024)


def _hdf5_regions(path, data: bytes) -> list:
    """Superblock, every structure with an HDF5 signature (object headers, B-tree nodes, heaps) and
    every chunk's bytes (h5py's chunk index)."""
    import h5py
    regions = [(0, 96)]
    for sig in HDF5_SIGNATURES[1:]:
        for m in re.finditer(re.escape(sig), data):
            regions.append((m.start(), min(len(data), m.start() + 96)))
    with h5py.File(path, "r") as f:
        ds = f["ta"]
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            regions.append((info.byte_offset, info.byte_offset + info.size))
    return regions


# --- mutations -----------------------------------------------------------------------------------------

@dataclass
class Mutation:
    kind: str
    file: str = ""            # relative to the seed (a directory seed); "" for a file seed
    at: int = 0
    n: int = 1
    value: str = ""           # hex bytes, or the JSON replacement
    at2: int = 0

    def text(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def mutation_strategy(fmt: str, seed: Path):
    """A hypothesis strategy over Mutations of this seed, aimed at its hot regions."""
    from hypothesis import strategies as st
    tg = targets(fmt, seed)

    def size_of(rel):
        return (seed / rel if rel else seed).stat().st_size

    @st.composite
    def draw(drw):
        rel, regions = drw(st.sampled_from(tg))
        size = max(1, size_of(rel))
        hot = [(a, min(b, size)) for a, b in regions if a < size] or [(0, size)]
        a, b = drw(st.sampled_from(hot))
        offset = st.integers(a, max(a, b - 1)) if drw(st.integers(0, 9)) < 8 else st.integers(0, size - 1)
        is_json = rel.endswith((".json", ".zarray", ".zattrs", ".zgroup", ".jsonl")) or fmt == "kerchunk"
        kinds = ["flip", "truncate", "extend", "swap", "huge"] + (["json", "json"] if is_json else [])
        kind = drw(st.sampled_from(kinds))
        if kind == "flip":
            n = drw(st.integers(1, 4))
            return Mutation("flip", rel, drw(offset), n, drw(st.binary(min_size=n, max_size=n)).hex() or "01")
        if kind == "truncate":
            return Mutation("truncate", rel, drw(offset))
        if kind == "extend":
            return Mutation("extend", rel, 0, 0, drw(st.binary(min_size=1, max_size=64)).hex())
        if kind == "swap":
            w = drw(st.sampled_from([2, 4, 8]))
            return Mutation("swap", rel, drw(offset), w, "", drw(offset))
        if kind == "huge":
            w = drw(st.sampled_from([4, 8]))
            v = drw(st.sampled_from(HUGE)) % (1 << (8 * w))
            order = drw(st.sampled_from(["little", "big"]))
            return Mutation("huge", rel, drw(offset), w, v.to_bytes(w, order).hex())
        nums = drw(st.integers(0, 10**6))
        how = drw(st.sampled_from(["1000000000000000", "-1", "0", "2.5", "null", '"x"', "[]", "swap"]))
        return Mutation("json", rel, nums, 0, how)
    return draw()


_NUMBER = re.compile(rb"(?<![\w.\"])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.\"])")
_VALUE = re.compile(rb'"[^"\\]*"\s*:\s*("[^"\\]*"|-?\d[\d.eE+-]*|\[[^\[\]]*\]|true|false|null)')


def apply(m: Mutation, path: Path) -> None:
    """Apply the mutation to the copy at path (a file, or the directory holding m.file)."""
    if m.kind == "none":
        return
    p = path / m.file if m.file else path
    data = bytearray(p.read_bytes())
    size = len(data)
    if m.kind == "flip" and size:
        for i, b in enumerate(bytes.fromhex(m.value)):
            if m.at + i < size:
                data[m.at + i] ^= b or 1
    elif m.kind == "truncate":
        data = data[:min(m.at, size)]
    elif m.kind == "extend":
        data += bytes.fromhex(m.value)
    elif m.kind == "swap" and size >= 2 * m.n:
        a, b = min(m.at, size - m.n), min(m.at2, size - m.n)
        wa, wb = bytes(data[a:a + m.n]), bytes(data[b:b + m.n])
        data[b:b + m.n] = wa
        data[a:a + m.n] = wb
    elif m.kind == "huge" and size:
        v = bytes.fromhex(m.value)
        a = min(m.at, max(0, size - len(v)))
        data[a:a + len(v)] = v[:size - a]
    elif m.kind == "json":
        data = bytearray(_json_mutate(bytes(data), m.at, m.value))
    p.write_bytes(bytes(data))


def _json_mutate(data: bytes, k: int, how: str) -> bytes:
    if how == "swap":
        vals = list(_VALUE.finditer(data))
        if len(vals) < 2:
            return data
        i, j = k % len(vals), (k // len(vals)) % len(vals)
        (a0, a1), (b0, b1) = sorted([vals[i].span(1), vals[j].span(1)])
        if a1 > b0 or (a0, a1) == (b0, b1):
            return data
        return data[:a0] + data[b0:b1] + data[a1:b0] + data[a0:a1] + data[b1:]
    nums = list(_NUMBER.finditer(data))
    if not nums:
        return data
    s, e = nums[k % len(nums)].span()
    return data[:s] + how.encode() + data[e:]


# --- commands ------------------------------------------------------------------------------------------

def argv_for(command: str, inp: Path, work: Path, profile: Path) -> tuple:
    """(argv, output path or None): the climio command line that reads inp."""
    if command == "rechunk-nc":
        out = work / "out.nc"
        return ["rechunk", inp, out, "--var", "ta", "-c", "time/8,lev/1,lat/2,lon/6", "-j", "1",
                "--max-mem", "64MiB"], out
    if command == "rechunk-zarr":
        out = work / "out.zarr"
        return ["rechunk", inp, out, "--var", "ta", "-c", "time/16,lev/2,lat/4,lon/3", "-j", "1",
                "--max-mem", "64MiB"], out
    if command == "predict":
        return ["predict", inp, "--var", "ta", "--read", "xy", "--profile", profile, "--json"], None
    if command == "advise":
        return ["advise", inp, "--var", "ta", "--read", "xt", "--profile", profile, "--json"], None
    if command == "make-refs":
        out = work / "refs.json"
        return ["make-refs", inp, "-o", out], out
    if command == "stsa":
        return ["stsa", inp, "--var", "ta", "--lat-band", "all", "--ndaywin", "2", "--ndayskip", "-1",
                "--level", "500", "--workers", "1", "--threads", "1", "--no-progress", *STSA_PLOTS, "-o", work / "stsa"], None
    if command == "bench-source":
        return ["bench", "chunking", "--source", f"{inp}:ta", "--reps", "1", "--no-report", "--chunks", "A",
                "--read", "xy", "--stacks", "netcdf4-python", "--compression", "none", "--sample", "2",
                "-o", work / "run", "--data-dir", work / "data"], None
    if command == "trace-report":
        return ["trace", "report", inp, "--json"], None
    if command == "export":
        out = work / "records.csv"
        return ["export", inp, "--csv", "-o", out], out
    raise ValueError(command)


def library_read(inp: Path):
    """What the libraries read from the (mutated) input's ta: netCDF4 for a file, zarr for a store."""
    if inp.is_dir():
        import zarr
        return np.asarray(zarr.open_group(str(inp), mode="r")["ta"][...])
    import netCDF4
    with netCDF4.Dataset(inp) as ds:
        v = ds["ta"]
        v.set_auto_maskandscale(False)
        return np.asarray(v[...])


def output_read(out: Path, command: str):
    if command == "make-refs":
        import fsspec
        import zarr
        fs = fsspec.filesystem("reference", fo=str(out))
        return np.asarray(zarr.open_group(fs.get_mapper(""), mode="r", zarr_format=2)["ta"][...])
    return library_read(out)


def equal_data(inp: Path, out: Path, command: str) -> str:
    """"" when the command's output holds what the libraries read from its input, else why not."""
    if command not in ("rechunk-nc", "rechunk-zarr", "make-refs"):
        return ""
    if command in ("rechunk-nc", "rechunk-zarr") and inp.suffix == ".json":
        return "rechunk read a kerchunk JSON"            # not an input rechunk takes: must have been refused
    try:
        want = library_read(inp)
    except Exception as exc:  # noqa: BLE001  (the library cannot read it: climio must not have succeeded)
        if command == "make-refs":   # a reference only records where chunks are: reading through it must fail too
            try:
                output_read(out, command)
            except Exception:  # noqa: BLE001
                return ""
            return f"the reference reads values the library refuses ({type(exc).__name__}: {str(exc)[:80]})"
        return f"exit 0 on an input the library refuses ({type(exc).__name__}: {str(exc)[:80]})"
    got = output_read(out, command)
    if got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
        return f"output differs from the library's read (shape {got.shape} vs {want.shape})"
    return ""


# --- one run in a forked child -------------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str                 # ok | data | other
    code: object              # exit code, "signal N", "timeout"
    stderr: str
    seconds: float
    why: str = ""


def _vm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_forked(argv, inp: Path, out, command: str, timeout: float, mem_bytes: int, modules_to="") -> Outcome:
    """climio.cli.main(argv) in a forked child under RLIMIT_AS and a timeout; the child also checks
    the output's data against the libraries' read and reports why not in its last stderr line."""
    from climio.cli import main
    errf = tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(errf.fileno(), 2)
            # Python's own streams onto those descriptors (under pytest they are capture objects)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False, buffering=1)
            limit = _vm_bytes() + mem_bytes
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            try:
                main([str(a) for a in argv])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if code == 0 and out is not None:
                why = equal_data(inp, Path(out), command)
                code = code if not why else 99
            if modules_to:   # the warm-up run: what this command imported, for the parent to preload
                Path(modules_to).write_text("\n".join(sorted(sys.modules)))
            if code == 99:
                sys.stderr.write(f"FUZZ-DATA: {why}\n")
        except BaseException:  # noqa: BLE001  (a traceback escaping main is an outcome, printed as Python would)
            import traceback
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    status = None
    deadline = t0 + timeout
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        status = None
    _reap_group(pid)
    errf.seek(0)
    err = errf.read().decode("utf-8", "replace")
    errf.close()
    secs = time.time() - t0
    if status is None:
        return Outcome("other", "timeout", err, secs, f"hang past {timeout:.0f} s")
    if os.WIFSIGNALED(status):
        return Outcome("other", f"signal {os.WTERMSIG(status)}", err, secs, "signal")
    return classify(os.WEXITSTATUS(status), err, secs)


def _reap_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)   # any worker a command left behind
    except (ProcessLookupError, PermissionError):
        pass


def classify(code: int, err: str, secs: float) -> Outcome:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("climio: error:")]
    if "Traceback" in err:
        return Outcome("other", code, err, secs, "traceback")
    if code == 0:
        return Outcome("ok", code, err, secs)
    if code == 99:
        return Outcome("other", "data differs", err, secs, lines[-1] if lines else "")
    if code == 3 and len(errors) == 1:
        return Outcome("data", code, err, secs)
    if code == 2 and len(errors) == 1:   # the command line names what the damage renamed (-c lat/2 of a
        return Outcome("input", code, err, secs)   # file whose 'lat' became 'l`t'): a typo's refusal
    return Outcome("other", code, err, secs, f"exit {code}, {len(lines)} stderr lines")


# --- the campaign --------------------------------------------------------------------------------------

@dataclass
class Tally:
    tried: int = 0
    ok: int = 0
    data: int = 0
    input: int = 0
    other: int = 0
    failures: list = field(default_factory=list)


def mutations_for(fmt: str, seed: Path, n: int, rng_seed: int) -> list:
    """n distinct Mutations drawn by hypothesis, derandomized from rng_seed (the same list every run).
    Hypothesis repeats itself (about 3 of 4 draws are new), so it draws in rounds until n are new."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    uniq = {}
    for r in range(20):
        drawn = []

        @hseed(rng_seed + 7919 * r)
        @settings(max_examples=max(1, n - len(uniq) + (n - len(uniq)) // 2), database=None,
                  phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
        @given(mutation_strategy(fmt, seed))
        def collect(m):
            drawn.append(m)
        collect()
        for m in drawn:
            uniq.setdefault(m.text(), m)
        if len(uniq) >= n:
            break
    return list(uniq.values())[:n]


def run_one(fmt, seed: Path, m: Mutation, command: str, work: Path, profile: Path, timeout, mem_bytes,
            modules_to="") -> Outcome:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    inp = work / seed.name
    (shutil.copytree if seed.is_dir() else shutil.copy)(seed, inp)
    apply(m, inp)
    argv, out = argv_for(command, inp, work, profile)
    return run_forked(argv, inp, out, command, timeout * SLOW.get(command, 1), mem_bytes, modules_to)


def replay_line(fmt, m: Mutation, command, seed_dir) -> str:
    return json.dumps({"fmt": fmt, "command": command, "mutation": asdict(m), "seeds": str(seed_dir)})


# what most commands import, by the seconds it takes: loaded once in the parent, not in every child
HEAVY = ("numpy", "netCDF4", "h5py", "hdf5plugin", "zarr", "xarray", "dask.array", "distributed", "fsspec",
         "matplotlib.pyplot", "scipy.signal", "climio.cli", "climio.rechunking.entry", "climio.rechunking.command",
         "climio.advice.recommend", "climio.trace.report", "climio.stsa")


def preload_heavy() -> None:
    """Import HEAVY here (the test slice's parent: seconds, where the full preload runs every command)."""
    import importlib
    for name in HEAVY:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
        except ImportError:
            pass


def preload(seeds: dict, profile: Path, work: Path, timeout: float, mem_bytes: int) -> int:
    """Import in this process what every command imports (found by running each command once on its
    unmutated seed in a forked child): each forked child then starts with xarray, dask, zarr,
    netCDF4, h5py, matplotlib and climio loaded, not seconds of imports per input. Modules only."""
    import importlib
    names = set()
    listing = work.parent / "modules.txt"
    for fmt, seed in seeds.items():
        for command in COMMANDS[fmt]:
            run_one(fmt, seed, Mutation("none"), command, work, profile, timeout, mem_bytes, str(listing))
            if listing.exists():
                names.update(listing.read_text().split())
                listing.unlink()
    done = 0
    for name in sorted(names, key=lambda x: (x.count("."), x)):
        if name == "__main__" or name in sys.modules:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
            done += 1
        except BaseException:  # noqa: BLE001  (a module that only imports in its own context: left to the child)
            pass
    return done


def _worker(items, seeds, seed_dir: Path, profile, work: Path, timeout, mem_bytes, results: Path, log) -> None:
    """One worker's share of the inputs, one JSON line per outcome in `results`."""
    with open(results, "w") as fh:
        for i, (fmt, m, command) in enumerate(items):
            o = run_one(fmt, seeds[fmt], m, command, work, profile, timeout, mem_bytes)
            rec = {"fmt": fmt, "command": command, "kind": o.kind, "code": o.code, "why": o.why,
                   "seconds": round(o.seconds, 3), "replay": replay_line(fmt, m, command, seed_dir)}
            if o.kind == "other":
                rec["stderr"] = o.stderr[-4000:]
                log(f"FAIL {fmt} {command} {o.code} ({o.why}): replay with --replay '{rec['replay']}'\n"
                    + "\n".join("    " + ln for ln in o.stderr.strip().splitlines()[-6:]))
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            if (i + 1) % 250 == 0:
                log(f"worker {work.name}: {i + 1}/{len(items)} inputs")


def campaign(formats, per_format: int, rng_seed: int, seed_dir: Path, work: Path, timeout: float,
             mem_mib: int, log=print, workers: int = 1) -> dict:
    """{(fmt, command): Tally} over per_format mutated inputs of each format, the inputs dealt in turn
    to `workers` forked workers (each forks a child per input)."""
    seeds = build_seeds(seed_dir, formats)
    profile = seed_dir / "profile.json"
    from climio.model.profile import default_profile
    profile.write_text(default_profile().to_json())
    mem_bytes = mem_mib << 20
    t0 = time.time()
    n = preload(seeds, profile, work / "warm", timeout, mem_bytes)
    log(f"preloaded {n} modules in {time.time() - t0:.0f} s")
    per = []
    for fi, fmt in enumerate(formats):
        rng = random.Random(rng_seed * 1000 + fi)
        per.append([(fmt, m, rng.choice(COMMANDS[fmt])) for m in mutations_for(fmt, seeds[fmt], per_format, rng_seed + fi)])
    # formats in turn, so that a run stopped early (--summarize its directory) has tried each alike
    items = [lst[i] for i in range(max(map(len, per), default=0)) for lst in per if i < len(lst)]
    log(f"{len(items)} mutated inputs drawn after {time.time() - t0:.0f} s")
    sys.stdout.flush()
    sys.stderr.flush()
    pids, files = [], []
    for k in range(max(1, workers)):
        files.append(work / f"results-{k}.jsonl")
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _worker(items[k::max(1, workers)], seeds, seed_dir, profile, work / f"w{k}", timeout, mem_bytes,
                        files[k], lambda line: (print(line, flush=True)))
            except BaseException:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            os._exit(code)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return tally_results(files)


def tally_results(files) -> dict:
    """{(fmt, command): Tally} from the workers' results files (a finished or an interrupted run)."""
    tallies = {}
    for f in files:
        for line in (f.read_text().splitlines() if f.exists() else []):
            r = json.loads(line)
            if r["kind"] == "other" and isinstance(r["code"], int):   # judged again by today's classify
                r["kind"] = classify(r["code"], r.get("stderr", ""), r["seconds"]).kind
            t = tallies.setdefault((r["fmt"], r["command"]), Tally())
            t.tried += 1
            setattr(t, r["kind"], getattr(t, r["kind"]) + 1)
            if r["kind"] == "other":
                t.failures.append((r["replay"], Outcome(r["kind"], r["code"], r.get("stderr", ""), r["seconds"], r["why"])))
    return tallies


def table(tallies: dict, rng_seed: int) -> str:
    rows = [f"{'format':9} {'command':13} {'tried':>6} {'exit0=data':>10} {'exit3':>6} {'exit2':>6} {'other':>6} "
            f"{'seed':>5}"]
    tot = Tally()
    for (fmt, cmd), t in sorted(tallies.items()):
        rows.append(f"{fmt:9} {cmd:13} {t.tried:6} {t.ok:10} {t.data:6} {t.input:6} {t.other:6} {rng_seed:5}")
        for k in ("tried", "ok", "data", "input", "other"):
            setattr(tot, k, getattr(tot, k) + getattr(t, k))
    by_fmt = {}
    for (fmt, _), t in tallies.items():
        by_fmt[fmt] = by_fmt.get(fmt, 0) + t.tried
    rows.append(f"{'all':9} {'':13} {tot.tried:6} {tot.ok:10} {tot.data:6} {tot.input:6} {tot.other:6} {rng_seed:5}")
    rows.append("per format: " + ", ".join(f"{f} {n}" for f, n in sorted(by_fmt.items())))
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-format", type=int, default=200, help="mutated inputs per format (issue target 2000)")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds one input may take (a hang past it fails); stsa gets SLOW times as long")
    ap.add_argument("--mem-mib", type=int, default=1024, help="RLIMIT_AS above the parent's size, MiB")
    ap.add_argument("--dir", default="", help="work directory (default: a temporary one)")
    ap.add_argument("--workers", type=int, default=2, help="inputs run side by side (each in its own forked child)")
    ap.add_argument("--summarize", default="", help="print the table of a run's --dir (finished or stopped)")
    ap.add_argument("--replay", default="", help="one input's replay line (JSON) from a failure")
    a = ap.parse_args(argv)
    base = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="climio-fuzz-"))
    if a.replay:
        r = json.loads(a.replay)
        seed_dir = Path(r["seeds"])
        seeds = build_seeds(seed_dir, [r["fmt"]]) if not (seed_dir / "profile.json").exists() else \
            {r["fmt"]: _seed_path(seed_dir, r["fmt"])}
        m = Mutation(**r["mutation"])
        o = run_one(r["fmt"], seeds[r["fmt"]], m, r["command"], base / "replay", seed_dir / "profile.json",
                    a.timeout, a.mem_mib << 20)
        print(f"outcome {o.kind} {o.code} {o.why} ({o.seconds:.1f} s); input kept at {base / 'replay'}")
        print(o.stderr)
        return 0 if o.kind != "other" else 1
    if a.summarize:
        tallies = tally_results(sorted((Path(a.summarize) / "work").glob("results-*.jsonl")))
        kept = Path(a.summarize) / "seed"      # the run's own seed (runs before it was kept: --seed)
        print(table(tallies, int(kept.read_text()) if kept.is_file() else a.seed))
        for t in tallies.values():
            for rep, o in t.failures:
                print(f"other: {o.code} ({o.why}) --replay '{rep}'")
        return 1 if any(t.other for t in tallies.values()) else 0
    formats = [f for f in a.formats.split(",") if f]
    base.mkdir(parents=True, exist_ok=True)
    (base / "seed").write_text(str(a.seed))
    t0 = time.time()
    tallies = campaign(formats, a.per_format, a.seed, base / "seeds", base / "work", a.timeout, a.mem_mib,
                       workers=a.workers)
    print(table(tallies, a.seed))
    print(f"{sum(t.tried for t in tallies.values())} inputs in {time.time() - t0:.0f} s; "
          f"command: python bench/fuzz_inputs.py --per-format {a.per_format} --seed {a.seed} --formats {a.formats}")
    return 1 if any(t.other for t in tallies.values()) else 0


def _seed_path(seed_dir: Path, fmt: str) -> Path:
    names = {"kerchunk": "nc4.kerchunk.json", "darshan": "ior.darshan", "trace": "trace", "records": "run",
             "zarr2": "zarr2.zarr", "zarr3": "zarr3.zarr"}
    return seed_dir / names.get(fmt, f"{fmt}.nc")


if __name__ == "__main__":
    sys.exit(main())
