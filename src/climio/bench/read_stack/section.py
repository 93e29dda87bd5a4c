"""The read-stack section of the report (thesis chapter 3) and its key findings, as
climio.present.sections objects: figures 3.4-3.11, tables 3.1/3.2, the syscall table.

Reads records only (through summary); nothing here measures or formats HTML.
"""

import json

from climio.present.cells import CONFIG_HEADERS, bound_num, config_cells, dnf_text, num, param_value, plural, size
from climio.present.sections import Cell, Details, Figure, Finding, Heading, Note, Paragraph, ParamList, Section, Table
from climio.base.units import format_size
from . import STUDY, figures, summary

TITLE = "Study: read-stack — serial read rate through the software stack"

PROFILE_HEADERS = ["layer", "pattern", "profile", "peak rate mean ± std [MB/s]", "buffer at peak",
                   "buffer sizes measured/tried", "notes"]
SYSCALL_HEADERS = ["layer", "pattern", "buffer", "syscalls per request", "bytes read per request",
                   "mean bytes per syscall", "dominant syscall size", "syscalls / requests traced"]

RATE_CAPTION = ("Which layer reads fastest at each buffer size, one panel per read pattern: mean rate of the "
                "repetitions (markers) ± 1 std (bars), each repetition (dots), and a white triangle where a "
                "configuration did not finish in its time budget (its rate is below it; thesis Figs 3.4-3.10).")
PROFILE_TEXT = ("Profile classes as in the thesis's Tables 3.1/3.2: flat reaches 80% of its peak within the "
                "first third of the buffer range (log2) and stays above 60% of it; humped peaks before the two "
                "largest buffers and ends below 60% of the peak; steadily increasing otherwise; fewer than three "
                "measured buffer sizes is insufficient data.")
WALL_CAPTION = ("Where each layer's time goes per repetition (log scale): mean wall time (dark) against CPU "
                "time = user + system (light, in front), CPU near wall meaning CPU-bound and CPU far below "
                "wall waiting on I/O (thesis Fig. 3.11).")
SYSCALL_CAPTION = ("How large the read syscalls each layer issued on the data file were (top) and how many it "
                   "made per read request (bottom), from an untimed strace pass: a layer flat at 64 KiB over "
                   "small buffers reads at least 64 KiB whatever it is asked for.")


def profile_rows(prof) -> list:
    rows = []
    for r in prof:
        notes = []
        if r["dnf"]:
            notes.append("did not finish at " + ", ".join(f"{format_size(b)} ({dnf_text(x)})" for b, x in r["dnf"]))
        if r["errors"]:
            notes.append("errors at " + ", ".join(format_size(b) for b in r["errors"]))
        if r["warm"]:
            notes.append(f"{r['warm']} configuration(s) with warm-cache repetitions")
        if r.get("effectively_warm"):
            notes.append(f"{r['effectively_warm']} configuration(s) effectively warm (cold repetitions read from the "
                         "page cache; no verdict drawn from them)")
        peak = (f"{num(r['peak_MBps'])} ± {num(r['peak_std_MBps'])}" if r["peak_MBps"] is not None
                else (f"< {bound_num(max(x for _, x in r['dnf'] if x is not None))}"
                      if any(x is not None for _, x in r["dnf"]) else "—"))
        rows.append([r["series"], r["pattern"], Cell(r["profile"], f"prof prof-{r['profile'].split()[0]}"),
                     peak, format_size(r["buffer_at_peak"]) if r["buffer_at_peak"] else "—",
                     f"{r['n_measured']}/{r['n_buffers']}", "; ".join(notes)])
    return rows


def series_params_blocks(configs) -> list:
    """What each layer read and through which library: the series-constant parameters, as a
    table of those that differ between layers and a list of those common to all."""
    per_label = {}
    for s in summary.series_of(configs):
        rest = {k: v for k, v in s.configs[0].params.items()
                if k not in summary.POINT_PARAMS and k not in summary.STACK_KEYS}
        per_label.setdefault(s.label, rest)
    keys = []
    for rest in per_label.values():
        keys += [k for k in rest if k not in keys]
    const = {k for k in keys if len({json.dumps(r.get(k), default=str) for r in per_label.values()}) == 1}
    shown = [k for k in keys if k not in const]
    blocks = []
    if shown:
        rows = [[label, *(param_value(k, rest.get(k)) for k in shown)] for label, rest in per_label.items()]
        blocks.append(Table(["layer", *shown], rows, numeric=False))
    if const:
        first = next(iter(per_label.values()))
        blocks.append(ParamList("Common to every layer:", [(k, param_value(k, first.get(k))) for k in keys if k in const]))
    return blocks


