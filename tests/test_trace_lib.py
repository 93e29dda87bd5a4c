"""The LD_PRELOAD tracer libclimio-trace.so (csrc/trace), read back with numpy as FORMAT.md says.

Each test runs a real program under the tracer: small C programs from tests/trace_progs/ compiled
here with cc/mpicc, netCDF4-python and h5py scripts (whose wheels load their bundled libnetcdf and
libhdf5 RTLD_LOCAL), and a 2-rank mpirun. Nothing is skipped; every subprocess has a timeout.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from climio.machine import native
from climio.base.errors import NativeError

PROGS = Path(__file__).parent / "trace_progs"
EVENT = np.dtype([("t_start_ns", "<u8"), ("t_end_ns", "<u8"), ("offset", "<i8"), ("size", "<i8"), ("ret", "<i8"),
                  ("file_id", "<u4"), ("func_id", "<u4"), ("var_id", "<u4"), ("rank", "<i4"), ("tid", "<u4"),
                  ("depth", "<u2"), ("layer", "u1"), ("flags", "u1")])
POSIX, STDIO, MPIIO, NETCDF, HDF5 = 1, 2, 3, 4, 5
AUX, FAILED = 1, 2
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


class Proc:
    """One traced process: its events, string table, aux records and done.json."""

    def __init__(self, stem: Path):
        self.events = np.fromfile(f"{stem}.events", dtype=EVENT)
        assert os.path.getsize(f"{stem}.events") % 64 == 0
        self.strings = {0: ""}
        if os.path.exists(f"{stem}.strings"):
            for line in Path(f"{stem}.strings").read_text().splitlines():
                k, _, text = line.partition("\t")
                self.strings[int(k)] = text
        self.aux = {}
        if os.path.exists(f"{stem}.aux.jsonl"):
            for line in Path(f"{stem}.aux.jsonl").read_text().splitlines():
                rec = json.loads(line)
                self.aux.setdefault(rec.pop("ev"), {}).update(rec)
        done = Path(f"{stem}.done.json")
        self.done = json.loads(done.read_text()) if done.exists() else None
        # every id an event names is in the table
        for col in ("file_id", "func_id", "var_id"):
            assert set(self.events[col].tolist()) <= set(self.strings), col

    def func(self, i):
        return self.strings[int(self.events["func_id"][i])]

    def select(self, funcs=None, layer=None, path=None):
        """Indices of the events with a function in `funcs`, of `layer`, on file `path`."""
        idx = []
        for i, e in enumerate(self.events):
            if funcs is not None and self.strings[int(e["func_id"])] not in funcs:
                continue
            if layer is not None and e["layer"] != layer:
                continue
            if path is not None and self.strings[int(e["file_id"])] != str(path):
                continue
            idx.append(i)
        return idx

    def children(self, i, layer=None):
        """Events nested in event i: same thread, deeper, inside its time span."""
        p = self.events[i]
        e = self.events
        m = (e["tid"] == p["tid"]) & (e["depth"] > p["depth"]) & (e["t_start_ns"] >= p["t_start_ns"]) & \
            (e["t_end_ns"] <= p["t_end_ns"])
        if layer is not None:
            m &= e["layer"] == layer
        return np.flatnonzero(m)


def load(trace_dir):
    """{pid: Proc} of every file set in trace_dir."""
    out = {}
    for f in sorted(Path(trace_dir).glob("*.events")):
        stem = f.with_suffix("")
        out[int(stem.name.rsplit("-", 1)[1])] = Proc(stem)
    return out


def the_proc(trace_dir, path):
    """The one process that touched `path` (an interpreter may start helpers of its own)."""
    procs = [p for p in load(trace_dir).values() if str(path) in p.strings.values()]
    assert len(procs) == 1, [p.done for p in load(trace_dir).values()]
    return procs[0]


@pytest.fixture(scope="module")
def lib():
    path = native.library("climio-trace")
    assert os.path.isfile(path)
    return path


def compile_prog(src, out_dir, compiler="cc"):
    exe = Path(out_dir) / Path(src).stem
    subprocess.run([shutil.which(compiler) or compiler, "-O2", "-o", str(exe), str(PROGS / src)], check=True,
                   timeout=120, capture_output=True)
    return str(exe)


def traced_env(lib, trace_dir, **extra):
    env = dict(os.environ, LD_PRELOAD=lib, CLIMIO_TRACE_DIR=str(trace_dir))
    # what `climio trace run` excludes: the kernel's files and Python's own installation
    env["CLIMIO_TRACE_EXCLUDE"] = ":".join(["/proc", "/sys", "/dev", sys.prefix, sys.base_prefix])
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_traced(lib, trace_dir, cmd, timeout=120, **extra):
    out = subprocess.run(list(map(str, cmd)), env=traced_env(lib, trace_dir, **extra), capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(np.random.default_rng(1).bytes(400 * 4096))
    return path


# ---- native.library ---------------------------------------------------------------------------
def test_library_lookup(lib):
    assert lib.endswith("libclimio-trace.so") and os.path.isabs(lib)
    with pytest.raises(NativeError):
        native.library("climio-no-such-library")


def test_library_links_no_mpi_netcdf_hdf5(lib):
    """Interposition only: the library loads into any program, MPI or not."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True, timeout=30).stdout
    assert "libmpi" not in out and "libnetcdf" not in out and "libhdf5" not in out
    out = subprocess.run(["true"], env=dict(os.environ, LD_PRELOAD=lib), capture_output=True, timeout=30)
    assert out.returncode == 0 and out.stderr == b""


