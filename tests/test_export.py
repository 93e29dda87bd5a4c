"""climio export: the flat schema in CSV and Parquet, read back with pandas."""

import json

import pandas as pd

from climio.export import flat_frame, ior_summary
from climio.records import RecordWriter, make_record
from conftest import run_cli


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
        make_record("parallel-write", {"mode": "benchio", "backend": "mpiio", "strategy": "shared", "ranks": 2},
                    {"bytes": 2 * 2**20 * 8, "rate_MBps": rate, "wall_s": 16 * 2**20 / rate / 1e6},
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


def test_ior_summary_has_ior_columns_and_units(tmp_path):
    recs = _records(tmp_path)
    df = ior_summary(recs)
    assert len(df) == 1
    row = df.iloc[0]
    assert row["tasks"] == 2 and row["iterations"] == 3 and row["api"] == "mpiio"
    assert row["max(MB/s)"] == 300.0 and row["mean(MB/s)"] == 200.0
    assert abs(row["mean(MiB)"] - 200e6 / 2**20) < 1e-9 and abs(row["stddev(MiB)"] - 100e6 / 2**20) < 1e-9
    assert row["blockSize"] == 8 * 2**20
    res = run_cli("export", tmp_path, "--ior")
    assert res.returncode == 0 and (tmp_path / "ior-summary.csv").is_file()


def test_export_errors_are_one_line(tmp_path):
    res = run_cli("export", tmp_path / "nope", "--csv")
    assert res.returncode == 3 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    _records(tmp_path)
    res = run_cli("export", tmp_path, "--csv", "--parquet")
    assert res.returncode == 2 and "contradict" in res.stderr


def test_flat_frame_keeps_one_row_per_record(tmp_path):
    recs = _records(tmp_path)
    assert len(flat_frame(recs)) == len(recs)