def syscall_rows(rows) -> list:
    out = []
    for r in rows:
        dom = (f"{format_size(r['dominant_bytes'])} ({r['dominant_share'] * 100:.0f}% of calls)"
               if r["dominant_bytes"] else "—")
        out.append([r["series"], r["pattern"], format_size(r["buffer_bytes"]), num(r["calls_per_request"]),
                    format_size(r["bytes_per_request"]) if r["bytes_per_request"] is not None else "—",
                    format_size(r["bytes_per_call"]) if r["bytes_per_call"] else "—", dom,
                    f"{r['read_calls']} / {r['requests']}" if r["read_calls"] is not None else "—"])
    return out


def config_table(full) -> Table:
    rows, classes = [], []
    for row in full:
        p = row["params"]
        rows.append([summary.stack_of(p), p.get("pattern"), size(p.get("buffer_bytes")), *config_cells(row)])
        classes.append(row["status"] if row["status"] != "ok" else "")
    return Table(["layer", "pattern", "buffer", *CONFIG_HEADERS], rows, row_classes=classes)


def read_stack_section(records) -> Section:
    configs = summary.group_configs(records)
    prof = summary.profile_table(records)
    sc_rows = summary.syscall_table(records)
    full = summary.config_rows(records)
    n_status = summary.status_counts(records)
    cache_states = {r.get("cache", {}).get("state") for r in records}
    methods = sorted({str(r.get("cache", {}).get("method")) for r in records if r.get("cache", {}).get("method")})
    sec = Section(f"study-{STUDY}", TITLE)
    sec.add(
        Paragraph(f"{len(records)} records ({n_status['ok']} ok, {n_status['dnf']} did not finish, "
                  f"{n_status['error']} error) in {len(configs)} configurations (layer × pattern × buffer size). "
                  f"Cache: {', '.join(sorted(map(str, cache_states)))}"
                  + (f" ({'; '.join(methods)})" if methods else "") + ". "
                  "Rates are MB/s = 10⁶ B/s of bytes requested over wall time; statistics over the "
                  "finished repetitions (std: sample, ddof = 1)."),
        *series_params_blocks(configs),
        Heading("Read rate vs buffer size"),
        Figure(lambda: figures.rate_vs_buffer(records), "read rate vs buffer size", RATE_CAPTION),
        overlap_note(configs),
        Heading("Profiles"),
        Paragraph(PROFILE_TEXT),
        Table(PROFILE_HEADERS, profile_rows(prof)),
        Heading("Wall vs CPU time"),
        Figure(lambda: figures.wall_vs_cpu(records), "wall vs CPU time", WALL_CAPTION),
    )
    if sc_rows:
        sec.add(
            Heading("Read system calls"),
            Figure(lambda: figures.syscall_sizes(records), "read syscall sizes", SYSCALL_CAPTION),
            Details(f"Syscall table ({len(sc_rows)} configurations)", [Table(SYSCALL_HEADERS, syscall_rows(sc_rows))]),
        )
    sec.add(Details(f"All configurations ({len(full)}; every repetition is in records.jsonl)", [config_table(full)]))
    return sec


# --- key findings --------------------------------------------------------------------------------

def _peak_text(p) -> str:
    return f"{p['series']} {num(p['peak_MBps'])} MB/s (at {format_size(p['buffer_at_peak'])})"


def headline(facts):
    """Peak rate per stack for the headline pattern and which stack is fastest."""
    pattern = facts["headline_pattern"]
    rows = facts["peaks"].get(pattern) or []
    if not rows:
        return None
    top = facts["fastest"][pattern]
    text = f"peak {pattern} read rate per stack: " + ", ".join(_peak_text(p) for p in rows) + "."
    if top["next"] is None:
        pass
    elif top["within_noise"]:
        text += (f" Fastest: {top['series']}, but within one standard deviation of {top['next']['series']} "
                 f"({num(top['peak_MBps'])} ± {num(top['peak_std_MBps'])} vs {num(top['next']['peak_MBps'])} "
                 f"± {num(top['next']['peak_std_MBps'])} MB/s).")
    else:
        text += (f" Fastest for {pattern} reads: {top['series']}, "
                 f"{num(top['ratio_to_next'])}× the next ({top['next']['series']}).")
    return Finding(STUDY, text)


