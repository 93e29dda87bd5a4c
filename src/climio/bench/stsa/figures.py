"""Figs 6.3-6.5 equivalents from summary rows, as PNG bytes (Agg, no pyplot)."""

import math

from matplotlib.figure import Figure

from climio.present.plotting import COLOURS, MARKERS, to_png

IO_COLOUR, CPU_COLOUR = "#9467bd", "#1f77b4"   # the thesis's purple (I/O only) and blue (with STSA)


def _layouts(rows):
    seen = []
    for r in rows:
        if r["layout"] not in seen:
            seen.append(r["layout"])
    return seen


def job_wall_by_workers(rows) -> bytes:
    """Fig. 6.3: job wall time against workers, one panel per layout, I/O only and with spectra."""
    lays = _layouts(rows)
    fig = Figure(figsize=(3.2 * max(1, len(lays)), 3.6))
    axs = fig.subplots(1, max(1, len(lays)), squeeze=False)[0]
    for ax, lay in zip(axs, lays):
        for mode, colour, label in (("io", IO_COLOUR, "I/O only"), ("cpu", CPU_COLOUR, "I/O + spectra")):
            rs = sorted((r for r in rows if r["layout"] == lay and r["mode"] == mode), key=lambda r: r["workers"])
            if rs:
                ax.errorbar([r["workers"] for r in rs], [r["job"].mean for r in rs], yerr=[r["job"].std for r in rs],
                            color=colour, marker="o", capsize=3, label=label)
        ax.set_title(lay, fontsize=9)
        ax.set_xlabel("workers")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    axs[0].set_ylabel("job wall time [s]")
    axs[0].legend(fontsize=8)
    return to_png(fig, tight=True)


def task_wall_cpu(rows) -> bytes:
    """Fig. 6.4: mean per-task wall and CPU time (read and compute), per layout, mode and workers."""
    fig = Figure(figsize=(max(6.0, 0.55 * len(rows) + 2), 4.2))
    ax = fig.subplots()
    x = list(range(len(rows)))
    w = 0.38
    for i, r in enumerate(rows):
        colour = IO_COLOUR if r["mode"] == "io" else CPU_COLOUR
        ax.bar(i - w / 2, r["task_wall"].mean, w, color=colour, yerr=r["task_wall"].std, capsize=2)
        ax.bar(i + w / 2, r["task_cpu"].mean, w, color=colour, alpha=0.45, hatch="//")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['layout']}\n{r['test']} {r['workers']}w" for r in rows], fontsize=7, rotation=60)
    ax.set_ylabel("per-task time [s]")
    ax.set_yscale("log")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=IO_COLOUR, label="I/O only: wall"), Patch(color=IO_COLOUR, alpha=0.45, label="I/O only: CPU"),
                       Patch(color=CPU_COLOUR, label="with spectra: wall"),
                       Patch(color=CPU_COLOUR, alpha=0.45, label="with spectra: CPU")], fontsize=7, ncol=2)
    return to_png(fig, tight=True)


def job_vs_task(rows) -> bytes:
    """Fig. 6.5: job wall against mean task wall (95% confidence intervals), per layout; marker = workers."""
    fig = Figure(figsize=(6.5, 4.6))
    ax = fig.subplots()
    lays = _layouts(rows)
    workers = sorted({r["workers"] for r in rows})
    for r in rows:
        c = COLOURS[lays.index(r["layout"]) % len(COLOURS)]
        m = MARKERS[workers.index(r["workers"]) % len(MARKERS)]
        tw, jw = r["task_wall"], r["job"]
        xerr = 1.96 * tw.std / math.sqrt(tw.n) if tw.n > 1 else 0
        yerr = 1.96 * jw.std / math.sqrt(jw.n) if jw.n > 1 else 0
        ax.errorbar(tw.mean, jw.mean, xerr=xerr, yerr=yerr, color=c, marker=m, linestyle="none",
                    mfc="none" if r["mode"] == "io" else c, capsize=2)
    for i, lay in enumerate(lays):
        ax.plot([], [], color=COLOURS[i % len(COLOURS)], marker="s", linestyle="none", label=lay)
    for i, nw in enumerate(workers):
        ax.plot([], [], color="black", marker=MARKERS[i % len(MARKERS)], linestyle="none", label=f"{nw} worker(s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("mean task wall time [s] (open marker: I/O only)")
    ax.set_ylabel("job wall time [s]")
    ax.legend(fontsize=7, ncol=2)
    return to_png(fig, tight=True)
