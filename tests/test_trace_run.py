"""`climio trace run`: the environment, launchers and exit status it hands on (with a preloadable
library that does nothing), and the real tracer end to end on small C, netCDF and MPI programs
(the analysis of synthetic traces is tests/test_trace_analysis.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from climio.dataset import layout

from climio import rules
from climio.trace.reader import read_trace
from climio.trace.run import HYDRA, OPENMPI, preload, wrap_command
from conftest import run_cli
from test_cli import one_line_error
from test_trace_analysis import facts_of


# --- trace run ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_lib(tmp_path_factory):
    """A preloadable library that does nothing: `trace run` without the real tracer."""
    d = tmp_path_factory.mktemp("fakelib")
    (d / "fake.c").write_text("int climio_fake_trace_symbol = 1;\n")
    for name in ("libclimio-trace.so", "libother.so"):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / name), str(d / "fake.c")], check=True)
    return d / "libclimio-trace.so", d / "libother.so"


def _env(**kw):
    env = dict(os.environ)
    env.update({k: str(v) for k, v in kw.items()})
    return env


def run_cli_env(env, *args, cwd=None):
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_trace_run_errors(tmp_path, fake_lib):
    assert "no command to trace" in one_line_error(run_cli("trace", "run"), 2)
    assert "no command to trace" in one_line_error(run_cli("trace", "run", "-o", tmp_path / "t", "--"), 2)
    assert "command not found: no-such-program-xyz" in one_line_error(
        run_cli("trace", "run", "-o", tmp_path / "t", "--", "no-such-program-xyz"), 127)
    env = _env(CLIMIO_NATIVE_LIB=fake_lib[0].parent)
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "file").write_text("x")
    line = one_line_error(run_cli_env(env, "trace", "run", "-o", ro / "file" / "sub", "--", "true"), 3)
    assert "cannot create directory" in line
    assert "unknown trace layer" in one_line_error(
        run_cli_env(env, "trace", "run", "-o", tmp_path / "t", "--layers", "posix,foo", "--", "true"), 2)
    env_mpi = _env(CLIMIO_NATIVE_LIB=fake_lib[0].parent, OMPI_COMM_WORLD_RANK=1)
    assert "give -o DIR" in one_line_error(run_cli_env(env_mpi, "trace", "run", "--", "true"), 2)


def test_trace_run_sets_environment_and_exit_status(tmp_path, fake_lib):
    lib, other = fake_lib
    env = _env(CLIMIO_NATIVE_LIB=lib.parent, LD_PRELOAD=other)
    script = 'echo "$LD_PRELOAD|$CLIMIO_TRACE_DIR|$CLIMIO_TRACE_LAYERS|$CLIMIO_TRACE_EXCLUDE|$CLIMIO_TRACE_MAX_EVENTS"; exit 7'
    out = run_cli_env(env, "trace", "run", "-o", tmp_path / "t", "--layers", "netcdf,posix", "--exclude", "/scratch",
                      "--max-events", "10", "--", "sh", "-c", script)
    assert out.returncode == 7, out.stderr
    pre, tdir, layers, excl, maxev = out.stdout.strip().split("|")
    assert pre == f"{other}:{lib}"  # appended: the user's preload keeps precedence
    assert tdir == str((tmp_path / "t").resolve()) and layers == "netcdf,posix" and maxev == "10"
    parts = excl.split(":")
    assert parts[:3] == ["/proc", "/sys", "/dev"] and sys.prefix in parts and parts[-1] == "/scratch"
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert meta["exit_status"] == 7 and meta["command"] == ["sh", "-c", script]
    assert meta["layers"] == ["netcdf", "posix"] and meta["end_ns"] >= meta["start_ns"]
    assert "climio trace report" in out.stderr
    # options after the command belong to the command
    out = run_cli_env(env, "trace", "run", "-o", tmp_path / "t2", "sh", "-c", "exit 0", "-o", "x")
    assert out.returncode == 0, out.stderr


def test_trace_run_default_dir(tmp_path, fake_lib):
    out = run_cli_env(_env(CLIMIO_NATIVE_LIB=fake_lib[0].parent), "trace", "run", "--", "true", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    (d,) = (tmp_path / "climio-runs").iterdir()
    assert d.name.startswith("trace-") and (d / "meta.json").is_file()


def test_launcher_wrapping():
    v = {"LD_PRELOAD": "/l.so", "CLIMIO_TRACE_DIR": "/t"}
    assert wrap_command(["mpirun", "-n", "2", "prog"], v, OPENMPI) == \
        ["mpirun", "-x", "LD_PRELOAD=/l.so", "-x", "CLIMIO_TRACE_DIR=/t", "-n", "2", "prog"]
    assert wrap_command(["mpiexec", "prog"], v, HYDRA) == \
        ["mpiexec", "-genv", "LD_PRELOAD", "/l.so", "-genv", "CLIMIO_TRACE_DIR", "/t", "prog"]
    assert wrap_command(["prog"], v, None) == ["prog"]
    assert preload("", "/l.so") == "/l.so" and preload("/a.so /b.so", "/l.so") == "/a.so:/b.so:/l.so"
    assert preload("/l.so", "/l.so") == "/l.so"


MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def test_trace_run_around_mpirun(tmp_path, fake_lib):
    lib = fake_lib[0]
    env = _env(CLIMIO_NATIVE_LIB=lib.parent, **MPI_ENV)
    out = run_cli_env(env, "trace", "run", "-o", tmp_path / "t", "--", "mpirun", "-n", "2", "sh", "-c",
                      'echo "rank $OMPI_COMM_WORLD_RANK $LD_PRELOAD $CLIMIO_TRACE_DIR"')
    assert out.returncode == 0, out.stderr
    lines = sorted(l for l in out.stdout.splitlines() if l.startswith("rank"))
    assert lines == [f"rank {r} {lib} {(tmp_path / 't').resolve()}" for r in (0, 1)]
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert meta["launcher"] == "openmpi" and "-x" in meta["argv"]


def test_trace_run_inside_mpirun(tmp_path, fake_lib):
    lib = fake_lib[0]
    env = _env(CLIMIO_NATIVE_LIB=lib.parent, **MPI_ENV)
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    out = subprocess.run(["mpirun", "-n", "2", exe, "trace", "run", "-o", str(tmp_path / "t"), "--", "sh", "-c",
                          'echo "rank $OMPI_COMM_WORLD_RANK $LD_PRELOAD"'],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert sorted(l for l in out.stdout.splitlines() if l.startswith("rank")) == [f"rank {r} {lib}" for r in (0, 1)]
    assert json.loads((tmp_path / "t" / "meta.json").read_text())["exit_status"] == 0


# --- end to end with the real tracer (libclimio-trace.so, installed) -----------------------------------------

PREADS_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* preads FILE N S K: write N blocks of S bytes at stride K, read them back with pread, exit 3 */
int main(int argc, char **argv) {
    if (argc < 5) return 2;
    int n = atoi(argv[2]); size_t s = (size_t)atol(argv[3]); off_t k = atol(argv[4]);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_RDWR, 0644);
    char *buf = calloc(1, s);
    if (fd < 0 || !buf) return 1;
    for (int i = 0; i < n; i++) if (pwrite(fd, buf, s, i * k) != (ssize_t)s) return 1;
    for (int i = 0; i < n; i++) if (pread(fd, buf, s, i * k) != (ssize_t)s) return 1;
    close(fd);
    return 3;
}
"""

