"""The self-contained HTML page: inline CSS, figures as base64 PNG data URIs, no JavaScript,
nothing fetched from the network. Every piece of text from records or platform.json is escaped.

Studies plug in through a registry: a section renderer is a function (records, ctx) -> HTML,
registered with @section("study-name"). Records of a study without a renderer get a generic
configuration table. `climio.report` imports every module of this package when it renders, so a
new study adds its own module (e.g. report/chunking.py) without touching the others.
"""

import base64
import datetime as _dt
import html as _html
import json
import math

from ..units import format_size
from . import summary

SECTIONS = {}


def section(study: str):
    """Register `fn(records, ctx) -> str` as the renderer of `study`'s records."""
    def register(fn):
        SECTIONS[study] = fn
        return fn
    return register


# --- formatting ----------------------------------------------------------------------------------

def e(text) -> str:
    return _html.escape("" if text is None else str(text), quote=True)


def num(v, unit_big=100, digits=3) -> str:
    """Rates and times for humans: 3 significant digits, no exponent for ordinary magnitudes."""
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    a = abs(v)
    if a >= unit_big:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.{digits}g}" if a >= 1e-3 else f"{v:.2e}"


def plural(n, word) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def size(v) -> str:
    return format_size(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else e(v)


def mean_std(st) -> str:
    return f"{num(st.mean)} ± {num(st.std)}" if st else "—"


def min_med_max(st) -> str:
    return f"{num(st.min)} / {num(st.median)} / {num(st.max)}" if st else "—"


def dnf_text(bound) -> str:
    """The thesis's "< 7" cell: the configuration ran out of time, so its rate is below the bound."""
    return f"< {bound_num(bound)} MB/s" if bound is not None else "did not finish"


def bound_num(v) -> str:
    """A dnf bound with at most 3 significant digits and no trailing zeros: 7 -> "7", 4.472 -> "4.47"."""
    if v is None or not math.isfinite(v):
        return "?"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def png_img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{e(alt)}">'


def figure(png_or_callable, alt: str, caption: str) -> str:
    """A <figure> with an embedded PNG; a figure that fails to draw becomes a visible note."""
    try:
        png = png_or_callable() if callable(png_or_callable) else png_or_callable
    except Exception as exc:  # a broken figure must not cost the reader the tables
        return f'<p class="warn">Figure "{e(alt)}" could not be drawn: {e(type(exc).__name__)}: {e(exc)}</p>'
    if not png:
        return ""
    return f"<figure>{png_img(png, alt)}<figcaption>{e(caption)}</figcaption></figure>"


def table(headers, rows, cls="", raw=False) -> str:
    """An HTML table; cells are escaped unless `raw` (then the caller escaped them)."""
    th = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        attrs = ""
        if isinstance(row, tuple) and len(row) == 2 and isinstance(row[1], str) and isinstance(row[0], list):
            row, rcls = row
            attrs = f' class="{e(rcls)}"'
        body.append(f"<tr{attrs}>" + "".join(f"<td>{c if raw else e(c)}</td>" for c in row) + "</tr>")
    return f'<table class="{e(cls)}"><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def param_value(key, value) -> str:
    if key.endswith("_bytes") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{format_size(value)} ({value} B)" if value >= 1024 else f"{value} B"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "—" if value is None else str(value)


# --- provenance -----------------------------------------------------------------------------------

_PLATFORM_FIRST = ("host", "os", "kernel", "machine", "cpu", "ram_bytes", "filesystem", "versions", "platform_id")


def flatten(d, prefix="") -> list:
    out = []
    keys = list(d)
    if not prefix:
        keys = [k for k in _PLATFORM_FIRST if k in d] + [k for k in keys if k not in _PLATFORM_FIRST]
    for k in keys:
        v, name = d[k], f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out += flatten(v, name + ".")
        else:
            out.append((name, v))
    return out


def provenance(platform, platform_error, records) -> str:
    parts = ["<h2>Platform and provenance</h2>"]
    if platform_error:
        parts.append(f'<p class="warn">{e(platform_error)}</p>')
    if platform:
        rows = []
        for key, value in flatten(platform):
            if key == "ram_bytes" and isinstance(value, (int, float)):
                value = f"{format_size(value)} ({value} B)"
            elif isinstance(value, list):
                value = ", ".join(map(str, value))
            elif value is None:
                value = "— (not available)"
            rows.append([key, value])
        parts.append(table(["item", "value"], rows, cls="prov"))
        pid = platform.get("platform_id")
        other = sorted({r.get("platform_id", "") for r in records} - {pid})
        if pid and other:
            parts.append(f'<p class="warn">Records from other platforms than platform.json describes '
                         f'({e(pid)}): {e(", ".join(o or "(none)" for o in other))}.</p>')
    return "\n".join(parts)


# --- generic section --------------------------------------------------------------------------------

def constant_params_block(configs, skip=()) -> str:
    const = summary.constant_params(configs, skip=skip)
    if not const:
        return ""
    items = "".join(f"<li><code>{e(k)}</code> = {e(param_value(k, v))}</li>" for k, v in const.items())
    return f'<p>Parameters common to every configuration:</p><ul class="params">{items}</ul>'


def config_cells(row) -> list:
    """Escaped cells: n, rate mean ± std, min/median/max, wall, CPU, CPU/wall, cache, status."""
    if row["status"] == "dnf":
        rate_cells = [f'<span class="dnf">{e(dnf_text(row["dnf_bound"]))}</span>', "—"]
    elif row["status"] == "error":
        rate_cells = ['<span class="err">error</span>', "—"]
    else:
        rate_cells = [e(mean_std(row["rate"])), e(min_med_max(row["rate"]))]
    status = row["status"]
    notes = []
    if row["n_dnf"] and row["status"] != "dnf":
        notes.append(f"{row['n_dnf']} dnf ({dnf_text(row['dnf_bound'])})")
    if row["n_error"]:
        msgs = {str(r.get("metrics", {}).get("error", "")) for r in row["config"].errors} - {""}
        notes.append(f"{row['n_error']} error" + (f": {'; '.join(sorted(msgs))}" if msgs else ""))
    if row["status"] == "dnf":
        budgets = {r["metrics"].get("budget_s") for r in row["config"].dnf} - {None}
        status = "dnf" + (f" (budget {', '.join(num(b) for b in sorted(budgets))} s)" if budgets else "")
    cache = row["cache"]
    return [e(f"{row['n_ok']}/{row['n']}"), *rate_cells, e(mean_std(row["wall"])), e(mean_std(row["cpu"])),
            e(num(row["cpu_over_wall"])), e(storage_share(row["config"].ok)),
            f'<span class="warm">{e(cache)}</span>' if "warm" in cache else e(cache),
            e("; ".join([status, *notes]))]


CONFIG_HEADERS = ["n ok/all", "rate mean ± std [MB/s]", "rate min / median / max [MB/s]",
                  "wall mean ± std [s]", "CPU mean ± std [s]", "CPU/wall", "from storage", "cache", "status"]


def storage_share(records) -> str:
    """Bytes fetched from storage per byte requested (/proc/self/io): below 100% on a cold run
    means requests were served again from the page cache (e.g. random reads overlapping)."""
    pairs = [(r["metrics"].get("storage_read_bytes"), r["metrics"].get("bytes")) for r in records]
    pairs = [(s, b) for s, b in pairs if s is not None and b]
    if not pairs:
        return "—"
    return f"{100 * sum(s for s, _ in pairs) / sum(b for _, b in pairs):.0f}%"


def generic_section(study, records, ctx) -> str:
    configs = summary.group_configs(records)
    varying = summary.varying_params(configs)
    rows = []
    for row in summary.config_rows(records):
        p = row["params"]
        rows.append([*(e(param_value(k, p.get(k))) for k in varying), *config_cells(row)])
    return "\n".join([
        f'<section id="study-{e(study)}"><h2>Study: {e(study)}</h2>',
        f"<p>{plural(len(records), 'record')} in {plural(len(configs), 'configuration')}. "
        "No dedicated report section for "
        "this study yet; all configurations are listed.</p>",
        constant_params_block(configs),
        table([*varying, *CONFIG_HEADERS], rows, cls="num", raw=True),
        "</section>",
    ])


# --- the page ---------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1200px;
     padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:.25em .55em;vertical-align:top}
