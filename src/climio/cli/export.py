"""`climio export`: a run directory's records as CSV or Parquet, and an IOR-style summary."""

from pathlib import Path
from typing import Optional

import typer

from climio.base.errors import DataError, InputError
from climio.runs.staging import write_via_temp
from ..measure.progress import info
from . import app


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="A run directory holding records.jsonl."),
    csv: bool = typer.Option(False, "--csv", help="Comma-separated values (lists as JSON text)."),
    parquet: bool = typer.Option(False, "--parquet", help="Apache Parquet (lists stay lists)."),
    ior: bool = typer.Option(False, "--ior", help="Instead of every record: the parallel-write configurations as "
                                                  "IOR's summary, with IOR's column names (Max(MiB) Min(MiB) "
                                                  "Mean(MiB) StdDev Mean(s) Test# #Tasks tPN reps fPP blksiz xsize "
                                                  "aggs(MiB) API), then the same statistics in MB/s."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", metavar="FILE",
                                       help="Output file (default RUN_DIR/records.csv, .parquet, or ior-summary.csv)."),
):
    """Write the records of RUN_DIR as one flat table: one row per record, one column per parameter and
    metric (params.*, metrics.*, cache.*), the shared nouns stack/chunks/compression/ranks, time and
    metrics.epoch_* as ISO-8601 UTC, did-not-finish bounds in metrics.rate_bound_MBps, histograms as [size, count] pairs."""
    from climio.runs.export import flat_frame, for_csv, for_parquet, ior_summary
    from climio.runs.records import read_records

    if csv and parquet:
        raise InputError("--csv and --parquet contradict each other: give one")
    fmt = "parquet" if parquet else "csv"
    if ior and parquet:
        raise InputError("--ior writes CSV: drop --parquet")
    records = read_records(run_dir)
    if ior:
        df = ior_summary(records)
        if df.empty:
            raise DataError(f"no finished parallel-write records in {run_dir}: nothing for an IOR summary")
        target = Path(out) if out else Path(run_dir) / "ior-summary.csv"
    else:
        df = flat_frame(records)
        target = Path(out) if out else Path(run_dir) / f"records.{fmt}"
    if fmt == "parquet":
        write_via_temp(target, lambda tmp: for_parquet(df).to_parquet(tmp, index=False))
    else:
        out_df = df if ior else for_csv(df)
        write_via_temp(target, lambda tmp: out_df.to_csv(tmp, index=False))
    info(f"{len(df)} rows, {len(df.columns)} columns: {target}")
