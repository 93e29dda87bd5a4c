"""Figures of a trace as PNG bytes (matplotlib Agg through climio.present.plotting, no pyplot).

    flow(facts)            the call-path flow across layers, as MOM5 Figs 10-12: a box per function
                           (max time of one rank, number of ranks), an arrow per parent -> child path
    ranks(facts)           per-rank time of the main function of each layer (MOM5 Fig. 13)
    size_histogram(entry)  a file's requests in Darshan's size buckets, reads and writes
    timeline(entry, units) a file's accesses: offset vs time, one colour per rank
    io_share(facts)        how much of the run's process time each traced layer took (own time),
                           against the time outside traced I/O: the trace report's headline figure

Each returns None when there is nothing to draw.
"""

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import FuncFormatter

from climio.present.plotting import COLOURS as _COLOURS, to_png
from climio.base.units import format_size
from .analysis import TRACE_LAYER_ORDER, SIZE_BUCKETS

LAYER_TITLES = {"netcdf": "netCDF", "hdf5": "HDF5", "mpiio": "MPI-IO", "stdio": "stdio", "posix": "POSIX / system I/O"}
LAYER_COLOURS = {"netcdf": "#d8e8f6", "hdf5": "#e3f1df", "mpiio": "#fbe5cf", "stdio": "#efe3f3", "posix": "#f0f0f0"}
FLOW_NODES_PER_LAYER = 7      # the largest functions of each layer by max rank time
FLOW_MIN_SHARE = 0.01         # paths below this share of the largest one are omitted, as in MOM5


def _t(s) -> str:
    return f"{s:.3g} s"


def flow_selection(facts):
    """(nodes shown, edges shown, edges omitted) of the flow figure."""
    nodes, edges = facts["flow"]["nodes"], facts["flow"]["edges"]
    top = max([n["max_rank_time_s"] for n in nodes] + [0.0])
    keep = set()
    for layer in TRACE_LAYER_ORDER:
        ln = sorted((n for n in nodes if n["layer"] == layer), key=lambda n: -n["max_rank_time_s"])
        keep |= {n["id"] for n in ln[:FLOW_NODES_PER_LAYER] if n["max_rank_time_s"] >= FLOW_MIN_SHARE * top}
    shown = [e for e in edges if e["parent"] in keep and e["child"] in keep
             and e["max_rank_time_s"] >= FLOW_MIN_SHARE * top]
    return [n for n in nodes if n["id"] in keep], shown, len(edges) - len(shown)


