"""Plots of STSA spectra in the style of Wheeler & Kiladis (1999) Figs 1-3, as PNG bytes (matplotlib's
Agg canvas through climio.present.plotting.to_png; pyplot is never used), and an HTML page of them.

    wk_figures(spectra) -> {"fig1_raw": png, "fig2_background": png, "fig3_ratio": png}
    hayashi_figures(spectra) -> {"hayashi_power": png}
    html_page(spectra, figures, analysis=None) -> str      one self-contained page (climio.present.render)

The shallow-water dispersion curves (Kelvin, n=1 equatorial Rossby, n=1 inertio-gravity on the
symmetric panels; mixed Rossby-gravity, n=0 eastward and n=2 inertio-gravity on the antisymmetric
ones) are drawn for equivalent depths 12, 25 and 50 m, as in WK99.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from climio.present.plotting import to_png
from .dispersion import ANTISYMMETRIC, SYMMETRIC, WK_DEPTHS, dispersion_curves
from .spectra import HayashiSpectrum, WKSpectra
from .tasks import rows_text

KMAX = 15
FMAX = 0.8
RATIO_LEVELS = (1.1, 1.2, 1.3, 1.4, 1.5, 1.7, 1.9, 2.1, 2.4, 2.7, 3.0)   # NCL wkSpaceTime's Fig. 3 levels
DEPTH_STYLES = {12.0: ":", 25.0: "--", 50.0: "-"}
WAVE_LABELS = {"kelvin": "Kelvin", "er1": "n=1 ER", "ig1": "n=1 IG", "mrg": "MRG", "eig0": "n=0 EIG", "ig2": "n=2 IG"}


def _domain(s: WKSpectra, kmax=KMAX, fmax=FMAX):
    rows, cols = s.plot_domain(fmax, kmax)
    cols = cols & (s.frequency > 0)
    return s.wavenumber[rows], s.frequency[cols], rows, cols


def _log10(a):
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(a)
    out[~np.isfinite(out)] = np.nan
    return out


def _curves(ax, waves, kmax=KMAX, fmax=FMAX) -> None:
    s = np.linspace(-kmax, kmax, 121)
    curves = dispersion_curves(s, WK_DEPTHS, waves)
    for (wave, depth), f in curves.items():
        f = np.where((f > 0) & (f <= fmax), f, np.nan)
        ax.plot(s, f, color="black", linewidth=0.9, linestyle=DEPTH_STYLES.get(depth, "-"))
    for wave in waves:   # label each family once, at its 25 m curve
        f = curves.get((wave, 25.0))
        if f is None:
            continue
        ok = np.flatnonzero(np.isfinite(f) & (f > 0) & (f < fmax * 0.95))
        if ok.size:
            i = ok[len(ok) * 2 // 3]
            ax.text(s[i], f[i], WAVE_LABELS.get(wave, wave), fontsize=7, color="black",
                    bbox={"facecolor": "white", "alpha": 0.6, "linewidth": 0, "pad": 1})


def _frame(ax, title) -> None:
    ax.set_xlim(-KMAX, KMAX)
    ax.set_ylim(0, FMAX)
    ax.axvline(0, color="grey", linewidth=0.6, linestyle="--")
    for period in (3, 6, 30):
        ax.axhline(1.0 / period, color="grey", linewidth=0.5, linestyle=":")
        ax.text(KMAX - 0.3, 1.0 / period, f"{period} d", fontsize=7, color="grey", ha="right", va="bottom")
    ax.set_xlabel("zonal wavenumber (cycles per circle; > 0 eastward)")
    ax.set_ylabel("frequency [cycles per day]")
    ax.set_title(title, fontsize=10)


def _panel(fig, ax, k, f, z, title, waves=None, levels=None, cmap="viridis", label="") -> None:
    zz = np.ma.masked_invalid(z.T)
    if zz.count() == 0:
        ax.text(0.5, 0.5, "no finite values", transform=ax.transAxes, ha="center")
    elif min(zz.shape) < 2:   # a short segment (--ndaywin) leaves one frequency: nothing to contour
        ax.text(0.5, 0.5, f"too few points to draw ({zz.shape[1]} x {zz.shape[0]})", transform=ax.transAxes,
                ha="center")
    else:
        if levels is None:
            lo, hi = np.nanpercentile(z, 2), np.nanmax(z)
            levels = np.linspace(lo, hi if hi > lo else lo + 1, 15)
        cs = ax.contourf(k, f, zz, levels=levels, cmap=cmap, extend="both")
        fig.colorbar(cs, ax=ax, shrink=0.85, label=label)
    if waves:
        _curves(ax, waves)
    _frame(ax, title)


def _legend(fig) -> None:
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color="black", linestyle=DEPTH_STYLES[h], label=f"h = {h:g} m") for h in WK_DEPTHS]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)


def _note(s: WKSpectra) -> str:
    p = s.params
    return (f"{p.get('n_lat', '?')} latitudes, {p.get('n_lon', '?')} longitudes, {p.get('n_time', '?')} steps at "
            f"{p.get('spd', '?')}/day; segments of {p.get('n_day_win', '?')} days, skip {p.get('n_day_skip', '?')}, "
            f"{p.get('n_windows', '?')} windows")


def wk_figures(s: WKSpectra) -> dict:
    """PNG bytes of WK99 Fig. 1 (log10 raw symmetric / antisymmetric power), Fig. 2 (log10
    background) and Fig. 3 (power / background), dispersion curves on Figs 1 and 3."""
    k, f, rows, cols = _domain(s)
    sub = lambda a: np.asarray(a)[np.ix_(rows, cols)]   # noqa: E731
    out = {}
    fig = Figure(figsize=(12, 5.2))
    axs = fig.subplots(1, 2)
    sym, asym = _log10(sub(s.sym)), _log10(sub(s.asym))
    both = np.concatenate([sym[np.isfinite(sym)], asym[np.isfinite(asym)]])
    levels = np.linspace(np.percentile(both, 2), both.max(), 15) if both.size and np.ptp(both) > 0 else None
    _panel(fig, axs[0], k, f, sym, "Symmetric: log10(power)", SYMMETRIC, levels, label="log10 power")
    _panel(fig, axs[1], k, f, asym, "Antisymmetric: log10(power)", ANTISYMMETRIC, levels, label="log10 power")
    fig.suptitle(f"Raw spectra (WK99 Fig. 1 style): {_note(s)}", fontsize=9)
    _legend(fig)
    fig.subplots_adjust(bottom=0.17, top=0.88, wspace=0.25)
    out["fig1_raw"] = to_png(fig)

    fig = Figure(figsize=(6.5, 5.2))
    ax = fig.subplots()
    _panel(fig, ax, k, f, _log10(sub(s.background)), "Background: log10(power)", label="log10 power")
    fig.suptitle("Background spectrum (WK99 Fig. 2 style)", fontsize=9)
    fig.subplots_adjust(bottom=0.12, top=0.88)
    out["fig2_background"] = to_png(fig)

    fig = Figure(figsize=(12, 5.2))
    axs = fig.subplots(1, 2)
    _panel(fig, axs[0], k, f, sub(s.sym_ratio), "Symmetric / background", SYMMETRIC, list(RATIO_LEVELS),
           "Reds", "ratio")
    _panel(fig, axs[1], k, f, sub(s.asym_ratio), "Antisymmetric / background", ANTISYMMETRIC, list(RATIO_LEVELS),
           "Reds", "ratio")
    fig.suptitle(f"Power / background (WK99 Fig. 3 style): {_note(s)}", fontsize=9)
    _legend(fig)
    fig.subplots_adjust(bottom=0.17, top=0.88, wspace=0.25)
    out["fig3_ratio"] = to_png(fig)
    return out


def hayashi_figures(h: HayashiSpectrum, fmax=None) -> dict:
    """log10 Hayashi power on one (wavenumber, frequency) plane, westward at negative wavenumbers,
    and the stationary power per wavenumber."""
    k = np.concatenate([-h.wavenumber[:0:-1], h.wavenumber])
    p = np.concatenate([h.westward[:0:-1], h.eastward], axis=0)   # (k, f)
    fmax = float(h.frequency.max()) if fmax is None else fmax
    cols = h.frequency <= fmax
    kmax = min(KMAX * 2, int(h.wavenumber.max()))
    rows = np.abs(k) <= kmax
    fig = Figure(figsize=(12, 5))
    ax, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.2, 1]})
    z = _log10(p[np.ix_(rows, cols)])
    if np.isfinite(z).any():
        lo, hi = np.nanpercentile(z, 5), np.nanmax(z)
        cs = ax.contourf(k[rows], h.frequency[cols], np.ma.masked_invalid(z.T),
                         levels=np.linspace(lo, hi if hi > lo else lo + 1, 15), cmap="viridis", extend="both")
        fig.colorbar(cs, ax=ax, shrink=0.85, label="log10 power")
    ax.axvline(0, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xlabel("zonal wavenumber (> 0 eastward, < 0 westward)")
    ax.set_ylabel("frequency [cycles per day]")
    ax.set_title("Hayashi (1971) progressive / retrogressive power", fontsize=10)
    ax2.bar(h.wavenumber[1:kmax + 1], h.stationary[1:kmax + 1], color="#1f77b4")
    ax2.set_yscale("log")
    ax2.set_xlabel("zonal wavenumber")
    ax2.set_ylabel("stationary power")
    ax2.set_title("Stationary waves", fontsize=10)
    fig.subplots_adjust(wspace=0.3, bottom=0.12)
    return {"hayashi_power": to_png(fig)}


def figures(spectra) -> dict:
    return wk_figures(spectra) if isinstance(spectra, WKSpectra) else hayashi_figures(spectra)


CAPTIONS = {
    "fig1_raw": "Raw symmetric and antisymmetric power (one 1-2-1 pass in frequency), log10, with the "
                "dispersion curves of equatorial shallow-water waves for equivalent depths 12, 25 and 50 m.",
    "fig2_background": "Background spectrum: banded 1-2-1 passes in wavenumber, then 10 in frequency (NCL's rules).",
    "fig3_ratio": "Power over the background, symmetric (left) and antisymmetric (right): the convectively coupled "
                  "waves are the peaks that follow the shallow-water dispersion curves (contours at NCL's levels "
                  "1.1 ... 3.0).",
    "hayashi_power": "Eastward (k > 0) and westward (k < 0) power averaged over the latitudes, and the "
                     "stationary part.",
}


def io_verdict(analysis) -> str:
    """In words: how much of the tasks' time went to reading, and what would shorten the job."""
    t = analysis.timings()
    read, compute = t["sum_read_wall_s"], t["sum_compute_wall_s"]
    share = read / (read + compute) if read + compute > 0 else None
    rate = t["equivalent_rate_MBps"]
    text = (f"The job took {t['job_wall_s']:.2f} s for {t['n_tasks']} tasks, reading {t['bytes'] / 1e6:.1f} MB"
            + (f" ({rate:.1f} MB/s equivalent)" if rate else "") + ". ")
    if share is None:
        return text + "The tasks recorded no read or compute time."
    text += (f"Reading took {100 * share:.0f}% of the tasks' time ({read:.2f} s reading, {compute:.2f} s computing "
             "spectra, summed over the tasks): ")
    if share >= 0.5:
        return text + ("I/O is the bottleneck; a layout that serves (time, longitude) slabs reads faster "
                       "(`climio advise FILE --var V --read stsa` predicts the gain).")
    return text + "computing the spectra dominates; more workers, not another file layout, would shorten the job."


