"""The parallel-read section: Figs 5.4-5.8 equivalents drawn from records, the configuration table
and the findings table (F1-F6, F9-F11), as climio.present.sections objects; figures are drawn at render time."""

from climio.present.cells import num, size
from climio.present.sections import Details, Figure, Finding, Note, Paragraph, Section, Table
from .summary import STUDY, configurations, curves, summarise

TITLE = f"Study: {STUDY} — parallel read scaling (thesis ch. 5) over independent tasks, MPI-IO and Dask"
_COL = {"c-posix": "#1f77b4", "c-netcdf": "#d62728", "netcdf4-python": "#2ca02c", "h5py": "#9467bd",
        "xarray+dask": "#ff7f0e"}
_LS = {"per-task": "-", "shared": "--", "small": ":"}


def _fig_rate_vs_tasks(rows, experiment, by_nodes=False):
    from matplotlib.figure import Figure as MplFigure

    from climio.present.plotting import to_png
    cv = curves(rows, experiment)
    if not cv:
        return None
    fig = MplFigure(figsize=(7.5, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    for (stack, fs, buf), rs in cv.items():
        x = [r["nodes"] if by_nodes else r["ranks"] for r in rs]
        y = [r["mean_task_MBps"] for r in rs]
        lo = [r["per_task"].get("min", r["mean_task_MBps"]) for r in rs]
        hi = [r["per_task"].get("max", r["mean_task_MBps"]) for r in rs]
        ax.errorbar(x, y, yerr=[[max(0, a - b) for a, b in zip(y, lo)], [max(0, b - a) for a, b in zip(y, hi)]],
                    color=_COL.get(stack, "k"), linestyle=_LS.get(fs, "-"), marker="o", capsize=3,
                    label=f"{stack} {fs} {size(buf)}")
        ax.plot(x, [r["slowest_MBps"] for r in rs], color=_COL.get(stack, "k"), linestyle="none", marker="x")
    ax.set_xlabel("nodes" if by_nodes else "concurrent tasks")
    ax.set_ylabel("aggregate read rate [MB/s = 1e6 B/s]\nbytes / mean task time (x: / slowest)")
    ax.set_title("mean over repetitions; bars: min-max of per-task rates (thesis Fig. 5.4/5.5)")
    ax.legend(fontsize=7)
    return to_png(fig)


def _fig_boxes(rows):
    from matplotlib.figure import Figure as MplFigure

    from climio.present.plotting import to_png
    sel = [r for r in rows if r["per_task_values"]]
    if not sel:
        return None
    fig = MplFigure(figsize=(max(7.5, 0.45 * len(sel)), 4.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.boxplot([r["per_task_values"] for r in sel])
    ax.set_xticks(range(1, len(sel) + 1))
    ax.set_xticklabels([f"{r['experiment']} {r['stack']} {r['file_set']} {r['pattern'][:3]} {r['access'][:3]} "
                        f"{r['ranks']}" for r in sel], rotation=80, fontsize=6)
    ax.set_ylabel("per-task rate x_tot / t_i [MB/s = 1e6 B/s]")
    ax.set_title("per-task rates over all repetitions (thesis Fig. 5.7)")
    fig.subplots_adjust(bottom=0.45)
    return to_png(fig)


def _fig_mpiio(rows):
    from matplotlib.figure import Figure as MplFigure

    from climio.present.plotting import to_png
    mp = [r for r in rows if r["experiment"] == "mpiio"]
    if not mp:
        return None
    groups = sorted({(r["stack"], r["nodes"], r["ranks"]) for r in mp})
    bars = [("sequential", "independent", "#d62728"), ("sequential", "collective", "#e377c2"),
            ("striding", "independent", "#1f77b4"), ("striding", "collective", "#17becf")]
    fig = MplFigure(figsize=(max(7.5, 0.8 * len(groups)), 4.5))
    ax = fig.add_subplot(1, 1, 1)
    w = 0.2
    for k, (pat, acc, col) in enumerate(bars):
        ys = []
        for g in groups:
            got = [r["mean_task_MBps"] for r in mp if (r["stack"], r["nodes"], r["ranks"]) == g
                   and r["pattern"] == pat and r["access"] == acc]
            ys.append(got[0] if got else 0)
        ax.bar([i + (k - 1.5) * w for i in range(len(groups))], ys, w, color=col, label=f"{pat} {acc}")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{s}\n{n} node, {t} tasks" for s, n, t in groups], fontsize=7)
    ax.set_ylabel("read rate [MB/s = 1e6 B/s]\nbytes / mean task time")
    ax.set_title("one shared file through MPI-IO (thesis Fig. 5.8)")
    ax.legend(fontsize=7)
    return to_png(fig)


def _config_table(rows) -> Table:
    body = []
    for r in rows:
        q = r["per_task"]
        body.append([r["experiment"], r["stack"], r["file_set"], r["pattern"], r["access"], size(r["buffer_bytes"]),
                     r["ranks"], r["nodes"], r["tasks_per_node"], r["reps"], size(r["bytes"]),
                     num(r["mean_task_MBps"]), num(r["slowest_MBps"]),
                     " / ".join(num(q.get(k)) for k in ("min", "q1", "median", "q3", "max")) if q else "—",
                     f"{r['cold_reps']}/{r['reps']}", "yes" if r["verified"] else "MISMATCH",
                     ", ".join(f"{k}={v}" for k, v in sorted(r["hints"].items())[:4]) or "—"])
    return Table(["experiment", "stack", "file set", "pattern", "access", "buffer", "tasks", "nodes", "tasks/node",
                  "reps", "bytes", "bytes / mean task [MB/s]", "bytes / slowest task [MB/s]",
                  "per-task MB/s min / q1 / median / q3 / max", "cold reps", "verified", "hints in effect"], body,
                 row_classes=["" if r["verified"] else "error" for r in rows])


def parallel_read_section(records) -> Section:
    s = summarise(records)
    rows = s["configurations"]
    sec = Section(f"study-{STUDY}", TITLE)
    sec.add(Paragraph("Rates are MB/s (1e6 B/s). Each configuration reports both aggregate rates: total bytes / mean "
                      "task time (the thesis's) and total bytes / slowest task (the honest one); a task's time is its "
                      "open + read + close. Every repetition starts with each rank evicting its own byte ranges, "
                      "checked with mincore."))
    if s["nodes"] <= 1:
        sec.add(Note(f"All records come from one node ({s['max_ranks']} tasks at most): the multi-node findings "
                     "(F5, F6, the multi-node halves of F9 and F11) are not measurable here.", warn=False))
    sec.add(Figure(lambda: _fig_rate_vs_tasks(rows, "tasks"), "rate vs tasks, experiment A",
                   "Experiment A: how the aggregate read rate changes with concurrent tasks per stack, file set and "
                   "buffer (bars: min to max of the per-task rates; thesis Figs 5.4/5.5)."),
            Figure(lambda: _fig_rate_vs_tasks(rows, "tasks", by_nodes=True), "rate vs nodes",
                   "How the aggregate read rate changes with nodes per stack, file set and buffer (bars: min to "
                   "max of the per-task rates; thesis Fig. 5.6)."),
            Figure(lambda: _fig_rate_vs_tasks(rows, "dask"), "rate vs Dask workers",
                   "xarray + Dask: how the aggregate read rate changes with workers (per-task times "
                   "from Dask's task stream)."),
            Figure(lambda: _fig_boxes(rows), "per-task rate box plots", "How evenly the tasks of each configuration "
                   "read: the spread of the per-task rates over every repetition (thesis Fig. 5.7)."),
            Figure(lambda: _fig_mpiio(rows), "MPI-IO bars", "Experiment B: which MPI-IO access (sequential or "
                   "striding, independent or collective) reads one shared file fastest (thesis Fig. 5.8)."))
    sec.add(Table(["finding", "thesis claim", "verdict", "measured here"],
                  [[f, c, v, e] for f, c, v, e in s["findings"]], caption="Chapter 5 findings", numeric=False))
    sec.add(Details("Configurations", [_config_table(rows)]))
    sec.findings = findings(records)
    return sec


def findings(records) -> list:
    s = summarise(records)
    out = []
    best = max((r for r in s["configurations"]), key=lambda r: r["mean_task_MBps"], default=None)
    if best:
        out.append(Finding(STUDY, f"fastest parallel read: {best['experiment']} {best['stack']} {best['file_set']} "
                                  f"{best['ranks']} tasks at {best['mean_task_MBps']:.0f} MB/s (bytes / mean task), "
                                  f"{best['slowest_MBps']:.0f} MB/s (bytes / slowest task)"))
    for fid, claim, verdict, ev in s["findings"]:
        out.append(Finding(STUDY, f"{fid} {claim}: {ev}" if ev else f"{fid} {claim}", verdict))
    return out


__all__ = ["parallel_read_section", "findings", "configurations"]


def key_figure(records):
    """The study's key plot for the report's first screen: aggregate rate vs concurrent tasks."""
    rows = summarise(records)["configurations"]
    exp = "tasks" if any(r["experiment"] == "tasks" for r in rows) else next((r["experiment"] for r in rows), None)
    if exp is None:
        return None
    return Figure(lambda: _fig_rate_vs_tasks(rows, exp), f"aggregate read rate vs tasks ({exp})",
                  "How the aggregate read rate grows (or not) with concurrent tasks (bars: min to max of the per-task rates; x: bytes / slowest task).")
