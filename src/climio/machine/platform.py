"""Provenance: what machine, file system and library versions a measurement ran on."""

import hashlib
from importlib import metadata
import json
import os
import platform as _pf
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from climio import __version__
from climio.machine import native
from climio.base.errors import ClimioError

_PY_LIBS = ("numpy", "netCDF4", "h5py", "h5netcdf", "xarray", "dask", "distributed", "mpi4py", "matplotlib")


def _read(path) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_info() -> dict:
    model = next((l.split(":", 1)[1].strip() for l in _read("/proc/cpuinfo").splitlines()
                  if l.startswith("model name")), _pf.processor())
    return {"model": model, "logical_cpus": os.cpu_count()}


def ram_bytes() -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def filesystem_of(path) -> dict:
    """The mount holding `path`: type, source, mount point and options (from /proc/self/mountinfo)."""
    target = os.path.realpath(path)
    best = None
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 6 or len(r) < 2:
            continue
        mnt = f[4].replace("\\040", " ")
        if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and (best is None or len(mnt) >= len(best["mount_point"])):
            best = {"mount_point": mnt, "type": r[0], "source": r[1], "options": f[5],
                    "super_options": r[2] if len(r) > 2 else "", "dev": f[2]}
    best = best or {"mount_point": "?", "type": "unknown", "source": "?", "options": "", "super_options": "", "dev": ""}
    best["path"] = target
    best["stripe"] = stripe_info(target, best["type"])
    best["device"] = block_device(best.pop("dev"))
    return best


def block_device(dev: str) -> dict:
    """Readahead, I/O scheduler and model of the device behind a mount (MAJOR:MINOR), where sysfs
    tells: a partition reports its disk's queue; tmpfs, overlay and network file systems have a
    readahead (their backing device info) but no block queue."""
    out = {}
    ra = _read(f"/sys/class/bdi/{dev}/read_ahead_kb").strip() if dev else ""
    if ra.isdigit():
        out["read_ahead_kb"] = int(ra)
    sys_dev = Path(f"/sys/dev/block/{dev}") if dev else None
    if sys_dev is None or not sys_dev.exists():
        out["block_device"] = None
        return out
    node = sys_dev.resolve()
    if (node / "partition").exists():
        node = node.parent
    out["block_device"] = node.name
    queue = node / "queue"
    sched = _read(queue / "scheduler").strip()
    if sched:
        out["scheduler"] = next((w.strip("[]") for w in sched.split() if w.startswith("[")), sched)
    rot = _read(queue / "rotational").strip()
    if rot in ("0", "1"):
        out["rotational"] = rot == "1"
    model = " ".join(x for x in (_read(node / "device" / "vendor").strip(), _read(node / "device" / "model").strip()) if x)
    out["model"] = model or None
    return out


def stripe_info(path, fstype) -> dict:
    if fstype != "lustre":
        return {"applicable": False, "reason": f"{fstype} has no stripes"}
    lfs = shutil.which("lfs")
    if not lfs:
        return {"applicable": True, "error": "lfs not found"}
    out = subprocess.run([lfs, "getstripe", "-d", path], capture_output=True, text=True)
    return {"applicable": True, "getstripe": out.stdout.strip() or out.stderr.strip()}


def python_versions() -> dict:
    v = {"python": sys.version.split()[0], "climio": __version__}
    for name in _PY_LIBS:
        try:
            v[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            v[name] = None
    # The wheels bundle their own netCDF-C / HDF5, which may differ from the C layer's.
    try:
        import netCDF4
        v["netCDF4.netcdf_c"] = netCDF4.__netcdf4libversion__
        v["netCDF4.hdf5"] = netCDF4.__hdf5libversion__
    except ImportError:
        pass
    try:
        import h5py
        v["h5py.hdf5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    return v


def native_versions() -> dict:
    v = {"build": native.build_info()}
    try:
        v["netcdf_c_runtime"] = native.run_json([native.program("climio-probe-netcdf"), "--version"])["netcdf_c"]
    except (ClimioError, KeyError, ValueError) as exc:
        v["netcdf_c_runtime"] = f"unavailable: {exc}"
    for tool, args in (("strace", ["-V"]), ("fio", ["--version"]), ("mpirun", ["--version"])):
        exe = shutil.which(tool)
        if exe:
            out = subprocess.run([exe, *args], capture_output=True, text=True)
            v[tool] = (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "?"
        else:
            v[tool] = None
    return v


def collect(target_dir) -> dict:
    """Everything a reader needs to judge where the numbers came from."""
    uname = _pf.uname()
    os_release = dict(l.split("=", 1) for l in _read("/etc/os-release").splitlines() if "=" in l)
    info = {
        "host": socket.gethostname(),
        "os": os_release.get("PRETTY_NAME", "").strip('"') or uname.system,
        "kernel": uname.release,
        "machine": uname.machine,
        "cpu": cpu_info(),
        "ram_bytes": ram_bytes(),
        "filesystem": filesystem_of(target_dir),
        "versions": {"python": python_versions(), "native": native_versions()},
    }
    info["platform_id"] = platform_id(info)
    return info


def platform_id(info: dict) -> str:
    """A key that is the same for every run on one machine and file system: the host, its CPU
    and memory, and the mount (type, source, mount point), never a run's own paths or versions
    (library versions are recorded beside it; a calibration says which it was made with)."""
    fs = info.get("filesystem", {})
    body = {"host": info.get("host"), "machine": info.get("machine"), "cpu": info.get("cpu", {}).get("model"),
            "ram_bytes": info.get("ram_bytes"),
            "filesystem": {k: fs.get(k) for k in ("type", "source", "mount_point")}}
    return hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]


def platform_id_here(path=None) -> str:
    """This machine's platform id for the file system holding `path` (as collect() computes it,
    without the slow library-version probes)."""
    import platform as _pf
    import socket
    d = os.path.dirname(os.path.abspath(str(path))) if path else os.getcwd()
    info = {"host": socket.gethostname(), "machine": _pf.uname().machine, "cpu": cpu_info(),
            "ram_bytes": ram_bytes(), "filesystem": filesystem_of(d)}
    return platform_id(info)
