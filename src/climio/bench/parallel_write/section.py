"""The parallel-write section: bandwidth vs writers (benchio), phase times (MOM5), per-rank balance
(ROMS), the parallel-vs-serial ratio, the tuning sweep, the load test and selective writing, as
climio.present.sections objects; and the key findings (best backend per strategy, parallel vs serial)."""

from climio.present.cells import num, plural, size
from climio.present.sections import Figure, Finding, Heading, Note, Paragraph, Section, Table
from climio.base.units import format_size
from . import figures as figs
from .summary import (LATENCY_BYTES, STUDY, aggregate_instances, best_per_strategy, complete, configurations,
                      latency_dominated, parallel_vs_serial, sweep_summary)

TITLE = (f"Study: {STUDY} — benchio, FMS/MOM5 and ROMS output over MPI-IO, HDF5, netCDF-4 and PnetCDF")


def _hints_text(backend, h) -> str:
    if backend == "netcdf4":
        return "not reported (netCDF-C has no call for them)"
    keys = ("cb_nodes", "cb_buffer_size", "cb_config_list", "romio_cb_write", "romio_ds_write", "striping_factor",
            "striping_unit")
    shown = [f"{k}={h[k]}" for k in keys if k in h]
    return ", ".join(shown) if shown else ("none reported" if not h else f"{len(h)} other keys")


def _config_table(rows) -> Table:
    body = []
    for r in rows:
        ver = {True: "yes", False: "MISMATCH", None: "not checked"}[r["verified"]]
        body.append([r["mode"], r["backend"], r["strategy"], r["ranks"], r["writers"], r["files"], size(r["bytes"]),
                     size(r["bytes_per_rank"]) + (" (latency-dominated)" if latency_dominated(r) else ""),
                     r["reps"], num(r["min_MBps"]), num(r["median_MBps"]), num(r["max_MBps"]),
                     f"{num(r['mean_MBps'])} ± {num(r['std_MBps'])}", num(r["mean_task_MBps"]),
                     f"{r['imbalance']:.2f}", ver, _hints_text(r["backend"], r["hints"])])
    return Table(["mode", "backend", "strategy", "ranks", "writers", "files", "bytes", "bytes per rank", "reps",
                  "min MB/s", "median", "max", "mean ± std", "bytes / mean task time", "max/mean rank time",
                  "verified", "hints in effect"], body,
                 row_classes=["error" if r["verified"] is False else "" for r in rows])


def _phase_table(rows) -> Table:
    body = []
    for r in rows:
        cells = [r["mode"], r["backend"], r["strategy"], r["ranks"]]
        for ph in ("open", "define", "gather", "write", "fsync", "close"):
            st = r["phases"].get(ph)
            cells.append(f"{num(st['min'])} / {num(st['mean'])} / {num(st['max'])}" if st else "—")
        body.append(cells)
    return Table(["mode", "backend", "strategy", "ranks", "open s (min/mean/max)", "define", "gather", "write",
                  "fsync", "close"], body)


def _select_blocks(rows) -> list:
    body = []
    for r in rows:
        s = r["select"]
        if not s:
            continue
        errs = max((v.get("max_error") or 0.0) for v in s.get("per_var", {}).values()) if s.get("per_var") else None
        body.append([r["backend"], r["strategy"], r["ranks"], num(s["threshold"]), s["candidates"], s["skipped"],
                     size(s["bytes_saved"]), num(errs)])
    if not body:
        return []
    return [Heading("Selective writing (ROMS report)"),
            Paragraph("A 3-D record is skipped when its RMS change since the last written record is below the "
                      "threshold; a reader reconstructs it by persistence. The error is the largest RMS difference "
                      "between a reconstructed and the true field."),
            Table(["backend", "strategy", "ranks", "threshold", "3-D records", "skipped", "bytes saved",
                   "max reconstruction error (RMS)"], body)]


