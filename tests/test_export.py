"""climio export: the flat schema in CSV and Parquet, read back with pandas."""

import json
import math
from datetime import datetime, timezone

import pandas as pd
import pytest

from climio.runs.export import flat_frame, ior_summary
from climio.runs.records import RecordWriter, make_record
from conftest import check_export, run_cli

EPOCH = 1_700_000_000.5   # the native programs' epoch seconds (metrics.epoch_start / epoch_end)
# IOR's summary header (src/ior-output.c, PrintLongSummaryHeader)
IOR_HEADER = ("Operation Max(MiB) Min(MiB) Mean(MiB) StdDev Max(OPs) Min(OPs) Mean(OPs) StdDev Mean(s) Stonewall(s) "
              "Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt blksiz xsize aggs(MiB) "
              "API RefNum").split()


def _records(tmp_path):
    recs = [
        make_record("read-stack", {"layer": "numpy", "pattern": "sequential", "buffer_bytes": 4096},
                    {"bytes": 8192, "wall_s": 0.5, "user_s": 0.1, "sys_s": 0.1,
                     "syscalls": {"sizes": {"65536": 3, "4096": 2}, "calls": 5}}, {"state": "cold"}, rep=r)
        for r in range(2)
    ] + [
        make_record("read-stack", {"layer": "numpy", "pattern": "random", "buffer_bytes": 512},
                    {"bytes": 0, "planned_bytes": 51200, "budget_s": 1.0, "rate_bound_MBps": 0.0512},
                    {"state": "cold"}, status="dnf"),
    ] + [
        make_record("parallel-write", {"mode": "benchio", "backend": "mpiio", "strategy": "shared", "ranks": 2,
                                       "nodes": 1},
                    {"bytes": 2 * 2**20 * 8, "rate_MBps": rate, "wall_s": 16 * 2**20 / rate / 1e6,
                     "epoch_start": EPOCH + i, "epoch_end": EPOCH + i + 0.25},
                    {"state": "cold"}, rep=i) for i, rate in enumerate((100.0, 200.0, 300.0))
    ]
    with RecordWriter(tmp_path / "records.jsonl") as w:
        for r in recs:
            w.write(r)
    return recs


def test_csv_and_parquet_hold_the_flat_schema(tmp_path):
    _records(tmp_path)
    assert run_cli("export", tmp_path, "--csv").returncode == 0
    assert run_cli("export", tmp_path, "--parquet").returncode == 0
    csv = pd.read_csv(tmp_path / "records.csv")
    pq = pd.read_parquet(tmp_path / "records.parquet")
    for df in (csv, pq):
        assert len(df) == 6
        assert {"study", "stack", "params.buffer_bytes", "metrics.rate_MBps", "metrics.rate_bound_MBps",
                "cache.state", "time"} <= set(df.columns)
        assert df["time"].iloc[0].endswith("+00:00")
    hist = pq.loc[0, "metrics.syscalls.sizes"]
    assert [list(p) for p in hist] == [[4096, 2], [65536, 3]]
    assert json.loads(csv.loc[0, "metrics.syscalls.sizes"]) == [[4096, 2], [65536, 3]]
    assert csv.loc[2, "status"] == "dnf" and csv.loc[2, "metrics.rate_bound_MBps"] == 0.0512


def test_epoch_columns_are_iso_utc_as_time(tmp_path):
    df = flat_frame(_records(tmp_path))
    pw = df[df["study"] == "parallel-write"].reset_index(drop=True)
    for col, offset in (("metrics.epoch_start", 0.0), ("metrics.epoch_end", 0.25)):
        want = [datetime.fromtimestamp(EPOCH + i + offset, timezone.utc).isoformat() for i in range(3)]
        assert pw[col].tolist() == want, col
    assert all(t.endswith("+00:00") and "T" in t for t in df["time"])
    assert df.loc[df["study"] == "read-stack", "metrics.epoch_start"].isna().all()   # no epoch: empty


