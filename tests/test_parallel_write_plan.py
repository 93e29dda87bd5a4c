"""The parallel-write study's Python side without MPI: option parsing, the tuning grid, the
statistics the report draws, and how a launch failure is turned into one line."""

import pytest

from climio.bench import parallel_write as pw
from climio.bench.parallel_write import summary as pws
from climio.bench.parallel_write import tune as tw
from climio.base.errors import InputError
from climio.measure.mpi import Launcher, failure_line
from climio.dataset.options import parse_hints


def grid(preset="full", **values):
    return pw.ParallelWrite().grid(preset, **values)


def test_hints_from_flags_and_file(tmp_path):
    f = tmp_path / "hints"
    f.write_text("# ROMIO hints file\ncb_nodes 4\nromio_cb_write=enable  # collective buffering\n\n")
    got = parse_hints(["cb_buffer_size=1048576", "striping_factor=8,striping_unit=1048576"], f)
    assert got == {"cb_nodes": "4", "romio_cb_write": "enable", "cb_buffer_size": "1048576",
                   "striping_factor": "8", "striping_unit": "1048576"}


@pytest.mark.parametrize("bad", ["cb_nodes", "=4", "cb_nodes="])
def test_malformed_hint_is_one_input_error(bad):
    with pytest.raises(InputError, match="malformed hint"):
        parse_hints([bad])


def test_grid_rejects_bad_input():
    with pytest.raises(InputError, match="unknown backend"):
        grid(backends="mpiio,adios")
    with pytest.raises(InputError, match="model-mode strategy"):
        grid(mode="model", strategies="file-per-node")
    with pytest.raises(InputError, match="not both"):
        grid(local="8,8,8", global_="16,16,16")
    with pytest.raises(InputError, match="--local"):
        grid(local="8,8")
    with pytest.raises(InputError, match="--ranks"):
        grid(ranks="0,2")


def test_program_args_carry_every_knob(tmp_path, monkeypatch):
    monkeypatch.setattr(pw.native, "program", lambda name: f"/bin/{name}")
    g = grid(mode="model", ranks="4", backends="netcdf4", strategies="shared", reps=2,
             hint=["cb_nodes=2"], model_grid="roms", nt=3, io_layout="2,1", small="independent",
             chunk="16,8", variables="2,1,1", select=0.05, fsync=True)
    a = g.program_args(tmp_path, "pid")
    assert g.model_grid == [899, 629, 40]
    for pair in (["--mode", "model"], ["--hint", "cb_nodes=2"], ["--grid", "899,629,40"], ["--io-layout", "2,1"],
                 ["--small", "independent"], ["--chunk", "16,8"], ["--vars", "2,1,1"], ["--select", "0.05"],
                 ["--nt", "3"], ["--reps", "2"]):
        i = a.index(pair[0])
        assert a[i:i + 2] == pair
    assert "--fsync" in a


def test_tuning_grid_follows_the_mom5_procedure():
    assert tw.decomposition_of(4) == [2, 2]
    assert tw.decomposition_of(6) == [3, 2]
    assert tw.io_layouts([2, 2]) == [[1, 2], [2, 1], [2, 2]]
    assert tw.aggregator_counts(4) == [1, 2, 4]
    assert tw.aggregator_counts(3) == [1, 2, 3]
    grids = tw.sweep_grids(grid("quick", mode="model"), 4)
    assert grids[0][1].strategies == ["serial"] and grids[0][1].io_layout == [1, 1]
    cands = [g for _, g in grids[1:]]
    # io_layout 1x2 and 2x1 have 2 writers (cb_nodes 1, 2), 2x2 has 4 (1, 2, 4)
    assert len(cands) == 7
    assert {(tuple(g.io_layout), g.hints["cb_nodes"]) for g in cands} == {
        ((1, 2), "1"), ((1, 2), "2"), ((2, 1), "1"), ((2, 1), "2"), ((2, 2), "1"), ((2, 2), "2"), ((2, 2), "4")}
    assert all(g.strategies == ["shared"] and g.extra["sweep"] == pws.SWEEP for g in cands)


def _rec(backend="mpiio", strategy="shared", ranks=4, rep=0, rate=100.0, per_rank=None, **extra_params):
    per_rank = per_rank or [1.0] * ranks
    return {"study": "parallel-write", "status": "ok", "rep": rep,
            "params": {"mode": "benchio", "backend": backend, "strategy": strategy, "ranks": ranks, "writers": ranks,
                       "files": 1, "hints": {"cb_nodes": "2"}, **extra_params},
            "metrics": {"bytes": 10**8, "rate_MBps": rate, "wall_s": 10**8 / rate / 1e6, "imbalance": 1.0,
                        "phases": {"write": {"min": 0.5, "mean": 0.6, "max": 0.9}},
                        "per_rank": {"total": per_rank}, "verified": True,
                        "epoch_start": 1000.0 + rep, "epoch_end": 1000.5 + rep},
            "cache": {"state": "warm"}}