def _sweep_blocks(records) -> list:
    s = sweep_summary(records)
    if not s["rows"]:
        return []
    body = [[r["backend"], r["role"], "x".join(map(str, r["io_layout"])), r["writers"], r["cb_nodes"] or "—",
             r["cb_nodes_in_effect"] or "—", r["stripe_count"] or "—", num(r["median_MBps"]), num(r["min_MBps"]),
             num(r["max_MBps"]), "yes" if r["verified"] else "MISMATCH"] for r in s["rows"]]
    out = [Heading("Tuning sweep (MOM5 paper, section 4.2)"),
           Table(["backend", "role", "io_layout", "writers", "cb_nodes", "in effect", "stripes", "median MB/s", "min",
                  "max", "verified"], body)]
    best = [[b, "x".join(map(str, v["io_layout"])), v["cb_nodes"], v["cb_nodes_in_effect"] or "not reported",
             v["stripe_count"] or "—", num(v["median_MBps"]), num(v["baseline_MBps"]), f"{v['speedup']:.2f}×"]
            for b, v in s["best"].items()]
    if best:
        out.append(Table(["backend", "best io_layout", "cb_nodes", "in effect", "stripes", "median MB/s",
                          "serial single-file MB/s", "speed-up"], best,
                         caption="Best configuration per backend and its speed-up over the serial single-file write."))
    return out


def _load_blocks(records) -> list:
    agg = aggregate_instances(records)
    if not agg:
        return []
    body = [[a["mode"], a["backend"], a["strategy"], a["instances"], a["rep"], size(a["bytes"]), num(a["span_s"]),
             num(a["aggregate_MBps"]), ", ".join(num(x) for x in a["per_instance_MBps"])] for a in agg]
    return [Heading("Load test (benchio Fig. 14)"),
            Paragraph("Instances run at once, each writing its own files; aggregate = all bytes / (last end − first "
                      "start) of the same repetition across instances (wall clock)."),
            Table(["mode", "backend", "strategy", "instances", "rep", "bytes", "span s", "aggregate MB/s",
                   "per instance MB/s"], body)]


def _stack_note(recs) -> Paragraph:
    mpi = sorted({str(r["params"].get("mpi_library", "?")) for r in recs})
    io = sorted({str(r["params"].get("mpi_io", "default")) for r in recs})
    libs = sorted({str(r["params"].get("library", "?")) for r in recs})
    note = ""
    if any(m.startswith("Open MPI v4") for m in mpi):
        note = (" Open MPI 4's MPI_File_get_info returns the hints it was given rather than those in effect, so "
                "the hints column echoes the request; its default MPI-IO (OMPIO) ignores ROMIO hints such as "
                "cb_nodes unless --mpi-io romio is given.")
    return Paragraph(f"MPI: {'; '.join(mpi)}. MPI-IO component: {', '.join(io)}. Libraries: {', '.join(libs)}.{note}")


def _latency_note(rows):
    small = [r for r in rows if latency_dominated(r)]
    if not small:
        return None
    biggest = max(r["bytes_per_rank"] for r in small)
    every = "Every configuration" if len(small) == len(rows) else plural(len(small), "configuration")
    return Note(f"{every} wrote at most {format_size(biggest)} per rank, below {format_size(LATENCY_BYTES)}: these "
                "rates are latency-dominated (open, define, metadata and the launch's first touch weigh as much as "
                "the data) and are not bandwidth figures of the file system; use --local/--grid for sizes that "
                "decide bandwidth.")