LEAD_FIGURE = ("fig3_ratio", "hayashi_power")   # the WK diagram with its dispersion curves (or Hayashi's)


def html_page(spectra, pngs: dict, analysis=None, title="climio stsa") -> str:
    """A self-contained HTML page: the verdict (how much of the job was I/O) beside the WK diagram
    with its dispersion curves first, then the other figures, the per-task timings and the parameters."""
    from climio.present import render
    from climio.present.sections import Figure as SFigure
    from climio.present.sections import Lead, Paragraph, ParamList, Section, Table
    key = next((k for k in LEAD_FIGURE if k in pngs), None)
    sec = Section("stsa", "Spectra and timings")
    for name, png in pngs.items():
        if name != key:
            sec.add(SFigure(lambda png=png: png, name, CAPTIONS.get(name, "")))
    params = dict(getattr(spectra, "params", {}) or {})
    if isinstance(spectra, WKSpectra):
        params["segment_variance"] = spectra.segment_variance
    meta, lead_blocks = [], []
    if analysis is not None:
        for k, v in analysis.description.items():
            meta.append((k, ", ".join(map(str, v)) if isinstance(v, list) else str(v)))
        t = analysis.timings()
        meta.append(("ran", analysis.where))
        lead_blocks.append(Paragraph(io_verdict(analysis)))
        lead_blocks.append(Table(["", "wall [s]", "CPU [s]"],
                                 [["reading (sum over tasks)", f"{t['sum_read_wall_s']:.3f}", f"{t['sum_read_cpu_s']:.3f}"],
                                  ["spectra (sum over tasks)", f"{t['sum_compute_wall_s']:.3f}",
                                   f"{t['sum_compute_cpu_s']:.3f}"],
                                  ["the job", f"{t['job_wall_s']:.3f}", "—"]], numeric=False))
        rows = [[r["task"], rows_text(r["rows"]), r["worker"], f"{r['bytes'] / 1e6:.2f}",
                 f"{r['read_wall_s']:.3f}", f"{r['read_cpu_s']:.3f}", f"{r['compute_wall_s']:.3f}",
                 f"{r['compute_cpu_s']:.3f}", f"{r['wall_s']:.3f}"] for r in analysis.tasks]
        sec.add(Table(["task", "latitude rows", "worker", "MB read", "read wall [s]", "read CPU [s]",
                       "compute wall [s]", "compute CPU [s]", "task wall [s]"], rows,
                      caption="Per-task timings: read and compute timed separately inside each task."))
    else:
        lead_blocks.append(Paragraph("No task timings were given: the spectra only."))
    if params:
        sec.add(ParamList("Parameters", [(k, str(v)) for k, v in params.items()]))
    figure = SFigure(lambda: pngs[key], key, CAPTIONS.get(key, "")) if key else None
    lead = Lead("Verdict", lead_blocks, figure)
    return render.page(title, meta, [sec], lead=lead)