def test_rank_stats_on_a_crafted_imbalance():
    st = pws.rank_stats([1.0, 1.0, 1.0, 5.0])
    assert st == {"min": 1.0, "mean": 2.0, "max": 5.0, "imbalance": 2.5}
    assert pws.rank_stats([3.0, 3.0])["imbalance"] == 1.0


def test_configurations_summarise_repetitions_like_benchio():
    recs = [_rec(rep=i, rate=r) for i, r in enumerate([100.0, 300.0, 200.0, 400.0])]
    recs += [_rec(strategy="serial", rep=i, rate=50.0) for i in range(2)]
    recs.append(dict(_rec(rep=9, rate=1.0), status="error"))   # not ok: left out
    rows = pws.configurations(recs)
    shared = next(r for r in rows if r["strategy"] == "shared")
    assert (shared["reps"], shared["min_MBps"], shared["median_MBps"], shared["max_MBps"], shared["mean_MBps"]) == \
        (4, 100.0, 250.0, 400.0, 250.0)
    assert shared["phases"]["write"] == {"min": 0.5, "mean": 0.6, "max": 0.9}
    (ratio,) = pws.parallel_vs_serial(rows)
    assert ratio["best"] == "shared" and ratio["ratio"] == pytest.approx(5.0)


def test_load_test_aggregates_concurrent_instances():
    a = _rec(rep=0, instances=2, instance=0)
    b = _rec(rep=0, instances=2, instance=1)
    b["metrics"]["epoch_start"], b["metrics"]["epoch_end"] = 1000.25, 1001.0
    (agg,) = pws.aggregate_instances([a, b])
    assert agg["bytes"] == 2 * 10**8 and agg["span_s"] == pytest.approx(1.0)
    assert agg["aggregate_MBps"] == pytest.approx(200.0) and agg["complete"]
    assert pws.configurations([a, b]) == []   # load-test records are not scaling points


def test_sweep_summary_picks_best_and_speedup():
    base = [_rec(strategy="serial", rep=i, rate=20.0, sweep=pws.SWEEP, role="baseline", io_layout=[1, 1],
                 hints_requested={}) for i in range(3)]
    good = [_rec(rep=i, rate=90.0 + i, sweep=pws.SWEEP, role="candidate", io_layout=[2, 1],
                 hints_requested={"cb_nodes": "2"}) for i in range(3)]
    poor = [_rec(rep=i, rate=40.0, sweep=pws.SWEEP, role="candidate", io_layout=[2, 2],
                 hints_requested={"cb_nodes": "1"}) for i in range(3)]
    s = pws.sweep_summary(base + good + poor)
    best = s["best"]["mpiio"]
    assert best["io_layout"] == [2, 1] and best["cb_nodes"] == "2" and best["median_MBps"] == 91.0
    assert best["speedup"] == pytest.approx(91.0 / 20.0)
    assert "4.55x the serial" in tw.format_table(s)


def test_failure_line_prefers_the_programs_own_message():
    stderr = ("--------------------------------------------------------------------------\n"
              "climio-pario-write: error: cannot write in /nope: No such file or directory\n"
              "--------------------------------------------------------------------------\n"
              "mpirun detected that one or more processes exited with non-zero status\n")
    assert failure_line(stderr, "climio-pario-write") == "cannot write in /nope: No such file or directory"
    assert failure_line("-----\nmpirun was unable to launch the specified application\n-----\n", "x") == \
        "mpirun was unable to launch the specified application"


def test_launcher_template_and_oversubscription(tmp_path):
    assert Launcher(ranks=8, template="srun -n {ranks} --mpi=pmix").prefix() == ["srun", "-n", "8", "--mpi=pmix"]
    with pytest.raises(InputError, match="hostfile"):
        Launcher(ranks=2, hostfile=str(tmp_path / "missing")).prefix()
    with pytest.raises(InputError, match="not a command template"):
        Launcher(ranks=2, template="srun -n {nodes}").prefix()
    big = Launcher(ranks=64).prefix()
    assert big[1:3] == ["-n", "64"] and "--oversubscribe" in big


def test_report_section_draws_records_and_lists_foreign_ones():
    from climio.present import render
    recs = [_rec(rep=i, rate=100.0 + i) for i in range(3)] + [_rec(strategy="serial", rep=i, rate=50.0) for i in range(3)]
    foreign = {"study": "parallel-write", "status": "ok", "rep": 0, "params": {"ranks": 4},
               "metrics": {"bytes": 1, "wall_s": 1.0}, "cache": {"state": "warm"}}
    html = render.page("t", [], [pw.ParallelWrite().section(recs + [foreign])])
    assert "1 record of this study lack" in html
    assert "Parallel vs serial gather" in html and "2.02×" in html   # median 101 / 50
    assert html.count("<img") >= 2


# --- the Study contract ------------------------------------------------------------------------------