def test_ior_summary_has_ior_columns_and_units(tmp_path):
    recs = _records(tmp_path)
    df = ior_summary(recs)
    assert len(df) == 1
    ior = [c for c in df.columns if c in IOR_HEADER]
    assert ior == ["Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev", "Mean(s)", "Test#", "#Tasks", "tPN",
                   "reps", "fPP", "blksiz", "xsize", "aggs(MiB)", "API"]
    assert ior == [c for c in dict.fromkeys(IOR_HEADER) if c in ior]   # in IOR's order, first
    assert list(df.columns[:len(ior)]) == ior
    row = df.iloc[0]
    assert (row["Operation"], row["Test#"], row["#Tasks"], row["tPN"], row["reps"], row["fPP"], row["API"]) == \
        ("write", 0, 2, 2, 3, 0, "MPIIO")
    std = math.sqrt((100.0**2 + 0 + 100.0**2) / 3)   # IOR's: over the repetitions, not n - 1
    MiB = 1e6 / 2**20
    for unit, k in (("MiB", MiB), ("MB/s", 1.0)):
        mx, mn, mean = (f"Max({unit})", f"Min({unit})", f"Mean({unit})")
        sd = "StdDev" if unit == "MiB" else "StdDev(MB/s)"
        assert row[mx] == pytest.approx(300 * k) and row[mn] == pytest.approx(100 * k)
        assert row[mean] == pytest.approx(200 * k) and row[sd] == pytest.approx(std * k)
    assert row["Mean(s)"] == pytest.approx(sum(16 * 2**20 / r / 1e6 for r in (100, 200, 300)) / 3)
    assert row["blksiz"] == row["xsize"] == 8 * 2**20 and row["aggs(MiB)"] == 16
    res = run_cli("export", tmp_path, "--ior")
    assert res.returncode == 0, res.stderr
    csv = pd.read_csv(tmp_path / "ior-summary.csv")
    assert list(csv.columns[:len(ior)]) == ior and csv.loc[0, "Min(MB/s)"] == 100.0 and csv.loc[0, "API"] == "MPIIO"


def test_export_errors_are_one_line(tmp_path):
    res = run_cli("export", tmp_path / "nope", "--csv")
    assert res.returncode == 3 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    _records(tmp_path)
    res = run_cli("export", tmp_path, "--csv", "--parquet")
    assert res.returncode == 2 and "contradict" in res.stderr


def test_flat_frame_keeps_one_row_per_record(tmp_path):
    recs = _records(tmp_path)
    assert len(flat_frame(recs)) == len(recs)


# --- every run `make demo` and each study produce exports (issue 27: the survey's Parquet crashed) ---

@pytest.fixture(scope="module")
def produced_runs(quick_survey, quick_study_runs):
    """Real run directories: `climio survey --quick` (what `make demo` runs, at its quick preset: every
    study of the survey in one run directory), and the studies the survey leaves out (calibrate, the
    model's validation); the session's runs, shared with the browser tests."""
    return {"survey": quick_survey[0], **quick_study_runs}


def test_every_produced_run_exports(produced_runs, tmp_path):
    from climio.runs.records import RecordWriter, read_records
    studies = set()
    for name, run_dir in produced_runs.items():
        df = check_export(run_dir, tmp_path, name)
        studies |= set(df["study"])
        # each study's records alone, as `climio bench STUDY` writes them
        records = read_records(run_dir)
        for study in sorted({r["study"] for r in records}):
            one = tmp_path / f"{name}-{study}"
            one.mkdir()
            with RecordWriter(one / "records.jsonl") as w:
                for r in records:
                    if r["study"] == study:
                        w.write(r)
            check_export(one, tmp_path, f"{name}-{study}")
    assert {"read-stack", "chunking", "parallel-write", "parallel-read", "stsa", "calibrate", "predict"} <= studies, studies
    # the survey's chunks column mixes "contiguous" with shapes: text in Parquet, each cell readable
    pq = pd.read_parquet(tmp_path / "survey.parquet")
    cells = pq["chunks"].dropna().tolist()
    assert "contiguous" in cells and any(str(c).startswith("[") for c in cells), cells[:10]
