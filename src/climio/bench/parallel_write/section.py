"""The parallel-write section: bandwidth vs writers (benchio), phase times (MOM5), per-rank balance
(ROMS), the parallel-vs-serial ratio, the tuning sweep, the load test and selective writing."""

from . import parallel_write_figures as figs
from .html import e, figure, num, plural, section, size, table
from .parallel_write_summary import STUDY, aggregate_instances, complete, configurations, parallel_vs_serial, sweep_summary


def _hints_text(backend, h) -> str:
    if backend == "netcdf4":
        return "not reported (netCDF-C has no call for them)"
    keys = ("cb_nodes", "cb_buffer_size", "cb_config_list", "romio_cb_write", "romio_ds_write", "striping_factor",
            "striping_unit")
    shown = [f"{k}={h[k]}" for k in keys if k in h]
    return ", ".join(shown) if shown else ("none reported" if not h else f"{len(h)} other keys")


def _config_table(rows) -> str:
    body = []
    for r in rows:
        ver = {True: "yes", False: "MISMATCH", None: "not checked"}[r["verified"]]
        body.append([r["mode"], r["backend"], r["strategy"], r["ranks"], r["writers"], r["files"], size(r["bytes"]),
                     r["reps"], num(r["min_MBps"]), num(r["median_MBps"]), num(r["max_MBps"]),
                     f"{num(r['mean_MBps'])} ± {num(r['std_MBps'])}", num(r["mean_task_MBps"]),
                     f"{r['imbalance']:.2f}", ver, _hints_text(r["backend"], r["hints"])])
    return table(["mode", "backend", "strategy", "ranks", "writers", "files", "bytes", "reps", "min MB/s", "median",
                  "max", "mean ± std", "bytes / mean task time", "max/mean rank time", "verified",
                  "hints in effect"], body, cls="pw-table")


def _phase_table(rows) -> str:
    body = []
    for r in rows:
        cells = [r["mode"], r["backend"], r["strategy"], r["ranks"]]
        for ph in ("open", "define", "gather", "write", "fsync", "close"):
            st = r["phases"].get(ph)
            cells.append(f"{num(st['min'])} / {num(st['mean'])} / {num(st['max'])}" if st else "—")
        body.append(cells)
    return table(["mode", "backend", "strategy", "ranks", "open s (min/mean/max)", "define", "gather", "write",
                  "fsync", "close"], body)


def _select_table(rows) -> str:
    body = []
    for r in rows:
        s = r["select"]
        if not s:
            continue
        errs = max((v.get("max_error") or 0.0) for v in s.get("per_var", {}).values()) if s.get("per_var") else None
        body.append([r["backend"], r["strategy"], r["ranks"], num(s["threshold"]), s["candidates"], s["skipped"],
                     size(s["bytes_saved"]), num(errs)])
    if not body:
        return ""
    return ("<h3>Selective writing (ROMS report)</h3><p>A 3-D record is skipped when its RMS change since the last "
            "written record is below the threshold; a reader reconstructs it by persistence. The error is the largest "
            "RMS difference between a reconstructed and the true field.</p>"
            + table(["backend", "strategy", "ranks", "threshold", "3-D records", "skipped", "bytes saved",
                     "max reconstruction error (RMS)"], body))


def _sweep_block(records) -> str:
    s = sweep_summary(records)
    if not s["rows"]:
        return ""
    body = [[r["backend"], r["role"], "x".join(map(str, r["io_layout"])), r["writers"], r["cb_nodes"] or "—",
             r["cb_nodes_in_effect"] or "—", r["stripe_count"] or "—", num(r["median_MBps"]), num(r["min_MBps"]),
             num(r["max_MBps"]), "yes" if r["verified"] else "MISMATCH"] for r in s["rows"]]
    best = "".join(f"<li><b>{e(b)}</b>: io_layout {e('x'.join(map(str, v['io_layout'])))}, cb_nodes {e(v['cb_nodes'])} "
                   f"(in effect {e(v['cb_nodes_in_effect'])}): {num(v['median_MBps'])} MB/s, "
                   f"<b>{v['speedup']:.2f}×</b> the serial single-file write ({num(v['baseline_MBps'])} MB/s)</li>"
                   for b, v in s["best"].items())
    return ("<h3>Tuning sweep (MOM5 paper, section 4.2)</h3>"
            + table(["backend", "role", "io_layout", "writers", "cb_nodes", "in effect", "stripes", "median MB/s", "min",
                     "max", "verified"], body) + (f"<ul>{best}</ul>" if best else ""))


