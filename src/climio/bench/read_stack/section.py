"""The read-stack section of the report (thesis chapter 3): figures 3.4-3.11, tables 3.1/3.2."""

import json

from ..units import format_size
from . import figures, summary
from .html import (CONFIG_HEADERS, bound_num, config_cells, dnf_text, e, figure, num, param_value, section, size,
                   table)


def profile_rows_html(prof) -> list:
    rows = []
    for r in prof:
        notes = []
        if r["dnf"]:
            notes.append("did not finish at " + ", ".join(f"{format_size(b)} ({dnf_text(x)})" for b, x in r["dnf"]))
        if r["errors"]:
            notes.append("errors at " + ", ".join(format_size(b) for b in r["errors"]))
        if r["warm"]:
            notes.append(f"{r['warm']} configuration(s) with warm-cache repetitions")
        peak = (f"{num(r['peak_MBps'])} ± {num(r['peak_std_MBps'])}" if r["peak_MBps"] is not None
                else (f"< {bound_num(max(x for _, x in r['dnf'] if x is not None))}"
                      if any(x is not None for _, x in r["dnf"]) else "—"))
        rows.append([e(r["series"]), e(r["pattern"]),
                     f'<span class="prof prof-{e(r["profile"].split()[0])}">{e(r["profile"])}</span>',
                     e(peak), e(format_size(r["buffer_at_peak"]) if r["buffer_at_peak"] else "—"),
                     e(f"{r['n_measured']}/{r['n_buffers']}"), e("; ".join(notes))])
    return rows


def series_params_table(configs) -> str:
    """What each layer read and through which library: the series-constant parameters."""
    per_label = {}
    for s in summary.series_of(configs):
        rest = {k: v for k, v in s.configs[0].params.items() if k not in summary.POINT_PARAMS and k != "layer"}
        per_label.setdefault(s.label, rest)
    keys = []
    for rest in per_label.values():
        keys += [k for k in rest if k not in keys]
    const = {k for k in keys if len({json.dumps(r.get(k), default=str) for r in per_label.values()}) == 1}
    shown = [k for k in keys if k not in const]
    parts = []
    if shown:
        rows = [[label, *(param_value(k, rest.get(k)) for k in shown)] for label, rest in per_label.items()]
        parts.append(table(["layer", *shown], rows, cls="params-table"))
    if const:
        first = next(iter(per_label.values()))
        items = "".join(f"<li><code>{e(k)}</code> = {e(param_value(k, first.get(k)))}</li>" for k in keys if k in const)
        parts.append(f'<p>Common to every layer:</p><ul class="params">{items}</ul>')
    return "\n".join(parts)


def syscall_rows_html(rows) -> list:
    out = []
    for r in rows:
        dom = (f"{format_size(r['dominant_bytes'])} ({r['dominant_share'] * 100:.0f}% of calls)"
               if r["dominant_bytes"] else "—")
        out.append([r["series"], r["pattern"], format_size(r["buffer_bytes"]), num(r["calls_per_request"]),
                    format_size(r["bytes_per_request"]) if r["bytes_per_request"] is not None else "—",
                    format_size(r["bytes_per_call"]) if r["bytes_per_call"] else "—", dom,
                    f"{r['read_calls']} / {r['requests']}" if r["read_calls"] is not None else "—"])
    return out


@section("read-stack")
def read_stack_section(records, ctx) -> str:
    configs = summary.group_configs(records)
    prof = summary.profile_table(records)
    sc_rows = summary.syscall_table(records)
    full = summary.config_rows(records)
    n_status = {s: sum(1 for r in records if r.get("status") == s) for s in ("ok", "dnf", "error")}
    cache_states = {r.get("cache", {}).get("state") for r in records}
    methods = sorted({str(r.get("cache", {}).get("method")) for r in records if r.get("cache", {}).get("method")})
    parts = [
        '<section id="study-read-stack"><h2>Study: read-stack — serial read rate through the software stack</h2>',
        f"<p>{len(records)} records ({n_status['ok']} ok, {n_status['dnf']} did not finish, "
        f"{n_status['error']} error) in {len(configs)} configurations (layer × pattern × buffer size). "
        f"Cache: {e(', '.join(sorted(map(str, cache_states))))}"
        + (f" ({e('; '.join(methods))})" if methods else "") + ". "
        "Rates are MB/s = 10<sup>6</sup> B/s of bytes requested over wall time; statistics over the "
        "finished repetitions (std: sample, ddof = 1).</p>",
        series_params_table(configs),
        "<h3>Read rate vs buffer size</h3>",
        figure(lambda: figures.rate_vs_buffer(records), "read rate vs buffer size",
               "Mean read rate of the repetitions (markers), one standard deviation (error bars), each "
               "repetition (dots); a white downward triangle is a configuration that did not finish in its "
               "time budget, its rate is below the triangle. One panel per read pattern (thesis Figs 3.4-3.10)."),
        "<h3>Profiles</h3>",
        "<p>Profile classes as in the thesis's Tables 3.1/3.2: <b>flat</b> reaches 80% of its peak within the "
        "first third of the buffer range (log2) and stays above 60% of it; <b>humped</b> peaks before the two "
        "largest buffers and ends below 60% of the peak; <b>steadily increasing</b> otherwise; fewer than three "
        "measured buffer sizes is <b>insufficient data</b>.</p>",
        table(["layer", "pattern", "profile", "peak rate mean ± std [MB/s]", "buffer at peak",
               "buffer sizes measured/tried", "notes"], profile_rows_html(prof), cls="num", raw=True),
        "<h3>Wall vs CPU time</h3>",
        figure(lambda: figures.wall_vs_cpu(records), "wall vs CPU time",
               "Mean wall time (dark) and CPU time = user + system (light, in front) per repetition, log "
               "scale. CPU near wall: CPU-bound; CPU far below wall: waiting on I/O (thesis Fig. 3.11)."),
    ]
    if sc_rows:
        parts += [
            "<h3>Read system calls</h3>",
            figure(lambda: figures.syscall_sizes(records), "read syscall sizes",
                   "Mean size of the read syscalls each layer issued on the data file (top) and syscalls per "
                   "read request (bottom), from an untimed strace pass. A layer flat at 64 KiB over small "
                   "buffers reads at least 64 KiB whatever it is asked for."),
            f"<details><summary>Syscall table ({len(sc_rows)} configurations)</summary>",
            table(["layer", "pattern", "buffer", "syscalls per request", "bytes read per request",
                   "mean bytes per syscall", "dominant syscall size", "syscalls / requests traced"],
                  syscall_rows_html(sc_rows), cls="num"),
            "</details>",
        ]
    rows = []
    for row in full:
        p = row["params"]
        cells = [e(p.get("layer")), e(p.get("pattern")), e(size(p.get("buffer_bytes"))), *config_cells(row)]
        rows.append((cells, row["status"]))
    parts += [
        f"<details><summary>All configurations ({len(full)}; every repetition is in records.jsonl)</summary>",
        table(["layer", "pattern", "buffer", *CONFIG_HEADERS], rows, cls="num full", raw=True),
        "</details></section>",
    ]
    return "\n".join(p for p in parts if p)