def flow(facts):
    nodes, edges, _ = flow_selection(facts)
    if not nodes:
        return None
    layers = [l for l in TRACE_LAYER_ORDER if any(n["layer"] == l for n in nodes)]
    width = max(len([n for n in nodes if n["layer"] == l]) for l in layers)
    fig = Figure(figsize=(max(7.0, 2.35 * width + 1.6), 1.55 * len(layers) + 0.9))
    ax = fig.add_axes([0, 0, 1, 1 - 0.55 / fig.get_figheight()])
    ax.set_xlim(-1.3, width + 0.05)
    ax.set_ylim(-len(layers) + 0.35, 0.65)
    ax.axis("off")
    pos, bw, bh = {}, 0.86, 0.5
    for row, layer in enumerate(layers):
        y = -row
        ax.axhspan(y - 0.45, y + 0.45, color=LAYER_COLOURS[layer], alpha=0.45, zorder=0)
        ax.text(-1.25, y, LAYER_TITLES[layer], va="center", ha="left", fontsize=10, fontweight="bold")
        ln = sorted((n for n in nodes if n["layer"] == layer), key=lambda n: -n["max_rank_time_s"])
        # Below the first row, a box sits under its callers (time-weighted mean x of its parents
        # already placed), which keeps arrows short and uncrossed; boxes without one go last.
        def under(n):
            w = [(pos[e["parent"]][0], e["max_rank_time_s"]) for e in edges
                 if e["child"] == n["id"] and e["parent"] in pos]
            tot = sum(t for _, t in w)
            return sum(x * t for x, t in w) / tot if tot > 0 else (sum(x for x, _ in w) / len(w) if w else 1e9)
        if row:
            ln.sort(key=under)
            xs = _spread([min(under(n), width - 0.5) for n in ln], width)
        else:
            xs = [(width - len(ln)) / 2 + i + 0.5 for i in range(len(ln))]
        for n, x in zip(ln, xs):
            pos[n["id"]] = (x, y)
            ax.add_patch(FancyBboxPatch((x - bw / 2, y - bh / 2), bw, bh, boxstyle="round,pad=0.02",
                                        facecolor="white", edgecolor="#444", linewidth=1, zorder=3))
            name = n["function"] if len(n["function"]) <= 24 else n["function"][:23] + "…"
            ax.text(x, y + 0.08, name, ha="center", va="center", fontsize=7.5, zorder=4, family="monospace")
            ax.text(x, y - 0.12, f"{_t(n['max_rank_time_s'])} [{n['ranks']}]", ha="center", va="center",
                    fontsize=7.5, zorder=4)
    top = max([e["max_rank_time_s"] for e in edges] + [1e-30])
    for e in edges:
        (x1, y1), (x2, y2) = pos[e["parent"]], pos[e["child"]]
        same = y1 == y2
        start = (x1, y1 - bh / 2) if not same else (x1, y1 + bh / 2)
        end = (x2, y2 + bh / 2) if not same else (x2, y2 + bh / 2)
        lw = 0.8 + 3.2 * e["max_rank_time_s"] / top
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, linewidth=lw, color="#555",
                                     connectionstyle="arc3,rad=-0.5" if same else "arc3,rad=0", zorder=2,
                                     shrinkA=1, shrinkB=1))
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + (0.32 if same else 0)
        ax.text(mx, my, f"{_t(e['max_rank_time_s'])} [{e['ranks']}]", fontsize=7, ha="center", va="center",
                zorder=5, bbox=dict(boxstyle="round,pad=0.15", facecolor="#ffffe8", edgecolor="none", alpha=0.9))
    fig.suptitle("Call-path flow. Box: function, max time of one rank [ranks calling].\n"
                 "Arrow: calls from parent to child, max time of one rank in them [ranks].", fontsize=9.5, x=0.01,
                 ha="left")
    return to_png(fig)


def _spread(desired, width):
    """x positions as close to `desired` (sorted) as boxes one unit apart inside [0.5, width - 0.5] allow."""
    xs, prev = [], -1e9
    for d in desired:
        prev = max(d, prev + 1)
        xs.append(prev)
    shift = max(0.0, xs[-1] - (width - 0.5))
    out, prev = [], -1e9
    for x in xs:
        prev = max(x - shift, prev + 1, 0.5)
        out.append(prev)
    return out


