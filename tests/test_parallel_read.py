"""parallel-read (issue 13) on real files with 1-3 ranks: every backend x access x pattern reads exactly
the intended bytes (stream checksums recomputed here from the generator), each rank's eviction is
verified, the rate arithmetic on synthetic per-rank times, the Dask path gives the same bytes and
per-task records, and the one-line errors."""

import json
import os
import subprocess

import numpy as np
import pytest

from climio.machine import native
from climio.bench.parallel_read import build_grid
from climio.bench.parallel_read.summary import configurations, host_layout, quartiles, task_rates, verdicts
from climio.base.errors import DiskSpaceError, InputError, NativeError
from climio.measure.mpi import Launcher, stream_mpi
from climio.measure.series import StreamChecksum
from climio.runs.records import validate

ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
PROGRAM = native.PARIO   # climio-pario --op read




def expected_checksums(elems, belems, ranks, pattern):
    """Stream checksum of each rank's reads, in its order, from the generator (element i = float(i))."""
    out = []
    for r in range(ranks):
        ck = StreamChecksum()
        if pattern == "sequential":
            lo, hi = elems * r // ranks, elems * (r + 1) // ranks
            ck.update(np.arange(lo, hi, dtype="<f8"))
        else:
            nbuf = -(-elems // belems)
            for k in range(r, nbuf, ranks):
                ck.update(np.arange(k * belems, min(elems, (k + 1) * belems), dtype="<f8"))
        out.append(ck.hexdigest())
    return out


def run(ranks, argv, timeout=120.0):
    recs = []
    stream_mpi(Launcher(ranks=ranks, timeout_s=timeout, extra_env=ROOT), argv, lambda r: recs.append(validate(r)))
    return recs


@pytest.mark.parametrize("ranks", [1, 3])
def test_every_backend_access_pattern_reads_exactly_the_intended_bytes(tmp_path, ranks):
    size, buf = 3 * 40960, 8192          # 15360 elements; 15 buffers, uneven over 2 and 3 ranks
    recs = run(ranks, [*native.pario("read"), "--mode", "mpiio", "--dir", str(tmp_path), "--size", str(size),
                       "--buffer", str(buf), "--reps", "1", "--hint", "cb_buffer_size=65536"])
    assert len(recs) == 4 * 2 * 2
    seen = set()
    for r in recs:
        p, m = r["params"], r["metrics"]
        seen.add((p["stack"], p["pattern"], p["access"]))
        assert m["bytes"] == size and sum(m["per_rank"]["bytes"]) == size and m["verified"] and m["mismatches"] == 0
        assert m["per_rank"]["checksum"] == expected_checksums(size // 8, buf // 8, ranks, p["pattern"]), p
        assert p["ranks"] == ranks and p["nodes"] == 1 and p["tasks_per_node"] == ranks and len(p["hosts"]) == ranks
        assert p["hints_requested"] == {"cb_buffer_size": "65536"} and isinstance(p["hints"], dict)
        # each rank evicted its own ranges and mincore confirmed it
        assert r["cache"]["per_rank"] == ["cold"] * ranks and r["cache"]["state"] == "cold"
        assert max(r["cache"]["resident_fraction"]) <= 0.01
        t = m["per_rank"]["total"]
        assert m["rate_mean_task_MBps"] == pytest.approx(size / (sum(t) / len(t)) / 1e6, rel=1e-6)
        assert m["rate_slowest_task_MBps"] == pytest.approx(size / max(t) / 1e6, rel=1e-6)
    assert seen == {(b, p, a) for b in ("mpiio", "hdf5", "netcdf4", "pnetcdf") for p in ("sequential", "striding")
                    for a in ("independent", "collective")}
    assert not list(tmp_path.iterdir())   # the shared files are removed


def test_tasks_mode_c_and_python_stacks_read_pieces_and_own_files(tmp_path):
    from climio.bench.parallel_read.run import write_file
    elems = 50000
    for name in ("shared.bin", "shared.nc", "own-0.nc", "own-1.nc"):
        write_file(tmp_path / name, elems * 8)
    want_split = expected_checksums(elems, 1 << 20, 2, "sequential")
    whole = expected_checksums(elems, 1 << 20, 1, "sequential")[0]
    cases = [([*native.pario("read"), "--mode", "tasks", "--stack", "c-posix", "--files", str(tmp_path / "shared.bin"),
               "--split"], want_split),
             ([*native.pario("read"), "--mode", "tasks", "--stack", "c-netcdf", "--files",
               str(tmp_path / "own-%d.nc")], [whole, whole]),
             ([os.sys.executable, "-m", "climio.bench.parallel_read.task", "--stack", "h5py", "--files",
               str(tmp_path / "shared.nc"), "--split"], want_split)]
    for argv, want in cases:
        recs = run(2, argv + ["--buffer", "65536", "--reps", "2"])
        assert len(recs) == 2
        for r in recs:
            assert r["metrics"]["per_rank"]["checksum"] == want, argv
            assert r["cache"]["per_rank"] == ["cold", "cold"] and r["metrics"]["verified"]


def test_rate_arithmetic_on_synthetic_per_rank_times():
    rates = task_rates(1_000_000_000, [1.0, 2.0, 4.0])
    assert rates["mean_task_MBps"] == pytest.approx(1000 / (7 / 3))
    assert rates["slowest_MBps"] == pytest.approx(250.0)
    assert rates["per_task_MBps"] == pytest.approx([1000.0, 500.0, 250.0])
    q = quartiles([1, 2, 3, 4, 5])
    assert (q["min"], q["q1"], q["median"], q["q3"], q["max"]) == (1, 2, 3, 4, 5)
    assert host_layout(["a", "b", "a", "a"]) == (2, 3, [0, 1, 0, 0])
    with pytest.raises(ValueError):
        task_rates(1, [0.0])
    # configurations average both rates over the repetitions and pool the per-task rates
    def rec(rep, times):
        r = task_rates(8e8, times)
        return {"study": "parallel-read", "status": "ok", "rep": rep, "cache": {"state": "cold"},
                "params": {"experiment": "mpiio", "stack": "mpiio", "file_set": "shared", "pattern": "sequential",
                           "access": "independent", "buffer_bytes": 1 << 20, "ranks": len(times), "nodes": 1,
                           "tasks_per_node": len(times)},
                "metrics": {"bytes": int(8e8), "rate_MBps": r["slowest_MBps"], "rate_mean_task_MBps": r["mean_task_MBps"],
                            "rate_slowest_task_MBps": r["slowest_MBps"], "verified": True,
                            "per_rank": {"rate_MBps": r["per_task_MBps"]}}}
    rows = configurations([rec(0, [1.0, 1.0]), rec(1, [1.0, 3.0])])
    assert len(rows) == 1 and rows[0]["reps"] == 2
    assert rows[0]["mean_task_MBps"] == pytest.approx((800 + 400) / 2)
    assert rows[0]["slowest_MBps"] == pytest.approx((800 + 800 / 3) / 2)
    assert rows[0]["per_task"]["max"] == pytest.approx(800) and rows[0]["per_task"]["min"] == pytest.approx(800 / 3)
    found = {f: v for f, _, v, _ in verdicts(rows)}
    assert found["F5"] == found["F6"] == "not measurable here"


def test_dask_path_same_bytes_and_per_task_records(tmp_path):
    from types import SimpleNamespace

    from climio.bench.parallel_read.dask_read import run_dask
    from climio.bench.parallel_read.run import write_file
    size = 1 << 20
    write_file(tmp_path / "shared.nc", size)
    for i in range(2):
        write_file(tmp_path / f"per-task-{i}.nc", size)
    recs = []
    grid = SimpleNamespace(scheduler=None, file_sets=["shared", "per-task"], size=size, reps=1)
    run_dask(grid, tmp_path, 2, "p", lambda r: recs.append(validate(r)))
    assert [r["params"]["file_set"] for r in recs] == ["shared", "per-task"]
    shared, per_task = recs
    assert shared["metrics"]["per_rank"]["checksum"] == expected_checksums(size // 8, size, 2, "sequential")
    whole = expected_checksums(size // 8, size, 1, "sequential")[0]
    assert per_task["metrics"]["per_rank"]["checksum"] == [whole, whole]
    for r in recs:
        m = r["metrics"]
        assert r["params"]["tasks"] == 2 and len(m["per_rank"]["total"]) == 2 and m["verified"]
        assert all(t > 0 for t in m["per_rank"]["total"]) and m["task_max_s"] <= m["wall_s"] * 1.5 + 0.05
        assert m["rate_mean_task_MBps"] == pytest.approx(
            m["bytes"] / (sum(m["per_rank"]["total"]) / 2) / 1e6, rel=1e-6)
    assert shared["metrics"]["bytes"] == size and per_task["metrics"]["bytes"] == 2 * size


def test_unreachable_dask_scheduler_is_one_line():
    """The one cluster object of the STSA and the Dask path: one NativeError line (exit 5), as `climio stsa`."""
    from climio.measure.dask import Cluster
    with pytest.raises(NativeError, match="^cannot reach the Dask scheduler at tcp://127.0.0.1:9: "):
        with Cluster(scheduler="tcp://127.0.0.1:9", timeout_s=2):
            pass


def test_grid_errors_are_one_line(tmp_path):
    with pytest.raises(InputError, match="more ranks than the file can split"):
        build_grid("quick", ranks="4", size="16B", experiments="tasks", file_sets="shared")
    with pytest.raises(InputError, match="more ranks than the file can split"):
        build_grid("quick", ranks="3", size="64KiB", mpi_buffer="32KiB", experiments="mpiio")
    g = build_grid("quick", ranks="2", size="1TiB", experiments="tasks")
    from climio.bench.parallel_read import run as prun
    with pytest.raises(DiskSpaceError, match="need .* free in .*--size"):
        prun.check_space(g, tmp_path)
    assert not list(tmp_path.iterdir())


def test_native_errors_and_a_hung_rank(tmp_path):
    res = subprocess.run(["mpirun", "-n", "2", *native.pario("read"), "--mode", "tasks", "--files",
                          str(tmp_path / "x.bin")], capture_output=True, text=True, env={**os.environ, **ROOT})
    assert res.returncode != 0 and f"{PROGRAM}: error: cannot stat" in res.stderr
    (tmp_path / "tiny.bin").write_bytes(np.arange(1, dtype="<f8").tobytes())
    with pytest.raises(NativeError, match="more ranks than the file can split"):
        run(2, [*native.pario("read"), "--mode", "tasks", "--files", str(tmp_path / "tiny.bin"), "--split"])
    with pytest.raises(NativeError, match="did not finish within 3 s"):
        run(2, [*native.pario("read"), "--mode", "mpiio", "--dir", str(tmp_path), "--size", "65536",
                "--buffer", "8192", "--backends", "mpiio", "--reps", "1", "--stall", "1:60"], timeout=3.0)


def test_quick_study_end_to_end(tmp_path):
    from climio import api
    from climio.runs.records import read_records
    run_dir = api.run_study("parallel-read", "quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                            progress=False, report=True, ranks="2", experiments="mpiio,tasks",
                            stacks="c-posix,netcdf4-python", backends="mpiio", reps=1)
    recs = read_records(run_dir)
    assert {r["params"]["experiment"] for r in recs} == {"mpiio", "tasks"}
    assert all(r["metrics"]["verified"] for r in recs)
    html = (run_dir / "report.html").read_text()
    assert "parallel read scaling" in html and "F10" in html and "not measurable here" in html
    # nothing half-written: only complete files under their final names
    assert not [p for p in (tmp_path / "data" / "parallel-read").rglob(".*tmp*")]


def test_settle_waits_between_write_and_read_and_is_recorded(tmp_path):
    """--settle S: the reads start S seconds after the file was written (the records' start times,
    against a run without it), and every record says so."""
    import time
    argv = [*native.pario("read"), "--mode", "mpiio", "--dir", str(tmp_path), "--size", "65536", "--buffer", "8192",
            "--backends", "mpiio", "--patterns", "sequential", "--access", "independent", "--reps", "1"]
    for settle in (0.0, 1.5):
        t0 = time.time()
        recs = run(2, argv + ["--settle", str(settle)])
        (r,) = recs
        assert r["params"]["settle_s"] == settle and r["metrics"]["verified"]
        took = time.time() - t0
        assert took >= settle, (settle, took)
    r = subprocess.run([native.program(PROGRAM), *argv[1:], "--settle", "-1"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, **ROOT})
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode != 0 and len(lines) == 1 and "--settle" in lines[0], r.stderr


def test_settle_option_reaches_the_program():
    from climio.bench.parallel_read.run import mpiio_argv
    g = build_grid("quick", ranks="2", experiments="mpiio", settle="2.5")
    a = mpiio_argv(g, "/tmp/x", "p")
    assert a[a.index("--settle") + 1] == "2.5"
    assert "--settle" not in mpiio_argv(build_grid("quick", ranks="2", experiments="mpiio"), "/tmp/x", "p")
    for bad in ("-1", "soon", "inf"):
        with pytest.raises(InputError, match="--settle"):
            build_grid("quick", ranks="2", experiments="mpiio", settle=bad)


def test_backends_are_the_native_programs_list_and_settle_needs_mpiio(tmp_path, monkeypatch):
    """--backends is checked against what climio-pario --list prints (no Python copy of the
    list), and --settle without experiment B is an error, not silently ignored."""
    listed = subprocess.run([native.program(PROGRAM), "--list"], capture_output=True, text=True, check=True).stdout
    names = [ln.split("\t")[0] for ln in listed.splitlines() if ln.strip()]
    assert build_grid("quick", ranks="2", experiments="mpiio", backends=",".join(names)).backends == names
    with pytest.raises(InputError, match=f"unknown backend 'nope': choose from {', '.join(names)}"):
        build_grid("quick", ranks="2", experiments="mpiio", backends="nope")
    with pytest.raises(InputError, match="--settle applies to experiment mpiio only"):
        build_grid("quick", ranks="2", experiments="tasks,dask", settle="2")
    assert build_grid("quick", ranks="2", experiments="mpiio", settle="2").settle == 2.0
    from conftest import run_cli
    for args, message in ((["--experiments", "mpiio", "--backends", "nope"], "unknown backend 'nope'"),
                          (["--experiments", "tasks", "--settle", "1"], "--settle applies to experiment mpiio only")):
        out = run_cli("bench", "parallel-read", *args, "-o", tmp_path / "r")
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert out.returncode == 2 and len(lines) == 1 and message in lines[0], out.stderr
    assert not (tmp_path / "r").exists()
    monkeypatch.setattr(native, "pario_backends", lambda: ("mpiio",))   # a build with one backend
    with pytest.raises(InputError, match="unknown backend 'hdf5': choose from mpiio$"):
        build_grid("quick", ranks="2", experiments="mpiio", backends="hdf5")


def _synthetic(experiment, stack, file_set, pattern, access, ranks, rate_MBps, task_bytes, effective="cold"):
    """One record of `ranks` tasks each reading task_bytes at an aggregate rate_MBps."""
    nbytes = task_bytes * ranks
    r = task_rates(nbytes, [nbytes / rate_MBps / 1e6] * ranks)
    cache = {"state": "cold", "effective": effective, "storage_share": 1.0 if effective == "cold" else 0.02}
    return {"study": "parallel-read", "status": "ok", "rep": 0, "cache": cache,
            "params": {"experiment": experiment, "stack": stack, "file_set": file_set, "pattern": pattern,
                       "access": access, "buffer_bytes": 1 << 20, "ranks": ranks, "nodes": 1, "tasks_per_node": ranks},
            "metrics": {"bytes": nbytes, "rate_MBps": r["slowest_MBps"], "rate_mean_task_MBps": r["mean_task_MBps"],
                        "rate_slowest_task_MBps": r["slowest_MBps"], "verified": True,
                        "per_rank": {"rate_MBps": r["per_task_MBps"], "bytes": [task_bytes] * ranks}}}


def _grid_records(task_bytes, effective="cold", c_stack="c-netcdf"):
    recs = []
    for ranks, rate in ((1, 100.0), (2, 300.0), (4, 200.0)):         # F1: rises, then falls
        recs.append(_synthetic("tasks", c_stack, "per-task", "sequential", "independent", ranks, rate, task_bytes,
                               effective))
    for ranks in (1, 4):                                              # F4: flat; F2: Python peaks lower
        recs.append(_synthetic("tasks", c_stack, "shared", "sequential", "independent", ranks, 100.0, task_bytes))
        recs.append(_synthetic("tasks", "netcdf4-python", "per-task", "sequential", "independent", ranks, 50.0,
                               task_bytes))
    for ranks, base_rate in ((1, 500.0), (4, 200.0)):                 # F9: drops; F10: collective wins at 4 only
        for pattern in ("sequential", "striding"):
            for access, f in (("independent", 1.0), ("collective", 1.6 if ranks == 4 else 0.9)):
                recs.append(_synthetic("mpiio", "mpiio", "shared", pattern, access, ranks, base_rate * f, task_bytes))
    return recs


def test_findings_on_small_files_or_page_cache_reads_are_not_decidable():
    """The same rates decide F1, F2, F4, F9 and F10 with 256 MiB per task; with the --quick preset's
    4 MiB files each is "not decidable at this size", and with cold repetitions that read from the
    page cache (effectively warm) not decidable either."""
    big = {f: (v, e) for f, _, v, e in verdicts(configurations(_grid_records(256 << 20)))}
    assert {f: big[f][0] for f in ("F1", "F2", "F4", "F9", "F10")} == dict.fromkeys(
        ("F1", "F2", "F4", "F9", "F10"), "reproduced"), big
    assert not any("not decidable" in e for _, e in big.values())
    small = {f: (v, e) for f, _, v, e in verdicts(configurations(_grid_records(4 << 20)))}
    for f in ("F1", "F2", "F4", "F9", "F10"):
        assert small[f][0] == "not decidable" and "not decidable at this size: a task reads 4MiB" in small[f][1], small[f]
    warm = {f: (v, e) for f, _, v, e in verdicts(configurations(_grid_records(256 << 20, "effectively-warm")))}
    assert warm["F1"][0] == warm["F2"][0] == "not decidable" and "page cache (storage share 2%)" in warm["F1"][1]
    assert warm["F4"][0] == warm["F9"][0] == "reproduced"     # their cells read from storage


def test_old_stack_names_are_read_and_taken_with_a_note(capfd):
    """Experiment A's C stacks are c-posix and c-netcdf, as in every study: records written when they
    were posix and netcdf-c give the same rows and findings, and --stacks still takes the old names,
    each with the one note of a renamed value."""
    old, new = configurations(_grid_records(256 << 20, c_stack="netcdf-c")), configurations(_grid_records(256 << 20))
    assert old == new and {r["stack"] for r in old} == {"c-netcdf", "netcdf4-python", "mpiio"}
    assert verdicts(old) == verdicts(new)
    from climio.bench import base, registry
    capfd.readouterr()
    g = registry.get("parallel-read").grid("quick", experiments="tasks", stacks="posix,netcdf-c,h5py")
    assert g.stacks == ["c-posix", "c-netcdf", "h5py"]
    assert capfd.readouterr().err.splitlines() == [
        "climio: note: stack posix is deprecated and will be removed; use c-posix",
        "climio: note: stack netcdf-c is deprecated and will be removed; use c-netcdf"]
    assert registry.get("parallel-read").grid("quick", experiments="tasks", stacks="c-posix").stacks == ["c-posix"]
    assert not capfd.readouterr().err


def test_cold_records_read_their_bytes_from_storage(tmp_path):
    """Issue 17.1 on small generated files: every cold record of every path (C tasks, Python tasks,
    MPI-IO backends, Dask) compares the bytes its ranks or workers fetched from storage with the bytes
    it read, and reads at least 90% of them from storage."""
    from types import SimpleNamespace

    from climio.bench.parallel_read.dask_read import run_dask
    from climio.bench.parallel_read.run import check_storage, write_file
    size = 4 << 20
    for name in ("shared.bin", "shared.nc", "per-task-0.nc", "per-task-1.nc"):
        write_file(tmp_path / name, size)
    task = [os.sys.executable, "-m", "climio.bench.parallel_read.task"]
    cases = [[*native.pario("read"), "--mode", "tasks", "--stack", "c-posix", "--files", str(tmp_path / "shared.bin"),
              "--split"],
             [*native.pario("read"), "--mode", "tasks", "--stack", "c-netcdf", "--files",
              str(tmp_path / "per-task-%d.nc")],
             task + ["--stack", "h5py", "--files", str(tmp_path / "shared.nc"), "--split"],
             task + ["--stack", "netcdf4-python", "--files", str(tmp_path / "per-task-%d.nc")],
             [*native.pario("read"), "--mode", "mpiio", "--dir", str(tmp_path / "mpiio"), "--size", str(size),
              "--backends", "mpiio,hdf5", "--access", "independent,collective"]]
    (tmp_path / "mpiio").mkdir()
    recs = []
    for argv in cases:
        got = run(2, argv + ["--buffer", "262144", "--reps", "1"])
        assert got and all("storage_read_bytes" in r["metrics"] for r in got), argv
        recs += [check_storage(r) for r in got]
    grid = SimpleNamespace(scheduler=None, file_sets=["shared", "per-task"], size=size, reps=1)
    run_dask(grid, tmp_path, 2, "p", lambda r: recs.append(validate(r)))
    assert len(recs) == 4 + 2 * 2 * 2 + 2     # one repetition each; MPI-IO: 2 backends x 2 patterns x 2 access
    for r in recs:
        p, m, c = r["params"], r["metrics"], r["cache"]
        where = (p["experiment"], p["stack"], p["file_set"], p["pattern"], p["access"])
        assert c["state"] == "cold" and m["storage_needed_bytes"] == m["bytes"] > 0, where
        assert c["effective"] == "cold" and c["storage_share"] >= 0.9, (where, c, m["storage_read_bytes"])
    # a record without the counter says so instead of passing as cold
    bare = check_storage({"status": "ok", "metrics": {"bytes": 8}, "cache": {"state": "cold"}})
    assert bare["cache"]["effective"] == "unverified" and bare["metrics"]["storage_needed_bytes"] == 8
