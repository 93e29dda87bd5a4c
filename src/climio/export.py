"""Records as flat tables for the tools users already have (pandas, R, spreadsheets, IOR scripts).

The flat schema (one row per record; `climio export --help` and the README list it):
    study, rep, status, time (ISO-8601 UTC), platform_id, schema
    stack, chunks, compression, ranks          the shared nouns, same column in every study
    params.<name>, metrics.<name>, cache.<name>  one column per parameter and metric (nested keys
                                               joined with dots)
    metrics.rate_bound_MBps                    a did-not-finish record's bound ("< X MB/s")
Lists stay lists in Parquet and become JSON text in CSV; a histogram (a dict of size -> count,
e.g. metrics.syscalls.sizes) becomes a list of [size, count] pairs.
"""

import json
import math

from .records import to_frame

EXPORT_FORMATS = ("csv", "parquet")


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
    """records.to_frame() with every cell a scalar or a list (dicts as histograms or JSON text)."""
    df = to_frame(records)
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, dict)).any():
            df[col] = df[col].map(_cell)
    if "time" in df:
        df["time"] = df["time"].map(lambda t: t.isoformat() if hasattr(t, "isoformat") else t)
    return df


def for_csv(df):
    """Lists as JSON text: a CSV cell holds one value."""
    out = df.copy()
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, (list, tuple))).any():
            out[col] = out[col].map(lambda v: json.dumps(v) if isinstance(v, (list, tuple)) else v)
    return out


def ior_summary(records):
    """parallel-write configurations the way IOR's summary prints them: one row per configuration
    with bandwidth max / min / mean / std over the repetitions in MiB/s (IOR) and MB/s (climio),
    transfer and block sizes named as IOR names them, tasks and repetitions."""
    import pandas as pd

    df = to_frame([r for r in records if r.get("study") == "parallel-write" and r.get("status") == "ok"])
    if df.empty or "metrics.rate_MBps" not in df:
        return pd.DataFrame()
    keys = [c for c in ("params.mode", "params.backend", "params.strategy", "ranks", "params.collective",
                        "params.local", "params.global", "params.grid") if c in df]
    for c in keys:
        df[c] = df[c].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    rows = []
    for key, g in df.groupby(keys, dropna=False, sort=False):
        mbps = g["metrics.rate_MBps"].astype(float)
        mibps = mbps * 1e6 / 2**20
        nbytes = g["metrics.bytes"].astype(float) if "metrics.bytes" in g else None
        ranks = g["ranks"].iloc[0] if "ranks" in g else None
        block = (nbytes.iloc[0] / ranks) if nbytes is not None and ranks else None
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row.update({
            "access": "write", "api": row.get("params.backend"), "tasks": ranks, "iterations": len(g),
            "max(MiB)": mibps.max(), "min(MiB)": mibps.min(), "mean(MiB)": mibps.mean(),
            "stddev(MiB)": mibps.std(ddof=1) if len(g) > 1 else 0.0,
            "max(MB/s)": mbps.max(), "mean(MB/s)": mbps.mean(),
            "blockSize": block, "aggregateSize": nbytes.iloc[0] if nbytes is not None else None,
            "transferSize": g["params.transfer_bytes"].iloc[0] if "params.transfer_bytes" in g else block,
            "filePerProc": row.get("params.strategy") == "file-per-process",
        })
        rows.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return pd.DataFrame(rows)