th{background:#f0f0f0;text-align:left} tbody tr:nth-child(even){background:#fafafa}
table.num td{text-align:right} table.num td:nth-child(-n+2){text-align:left}
table.num td:last-child{text-align:left}
table.prov td:first-child{font-family:monospace;white-space:nowrap} table.prov td{word-break:break-word}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#555;max-width:900px}
.dnf{color:#a33;font-weight:600} .err{color:#a00;font-weight:600} .warm{color:#b60;font-weight:600}
.warn{background:#fff4e0;border-left:4px solid #e90;padding:.4em .7em}
.prof{font-weight:600} .prof-humped{color:#a33} .prof-flat{color:#276} .prof-steadily{color:#246}
.prof-insufficient{color:#888}
tr.dnf td{background:#fdf0f0} tr.error td{background:#fbe3e3}
details{margin:.8em 0} summary{cursor:pointer;font-weight:600}
ul.params{columns:2;font-size:.9em} .meta td:first-child{font-weight:600}
"""


def page(run_dir, records, platform, platform_error, sections_html) -> str:
    times = sorted(str(r.get("time")) for r in records if r.get("time"))
    studies = list(summary.by_study(records))
    meta = [["run directory", str(run_dir)],
            ["report generated", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")],
            ["records", f"{len(records)} ({', '.join(studies)})"]]
    if times:
        meta.append(["measured", f"{times[0]} … {times[-1]}"])
    nav = "".join(f'<li><a href="#study-{e(s)}">{e(s)}</a></li>' for s in studies)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>climio report — {e(run_dir.name)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{CSS}</style></head><body>",
        f"<h1>climio report — {e(run_dir.name)}</h1>",
        table(["", ""], meta, cls="meta"),
        f"<ul>{nav}</ul>",
        provenance(platform, platform_error, records),
        *sections_html,
        "<hr><p><small>climio — I/O benchmarking for netCDF/HDF5 climate data. Units: MB/s = 10<sup>6</sup> B/s; "
        "sizes in KiB/MiB/GiB = 2<sup>10</sup>/2<sup>20</sup>/2<sup>30</sup> B.</small></p>",
        "</body></html>",
    ])


def render_sections(records, ctx) -> list:
    out = []
    for study, recs in summary.by_study(records).items():
        fn = SECTIONS.get(study)
        out.append(fn(recs, ctx) if fn else generic_section(study, recs, ctx))
    return out
