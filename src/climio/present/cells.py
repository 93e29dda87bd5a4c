"""Text of the numbers and the generic configuration table every study's section shows, as
climio.present.sections objects (plain text; the report's template escapes and styles it)."""

import json
import math

from climio.present.sections import Cell, Paragraph, ParamList, Section, Table
from climio.present.stats import config_rows, constant_params, group_configs, varying_params
from climio.base.units import format_size


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
    return format_size(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def mean_std(st) -> str:
    return f"{num(st.mean)} ± {num(st.std)}" if st else "—"


def min_med_max(st) -> str:
    return f"{num(st.min)} / {num(st.median)} / {num(st.max)}" if st else "—"


def dnf_text(bound) -> str:
    """The thesis's "< 7" cell: the configuration ran out of time, so its rate is below the bound."""
    return f"< {bound_num(bound)} MB/s" if bound is not None else "did not finish"


def text_columns(headers, rows, left=1) -> list:
    """Terminal table lines, indented two spaces: the first `left` columns left-aligned, the rest right."""
    rows = [[str(c) for c in r] for r in [headers, *rows]]
    w = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    return ["  " + "  ".join(c.ljust(w[i]) if i < left else c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]


def bound_num(v) -> str:
    """A dnf bound with at most 3 significant digits and no trailing zeros: 7 -> "7", 4.472 -> "4.47"."""
    if v is None or not math.isfinite(v):
        return "?"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def param_value(key, value) -> str:
    if key.endswith("_bytes") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{format_size(value)} ({value} B)" if value >= 1024 else f"{value} B"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "—" if value is None else str(value)


def constant_params_block(configs, skip=()):
    const = constant_params(configs, skip=skip)
    if not const:
        return None
    return ParamList("Parameters common to every configuration:", [(k, param_value(k, v)) for k, v in const.items()])


def config_cells(row) -> list:
    """Cells: n, rate mean ± std, min/median/max, wall, CPU, CPU/wall, cache, status."""
    if row["status"] == "dnf":
        rate_cells = [Cell(dnf_text(row["dnf_bound"]), "dnf"), "—"]
    elif row["status"] == "error":
        rate_cells = [Cell("error", "err"), "—"]
    else:
        rate_cells = [mean_std(row["rate"]), min_med_max(row["rate"])]
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
    return [f"{row['n_ok']}/{row['n']}", *rate_cells, mean_std(row["wall"]), mean_std(row["cpu"]),
            num(row["cpu_over_wall"]), storage_share(row["config"].ok),
            Cell(cache, "warm") if "warm" in cache else cache, "; ".join([status, *notes])]


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


def generic_section(study, records) -> Section:
    """Every configuration of a study that has no section of its own (or is not installed)."""
    configs = group_configs(records)
    varying = varying_params(configs)
    rows, classes = [], []
    for row in config_rows(records):
        p = row["params"]
        rows.append([*(param_value(k, p.get(k)) for k in varying), *config_cells(row)])
        classes.append(row["status"] if row["status"] != "ok" else "")
    sec = Section(f"study-{study}", f"Study: {study}")
    sec.add(Paragraph(f"{plural(len(records), 'record')} in {plural(len(configs), 'configuration')}. "
                      "No dedicated report section for this study; all configurations are listed."),
            constant_params_block(configs),
            Table([*varying, *CONFIG_HEADERS], rows, row_classes=classes))
    return sec