# ---- POSIX ------------------------------------------------------------------------------------
def test_preads_exact(lib, tmp_path, data_file):
    exe = compile_prog("preads.c", tmp_path)
    run_traced(lib, tmp_path / "t", [exe, data_file, 100, 4096, 3 * 4096])
    (proc,) = load(tmp_path / "t").values()
    reads = proc.select(funcs={"pread", "pread64"})
    assert len(reads) == 100
    ev = proc.events[reads]
    assert (ev["layer"] == POSIX).all() and (ev["depth"] == 0).all() and (ev["flags"] == 0).all()
    assert (ev["size"] == 4096).all() and (ev["ret"] == 4096).all()
    assert ev["offset"].tolist() == [i * 3 * 4096 for i in range(100)]
    assert {proc.strings[int(f)] for f in ev["file_id"]} == {str(data_file)}
    assert (ev["t_end_ns"] >= ev["t_start_ns"]).all() and (np.diff(ev["t_start_ns"].astype(np.int64)) > 0).all()
    assert (ev["rank"] == -1).all() and (ev["tid"] == proc.done["pid"]).all()
    # CLOCK_REALTIME ns, after the process started
    assert ev["t_start_ns"][0] >= proc.done["t0_ns"] > 1.6e18
    opens = proc.select(funcs={"open", "open64"}, path=data_file)
    closes = proc.select(funcs={"close"}, path=data_file)
    assert len(opens) == 1 and len(closes) == 1 and opens[0] < reads[0] < reads[-1] < closes[0]
    assert proc.done["end"] == "exit" and proc.done["partial"] is False
    assert proc.done["events"] == len(proc.events) and proc.done["dropped"] == 0


def test_excluded_paths_not_recorded(lib, tmp_path, data_file):
    exe = compile_prog("preads.c", tmp_path)
    run_traced(lib, tmp_path / "t", [exe, data_file, 5, 4096, 4096, "--proc"])
    (proc,) = load(tmp_path / "t").values()
    assert not [s for s in proc.strings.values() if s.startswith("/proc")]
    assert len(proc.select(funcs={"pread", "pread64"})) == 5
    # reads of /proc/self/status were made (and not recorded): only the data file's events
    assert {proc.strings[int(f)] for f in proc.events["file_id"]} == {str(data_file)}
    # an explicit exclusion of the data file's directory leaves nothing
    run_traced(lib, tmp_path / "t2", [exe, data_file, 5, 4096, 4096], CLIMIO_TRACE_EXCLUDE=f"/proc:{tmp_path}")
    (proc,) = load(tmp_path / "t2").values()
    assert len(proc.events) == 0 and proc.done["end"] == "exit"


