"""`climio tune write`: the MOM5 paper's tuning procedure (section 4.2) on the user's platform.

Model-output mode, shared file, swept over io_layout (I/O domains, each gathered to one I/O
rank) x MPI-IO aggregators (the `cb_nodes` hint) x Lustre stripe count (where `lfs` exists)
x backend; the baseline is the serial single-file write (everything gathered to rank 0), as
the paper's speed-ups are. The best configuration is the one with the highest median
bandwidth over its repetitions.

The aggregators actually used are read back from the hints in effect: ROMIO caps cb_nodes at
the stripe count and the process count (the paper's `real_aggr`), so the table shows both.
"""

from dataclasses import replace

from climio.base.errors import InputError
from . import Grid
from .summary import SWEEP, sweep_summary


def base_grid(ranks: int, preset="full", **values) -> Grid:
    """The model-output grid `climio tune write` sweeps around: `values` are ParallelWrite Grid options
    (backends, grid, nt, decomposition, hint, hints_file, reps, hostfile, launcher, timeout, mpi_io)."""
    from . import build_grid
    return build_grid(preset, mode="model", ranks=str(ranks), strategies="shared",
                      **{k: v for k, v in values.items() if v is not None})


def divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def decomposition_of(ranks: int) -> list:
    """MPI_Dims_create(ranks, 2): the most square px x py with px >= py."""
    best = (ranks, 1)
    for py in range(1, int(ranks ** 0.5) + 1):
        if ranks % py == 0:
            best = (ranks // py, py)
    return list(best)


def io_layouts(decomposition) -> list:
    """Every io_layout that divides the decomposition (the paper's iox x ioy grid), excluding 1x1
    (the serial baseline) unless it is the only one."""
    px, py = decomposition
    out = [[ix, iy] for ix in divisors(px) for iy in divisors(py) if (ix, iy) != (1, 1)]
    return out or [[1, 1]]


def aggregator_counts(writers: int) -> list:
    """1, 2, 4, ... up to the number of writing ranks."""
    out, n = [], 1
    while n < writers:
        out.append(n)
        n *= 2
    return out + [writers]


def sweep_grids(base: Grid, ranks: int, stripe_counts=(None,)) -> list:
    """(label, Grid) for the baseline and every point of the sweep."""
    dec = base.decomposition or decomposition_of(ranks)
    if dec[0] * dec[1] != ranks:
        raise InputError(f"--decomposition {dec[0]},{dec[1]} does not use {ranks} ranks")
    if base.modes != ["model"]:
        raise InputError("tune write sweeps model-output grids: build the base grid with mode=\"model\"")
    common = dict(ranks=[ranks], decomposition=dec, mode="model", modes=["model"])
    grids = [("baseline", replace(base, strategies=["serial"], io_layout=[1, 1],
                                  extra={"sweep": SWEEP, "role": "baseline"}, **common))]
    for lay in io_layouts(dec):
        writers = lay[0] * lay[1]
        for aggr in aggregator_counts(writers):
            for stripe in stripe_counts:
                hints = dict(base.hints, cb_nodes=str(aggr))
                label = f"io_layout {lay[0]}x{lay[1]}, cb_nodes {aggr}" + (f", stripes {stripe}" if stripe else "")
                grids.append((label, replace(base, strategies=["shared"], io_layout=lay, hints=hints,
                                             stripe_count=stripe,
                                             extra={"sweep": SWEEP, "role": "candidate"}, **common)))
    return grids


def run_sweep(run, base: Grid, ranks: int, data_dir, launcher=None, stripe_counts=(None,), say=print,
              progress=True) -> dict:
    """Run the baseline and every point of the sweep (records to run.writer); return sweep_summary.
    `base`: a model-mode grid (ParallelWrite().grid(preset, mode="model", ...)) whose launcher options
    say how to launch, unless `launcher` (a measure.mpi.Launcher) is given."""
    from .run import run_study
    grids = sweep_grids(base, ranks, stripe_counts)
    launcher = launcher or base.mpi_launcher(ranks)
    records = []
    for i, (label, grid) in enumerate(grids, 1):
        say(f"[{i}/{len(grids)}] {label}")
        records += run_study(run, grid, data_dir, launcher, progress=progress, label=f"tune write {i}/{len(grids)}")
    return sweep_summary(records)


def format_table(summary) -> str:
    head = f"{'backend':8} {'role':9} {'io_layout':9} {'cb_nodes':>8} {'in effect':>9} {'stripes':>7} {'median MB/s':>11} {'min':>8} {'max':>8}"
    lines = [head, "-" * len(head)]
    for r in summary["rows"]:
        lay = "x".join(map(str, r["io_layout"])) or "-"
        lines.append(f"{r['backend']:8} {r['role']:9} {lay:9} {str(r['cb_nodes'] or '-'):>8} "
                     f"{str(r['cb_nodes_in_effect'] or '-'):>9} {str(r['stripe_count'] or '-'):>7} "
                     f"{r['median_MBps']:11.1f} {r['min_MBps']:8.1f} {r['max_MBps']:8.1f}")
    for backend, b in summary["best"].items():
        lay = "x".join(map(str, b["io_layout"]))
        lines.append(f"best {backend}: io_layout {lay}, cb_nodes {b['cb_nodes']} (in effect {b['cb_nodes_in_effect'] or 'not reported'})"
                     + (f", stripes {b['stripe_count']}" if b["stripe_count"] else "")
                     + f": {b['median_MBps']:.1f} MB/s, {b['speedup']:.2f}x the serial single-file write "
                     f"({b['baseline_MBps']:.1f} MB/s)")
    return "\n".join(lines)
