"""Figures of the parallel-write study as PNG bytes (matplotlib Agg, no pyplot).

    bandwidth_vs_writers(rows, mode)  median MB/s vs ranks, min-max bars, one line per backend x strategy
                                      (benchio white paper Figs 4-15)
    phase_times(rows, mode)           mean per-rank seconds in each phase per backend x strategy at the
                                      largest rank count (MOM5 paper Figs 3-7)
    rank_imbalance(rows)              per-rank total time of the most imbalanced configurations
                                      (ROMS report's load-imbalance plots)
"""

from matplotlib.figure import Figure

from climio.present.plotting import to_png
from .summary import PHASES, series

_COLOURS = {"mpiio": "#1f77b4", "hdf5": "#d62728", "netcdf4": "#2ca02c", "pnetcdf": "#9467bd"}
_STYLES = {"shared": "-", "file-per-process": "--", "file-per-node": "-.", "serial": ":"}
_MARKERS = {"shared": "o", "file-per-process": "s", "file-per-node": "D", "serial": "v"}
_PHASE_COLOURS = dict(zip(PHASES, ("#8c564b", "#e377c2", "#bcbd22", "#1f77b4", "#17becf", "#ff7f0e")))


def bandwidth_vs_writers(rows, mode):
    lines = {k: v for k, v in series(rows).items() if k[0] == mode}
    if not lines:
        return None
    fig = Figure(figsize=(7.5, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    for (_, backend, strategy), rs in sorted(lines.items()):
        x = [r["ranks"] for r in rs]
        y = [r["median_MBps"] for r in rs]
        err = [[r["median_MBps"] - r["min_MBps"] for r in rs], [r["max_MBps"] - r["median_MBps"] for r in rs]]
        ax.errorbar(x, y, yerr=err, color=_COLOURS.get(backend, "k"), linestyle=_STYLES.get(strategy, "-"),
                    marker=_MARKERS.get(strategy, "o"), capsize=3, label=f"{backend} {strategy}")
    ranks = sorted({r["ranks"] for rs in lines.values() for r in rs})
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks)
    ax.set_xticklabels([str(r) for r in ranks])
    ax.set_xlabel("MPI ranks (writers before aggregation)")
    ax.set_ylabel("write bandwidth [MB/s = 1e6 B/s]\nbytes / (last end − first start)")
    ax.set_title(f"{mode}: median over repetitions, bars min–max")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="best")
    return to_png(fig, tight=True)


def phase_times(rows, mode):
    rs = [r for r in rows if r["mode"] == mode]
    if not rs:
        return None
    top = max(r["ranks"] for r in rs)
    rs = [r for r in rs if r["ranks"] == top]
    phases = [p for p in PHASES if any(p in r["phases"] for r in rs)]
    fig = Figure(figsize=(7.5, 0.9 + 0.32 * len(rs)))
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"{r['backend']} {r['strategy']}" for r in rs]
    left = [0.0] * len(rs)
    for ph in phases:
        widths = [r["phases"].get(ph, {}).get("max", 0.0) for r in rs]
        ax.barh(range(len(rs)), widths, left=left, color=_PHASE_COLOURS[ph], label=ph)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time [s] (slowest rank in each phase, mean over repetitions)")
    ax.set_title(f"{mode}: time per phase at {top} ranks")
    ax.legend(fontsize=7, ncol=len(phases), loc="lower right")
    return to_png(fig, tight=True)


def rank_imbalance(rows, limit=4):
    # serial is imbalanced by design (rank 0 writes everything): left out
    rs = [r for r in rows if len(r["per_rank_total"]) > 1 and r["strategy"] != "serial"]
    if not rs:
        return None
    rs = sorted(rs, key=lambda r: -r["imbalance"])[:limit]
    fig = Figure(figsize=(7.5, 2.0 * len(rs)))
    for i, r in enumerate(rs, 1):
        ax = fig.add_subplot(len(rs), 1, i)
        t = r["per_rank_total"]
        ax.bar(range(len(t)), t, color=_COLOURS.get(r["backend"], "grey"))
        ax.set_xticks(range(len(t)) if len(t) <= 32 else range(0, len(t), max(1, len(t) // 16)))
        mean = sum(t) / len(t)
        ax.axhline(mean, color="k", linestyle="--", linewidth=0.8)
        ax.set_ylabel("total time [s]")
        ax.set_title(f"{r['mode']} {r['backend']} {r['strategy']}, {r['ranks']} ranks: max/mean {r['imbalance']:.2f}",
                     fontsize=9)
    ax.set_xlabel("rank (total time from first phase start to close; dashed: mean)")
    return to_png(fig, tight=True)
