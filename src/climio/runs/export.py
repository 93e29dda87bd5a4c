"""Records as flat tables for the tools users already have (pandas, R, spreadsheets, IOR scripts).

The flat schema (one row per record; `climio export --help` and the README list it):
    study, rep, status, time (ISO-8601 UTC), platform_id, schema
    stack, chunks, compression, ranks          the shared nouns, same column in every study
    params.<name>, metrics.<name>, cache.<name>  one column per parameter and metric (nested keys
                                               joined with dots)
    metrics.rate_bound_MBps                    a did-not-finish record's bound ("< X MB/s")
One timestamp format: `time` and the epoch columns of the native programs (metrics.epoch_start,
metrics.epoch_end_us, ...: seconds, or the unit their suffix names) are ISO-8601 UTC text.
Lists stay lists in Parquet and become JSON text in CSV (in Parquet too for a column that mixes them
with other values, as `chunks` does across studies: for_parquet); a histogram (a dict of size -> count,
e.g. metrics.syscalls.sizes) becomes a list of [size, count] pairs.

The IOR summary (ior_summary) uses IOR's own column names (src/ior-output.c's summary header),
the subset climio fills: Operation Max(MiB) Min(MiB) Mean(MiB) StdDev Mean(s) Test# #Tasks tPN
reps fPP blksiz xsize aggs(MiB) API, then the same statistics in MB/s and the configuration.
"""

import json
import math
import re

from climio.runs.records import to_frame

# metrics.epoch_start (s), metrics.epoch_end_us (µs), ...: group 1 is the unit suffix, if any
EPOCH_COLUMN = re.compile(r"metrics\.(?:.+\.)?epoch_[a-z]+?(?:_(s|ms|us|ns))?")
# IOR's API names (its -a values) of the backends it shares with climio
IOR_API = {"mpiio": "MPIIO", "hdf5": "HDF5", "pnetcdf": "NCMPI", "posix": "POSIX"}


def _histogram(d: dict) -> list:
    try:
        return sorted([[int(k), int(v)] for k, v in d.items()], key=lambda p: p[0])
    except (TypeError, ValueError):
        return None


def _cell(v):
    if isinstance(v, dict):
        h = _histogram(v)
        return h if h is not None else json.dumps(v, sort_keys=True)
    return v


def flat_frame(records):
    """records.to_frame() with every cell a scalar or a list (dicts as histograms or JSON text) and
    every timestamp ISO-8601 UTC text."""
    import pandas as pd
    df = to_frame(records)
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, dict)).any():
            df[col] = df[col].map(_cell)
    if "time" in df:
        df["time"] = df["time"].map(_timestamp_text)
    for col in df.columns:
        m = EPOCH_COLUMN.fullmatch(col)
        if m:
            df[col] = pd.to_datetime(pd.to_numeric(df[col], errors="coerce"), unit=m.group(1) or "s",
                                     utc=True).map(_timestamp_text)
    return df


def _timestamp_text(t):
    """ISO-8601 UTC text of a timestamp (as `time`: 2026-01-02T03:04:05.678901+00:00); None for NaT."""
    import pandas as pd
    if t is None or t is pd.NaT:
        return None
    return t.isoformat() if hasattr(t, "isoformat") else t


def for_parquet(df):
    """Columns Parquet can hold: a column whose cells do not make one Arrow type (chunks: a list in
    one study's records, "contiguous" in another's; a number here and a word there) becomes JSON
    text in every row, as in CSV; every other column keeps its type (lists stay lists)."""
    import pyarrow as pa
    out = df.copy()
    for col in out.columns:
        if out[col].dtype != object:
            continue
        try:
            pa.array(out[col].tolist(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            out[col] = out[col].map(_json_text)
    return out


def _json_text(v):
    """A cell as text: strings as they are, missing values missing, anything else as JSON."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v if isinstance(v, str) else json.dumps(v, default=str)


def for_csv(df):
    """Lists as JSON text: a CSV cell holds one value."""
    out = df.copy()
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, (list, tuple))).any():
            out[col] = out[col].map(lambda v: json.dumps(v) if isinstance(v, (list, tuple)) else v)
    return out


def ior_summary(records):
    """parallel-write configurations the way IOR's summary prints them: one row per configuration
    (Test#) with the bandwidth's max / min / mean / standard deviation over the repetitions in MiB/s
    under IOR's column names, then the same in MB/s (climio's unit), then the configuration.
    StdDev is IOR's: the population deviation over the repetitions. blksiz is the bytes of one task,
    xsize the bytes of one write call (a task's block in benchio), aggs(MiB) the bytes of all tasks."""
    import pandas as pd

    df = to_frame([r for r in records if r.get("study") == "parallel-write" and r.get("status") == "ok"])
    if df.empty or "metrics.rate_MBps" not in df:
        return pd.DataFrame()
    keys = [c for c in ("params.mode", "params.backend", "params.strategy", "ranks", "params.collective",
                        "params.local", "params.global", "params.grid") if c in df]
    for c in keys:
        df[c] = df[c].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    rows = []
    for test, (key, g) in enumerate(df.groupby(keys, dropna=False, sort=False)):
        mbps = g["metrics.rate_MBps"].astype(float)
        mibps = mbps * 1e6 / 2**20
        first = lambda col: g[col].iloc[0] if col in g else None
        nbytes, ranks, nodes = first("metrics.bytes"), first("ranks"), first("params.nodes")
        block = float(nbytes) / ranks if nbytes is not None and ranks else None
        config = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        backend = config.get("params.backend")
        row = {
            "Operation": "write", "Max(MiB)": mibps.max(), "Min(MiB)": mibps.min(), "Mean(MiB)": mibps.mean(),
            "StdDev": mibps.std(ddof=0),
            "Mean(s)": g["metrics.wall_s"].astype(float).mean() if "metrics.wall_s" in g else None,
            "Test#": test, "#Tasks": ranks,
            "tPN": -(-int(ranks) // int(nodes)) if ranks and nodes and not pd.isna(nodes) else None,
            "reps": len(g), "fPP": int(config.get("params.strategy") == "file-per-process"),
            "blksiz": block, "xsize": first("params.transfer_bytes") if "params.transfer_bytes" in g else block,
            "aggs(MiB)": float(nbytes) / 2**20 if nbytes is not None else None,
            "API": IOR_API.get(backend, backend),
            "Max(MB/s)": mbps.max(), "Min(MB/s)": mbps.min(), "Mean(MB/s)": mbps.mean(), "StdDev(MB/s)": mbps.std(ddof=0),
            **config,
        }
        rows.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return pd.DataFrame(rows)
