"""The STSA section of the report (thesis ch. 6): Table 6.1 on this platform, the checks of F12-F18
with verdicts, and Figs 6.3-6.5 equivalents (drawn when the page is rendered)."""

from climio.present.sections import Details, Figure, Finding, Note, Paragraph, Section, Table
from climio.base.units import format_size
from . import figures
from .summary import STUDY, STSA_THESIS, fmt, summarise

TITLE = "Study: stsa — space-time spectral analysis on Dask by layout and workers (thesis ch. 6)"


def _ms(st, digits=2):
    return "—" if st is None else f"{fmt(st.mean, digits)} ({fmt(st.std, digits)})"


def table61(rows) -> Table:
    body = [[r["test"], r["layout"], r["workers"], _ms(r["job"]), _ms(r["task_wall"]), _ms(r["task_cpu"]),
             _ms(r["read_wall"]), _ms(r["compute_wall"]), fmt(r["rate_MBps"]), fmt(r["slowest_rate_MBps"]),
             r["reps"], r["cache"]] for r in rows]
    return Table(["test", "file", "workers", "job wall [s] (std)", "avg wall/task [s] (std)",
                  "avg CPU/task [s] (std)", "read wall/task [s]", "compute wall/task [s]",
                  "equiv. rate [MB/s]", "rate, slowest job [MB/s]", "reps", "cache"], body,
                 caption="Table 6.1 on this platform. Per-task statistics over every task of every repetition; "
                         "equivalent read rate = bytes read / mean job wall (the thesis's); MB/s = 10^6 B/s.")


def stsa_section(records) -> Section:
    s = summarise(records)
    rows = s["rows"]
    sec = Section("study-stsa", TITLE)
    if not rows:
        return sec.add(Note("No finished STSA jobs in the records."))
    r0 = rows[0]
    sec.add(Paragraph(
        f"Hayashi spectra of every latitude and level of a variable of {format_size(r0['bytes'])}, split into "
        f"{r0['n_tasks']} latitude tasks on a Dask LocalCluster of single-threaded worker processes; each task reads "
        f"its latitudes as (time, longitude) slabs, level by level, and (test CPU) computes the spectra. "
        f"Layouts: {', '.join(s['layouts'])}; workers: {', '.join(map(str, s['workers']))}. "
        "The file is evicted from the page cache after it is opened, before every job."))
    if not s["decidable"]:
        sec.add(Note(f"The findings below are not decidable from these records: {s['why']}."))
    if s["warm_cells"]:
        sec.add(Note("Jobs served by the page cache (effectively warm): " + ", ".join(s["warm_cells"])
                     + "; no verdict is drawn from these cells."))
    sec.add(table61(rows))
    sec.add(Table(["finding", "thesis", "verdict", "measured here"],
                  [[c["id"], c["claim"], c["verdict"], c["text"]] for c in s["checks"]], numeric=False,
                  caption="The thesis's chapter 6 findings checked on this platform."))
    sec.add(Figure(lambda: figures.job_wall_by_workers(rows), "job wall by workers",
                   "Which layout gives the shortest STSA job and how it scales with workers: purple I/O only, blue "
                   "with spectra (mean ± 1 std; thesis Fig. 6.3)."),
            Figure(lambda: figures.task_wall_cpu(rows), "per-task wall and CPU",
                   "Fig. 6.4 equivalent: mean per-task wall (solid) and CPU (hatched) time; wall >> CPU is I/O-bound."),
            Figure(lambda: figures.job_vs_task(rows), "job wall against task wall",
                   "Fig. 6.5 equivalent: job wall against mean task wall with 95% confidence intervals."))
    sec.add(Details("Chunk shapes and compression of each layout",
                    [Table(["layout", "chunks", "compression", "file size"],
                           [[r["layout"], str(r["chunks"]), r["compression"],
                             format_size(r["file_bytes"]) if isinstance(r["file_bytes"], (int, float)) else "—"]
                            for r in rows if r["mode"] == rows[0]["mode"] and r["workers"] == rows[0]["workers"]],
                           numeric=False)]))
    return sec


def findings(records) -> list:
    s = summarise(records)
    out = []
    if s["rows"]:
        best = max((r for r in s["rows"] if r["mode"] == "cpu"), key=lambda r: r["rate_MBps"] or 0, default=None)
        if best:
            out.append(Finding(STUDY, f"STSA with spectra ran fastest from {best['layout']} on {best['workers']} "
                                      f"worker(s): {fmt(best['job'].mean)} s job wall, {fmt(best['rate_MBps'])} MB/s "
                                      "equivalent read rate"))
    for c in s["checks"]:
        out.append(Finding(STUDY, f"{c['id']} ({STSA_THESIS[c['id']]}): {c['text']}", c["verdict"]))
    return out


def key_figure(records):
    """The study's key plot for the report's first screen: STSA job wall time vs workers per layout."""
    rows = summarise(records)["rows"]
    if not rows:
        return None
    return Figure(lambda: figures.job_wall_by_workers(rows), "STSA job wall time vs workers per layout",
                  "Which file layout makes the STSA job fastest, and how it scales with workers (mean ± 1 std).")
