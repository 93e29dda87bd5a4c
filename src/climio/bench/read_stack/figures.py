"""Figures of the read-stack study as PNG bytes (matplotlib's Agg canvas; pyplot is never used,
so rendering a report does not touch the caller's backend or open windows).

    rate_vs_buffer(records)   read rate [MB/s] vs buffer size, one panel per pattern (thesis Figs 3.4-3.10)
    wall_vs_cpu(records)      wall and CPU time per buffer size, one small panel per layer (Fig. 3.11)
    syscall_sizes(records)    bytes per read syscall and syscalls per request vs buffer size

Each returns None when the records hold nothing to draw. Units: rates in MB/s = 1e6 B/s, sizes
on log2 axes labelled in B/KiB/MiB/GiB, times in seconds.
"""

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from climio.present.plotting import COLOURS, DNF_MARKER, MARKERS, log2_size_axis, to_png, wall_cpu_legend
from climio.base.units import format_size
from .summary import (CPU, STACK_NAMES, RATE, WALL, group_configs, pattern_sort_key, series_of,
                      syscall_table)

NATIVE = ("c-posix", "c-netcdf")


def series_styles(labels_layers) -> dict:
    """label -> (colour, marker, linestyle): known layers keep their colour in every figure;
    native C layers are solid lines, Python layers dashed."""
    styles, extra = {}, 0
    for label, layer in labels_layers:
        if label in styles:
            continue
        if layer in STACK_NAMES and label == layer:
            i = STACK_NAMES.index(layer)
        else:
            i = len(STACK_NAMES) + extra
            extra += 1
        styles[label] = (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)],
                         "-" if layer in NATIVE else "--")
    return styles


def _x_limits(values):
    lo, hi = min(values), max(values)
    return lo / 2 ** 0.4, hi * 2 ** 0.4


def _finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


# --- (a) read rate vs buffer size ----------------------------------------------------------------

def rate_vs_buffer(records, title=None, patterns=None, width=10.5):
    """Mean read rate with one-std error bars vs buffer size; one panel per pattern (all, or those
    in `patterns`: the report's headline figure draws one), layers overlaid; each repetition as a
    faint dot; dnf configurations as a downward triangle at their bound ("rate < this")."""
    series = series_of(group_configs(records))
    if patterns is not None:
        series = [s for s in series if s.pattern in patterns]
    if not series:
        return None
    patterns = sorted({s.pattern for s in series}, key=pattern_sort_key)
    styles = series_styles((s.label, s.layer) for s in series)
    buffers = [b for s in series for b in s.buffers]
    fig = Figure(figsize=(width, 2.9 * len(patterns) + 1.1))
    axes = fig.subplots(len(patterns), 1, sharex=True, squeeze=False)[:, 0]
    any_dnf = False
    # dnf triangles of different layers often share a bound: spread them a little along x.
    labels = list(dict.fromkeys(s.label for s in series))
    dodge = {l: 2 ** (0.09 * (i - (len(labels) - 1) / 2)) for i, l in enumerate(labels)}
    for ax, pattern in zip(axes, patterns):
        ymax = 0.0
        dnf_pts = []
        for s in (s for s in series if s.pattern == pattern):
            colour, marker, ls = styles[s.label]
            xs, ys, es = [], [], []
            for c in s.configs:
                st = c.stats(RATE)
                if st:
                    xs.append(c.params["buffer_bytes"]); ys.append(st.mean); es.append(st.std)
                    reps = [r["metrics"][RATE] for r in c.ok if _finite(r["metrics"].get(RATE))]
                    ax.plot([c.params["buffer_bytes"]] * len(reps), reps, linestyle="none", marker=".",
                            markersize=3, color=colour, alpha=0.35, zorder=2)
                    ymax = max(ymax, st.mean + st.std, max(reps, default=0))
            if xs:
                ax.errorbar(xs, ys, yerr=es, color=colour, marker=marker, linestyle=ls, markersize=5,
                            linewidth=1.4, capsize=3, elinewidth=1, zorder=3)
            for b, bound in zip(s.buffers, s.bounds()):
                if _finite(bound):
                    dnf_pts.append((b, bound, colour, dodge[s.label]))
        # A bound far above every measured rate says little and would squash the curves: such
        # triangles sit at the top edge with their value written next to them.
        top = ymax * 1.1 if ymax > 0 else max([d[1] for d in dnf_pts] + [1.0]) * 1.1
        off_scale = {}
        for b, bound, colour, shift in dnf_pts:
            any_dnf = True
            y = min(bound, top * 0.96)
            ax.plot([b * shift], [y], marker=DNF_MARKER, markersize=8, color=colour,
                    markerfacecolor="white", markeredgewidth=1.5, linestyle="none", zorder=4, clip_on=False)
            if bound > top * 0.96:
                off_scale[b] = max(off_scale.get(b, 0.0), bound)
        for b, bound in off_scale.items():
            ax.annotate(f"< {bound:.0f}", (b, top * 0.96), xytext=(0, -8), textcoords="offset points",
                        ha="center", va="top", fontsize=7)
        ax.set_title(f"{pattern} reads", loc="left", fontsize=11)
        ax.set_ylabel("read rate [MB/s]")
        ax.set_ylim(0, top)
        ax.grid(True, which="major", alpha=0.3)
    log2_size_axis(axes[-1], "x", *_x_limits(buffers))
    axes[-1].set_xlim(*_x_limits(buffers))
    axes[-1].set_xlabel("buffer size per read request (log2 scale; B, KiB, MiB, GiB)")
    handles = [Line2D([], [], color=styles[l][0], marker=styles[l][1], linestyle=styles[l][2], label=l)
               for l in dict.fromkeys(s.label for s in series)]
    if any_dnf:
        handles.append(Line2D([], [], color="black", marker=DNF_MARKER, markerfacecolor="white",
                              linestyle="none", label="did not finish:\nrate < marker"))
    handles.append(Line2D([], [], color="grey", marker="|", markersize=10, linestyle="none",
                          label="error bar: 1 std\n(dots: repetitions)"))
    right = 1 - 2.1 / width             # room for the legend: about 2.1 in
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(right + 0.005, 0.97), fontsize=9, frameon=False)
    fig.suptitle(title or "Read rate vs buffer size (mean of repetitions; MB/s = 10$^6$ B/s)", x=0.07,
                 ha="left", fontsize=12)
    fig.subplots_adjust(left=0.84 / width, right=right, top=1 - 0.75 / fig.get_figheight(),
                        bottom=0.75 / fig.get_figheight(), hspace=0.3)
    return to_png(fig)