def test_stdio(lib, tmp_path, data_file):
    exe = compile_prog("preads.c", tmp_path)
    run_traced(lib, tmp_path / "t", [exe, data_file, 1, 100, 100, "--fread"])
    (proc,) = load(tmp_path / "t").values()
    freads = proc.select(funcs={"fread"}, layer=STDIO, path=data_file)
    assert len(freads) == 10
    ev = proc.events[freads]
    assert (ev["size"] == 100).all() and (ev["ret"] == 100).all()
    assert ev["offset"].tolist() == [i * 100 for i in range(10)]   # ftello before each call
    assert len(proc.select(funcs={"fopen", "fopen64"}, layer=STDIO, path=data_file)) == 1
    assert len(proc.select(funcs={"fclose"}, layer=STDIO, path=data_file)) == 1


def test_max_events_partial(lib, tmp_path, data_file):
    exe = compile_prog("preads.c", tmp_path)
    run_traced(lib, tmp_path / "t", [exe, data_file, 100, 4096, 4096], CLIMIO_TRACE_MAX_EVENTS=10)
    (proc,) = load(tmp_path / "t").values()
    assert proc.done["partial"] is True
    assert proc.done["events"] == 10 and len(proc.events) == 10
    assert proc.done["dropped"] == 102 - 10   # open + 100 preads + close
    assert proc.func(0) in ("open", "open64") and proc.strings[int(proc.events["file_id"][0])] == str(data_file)
    assert [proc.func(i) for i in range(1, 10)] == ["pread"] * 9 or [proc.func(i) for i in range(1, 10)] == ["pread64"] * 9
    assert proc.events["offset"][1:].tolist() == [i * 4096 for i in range(9)]


def test_small_buffer_flushes(lib, tmp_path, data_file):
    """A 5-event buffer is written 20 times; nothing is lost or reordered."""
    exe = compile_prog("preads.c", tmp_path)
    run_traced(lib, tmp_path / "t", [exe, data_file, 100, 4096, 4096], CLIMIO_TRACE_BUFFER=5 * 64)
    (proc,) = load(tmp_path / "t").values()
    reads = proc.select(funcs={"pread", "pread64"})
    assert proc.events["offset"][reads].tolist() == [i * 4096 for i in range(100)]
    assert (np.diff(proc.events["t_start_ns"].astype(np.int64)) > 0).all()


def test_sigterm_leaves_readable_trace(lib, tmp_path, data_file):
    exe = compile_prog("preads.c", tmp_path)
    p = subprocess.Popen([exe, str(data_file), "100", "4096", "4096", "--loop"], stdout=subprocess.PIPE, text=True,
                         env=traced_env(lib, tmp_path / "t"))
    watchdog = threading.Timer(60, p.kill)   # a hung program cannot hang the test
    watchdog.start()
    try:
        assert p.stdout.readline().strip() == "ready"   # a first pass is done, more are running
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == -signal.SIGTERM    # the default action, re-raised after the flush
    finally:
        watchdog.cancel()
        p.kill()
        p.wait(timeout=30)
    (proc,) = load(tmp_path / "t").values()
    assert proc.done["end"] == "signal:15"
    reads = proc.select(funcs={"pread", "pread64"})
    assert len(reads) >= 100 and proc.done["events"] == len(proc.events)
    assert proc.events["offset"][reads[:100]].tolist() == [i * 4096 for i in range(100)]


