"""The native programs' one option table (csrc/common/options.c) and one backend list
(csrc/pario/backends.h): --list is what Python reads, --help shows every option (climio-pario's
of both operations), bad input is one line and exit status 2, an option of the other --op or
--mode is refused, and every backend's get reads back, collectively or not, exactly what was
written."""

import json
import os
import subprocess
import sys

import pytest

from climio.machine import native
PARIO = native.PARIO
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")

COMMON = ["file", "reps", "cache", "budget", "verify", "platform-id", "version", "help"]
PLAN = ["patterns", "buffers", "random-count", "seed", "max-ops", "print-offsets"]
OPTIONS = {
    "climio-probe-posix": COMMON + PLAN + ["api", "odirect"],
    "climio-probe-netcdf": COMMON + PLAN + ["var"],
    "climio-probe-netcdf-slab": COMMON + ["var", "slices", "chunk-cache", "label"],
    PARIO: ["op", "mode", "dir", "backends", "strategies", "reps", "hint", "hints-file", "fsync", "no-verify", "keep",
            "independent", "platform-id", "local", "global", "grid", "nt", "decomposition", "io-layout", "small",
            "chunk", "vars", "select", "straggler", "verify-access", "version", "list", "help",
            # --op read
            "buffer", "size", "patterns", "access", "settle", "stack", "files", "split", "file-set", "var", "stall"],
}


def run(name, *args, mpi_ranks=0, timeout=120):
    cmd = [native.program(name), *map(str, args)]
    if mpi_ranks:
        cmd = ["timeout", "-k", "10", str(timeout), "mpirun", "-n", str(mpi_ranks), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=timeout + 30)
    assert out.returncode != 124, f"timed out: {out.stderr[-2000:]}"
    return out


def test_list_is_what_python_reads():
    out = run(PARIO, "--list")
    assert out.returncode == 0 and out.stderr == ""
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert all(len(r) == 2 and r[0] and r[1] for r in rows), out.stdout
    assert tuple(r[0] for r in rows) == native.pario_backends() == ("mpiio", "hdf5", "netcdf4", "pnetcdf")


def test_version_has_a_member_per_library():
    v = json.loads(run(PARIO, "--version").stdout)
    assert set(v) == {"mpi", "hdf5", "netcdf_c", "pnetcdf"} and all(v.values())


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_help_lists_every_option(name):
    out = run(name, "--help")
    assert out.returncode == 0 and out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"usage: {name} ")
    shown = [w[2:] for line in lines[1:] for w in line.replace(",", " ").split()[:2] if w.startswith("--")]
    assert sorted(set(shown)) == sorted(OPTIONS[name]) and len(shown) == len(set(shown)), shown
    assert run(name, "-h").stdout == out.stdout
    if name == PARIO:   # the backends, from the same list as --list
        for b in native.pario_backends():
            assert any(line.split()[:1] == [b] for line in lines), b


def one_line(out, name):
    lines = [line for line in out.stderr.splitlines() if line.startswith(f"{name}: error: ")]
    assert out.returncode == 2 and out.stdout == "" and len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_unknown_option_and_malformed_number(name, tmp_path):
    base = {"climio-probe-posix": ["--file", "/etc/hostname", "--buffers", "64"],
            "climio-probe-netcdf": ["--file", "/etc/hostname", "--buffers", "64"],
            "climio-probe-netcdf-slab": ["--file", "/etc/hostname", "--var", "x", "--slices", "/etc/hostname"],
            PARIO: ["--op", "write", "--mode", "benchio", "--dir", tmp_path]}[name]
    line = one_line(run(name, *base, "--bogus"), name)
    assert "unknown option '--bogus'" in line
    out = run(name, *base, "--reps", "3x")
    assert one_line(out, name).endswith("--reps must be an integer >= 1, not '3x'")
    assert "needs a value" in one_line(run(name, *base, "--reps"), name)
    assert "takes no value" in one_line(run(name, *base, "--version=1"), name)
    assert "is required" in one_line(run(name, "--reps", "2"), name)