def ranks(facts):
    """One bar group per rank: the main (largest) function of each layer."""
    units = facts["ranks"]["units"]
    main, seen = [], set()
    for m in facts["ranks"]["main"]:
        if m["layer"] not in seen:
            seen.add(m["layer"])
            main.append(m)
    if not main or not units:
        return None
    n = len(units)
    fig = Figure(figsize=(min(16, max(6.5, 0.35 * n * len(main) + 2.5)), 4.0))
    ax = fig.add_axes([0.13, 0.22, 0.55, 0.68])
    w = 0.8 / len(main)
    for j, m in enumerate(main):
        xs = [i + (j - (len(main) - 1) / 2) * w for i in range(n)]
        ys = [t or 0.0 for t in m["per_rank_s"]]
        label = f"{m['layer']}: {m['function']}"
        if n <= 64:
            ax.bar(xs, ys, width=w, color=_COLOURS[j % len(_COLOURS)], label=label)
        else:
            ax.plot(range(n), ys, marker=".", linestyle="none", color=_COLOURS[j % len(_COLOURS)], label=label)
    step = max(1, n // 24)
    ax.set_xticks(range(0, n, step))
    ax.set_xticklabels([units[i] for i in range(0, n, step)], rotation=60, fontsize=8, ha="right")
    ax.set_ylabel("time in the function [s]")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.suptitle("Time per rank of the main function of each layer (a rank that never calls it: 0)",
                 fontsize=10, x=0.02, ha="left")
    return to_png(fig)


def size_histogram(entry):
    acc = [a for a in entry["access"] if a["layer"] == entry.get("timeline_layer")]
    if not acc:
        return None
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.add_axes([0.1, 0.25, 0.86, 0.62])
    w = 0.8 / len(acc)
    for j, a in enumerate(acc):
        xs = [i + (j - (len(acc) - 1) / 2) * w for i in range(len(SIZE_BUCKETS))]
        ax.bar(xs, [a["histogram"][b] for b in SIZE_BUCKETS], width=w, label=f"{a['kind']}s",
               color=_COLOURS[0 if a["kind"] == "read" else 1])
    ax.set_xticks(range(len(SIZE_BUCKETS)))
    ax.set_xticklabels(SIZE_BUCKETS, rotation=30, fontsize=8)
    ax.set_xlabel("request size (B; K = KiB, M = MiB, G = GiB; Darshan's buckets)")
    ax.set_ylabel("requests")
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(f"Request sizes at the {entry['timeline_layer']} layer", fontsize=10, loc="left")
    return to_png(fig)


def timeline(entry, units=None):
    """`units`: the rank labels (facts["ranks"]["units"]) the timeline's rank numbers index."""
    tl = entry.get("timeline")
    if not tl or not tl["t_s"]:
        return None
    fig = Figure(figsize=(7.5, 3.6))
    ax = fig.add_axes([0.13, 0.15, 0.7, 0.72])
    ranks = sorted(set(tl["rank"]))
    many = len(ranks) > len(_COLOURS)
    for kind, marker in (("read", "o"), ("write", "s")):
        for r in ranks:
            pts = [i for i, (k, rr) in enumerate(zip(tl["kind"], tl["rank"])) if k == kind and rr == r]
            if not pts:
                continue
            c = _COLOURS[r % len(_COLOURS)] if not many else "#1f77b4" if kind == "read" else "#ff7f0e"
            t = [tl["t_s"][i] for i in pts]
            off = [tl["offset"][i] for i in pts]
            ax.hlines(off, t, [tl["t_s"][i] + tl["dur_s"][i] for i in pts], color=c, linewidth=2)
            ax.plot(t, off, marker=marker, markersize=3, linestyle="none", color=c)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_size(max(v, 0))))
    ax.set_xlabel("time since the first traced call [s]")
    ax.set_ylabel("file offset")
    ax.grid(True, alpha=0.3)
    handles = [Line2D([], [], marker="o", linestyle="none", color="grey", label="read"),
               Line2D([], [], marker="s", linestyle="none", color="grey", label="write")]
    if not many:
        handles += [Line2D([], [], color=_COLOURS[r % len(_COLOURS)], linewidth=2, label=units[r] if units else f"unit {r}") for r in ranks]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False)
    note = " (sampled)" if tl.get("sampled") else ""
    ax.set_title(f"Accesses at the {entry['timeline_layer']} layer: offset vs time{note}", fontsize=10, loc="left")
    return to_png(fig)


def io_share(facts):
    """Horizontal bars: the process time outside traced I/O and each layer's own (exclusive) time,
    summed over the processes, labelled with their share of the run."""
    tr = facts["trace"]
    run = tr.get("process_time_s") or 0.0
    layers = [l for l in facts.get("layers", []) if l.get("time_excl_s")]
    if run <= 0:
        return None
    io = tr.get("io_time_s") or 0.0
    rows = [("not traced I/O\n(computation, other)", max(run - io, 0.0), "#bbbbbb")]
    rows += [(LAYER_TITLES.get(l["layer"], l["layer"]), l["time_excl_s"], _COLOURS[i % len(_COLOURS)])
             for i, l in enumerate(layers)]
    fig = Figure(figsize=(6.6, 1.3 + 0.42 * len(rows)))
    ax = fig.add_subplot(1, 1, 1)
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, [r[1] for r in rows], color=[r[2] for r in rows], height=0.6)
    top = max(r[1] for r in rows) or 1.0
    for y, (_, t, _) in zip(ys, rows):
        ax.text(t + top * 0.01, y, f"{_t(t)} ({100 * t / run:.1f}% of the run)", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=8.5)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("time [s], summed over the processes (own time of each layer)")
    ax.set_title(f"Traced I/O is {100 * io / run:.1f}% of the run's {_t(run)} process time", fontsize=10, loc="left")
    ax.grid(True, axis="x", alpha=0.3)
    return to_png(fig, tight=True)