MPI_C = r"""
#include <mpi.h>
#include <stdlib.h>
/* every rank: 4 collective writes of 1 MiB, then the same 3 small header writes, independently */
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    int n = 1 << 17; double *buf = calloc(n, sizeof(double));
    for (int k = 0; k < 4; k++)
        MPI_File_write_at_all(fh, ((MPI_Offset)k * size + rank) * n * 8, buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
    for (int k = 0; k < 3; k++)
        MPI_File_write_at(fh, k * 100, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
"""


def _compile(tmp_path, name, source, cc="gcc"):
    (tmp_path / f"{name}.c").write_text(source)
    subprocess.run([cc, "-O1", "-o", str(tmp_path / name), str(tmp_path / f"{name}.c")], check=True)
    return tmp_path / name


def test_end_to_end_preads(tmp_path):
    prog = _compile(tmp_path, "preads", PREADS_C)
    data, trace = tmp_path / "data.bin", tmp_path / "trace"
    N, S, K = 32, 4096, 65536
    out = run_cli("trace", "run", "-o", trace, "--", prog, data, N, S, K)
    assert out.returncode == 3, out.stderr  # the command's exit status
    tr = read_trace(trace)
    assert not tr.partial and len(tr.procs) == 1 and tr.procs[0].done["end"] == "exit"
    assert tr.meta["exit_status"] == 3 and tr.meta["command"][1:] == [str(data), str(N), str(S), str(K)]
    out = run_cli("trace", "report", trace, "--format", "json")
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    entry = next(f for f in facts["files"] if f["file"] == str(data))
    reads = next(a for a in entry["access"] if a["layer"] == "posix" and a["kind"] == "read")
    writes = next(a for a in entry["access"] if a["layer"] == "posix" and a["kind"] == "write")
    for a in (reads, writes):
        assert a["count"] == N and a["top_sizes"] == [[S, N]] and a["bytes"] == N * S
        assert a["classification"] == "strided" and a["stride"] == K
    reads_at = [o for o, k in zip(entry["timeline"]["offset"], entry["timeline"]["kind"]) if k == "read"]
    assert reads_at == [i * K for i in range(N)]
    assert run_cli("trace", "report", trace, "--format", "html").returncode == 0
    assert (trace / "report.html").is_file()