def library_min_read(facts, layer="netcdf4-python", name="netCDF4-python"):
    """The thesis's "netCDF4-python reads at least 64 KiB per request", decided by the syscall pass."""
    claim = f"{name} reads at least {format_size(summary.LIBRARY_MIN_READ)} per read syscall whatever it is asked for"
    ran = any(p["layer"] == layer for p in facts["profiles"])
    if not ran:
        return None
    traced = [f for f in facts["syscalls"].values() if f["layer"] == layer]
    if not any(r["layer"] == layer for r in facts["syscall_rows"]):
        return Finding(STUDY, f"{claim} (thesis ch. 3): no syscall counts in the records (run without --no-syscalls).",
                       "not measured")
    if not traced or all(f["min_dominant_bytes"] is None for f in traced):
        return Finding(STUDY, f"{claim} (thesis ch. 3): only buffers of {format_size(summary.LIBRARY_MIN_READ)} or "
                              "more were traced, which cannot show it.", "not decidable")
    smallest = min(f["min_dominant_bytes"] for f in traced if f["min_dominant_bytes"] is not None)
    buffers = sorted({b for f in traced for b in f["buffers"]})
    span = (format_size(buffers[0]) if len(buffers) == 1
            else f"{format_size(buffers[0])}–{format_size(buffers[-1])}")
    n = sum(f["configs"] for f in traced)
    where = f"at buffers of {span} ({plural(n, 'configuration')} traced with strace) its most frequent read syscall"
    if smallest >= summary.LIBRARY_MIN_READ:
        return Finding(STUDY, f"{claim} (thesis ch. 3): {where} is never smaller than {format_size(smallest)}.",
                       "reproduced")
    return Finding(STUDY, f"{claim} (thesis ch. 3): {where} is as small as {format_size(smallest)}.",
                   "not reproduced")


def hump(facts):
    """The thesis's humped netCDF4-python sequential profile (peak ~1 MiB, ~50% of it at 1 GiB)."""
    h = facts["netcdf4_python_sequential"]
    if h is None:
        return None
    claim = "netCDF4-python's sequential read rate is humped (thesis Fig. 3.7: peak near 1 MiB, falling at larger buffers)"
    got = f"measured {h['profile']}"
    if h["peak_MBps"] is not None:
        got += f", peak {num(h['peak_MBps'])} MB/s at {format_size(h['buffer_at_peak'])}"
    warm = h.get("page_cache") or []
    if warm:
        shares = [x for _, x in warm if x is not None]
        why = ("cold repetitions read from the page cache at " + ", ".join(format_size(b) for b, _ in warm)
               + (f" (storage share {100 * min(shares):.0f}%)" if shares else ""))
        if not h["decides"]:
            return Finding(STUDY, f"{claim}: not decidable: {why}.", "not decidable")
        got += f" (left out: {why})"
    if h["profile"] == "humped":
        return Finding(STUDY, f"{claim}: {got}.", "reproduced")
    if h["decides"]:
        return Finding(STUDY, f"{claim}: {got} up to {format_size(h['largest_measured'])}.", "not reproduced")
    largest = format_size(h["largest_measured"]) if h["largest_measured"] else "no buffer"
    return Finding(STUDY, f"{claim}: {got}; the largest buffer measured is {largest}, and the thesis's drop shows "
                          f"only from about {format_size(summary.HUMP_DECIDES_FROM)}.", "not decidable")


def findings(records) -> list:
    """1-3 key findings: the headline (peak rate per stack, the fastest) and the thesis's ch. 3
    claims the records can decide."""
    facts = summary.summarise(records)
    return [f for f in (headline(facts), library_min_read(facts), hump(facts), cold_modes(facts)) if f is not None]


def cold_modes(facts):
    """Whether cold repetitions split into two modes of the platform's memory (issue 27.8): said only
    when they do, since it changes how the rates must be read."""
    modes = facts.get("cold_modes") or {}
    if not modes.get("split") or not modes.get("text"):
        return None
    return Finding(STUDY, modes["text"])


def overlap_note(configs):
    """Random configurations whose requests cover the file more than once: left out of the curves."""
    from .summary import overlap, overlapping_configs, stack_of
    over = overlapping_configs(configs)
    if not over:
        return None
    items = "; ".join(f"{stack_of(c.params)} {format_size(c.params['buffer_bytes'])} x {c.params.get('random_count', '?')} "
                      f"= {overlap(c.params):.1f}x the file" for c in over)
    return Note(f"Left out of the random-read curves: {len(over)} configuration(s) whose random requests cover the "
                f"file more than once ({items}). Their later requests find pages the earlier ones brought in, so "
                "their rate is a page-cache rate, not a cold one; they are listed with all configurations.")


def key_figure(records):
    """The study's key plot for the report's first screen: read rate vs buffer size of the
    headline pattern, compact."""
    pattern = summary.headline_pattern(summary.profile_table(records))
    if pattern is None:
        return None
    return Figure(lambda: figures.rate_vs_buffer(records, title=f"{pattern.capitalize()} read rate vs buffer size "
                                                                "(MB/s = 10$^6$ B/s)", patterns=(pattern,), width=7.4),
                  f"{pattern} read rate vs buffer size per stack",
                  f"Which stack reads fastest at each buffer size ({pattern} reads, mean ± 1 std of the repetitions).")