def test_grid_options_reproduce_the_command_line():
    from climio.bench import base, registry
    flags = [o.flag for _, o in base.options_of(pw.Grid)]
    assert flags == ["--mode", "--ranks", "--backends", "--strategies", "--hint", "--hints-file", "--reps", "--local",
                     "--global", "--grid", "--nt", "--decomposition", "--io-layout", "--small", "--chunks", "--var-counts",
                     "--select", "--independent", "--fsync", "--verify/--no-verify", "--stripe-count",
                     "--stripe-size", "--instances", "--hostfile", "--launcher", "--timeout", "--mpi-io"]
    opts = {o.flag: o for _, o in base.options_of(pw.Grid)}
    assert opts["--hint"].repeat and opts["--hint"].metavar == "KEY=VALUE"
    assert opts["--ranks"].metavar == "LIST" and opts["--grid"].metavar == "nx,ny,nz"
    assert all(o.help for o in opts.values())
    assert registry.get("parallel-write").Grid is pw.Grid


def test_grid_values_presets_and_one_line_errors(tmp_path):
    g = grid("quick", stripe_size="1MiB", hint=["cb_nodes=2"], mpi_io="romio", timeout=60)
    assert (g.ranks, g.reps, g.local, g.stripe_bytes, g.hints) == ([2, 4], 3, [24, 24, 24], 1 << 20, {"cb_nodes": "2"})
    assert g.mpi_launcher().describe() == "mpirun -n 4" and g.mpi_launcher().timeout_s == 60
    for bad, match in ((dict(reps=0), "--reps"), (dict(mpi_io="mpich"), "--mpi-io"), (dict(mode="both"), "--mode"),
                       (dict(bogus=1), "unknown parallel-write option"), (dict(instances=-1), "--instances")):
        with pytest.raises(InputError, match=match) as exc:
            grid(**bad)
        assert "\n" not in str(exc.value)


def test_check_fails_before_anything_runs(tmp_path):
    study = pw.ParallelWrite()
    with pytest.raises(InputError, match="hostfile"):
        study.check(grid("quick", hostfile=str(tmp_path / "missing")), tmp_path)
    from climio.base.errors import DiskSpaceError
    with pytest.raises(DiskSpaceError, match="--local"):
        study.check(grid("quick", local="100000,100000,1000"), tmp_path / "not-yet")
    study.check(grid("quick"), tmp_path)


def test_survey_grid_runs_both_modes():
    g = pw.ParallelWrite().survey_grid(quick=False)
    by = {x.mode: x for x in g.split()}
    assert set(by) == {"benchio", "model"} and g.ranks == [2, 4] and g.reps == 5
    assert by["benchio"].strategies == list(pw.STRATEGIES) and by["model"].strategies == list(pw.MODEL_STRATEGIES)
    assert by["benchio"].local == [48, 48, 48] and by["model"].model_grid == [96, 64, 10]
    assert g.jobs_per_launch() == 4 * (4 + 3) * 5


def test_summarise_findings_and_latency_label():
    study = pw.ParallelWrite()
    recs = [_rec(rep=i, rate=100.0 + i) for i in range(3)] + [_rec(strategy="serial", rep=i, rate=50.0) for i in range(3)]
    recs += [_rec(backend="pnetcdf", rep=i, rate=300.0) for i in range(3)]
    s = study.summarise(recs)
    assert len(s["configurations"]) == 3 and s["foreign"] == 0
    (best,) = s["best"]
    assert best["best"]["shared"] == {"backend": "pnetcdf", "median_MBps": 300.0}
    assert best["speedup"]["ratio"] == pytest.approx(101.0 / 50.0) and best["latency_dominated"]
    (f,) = study.findings(recs)
    assert "shared pnetcdf 300 MB/s" in f.text and "2.02× the serial gather" in f.text and "latency-dominated" in f.text
    big = [dict(_rec(rep=i), metrics=dict(_rec(rep=i)["metrics"], bytes=4 * (64 << 20))) for i in range(2)]
    assert not study.summarise(big)["best"][0]["latency_dominated"]


def test_imbalance_is_max_over_mean_of_the_rank_times():
    recs = [_rec(rep=i, per_rank=[1.0, 1.0, 1.0, 5.0]) for i in range(2)]
    (row,) = pws.configurations(recs)
    assert row["imbalance"] == pytest.approx(2.5) and row["idle_share"] == pytest.approx(0.6)


def test_study_modules_do_not_import_the_report():
    import subprocess
    import sys
    pure = ("import sys, climio.bench.parallel_write as pw, climio.bench.parallel_write.tune, "
            "climio.bench.parallel_write.section; pw.ParallelWrite().section([]); "
            "print(sorted(m for m in sys.modules if m.startswith(('climio.report', 'climio.measure'))))")
    runs = ("import sys, climio.bench.parallel_write.run; "
            "print(sorted(m for m in sys.modules if m.startswith('climio.report')))")
    for code in (pure, runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[]"