def test_threads(lib, tmp_path, data_file):
    """Four threads read at once (the locked path): every event once, each thread's in order."""
    script = tmp_path / "threads.py"
    script.write_text(f"""
import os, threading
fd = os.open({str(data_file)!r}, os.O_RDONLY)
def work(k):
    for i in range(300):
        os.pread(fd, 512, (k * 300 + i) * 512)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script], CLIMIO_TRACE_BUFFER=64 * 100)
    proc = the_proc(tmp_path / "t", data_file)
    ev = proc.events[proc.select(funcs={"pread", "pread64"}, path=data_file)]
    assert sorted(ev["offset"].tolist()) == [i * 512 for i in range(1200)]
    tids = set(ev["tid"].tolist())
    assert len(tids) == 4 and proc.done["pid"] not in tids
    for t in tids:
        mine = ev[ev["tid"] == t]
        assert (np.diff(mine["offset"]) == 512).all() and (np.diff(mine["t_start_ns"].astype(np.int64)) > 0).all()


def test_program_signal_handler_chained(lib, tmp_path, data_file):
    """A program's own SIGTERM handler still runs (and the trace goes on to a normal exit)."""
    script = tmp_path / "handler.py"
    script.write_text(f"""
import os, signal
got = []
old = signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
assert old == signal.SIG_DFL
os.kill(os.getpid(), signal.SIGTERM)
assert got == [signal.SIGTERM]
assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
os.pread(os.open({str(data_file)!r}, os.O_RDONLY), 10, 0)
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    proc = the_proc(tmp_path / "t", data_file)
    assert proc.done["end"] == "exit" and len(proc.select(funcs={"pread", "pread64"})) == 1


def test_fork_and_exec(lib, tmp_path, data_file):
    """A fork()ed child writes its own file set; an exec()ed image continues its pid's set."""
    script = tmp_path / "fork.py"
    script.write_text(f"""
import os, sys
path = {str(data_file)!r}
pid = os.fork()
if pid == 0:
    os.pread(os.open(path, os.O_RDONLY), 4096, 8192)
    os._exit(0)
os.waitpid(pid, 0)
fd = os.open(path, os.O_RDONLY)
os.pread(fd, 100, 0)
os.execv(sys.executable, [sys.executable, "-c", "import os; os.pread(os.open({str(data_file)!r}, os.O_RDONLY), 200, 300)"])
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    procs = {pid: p for pid, p in load(tmp_path / "t").items() if str(data_file) in p.strings.values()}
    assert len(procs) == 2
    for pid, proc in procs.items():
        assert proc.done["pid"] == pid and proc.done["end"] == "exit"
        reads = proc.events[proc.select(funcs={"pread", "pread64"}, path=data_file)]
        sizes = sorted(reads["size"].tolist())
        if sizes == [4096]:   # the child
            assert reads["offset"][0] == 8192 and (proc.events["tid"] == pid).all()
        else:                 # parent before exec, then the new image, in one set
            assert sizes == [100, 200] and proc.done["events"] == len(proc.events)
            assert set(reads["offset"].tolist()) == {0, 300}


# ---- netCDF-C through netCDF4-python (bundled libnetcdf/libhdf5 loaded RTLD_LOCAL) --------------
def test_netcdf4_python_nested(lib, tmp_path):
    import netCDF4
    path = tmp_path / "chunked.nc"
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("t", 8)
        d.createDimension("y", 64)
        d.createDimension("x", 64)
        v = d.createVariable("ta", "f4", ("t", "y", "x"), chunksizes=(2, 32, 32), zlib=True, complevel=1)
        v[:] = np.random.default_rng(0).random((8, 64, 64), dtype=np.float32)
    script = tmp_path / "read.py"
    script.write_text(f"""
import netCDF4
with netCDF4.Dataset({str(path)!r}) as d:
    a = d["ta"][1:3, 0:40, 5:50]
    assert a.shape == (2, 40, 45)
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    proc = the_proc(tmp_path / "t", path)
    gets = [i for i in proc.select(layer=NETCDF, path=path) if proc.func(i).startswith("nc_get_vara")]
    assert len(gets) == 1
    (g,) = gets
    e = proc.events[g]
    assert proc.strings[int(e["var_id"])] == "ta" and e["ret"] == 0 and e["depth"] == 0
    assert e["size"] == 2 * 40 * 45 * 4 and e["flags"] & AUX
    aux = proc.aux[g]
    assert aux["start"] == [1, 0, 5] and aux["count"] == [2, 40, 45] and aux["stride"] is None
    assert aux["chunks"] == [2, 32, 32] and aux["shape"] == [8, 64, 64] and aux["itemsize"] == 4
    assert aux["compressed"] is True and aux["cache_bytes"] > 0
    # the chunks were read by POSIX calls nested in the nc_get_vara (via H5Dread)
    reads = [i for i in proc.children(g, POSIX) if proc.func(i) in ("read", "pread", "pread64")]
    assert reads and all(proc.strings[int(proc.events["file_id"][i])] == str(path) for i in reads)
    assert all(proc.events["depth"][i] > e["depth"] for i in reads)
    h5 = [i for i in proc.children(g, HDF5) if proc.func(i) == "H5Dread"]
    assert len(h5) == 1 and proc.aux[h5[0]]["selection_bytes"] == e["size"]
    assert set(reads) <= set(proc.children(h5[0], POSIX))   # pread (2) in H5Dread (1) in nc_get_vara (0)
    # the open: nc_open with aux, its own POSIX/HDF5 children
    (o,) = [i for i in proc.select(layer=NETCDF, path=path) if proc.func(i) == "nc_open"]
    assert proc.aux[o]["mode"] == 0 and o < g
    assert len(proc.select(funcs={"nc_close"}, layer=NETCDF, path=path)) == 1


def test_h5py_dataset_read(lib, tmp_path):
    import h5py
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("grp/x", data=np.arange(1000, dtype="f8").reshape(10, 100), chunks=(2, 100))
    script = tmp_path / "read.py"
    script.write_text(f"""
import h5py
with h5py.File({str(path)!r}, "r") as f:
    a = f["grp/x"][2:6, 10:60]
    assert a.shape == (4, 50)
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    proc = the_proc(tmp_path / "t", path)
    reads = proc.select(funcs={"H5Dread"}, layer=HDF5, path=path)
    assert len(reads) == 1
    e = proc.events[reads[0]]
    assert e["size"] == 4 * 50 * 8 and proc.strings[int(e["var_id"])] == "/grp/x"
    assert proc.aux[reads[0]] == {"selection_bytes": 1600, "dataset": "/grp/x"}
    assert len(proc.children(reads[0], POSIX)) >= 1
    assert proc.select(funcs={"H5Fopen"}, layer=HDF5, path=path)


def test_h5py_names_escaped_and_memory_type_sizes(lib, tmp_path):
    """A dataset name with a quote, a backslash and a tab comes back intact from the aux JSON, and
    the selection bytes follow the memory type of each read (f8, then f4 and i2 of the same data)."""
    import h5py
    path = tmp_path / "n.h5"
    name = 'we"ird\\na\tme'
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=np.arange(600, dtype="f8").reshape(6, 100))
    script = tmp_path / "read.py"
    script.write_text(f"""
import h5py
with h5py.File({str(path)!r}, "r") as f:
    d = f[{name!r}]
    assert d[0:2, :].shape == (2, 100)
    assert d.astype("f4")[0:3, 0:10].shape == (3, 10)
    assert d.astype("i2")[1:2, 0:7].shape == (1, 7)
    assert d[0:1, 0:1].shape == (1, 1)
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    proc = the_proc(tmp_path / "t", path)
    reads = proc.select(funcs={"H5Dread"}, layer=HDF5, path=path)
    assert [proc.aux[i]["selection_bytes"] for i in reads] == [2 * 100 * 8, 3 * 10 * 4, 7 * 2, 8]
    assert [int(proc.events["size"][i]) for i in reads] == [1600, 120, 14, 8]
    assert {proc.aux[i]["dataset"] for i in reads} == {"/" + name}


# ---- MPI-IO -----------------------------------------------------------------------------------
def test_mpi_write_at_all(lib, tmp_path):
    exe = compile_prog("mpi_write.c", tmp_path, "mpicc")
    out_file = tmp_path / "out.bin"
    n = 1 << 20
    env = traced_env(lib, tmp_path / "t", **MPI_ENV)
    del env["LD_PRELOAD"]   # trace the ranks, not mpirun itself
    cmd = ["timeout", "120", "mpirun", "-np", "2", "-x", f"LD_PRELOAD={lib}", "-x", "CLIMIO_TRACE_DIR",
           "-x", "CLIMIO_TRACE_EXCLUDE", exe, str(out_file), str(n)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    assert out.returncode == 0, out.stderr
    assert out_file.stat().st_size == 2 * n
    procs = list(load(tmp_path / "t").values())
    assert sorted(p.done["rank"] for p in procs) == [0, 1]
    written = 0
    for p in procs:
        rank = p.done["rank"]
        (w,) = p.select(funcs={"MPI_File_write_at_all"}, layer=MPIIO, path=out_file)
        e = p.events[w]
        assert e["offset"] == rank * n and e["size"] == n and e["ret"] == n and e["rank"] == rank
        kids = [i for i in p.children(w, POSIX) if p.func(i) in ("write", "pwrite", "pwrite64", "writev", "pwritev")
                and p.strings[int(p.events["file_id"][i])] == str(out_file)]
        written += int(p.events["ret"][kids].sum()) if kids else 0
        (o,) = p.select(funcs={"MPI_File_open"}, layer=MPIIO, path=out_file)
        assert p.events["flags"][o] & AUX and p.aux[o]["hints"].get("cb_nodes") == "1"
        (r,) = p.select(funcs={"MPI_File_read_at"}, layer=MPIIO, path=out_file)
        assert p.events["offset"][r] == rank * n and p.events["ret"][r] == n
        assert p.children(r, POSIX).size >= 1
        assert p.done["end"] == "exit" and (p.events["rank"][p.events["layer"] == MPIIO] == rank).all()
    assert written == 2 * n   # the bytes of both ranks went through POSIX writes nested in the collective


def test_netcdf_strided_and_growing_unlimited(lib, tmp_path):
    """The aux of nc_put/get_vars carries the stride, and the variable's shape in it grows with the
    writes along an unlimited dimension (the description is rebuilt when a write extends it)."""
    path = tmp_path / "grow.nc"
    script = tmp_path / "grow.py"
    script.write_text(f"""
import numpy as np, netCDF4
with netCDF4.Dataset({str(path)!r}, "w") as d:
    d.createDimension("t", None)
    d.createDimension("x", 6)
    v = d.createVariable("u", "f8", ("t", "x"))
    v[0:3, :] = np.ones((3, 6))
    v[4:10:2, :] = np.full((3, 6), 2.0)
    a = v[0:9:3, ::2]
    assert a.shape == (3, 3) and float(a[0, 0]) == 1.0 and float(a[2, 2]) == 2.0
""")
    run_traced(lib, tmp_path / "t", [sys.executable, script])
    proc = the_proc(tmp_path / "t", path)
    acc = [i for i in proc.select(layer=NETCDF, path=path) if proc.func(i).startswith(("nc_put_var", "nc_get_var"))]
    by = {proc.func(i): proc.aux[i] for i in acc}
    put_a = next(proc.aux[i] for i in acc if proc.func(i).startswith("nc_put_vara"))
    put_s = next(proc.aux[i] for i in acc if proc.func(i).startswith("nc_put_vars"))
    get_s = next(proc.aux[i] for i in acc if proc.func(i).startswith("nc_get_vars"))
    assert put_a["start"] == [0, 0] and put_a["count"] == [3, 6] and put_a["stride"] is None
    assert put_a["shape"] == [3, 6]                      # t grew from 0 to 3 with this write
    assert put_s["start"] == [4, 0] and put_s["count"] == [3, 6] and put_s["stride"] == [2, 1]
    assert put_s["shape"] == [9, 6]                      # 4 + (3 - 1) * 2 + 1
    assert get_s["start"] == [0, 0] and get_s["count"] == [3, 3] and get_s["stride"] == [3, 2]
    assert get_s["shape"] == [9, 6] and get_s["itemsize"] == 8 and get_s["mem_itemsize"] == 8, by