# --- (b) wall vs CPU time ------------------------------------------------------------------------

def wall_vs_cpu(records, pattern="sequential", ncols=4):
    """Mean wall time (dark bars, one-std error bars) and CPU = user + system time (light bars
    in front, narrower) per buffer size; one small panel per layer, shared log time axis.
    CPU close to wall means CPU-bound, CPU far below wall means waiting on I/O (thesis Fig. 3.11).
    Uses `pattern` when present, else the first pattern of the records."""
    all_series = series_of(group_configs(records))
    if not all_series:
        return None
    patterns = sorted({s.pattern for s in all_series}, key=pattern_sort_key)
    chosen = pattern if pattern in patterns else patterns[0]
    series = [s for s in all_series if s.pattern == chosen]
    buffers = sorted({b for s in series for b in s.buffers})
    pos = {b: i for i, b in enumerate(buffers)}
    n = len(series)
    nrows = math.ceil(n / max(1, ncols))
    ncols = math.ceil(n / nrows)  # balanced: 5 panels as 3 + 2, not 4 + 1
    fig = Figure(figsize=(3.4 * ncols + 0.9, 2.7 * nrows + 1.3))
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
    step = max(1, math.ceil(len(buffers) / 8))  # at most ~8 labels per small panel
    lo, hi = math.inf, 0.0
    any_dnf = False
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_visible(False)
            continue
        s = series[i]
        for c in s.configs:
            x = pos[c.params["buffer_bytes"]]
            w, cpu = c.stats(WALL), c.stats(CPU)
            if w and w.mean > 0:
                ax.bar(x, w.mean, width=0.8, color="#333333", zorder=2)
                if w.std > 0:
                    ax.errorbar([x], [w.mean], yerr=[[min(w.std, w.mean * 0.999)], [w.std]], color="#d62728",
                                linewidth=1, capsize=2, zorder=4)
                lo, hi = min(lo, w.mean), max(hi, w.mean + w.std)
            if cpu and cpu.mean > 0:
                ax.bar(x, cpu.mean, width=0.5, color="#a6a6a6", zorder=3)
                lo, hi = min(lo, cpu.mean), max(hi, cpu.mean)
            if c.status == "dnf":
                walls = [r["metrics"].get(WALL) for r in c.dnf if _finite(r["metrics"].get(WALL))]
                if walls:
                    any_dnf = True
                    ax.plot([x], [max(walls)], marker="^", color="#d62728", markersize=7, linestyle="none", zorder=5)
                    lo, hi = min(lo, max(walls)), max(hi, max(walls))
        ax.set_title(s.label, fontsize=10)
        ax.set_xticks(range(0, len(buffers), step))
        ax.set_xticklabels([format_size(b) for b in buffers[::step]], rotation=60, fontsize=8)
        ax.set_xlim(-0.7, len(buffers) - 0.3)
        ax.grid(True, axis="y", which="major", alpha=0.3)
        if i % ncols == 0:
            ax.set_ylabel("time per repetition [s]")
    if hi > 0:
        ax0 = axes.flat[0]
        ax0.set_yscale("log")
        ax0.set_ylim(max(lo, 1e-6) / 2, hi * 2)
    wall_cpu_legend(fig, any_dnf, "did not finish: wall > marker")
    fig.suptitle(f"Wall vs CPU time per repetition, {chosen} reads (x: buffer size per read, B/KiB/MiB/GiB)",
                 x=0.06, ha="left", fontsize=12)
    fig.subplots_adjust(left=0.9 / fig.get_figwidth(), right=0.98, top=1 - 0.55 / fig.get_figheight(),
                        bottom=1.05 / fig.get_figheight(), hspace=0.55, wspace=0.08)
    return to_png(fig)