def parallel_write_section(records) -> Section:
    rows = configurations(records)
    recs = [r for r in records if r.get("study") == STUDY]
    foreign = [r for r in recs if not complete(r)]
    recs = [r for r in recs if complete(r)]
    bad = sum(1 for r in recs if r["status"] != "ok")
    sec = Section(f"study-{STUDY}", TITLE)
    sec.add(Paragraph(f"{plural(len(recs), 'record')} ({bad} not ok) in {plural(len(rows), 'configuration')}. "
                      "Bandwidth is MB/s = 10^6 B/s of payload bytes over the time from the first rank's first phase "
                      "to the last rank's close; writes end in the page cache unless fsync was asked for (see each "
                      "record's cache.method). Phase times are per rank; min/mean/max are over ranks."),
            _stack_note(recs))
    if foreign:
        sec.add(Note(f"{plural(len(foreign), 'record')} of this study lack the parameters of climio-pario --op write "
                     "(mode, backend, strategy, ranks, bytes, rate) and are not shown."))
    sec.add(_latency_note(rows))
    for mode in ("benchio", "model"):
        if any(r["mode"] == mode for r in rows):
            sec.add(Figure(lambda mode=mode: figs.bandwidth_vs_writers(rows, mode), f"{mode} bandwidth",
                           f"{mode}: which backend and strategy writes fastest as ranks grow (median of the repetitions, "
                           "bars min to max)."),
                    Figure(lambda mode=mode: figs.phase_times(rows, mode), f"{mode} phases",
                           f"{mode}: time of each phase (slowest rank) at the largest rank count."))
    if rows:
        sec.add(_config_table(rows))
        ratios = parallel_vs_serial(rows)
        if ratios:
            sec.add(Heading("Parallel vs serial gather"),
                    Table(["mode", "backend", "ranks", "best parallel strategy", "MB/s", "serial MB/s", "ratio"],
                          [[x["mode"], x["backend"], x["ranks"], x["best"], num(x["best_MBps"]),
                            num(x["serial_MBps"]), f"{x['ratio']:.2f}×"] for x in ratios]))
        sec.add(Heading("Phase times per rank"), _phase_table(rows),
                Figure(lambda: figs.rank_imbalance(rows), "per-rank time",
                       "Per-rank total time of the most imbalanced configurations (max/mean of the per-rank times)."),
                *_select_blocks(rows))
    sec.add(*_sweep_blocks(recs), *_load_blocks(recs))
    return sec


def findings(records) -> list:
    """Key findings: per mode, the best backend of each strategy at the largest rank count and the
    best parallel write's speed-up over the serial gather; the tuning sweep's best per backend."""
    rows = configurations(records)
    out = []
    for b in (best_per_strategy(rows) if rows else []):
        best = "; ".join(f"{s} {v['backend']} {num(v['median_MBps'])} MB/s" for s, v in b["best"].items())
        text = f"{b['mode']} at {b['ranks']} ranks, best backend per strategy: {best}"
        sp = b["speedup"]
        if sp:
            text += (f". Best parallel write ({sp['backend']} {sp['best']}) is {sp['ratio']:.2f}× the serial gather "
                     f"({num(sp['serial_MBps'])} MB/s)")
        if b["latency_dominated"]:
            text += f" (latency-dominated: ≤ {format_size(b['bytes_per_rank'])} per rank)"
        out.append(Finding(STUDY, text + "."))
    recs = [r for r in records if r.get("study") == STUDY and complete(r)]
    for backend, v in sweep_summary(recs)["best"].items():
        out.append(Finding(STUDY, f"tune write, {backend}: io_layout {'x'.join(map(str, v['io_layout']))}, cb_nodes "
                                  f"{v['cb_nodes']} gives {num(v['median_MBps'])} MB/s, {v['speedup']:.2f}× the serial "
                                  f"single-file write ({num(v['baseline_MBps'])} MB/s)."))
    return out


def key_figure(records):
    """The study's key plot for the report's first screen: write bandwidth vs ranks of the first mode."""
    rows = configurations(records)
    mode = next((m for m in ("benchio", "model") if any(r["mode"] == m for r in rows)), None)
    if mode is None:
        return None
    return Figure(lambda: figs.bandwidth_vs_writers(rows, mode), f"{mode} write bandwidth vs ranks",
                  f"Which backend and strategy writes fastest as ranks grow ({mode}; bars: min to max of the repetitions).")