def test_end_to_end_netcdf_chunks(tmp_path):
    """netCDF4-python reading xy slices of compressed chunks [10,10,60] with a 10 kB chunk cache:
    each read decodes 5 chunks of 24 kB for 12 kB wanted, and the cache cannot keep them."""
    import netCDF4
    f = tmp_path / "f.nc"
    with netCDF4.Dataset(f, "w") as ds:
        for n, d in zip("tyx", (20, 50, 60)):
            ds.createDimension(n, d)
        v = ds.createVariable("v", "f4", ("t", "y", "x"), zlib=True, chunksizes=(10, 10, 60))
        v[:] = np.random.default_rng(0).random((20, 50, 60), dtype=np.float32)
    script = tmp_path / "read.py"
    script.write_text(f"import netCDF4\nds = netCDF4.Dataset({str(f)!r})\nv = ds['v']\n"
                      "v.set_var_chunk_cache(size=10000)\nfor t in range(20):\n    v[t, :, :]\nds.close()\n")
    trace = tmp_path / "trace"
    out = run_cli("trace", "run", "-o", trace, "--", sys.executable, script)
    assert out.returncode == 0, out.stderr
    an, facts = facts_of(trace)
    var = next(v for v in facts["netcdf"]["variables"] if v["var"] == "v")
    assert var["reads"] == 20 and var["chunks"] == [10, 10, 60] and var["compressed"]
    assert var["requested"] == 20 * 50 * 60 * 4
    assert var["ratio"] == pytest.approx(layout.amplification([20, 50, 60], [10, 10, 60], [0, 0, 0], [1, 50, 60], 4))
    assert var["cache"] == {"chunk larger than cache": 20}
    fired = {f["rule"] for f in rules.judge(an.facts())}
    assert {"partial-chunk-compressed", "chunk-cache-small"} <= fired
    edges = {(e["parent_layer"], e["child_layer"]) for e in facts["flow"]["edges"]}
    assert ("netcdf", "hdf5") in edges and ("hdf5", "posix") in edges


def test_end_to_end_mpi(tmp_path):
    prog = _compile(tmp_path, "mpiw", MPI_C, cc="mpicc")
    trace = tmp_path / "trace"
    out = run_cli_env(_env(**MPI_ENV), "trace", "run", "-o", trace, "--", "mpirun", "-n", "2", prog,
                      tmp_path / "out.dat")
    assert out.returncode == 0, out.stderr
    an, facts = facts_of(trace)
    assert facts["ranks"]["units"] == ["rank 0", "rank 1"]  # the launcher itself is not traced
    e = next(e for e in facts["flow"]["edges"]
             if (e["parent_function"], e["child_function"]) == ("MPI_File_write_at_all", "pwrite"))
    assert 1 <= e["ranks"] <= 2 and e["bytes"] == 8 << 20  # aggregators: MPI-IO picks them
    shared = next(f for f in rules.judge(an.facts()) if f["rule"] == "independent-shared-writes")
    assert (shared["evidence"]["ranks"], shared["evidence"]["offsets"]) == (2, 3)
    assert shared["evidence"]["functions"] == ["MPI_File_write_at"]


def test_the_traced_interpreters_own_files_are_excluded():
    """`climio trace run -- python script.py`: that Python's library, site-packages and editable
    sources are not the program's I/O, whichever Python it is."""
    import sys
    from climio.trace.run import default_excludes, interpreter_excludes, outermost
    import climio
    mine = interpreter_excludes([sys.executable])
    assert sys.prefix in mine   # a venv: all of it
    assert os.path.dirname(climio.__file__) in default_excludes() or any(
        os.path.dirname(climio.__file__).startswith(p + "/") for p in default_excludes())
    system = interpreter_excludes(["/usr/bin/python3"])
    assert system and all(p.startswith("/usr/") and "python3" in p for p in system) and "/usr" not in system
    assert interpreter_excludes(["ls"]) == []
    assert outermost(["/a/b", "/a", "/c/d", "/c/de", "/a"]) == ["/a", "/c/d", "/c/de"]