# --- (c) read syscalls ---------------------------------------------------------------------------

def syscall_sizes(records):
    """Per layer: mean bytes per read syscall (top row) and read syscalls per request (bottom
    row) vs buffer size, one column per pattern. A curve flat at 64 KiB over small buffers is a
    library that always reads at least 64 KiB (the thesis's strace finding for netCDF4-python)."""
    rows = syscall_table(records)
    if not rows:
        return None
    patterns = sorted({r["pattern"] for r in rows}, key=pattern_sort_key)
    labels = list(dict.fromkeys((r["series"], r["layer"]) for r in rows))
    styles = series_styles(labels)
    buffers = [r["buffer_bytes"] for r in rows]
    fig = Figure(figsize=(3.9 * len(patterns) + 3.8, 7.0))
    axes = fig.subplots(2, len(patterns), sharex=True, squeeze=False)
    size_vals, call_vals = [], []
    for j, pattern in enumerate(patterns):
        top, bot = axes[0, j], axes[1, j]
        for label, _layer in labels:
            pts = sorted((r["buffer_bytes"], r["bytes_per_call"], r["calls_per_request"]) for r in rows
                         if r["series"] == label and r["pattern"] == pattern)
            colour, marker, ls = styles[label]
            sz = [(b, v) for b, v, _ in pts if _finite(v) and v > 0]
            cl = [(b, v) for b, _, v in pts if _finite(v) and v > 0]
            if sz:
                top.plot(*zip(*sz), color=colour, marker=marker, linestyle=ls, markersize=4)
                size_vals += [v for _, v in sz]
            if cl:
                bot.plot(*zip(*cl), color=colour, marker=marker, linestyle=ls, markersize=4)
                call_vals += [v for _, v in cl]
        lo, hi = _x_limits(buffers)
        top.plot([lo, hi], [lo, hi], color="grey", linestyle=":", linewidth=1, zorder=1)
        bot.axhline(1.0, color="grey", linestyle=":", linewidth=1, zorder=1)
        top.set_title(f"{pattern} reads", loc="left", fontsize=11)
        for ax in (top, bot):
            ax.grid(True, which="major", alpha=0.3)
        bot.set_yscale("log")
    log2_size_axis(axes[1, 0], "x", *_x_limits(buffers), max_labels=7)
    axes[1, 0].set_xlim(*_x_limits(buffers))
    for ax in axes[1]:
        ax.set_xlabel("buffer size per request\n(log2; B, KiB, MiB, GiB)")
        for lab in ax.get_xticklabels():
            lab.set_rotation(45)
    ylo = min(size_vals + buffers) / 2 ** 0.5
    yhi = max(size_vals + buffers) * 2 ** 0.5
    for ax in axes[0]:
        log2_size_axis(ax, "y", ylo, yhi, max_labels=9)
        ax.set_ylim(ylo, yhi)
    for j in range(1, len(patterns)):
        axes[0, j].yaxis.set_major_formatter(NullFormatter())
    if call_vals:
        clo, chi = min(call_vals + [1.0]) / 2, max(call_vals + [1.0]) * 2
        for ax in axes[1]:
            ax.set_ylim(clo, chi)
        for j in range(1, len(patterns)):
            axes[1, j].yaxis.set_major_formatter(NullFormatter())
    axes[0, 0].set_ylabel("mean bytes per read syscall\n(log2; B, KiB, MiB)")
    axes[1, 0].set_ylabel("read syscalls per request\n(log scale)")
    handles = [Line2D([], [], color=styles[l][0], marker=styles[l][1], linestyle=styles[l][2], label=l)
               for l, _ in labels]
    handles += [Line2D([], [], color="grey", linestyle=":", label="top: syscall = request size\n"
                                                                       "bottom: 1 syscall/request")]
    right = 1 - 2.6 / fig.get_figwidth()
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(right + 0.01, 0.93), fontsize=9, frameon=False)
    tools = sorted({str(r["tool"]) for r in rows if r.get("tool")})
    fig.suptitle("Read system calls on the data file per request (counted with "
                 f"{', '.join(tools) or 'strace'}, untimed pass)", x=0.06, ha="left", fontsize=12)
    fig.subplots_adjust(left=1.2 / fig.get_figwidth(), right=right, top=0.9, bottom=0.15, hspace=0.12,
                        wspace=0.06)
    return to_png(fig)
