"""climio-pario --op write and `climio bench parallel-write` / `climio tune write` on real files.

Every backend x strategy writes files that are read back here with other libraries (numpy,
h5py, netCDF4-python) and with ncdump/h5dump; values are compared with the formulas of
csrc/pario/README.md (benchio: the global index) and csrc/pario/MODEL.md (model output).
Every mpirun runs under a timeout, so a hang fails the test instead of the suite.
"""

import json
import math
import os
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import pytest

from climio.machine import native
from climio.bench.parallel_write.summary import rank_stats
from tests.conftest import run_cli

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
BACKENDS = ("mpiio", "hdf5", "netcdf4", "pnetcdf")
EXT = {"mpiio": "dat", "hdf5": "h5", "netcdf4": "nc", "pnetcdf": "nc"}


def pario(ranks, *args, timeout=120, check=True):
    cmd = ["timeout", "-k", "10", str(timeout), "mpirun", "-n", str(ranks), *native.pario("write"),
           *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV)
    assert out.returncode != 124, f"mpirun timed out: {out.stderr[-2000:]}"
    if check:
        assert out.returncode == 0, out.stderr[-2000:]
    return out, [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def read_array(path, var="data"):
    if path.endswith(".dat"):
        return np.fromfile(path, dtype="<f8")
    if path.endswith(".h5"):
        with h5py.File(path, "r") as f:
            return f[var][()]
    with netCDF4.Dataset(path) as ds:
        v = ds.variables[var]
        v.set_auto_maskandscale(False)
        return np.asarray(v[...])


def readable_by_tool(path):
    if path.endswith(".dat"):
        return True
    tool = ["h5dump", "-H"] if path.endswith(".h5") else ["ncdump", "-h"]
    return subprocess.run([*tool, path], capture_output=True, timeout=60).returncode == 0


# --- benchio mode -------------------------------------------------------------------------------

LOCAL = (6, 5, 4)
BENCHIO_RANKS = 3    # MPI_Dims_create(3, 3) = 3 x 1 x 1: a decomposition that is not a power of two


@pytest.fixture(scope="module")
def benchio_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("benchio")
    _, recs = pario(BENCHIO_RANKS, "--mode", "benchio", "--dir", d, "--local", ",".join(map(str, LOCAL)),
                    "--reps", 2, "--keep")
    return d, recs


@pytest.mark.parametrize("strategy", ["shared", "file-per-process", "file-per-node", "serial"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_benchio_files_hold_the_global_index(benchio_run, backend, strategy):
    d, recs = benchio_run
    mine = [r for r in recs if r["params"]["backend"] == backend and r["params"]["strategy"] == strategy]
    assert [r["rep"] for r in mine] == [0, 1]
    rec = mine[-1]
    p, m = rec["params"], rec["metrics"]
    n1, n2, n3 = LOCAL
    p1, p2, p3 = p["decomposition"]
    assert p1 * p2 * p3 == BENCHIO_RANKS and p["global"] == [p1 * n1, p2 * n2, p3 * n3]
    assert m["bytes"] == BENCHIO_RANKS * n1 * n2 * n3 * 8
    assert m["verified"] is True and m["mismatches"] == 0
    assert rec["cache"]["state"] == "warm" and rec["status"] == "ok"
    full = np.arange(np.prod(p["global"]), dtype="f8").reshape(p["global"])

    def block(r):   # MPI_Cart_create without reordering: row-major coordinates
        c = (r // (p2 * p3), (r // p3) % p2, r % p3)
        return full[c[0] * n1:(c[0] + 1) * n1, c[1] * n2:(c[1] + 1) * n2, c[2] * n3:(c[2] + 1) * n3]

    ext = EXT[backend]
    if strategy in ("shared", "serial"):
        files = [d / f"benchio-{backend}-{strategy}.{ext}"]
        expected = [full]
    elif strategy == "file-per-process":
        files = [d / f"benchio-{backend}-fpp-r{r:06d}.{ext}" for r in range(BENCHIO_RANKS)]
        expected = [block(r) for r in range(BENCHIO_RANKS)]
    else:   # one node: every rank's block in its slot
        files = [d / f"benchio-{backend}-fpn-node000.{ext}"]
        expected = [np.stack([block(r) for r in range(BENCHIO_RANKS)])]
    assert p["files"] == len(files)
    assert m["file_bytes"] >= m["bytes"]
    for f, want in zip(files, expected):
        got = read_array(str(f))
        np.testing.assert_array_equal(got.reshape(want.shape), want)
        assert readable_by_tool(str(f)), f


def test_strong_scaling_splits_a_fixed_global_array(tmp_path):
    for ranks in (2, 4):
        _, recs = pario(ranks, "--mode", "benchio", "--dir", tmp_path, "--global", "16,12,8", "--reps", 1,
                        "--backends", "mpiio,pnetcdf", "--strategies", "shared", "--keep")
        for r in recs:
            p = r["params"]
            assert p["scaling"] == "strong" and p["global"] == [16, 12, 8]
            assert [g // d for g, d in zip(p["global"], p["decomposition"])] == p["local"]
            assert r["metrics"]["bytes"] == 16 * 12 * 8 * 8 and r["metrics"]["verified"] is True
            path = str(tmp_path / f"benchio-{p['backend']}-shared.{EXT[p['backend']]}")
            np.testing.assert_array_equal(read_array(path).reshape(16, 12, 8), np.arange(16 * 12 * 8.0).reshape(16, 12, 8))
    out, _ = pario(3, "--mode", "benchio", "--dir", tmp_path, "--global", "16,12,8", "--reps", 1, check=False)
    assert out.returncode != 0 and "climio-pario: error:" in out.stderr


def test_hints_requested_are_read_back_into_every_record(tmp_path):
    _, recs = pario(2, "--mode", "benchio", "--dir", tmp_path, "--local", "8,8,8", "--reps", 1,
                    "--strategies", "shared", "--hint", "cb_nodes=1", "--hint", "romio_cb_write=enable")
    want = {"cb_nodes": "1", "romio_cb_write": "enable"}
    by = {r["params"]["backend"]: r["params"] for r in recs}
    assert set(by) == set(BACKENDS)
    for b in ("mpiio", "hdf5", "pnetcdf"):
        assert by[b]["hints_requested"] == want
        assert {k: by[b]["hints"].get(k) for k in want} == want, b
    assert by["netcdf4"]["hints"] == {}   # netCDF-C has no call that returns the hints in effect
    assert all(r["metrics"]["verified"] for r in recs)


def test_straggler_shows_in_per_rank_statistics(tmp_path):
    """A crafted imbalance: rank 1 writes 0.4 s longer; the record's min/mean/max must say so."""
    _, (rec,) = pario(3, "--mode", "benchio", "--dir", tmp_path, "--local", "8,8,8", "--reps", 1,
                      "--backends", "mpiio", "--strategies", "file-per-process", "--straggler", "1:0.4")
    m = rec["metrics"]
    write = m["per_rank"]["write"]
    assert write[1] >= 0.4 and max(write[0], write[2]) < 0.2
    assert m["phases"]["write"]["max"] == pytest.approx(write[1])
    assert m["phases"]["write"]["min"] == pytest.approx(min(write))
    assert m["phases"]["write"]["mean"] == pytest.approx(sum(write) / 3)
    total = m["per_rank"]["total"]
    st = rank_stats(total)
    assert m["rank_total_s"] == pytest.approx({k: st[k] for k in ("min", "mean", "max")})
    assert m["imbalance"] == pytest.approx(st["imbalance"]) and m["imbalance"] > 1.5
    assert m["wall_s"] >= 0.4


# --- model-output mode --------------------------------------------------------------------------

GRID = (16, 12, 3)   # nx, ny, nz


def model_field(k, t, X, Y, Z, two_d=False):
    rate = 0.5 / (1 << (2 * k))
    g = 1 + 0.001 * ((X * 7 + Y * 13 + Z * 3) % 97)
    base = (100 + 10 * k + 0.01 * X + 0.02 * Y) if two_d else (10 * k + 0.01 * X + 0.02 * Y + 0.5 * Z)
    return (base + rate * t * g).astype(np.float32)


def model_grid(xs, ys, nz):
    Z, Y, X = np.meshgrid(np.arange(nz, dtype="f8"), ys, xs, indexing="ij")
    return X, Y, Z


@pytest.fixture(scope="module")
def model_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("model")
    _, recs = pario(4, "--mode", "model", "--dir", d, "--grid", ",".join(map(str, GRID)), "--nt", 3,
                    "--io-layout", "2,1", "--vars", "2,2,1", "--reps", 1, "--keep")
    return d, recs


@pytest.mark.parametrize("strategy", ["shared", "file-per-process", "serial"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_model_files_are_complete_and_correct(model_run, backend, strategy):
    d, recs = model_run
    (rec,) = [r for r in recs if r["params"]["backend"] == backend and r["params"]["strategy"] == strategy]
    p, m = rec["params"], rec["metrics"]
    assert m["verified"] is True and m["mismatches"] == 0
    assert p["io_layout"] == ([1, 1] if strategy == "serial" else [2, 1]) and p["decomposition"] == [2, 2]
    assert p["writers"] == {"shared": 2, "file-per-process": 2, "serial": 1}[strategy]
    ext = EXT[backend]
    files = ([d / f"model-{backend}-dom{i:04d}.{ext}" for i in range(2)] if strategy == "file-per-process"
             else [d / f"model-{backend}-{strategy}.{ext}"])
    assert p["files"] == len(files) and all(f.exists() for f in files)
    if backend == "mpiio":
        return   # raw MPI-IO has no header to read it by: the program's own read-back verified it
    nx, ny, nz = GRID
    covered = 0
    for f in files:
        assert readable_by_tool(str(f))
        xs, ys = read_array(str(f), "x") / 1000.0, read_array(str(f), "y") / 1000.0
        covered += len(xs) * len(ys)
        X, Y, Z = model_grid(xs, ys, nz)
        np.testing.assert_array_equal(read_array(str(f), "time"), [0.0, 1.0, 2.0])
        for k, name in enumerate(("temp", "salt")):
            got = read_array(str(f), name)
            assert got.shape == (3, nz, len(ys), len(xs))
            for t in range(3):
                np.testing.assert_array_equal(got[t], model_field(k, t, X, Y, Z), err_msg=f"{f} {name} t={t}")
        for k, name in enumerate(("zeta", "sst")):
            got = read_array(str(f), name)
            for t in range(3):
                np.testing.assert_array_equal(got[t], model_field(k, t, X[0], Y[0], 0 * X[0], two_d=True))
        restart = read_array(str(f), "restart_1")
        np.testing.assert_array_equal(restart, 1000 + X + nx * (Y + ny * Z))
        np.testing.assert_array_equal(read_array(str(f), "Cs_r"), -1 + (np.arange(nz) + 0.5) / nz)
    assert covered == nx * ny


def test_small_variables_written_by_every_rank_when_independent(tmp_path):
    """The ROMS finding: independent small-variable writes repeat the same bytes on every rank."""
    common = ["--mode", "model", "--dir", tmp_path, "--grid", "16,12,3", "--nt", 2, "--reps", 1,
              "--backends", "pnetcdf", "--strategies", "shared"]
    _, (coll,) = pario(4, *common, "--small", "collective")
    _, (ind,) = pario(4, *common, "--small", "independent")
    assert coll["params"]["small_access"] == "collective" and ind["params"]["small_access"] == "independent"
    assert ind["metrics"]["small_bytes"] > 3 * coll["metrics"]["small_bytes"] / 2
    assert ind["metrics"]["verified"] and coll["metrics"]["verified"]


def test_selective_writing_skips_exactly_the_records_under_the_threshold(tmp_path):
    thr, nt = 0.05, 5
    _, (rec,) = pario(2, "--mode", "model", "--dir", tmp_path, "--grid", "16,12,3", "--nt", nt, "--vars", "4,1,0",
                      "--select", thr, "--reps", 1, "--backends", "netcdf4", "--strategies", "shared", "--keep")
    sel = rec["metrics"]["select"]
    nx, ny, nz = GRID
    X, Y, Z = model_grid(np.arange(nx, dtype="f8"), np.arange(ny, dtype="f8"), nz)
    path = str(tmp_path / "model-netcdf4-shared.nc")
    skipped = 0
    for k, name in enumerate(("temp", "salt", "u", "v")):
        truth = [model_field(k, t, X, Y, Z).astype("f8") for t in range(nt)]
        last, written, rms = 0, [True], [None]
        for t in range(1, nt):
            r = math.sqrt(np.mean((truth[t] - truth[last]) ** 2))
            rms.append(r)
            written.append(r >= thr)
            if r >= thr:
                last = t
        info = sel["per_var"][name]
        assert info["written"] == written, name
        assert info["rms_change"][0] is None
        np.testing.assert_allclose(info["rms_change"][1:], rms[1:], rtol=1e-6)
        flags = read_array(path, f"written_{name}")
        assert flags.tolist() == [int(w) for w in written]
        data = read_array(path, name)
        recon_err, src = 0.0, 0
        for t in range(nt):
            if written[t]:
                np.testing.assert_array_equal(data[t], truth[t].astype("f4"))
                src = t
            recon_err = max(recon_err, math.sqrt(np.mean((data[src].astype("f8") - truth[t]) ** 2)))
        assert recon_err < thr
        assert info["max_error"] == pytest.approx(recon_err, rel=1e-6, abs=1e-12)
        skipped += written.count(False)
    # the rates 0.5, 0.125, 0.03125, 0.0078 per record: the slow two skip, the fast two never
    assert sel["skipped"] == skipped and 0 < skipped < 4 * (nt - 1)
    assert sel["per_var"]["temp"]["written"] == [True] * nt and sel["per_var"]["v"]["written"] == [True] + [False] * 4
    assert sel["bytes_saved"] == skipped * nx * ny * nz * 4


# --- failures -----------------------------------------------------------------------------------

def test_unwritable_directory_is_one_line_and_no_hang(tmp_path):
    out, recs = pario(2, "--mode", "benchio", "--dir", tmp_path / "missing", "--local", "4,4,4", "--reps", 1,
                      check=False)
    assert out.returncode != 0 and recs == []
    own = [l for l in out.stderr.splitlines() if l.startswith("climio-pario: error:")]
    assert len(own) == 1 and "missing" in own[0]


def test_cli_reports_launch_failure_in_one_line(tmp_path):
    out = run_cli("bench", "parallel-write", "--quick", "--ranks", "2", "--data-dir", tmp_path / "d",
                  "--out", tmp_path / "run", "--launcher", "mpirun -n {ranks} --host no-such-host-climio",
                  "--timeout", "60", timeout=120)
    assert out.returncode != 0
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("climio: error:") and "Traceback" not in out.stderr


def test_cli_kills_a_launch_that_hangs(tmp_path):
    out = run_cli("bench", "parallel-write", "--quick", "--ranks", "2", "--data-dir", tmp_path / "d",
                  "--out", tmp_path / "run", "--launcher", "sh -c 'sleep 60' sh", "--timeout", "3", timeout=60)
    assert out.returncode != 0
    assert "did not finish within 3 s" in out.stderr and "Traceback" not in out.stderr


def test_cli_unwritable_data_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run_cli("bench", "parallel-write", "--quick", "--ranks", "2", "--data-dir", blocker / "sub",
                  "--out", tmp_path / "run")
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert out.returncode != 0 and len(lines) == 1 and lines[0].startswith("climio: error: cannot create directory")
    assert blocker.read_text() == "x"


# --- the commands end to end ---------------------------------------------------------------------

def test_bench_parallel_write_model_with_load_test(tmp_path):
    run = tmp_path / "run"
    out = run_cli("bench", "parallel-write", "--mode", "model", "--quick", "--ranks", "2", "--reps", "2",
                  "--backends", "pnetcdf,netcdf4", "--instances", "2", "--mpi-io", "romio",
                  "--data-dir", tmp_path / "d", "--out", run, timeout=300)
    assert out.returncode == 0, out.stderr
    recs = [json.loads(l) for l in (run / "records.jsonl").read_text().splitlines()]
    scaling = [r for r in recs if "instances" not in r["params"]]
    load = [r for r in recs if "instances" in r["params"]]
    assert len(scaling) == 2 * 3 * 2            # backends x model strategies x reps
    assert len(load) == 2 * len(scaling)        # two instances of the same grid
    assert {r["params"]["mpi_io"] for r in recs} == {"romio321"}
    assert all(r["params"]["stripe"]["applied"] is False for r in recs)
    assert "aggregate" in out.stdout + out.stderr
    html = (run / "report.html").read_text()
    assert "Study: parallel-write" in html and "Load test" in html and "Parallel vs serial gather" in html


def test_tune_write_prints_best_configuration_and_speedup(tmp_path):
    out = run_cli("tune", "write", "--quick", "--ranks", "4", "--reps", "2", "--backends", "pnetcdf",
                  "--data-dir", tmp_path / "d", "--out", tmp_path / "run", timeout=300)
    assert out.returncode == 0, out.stderr
    best = [l for l in out.stdout.splitlines() if l.startswith("best pnetcdf:")]
    assert len(best) == 1 and "x the serial single-file write" in best[0]
    recs = [json.loads(l) for l in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    roles = {r["params"]["role"] for r in recs}
    assert roles == {"baseline", "candidate"}
    assert {tuple(r["params"]["io_layout"]) for r in recs if r["params"]["role"] == "candidate"} == {(1, 2), (2, 1), (2, 2)}
    assert "Tuning sweep" in (tmp_path / "run" / "report.html").read_text()