def _load_block(records) -> str:
    agg = aggregate_instances(records)
    if not agg:
        return ""
    body = [[a["backend"], a["strategy"], a["instances"], a["rep"], size(a["bytes"]), num(a["span_s"]),
             num(a["aggregate_MBps"]), ", ".join(num(x) for x in a["per_instance_MBps"])] for a in agg]
    return ("<h3>Load test (benchio Fig. 14)</h3><p>Instances run at once, each writing its own files; aggregate = all "
            "bytes / (last end − first start) of the same repetition across instances (wall clock).</p>"
            + table(["backend", "strategy", "instances", "rep", "bytes", "span s", "aggregate MB/s",
                     "per instance MB/s"], body))


def _stack_note(recs) -> str:
    mpi = sorted({str(r["params"].get("mpi_library", "?")) for r in recs})
    io = sorted({str(r["params"].get("mpi_io", "default")) for r in recs})
    libs = sorted({str(r["params"].get("library", "?")) for r in recs})
    note = ""
    if any(m.startswith("Open MPI v4") for m in mpi):
        note = (" Open MPI 4's MPI_File_get_info returns the hints it was given rather than those in effect, so "
                "the hints column echoes the request; its default MPI-IO (OMPIO) ignores ROMIO hints such as "
                "cb_nodes unless --mpi-io romio is given.")
    return (f"<p>MPI: {e('; '.join(mpi))}. MPI-IO component: {e(', '.join(io))}. Libraries: {e(', '.join(libs))}."
            f"{e(note)}</p>")


@section(STUDY)
def parallel_write_section(records, ctx) -> str:
    rows = configurations(records)
    recs = [r for r in records if r.get("study") == STUDY]
    foreign = [r for r in recs if not complete(r)]
    recs = [r for r in recs if complete(r)]
    bad = sum(1 for r in recs if r["status"] != "ok")
    parts = [f'<section id="study-{STUDY}"><h2>Study: parallel-write — benchio, FMS/MOM5 and ROMS output over '
             f"MPI-IO, HDF5, netCDF-4 and PnetCDF</h2>",
             f"<p>{plural(len(recs), 'record')} ({bad} not ok) in {plural(len(rows), 'configuration')}. "
             "Bandwidth is MB/s = 10<sup>6</sup> B/s of payload bytes over the time from the first rank's first phase "
             "to the last rank's close; writes end in the page cache unless fsync was asked for (see each record's "
             "cache.method). Phase times are per rank; min/mean/max are over ranks.</p>",
             _stack_note(recs)]
    if foreign:
        parts.append(f'<p class="warn">{plural(len(foreign), "record")} of this study lack the parameters of '
                     "climio-pario-write (mode, backend, strategy, ranks, bytes, rate) and are not shown.</p>")
    for mode in ("benchio", "model"):
        if any(r["mode"] == mode for r in rows):
            parts.append(figure(lambda mode=mode: figs.bandwidth_vs_writers(rows, mode), f"{mode} bandwidth",
                                f"{mode}: write bandwidth vs ranks per backend and strategy."))
            parts.append(figure(lambda mode=mode: figs.phase_times(rows, mode), f"{mode} phases",
                                f"{mode}: time of each phase (slowest rank) at the largest rank count."))
    if rows:
        parts.append(_config_table(rows))
        ratios = parallel_vs_serial(rows)
        if ratios:
            parts.append("<h3>Parallel vs serial gather</h3>" + table(
                ["mode", "backend", "ranks", "best parallel strategy", "MB/s", "serial MB/s", "ratio"],
                [[x["mode"], x["backend"], x["ranks"], x["best"], num(x["best_MBps"]), num(x["serial_MBps"]),
                  f"{x['ratio']:.2f}×"] for x in ratios]))
        parts.append("<h3>Phase times per rank</h3>" + _phase_table(rows))
        parts.append(figure(lambda: figs.rank_imbalance(rows), "per-rank time",
                            "Per-rank total time of the most imbalanced configurations."))
        parts.append(_select_table(rows))
    parts += [_sweep_block(recs), _load_block(recs), "</section>"]
    return "\n".join(p for p in parts if p)
