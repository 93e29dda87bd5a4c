"""The preload's `trace try` injections (csrc/trace/try.c), on the netCDF-C and HDF5 copies bundled
in the netCDF4 and h5py wheels, checked through the tracer's own events: read-only opens of a file
(by device and inode) go to its converted copy; a chunk cache set before nc_open / on H5Fopen."""

import json
import os
import subprocess
import sys

import numpy as np
import netCDF4

from climio.trace.reader import read_trace
from climio.trace.report import measured_facts
from climio.trace.run import trace_vars, tracer_library

READER = r"""
import os, sys, netCDF4, h5py, xarray as xr
p = sys.argv[1]
print("nc", float(netCDF4.Dataset(p)["v"][0, 0]))
print("h5", float(h5py.File(p, "r")["v"][0, 0]))
print("xr-h5netcdf", float(xr.open_dataset(p, engine="h5netcdf").v[0, 0]))
print("xr-netcdf4", float(xr.open_dataset(p, engine="netcdf4").v[0, 0]))
print("stat", os.stat(p).st_size)
with open(p, "rb") as fh:
    print("py", len(fh.read()))
"""


def _file(path, value, chunks=(1, 20)):
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", 10)
        d.createDimension("x", 20)
        v = d.createVariable("v", "f4", ("t", "x"), zlib=True, chunksizes=chunks)
        v[:] = np.full((10, 20), value, "f4")
    return str(path)


def _run(tmp_path, script, args, extra, trace="tr"):
    prog = tmp_path / "prog.py"
    prog.write_text(script)
    env = dict(os.environ, **trace_vars(tracer_library(), tmp_path / trace, ["posix", "netcdf", "hdf5"],
                                        ["/proc", "/sys", "/dev", sys.prefix], None), **extra)
    out = subprocess.run([sys.executable, str(prog), *args], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout, read_trace(tmp_path / trace)


def _opened(tr):
    names = {tr.strings[i] for i in tr.events["func_id"]}
    assert "nc_open" in names and "H5Fopen" in names
    opens = [tr.strings[f] for f, fn in zip(tr.events["file_id"], tr.events["func_id"])
             if tr.strings[fn] in ("open", "open64", "openat", "openat64", "nc_open", "H5Fopen", "fopen", "fopen64")]
    return set(opens)


def test_redirect_reaches_every_stack_by_inode(tmp_path):
    orig = _file(tmp_path / "a.nc", 1.0)
    copy = _file(tmp_path / "copy.nc", 2.0, chunks=(10, 5))
    st = os.stat(orig)
    os.symlink(orig, tmp_path / "link.nc")   # another spelling of the same file: matched by inode
    out, tr = _run(tmp_path, READER, ["link.nc"], {"CLIMIO_TRY_REDIRECT": f"{st.st_dev}:{st.st_ino}:{copy}"})
    vals = dict(line.split() for line in out.splitlines())
    assert [vals[k] for k in ("nc", "h5", "xr-h5netcdf", "xr-netcdf4")] == ["2.0"] * 4
    assert int(vals["stat"]) == int(vals["py"]) == os.path.getsize(copy)
    opened = _opened(tr)
    assert copy in opened and orig not in opened and str(tmp_path / "link.nc") not in opened
    # without the variable, the same job reads the original
    out, _ = _run(tmp_path, READER, ["link.nc"], {}, trace="tr0")
    assert "nc 1.0" in out and "xr-netcdf4 1.0" in out


def test_redirect_leaves_writes_alone(tmp_path):
    orig = _file(tmp_path / "a.nc", 1.0)
    copy = _file(tmp_path / "copy.nc", 2.0)
    st = os.stat(orig)
    script = ("import sys, netCDF4\nd = netCDF4.Dataset(sys.argv[1], 'a')\nd['v'][0, 0] = 7\nd.close()\n"
              "print(float(netCDF4.Dataset(sys.argv[1])['v'][0, 0]))\n")
    out, _ = _run(tmp_path, script, [orig], {"CLIMIO_TRY_REDIRECT": f"{st.st_dev}:{st.st_ino}:{copy}"})
    assert float(out) == 2.0          # the read-only open went to the copy ...
    assert float(netCDF4.Dataset(orig)["v"][0, 0]) == 7.0   # ... the write to the original
    assert float(netCDF4.Dataset(copy)["v"][0, 0]) == 2.0


def test_injected_netcdf_cache_seen_in_the_trace(tmp_path):
    path = _file(tmp_path / "a.nc", 1.0)
    script = "import sys, netCDF4\nprint(netCDF4.Dataset(sys.argv[1])['v'][:, 3].sum())\n"
    _, tr0 = _run(tmp_path, script, [path], {}, trace="tr0")
    _, tr1 = _run(tmp_path, script, [path], {"CLIMIO_TRY_NC_CACHE": "123456789:1009:0.5"}, trace="tr1")
    cache = lambda d: {v["var"]: v["cache_bytes"] for v in measured_facts(d).netcdf["variables"]}
    assert cache(tmp_path / "tr1") == {"v": 123456789}
    assert cache(tmp_path / "tr0")["v"] != 123456789


def test_injected_h5py_cache_seen_in_the_trace(tmp_path):
    path = _file(tmp_path / "a.nc", 1.0)
    script = "import sys, h5py\nprint(h5py.File(sys.argv[1], 'r')['v'][:, 3].sum())\n"

    def h5_cache(tr):
        ev = [i for i, fn in enumerate(tr.events["func_id"]) if tr.strings[fn] == "H5Fopen"]
        return [(tr.aux[i]["cache_bytes"], tr.aux[i]["cache_slots"]) for i in ev]
    _, tr0 = _run(tmp_path, script, [path], {}, trace="tr0")
    _, tr1 = _run(tmp_path, script, [path], {"CLIMIO_TRY_H5_CACHE": "98765432:10007:0.75"}, trace="tr1")
    assert h5_cache(tr1) == [(98765432, 10007)]
    assert h5_cache(tr0) and h5_cache(tr0)[0][0] != 98765432