def test_pario_bad_input_is_one_line_from_all_ranks(tmp_path):
    out = run(PARIO, "--op", "write", "--mode", "benchio", "--dir", tmp_path, "--local", "4,4", mpi_ranks=2)
    assert out.returncode != 0 and out.stdout == ""
    own = [line for line in out.stderr.splitlines() if line.startswith(f"{PARIO}: error:")]
    assert own == [f"{PARIO}: error: --local must be n1,n2,n3: 3 comma-separated integers >= 1, not '4,4'"]
    line = one_line(run(PARIO, "--op", "write", "--mode", "model", "--dir", tmp_path, "--local", "4,4,4"), PARIO)
    assert "--local does not apply to --mode model" in line
    assert "choose from mpiio, hdf5, netcdf4, pnetcdf" in one_line(
        run(PARIO, "--op", "write", "--mode", "benchio", "--dir", tmp_path, "--backends", "mpiio,posix"), PARIO)


@pytest.mark.parametrize("args, message", [
    (["--op", "write", "--dir", "."], "--mode benchio|model is required with --op write"),
    (["--op", "write", "--mode", "mpiio", "--dir", "."], "--mode mpiio does not apply to --op write"),
    (["--op", "read", "--mode", "model", "--dir", "."], "--mode model does not apply to --op read"),
    (["--op", "read", "--dir", ".", "--strategies", "serial"], "--strategies does not apply to --mode mpiio"),
    (["--op", "read", "--dir", ".", "--stack", "c-posix"], "--stack does not apply to --mode mpiio"),
    (["--op", "read", "--mode", "tasks", "--files", "x", "--dir", "."], "--dir does not apply to --mode tasks"),
    (["--op", "write", "--mode", "benchio", "--dir", ".", "--buffer", "8"], "--buffer does not apply to --mode benchio"),
    (["--op", "read", "--dir", ".", "--patterns", "sequential,sequential"],
     "pattern 'sequential' listed twice in --patterns"),
    (["--op", "read", "--dir", ".", "--buffer", "12"], "--buffer 12 is not a multiple of 8"),
    (["--op", "read", "--mode", "tasks"], "--mode tasks needs --files"),
    (["--op", "copy"], "--op must be write or read"),
])
def test_pario_one_table_refuses_options_of_the_other_op_or_mode(args, message):
    """One option table for both operations: what belongs to the other --op or --mode is an error
    in one line, not silently ignored."""
    assert message in one_line(run(PARIO, *args), PARIO)


@pytest.mark.parametrize("access", ["independent", "collective"])
def test_get_reads_back_what_was_written(tmp_path, access):
    """benchio's verification re-opens every file and each rank gets its own hyperslab (3 ranks:
    a 3 x 1 x 1 process grid, so every start differs) and compares it exactly with the values
    written; --verify-access chooses collective or independent gets."""
    out = run(PARIO, "--op", "write", "--mode", "benchio", "--dir", tmp_path, "--local", "6,5,4", "--reps", 1,
              "--verify-access", access, mpi_ranks=3)
    assert out.returncode == 0, out.stderr[-2000:]
    recs = [json.loads(line) for line in out.stdout.splitlines()]
    seen = {(r["params"]["backend"], r["params"]["strategy"]) for r in recs}
    assert seen == {(b, s) for b in native.pario_backends()
                    for s in ("shared", "file-per-process", "file-per-node", "serial")}
    for r in recs:
        assert r["metrics"]["verified"] is True and r["metrics"]["mismatches"] == 0, r["params"]


def test_parallel_write_asks_the_program_once_and_not_on_import():
    code = ("import climio.machine.native as n\n"
            "calls = []\n"
            "run = n.run_text\n"
            "n.run_text = lambda *a, **k: calls.append(a) or run(*a, **k)\n"
            "import climio.bench.parallel_write\n"
            "from climio.bench.parallel_write import run as pw\n"
            "assert calls == [], calls\n"
            "assert pw.all_backends() == pw.all_backends() == n.pario_backends()\n"
            "assert len(calls) == 1 and calls[0][0][1:] == ['--list'], calls\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
