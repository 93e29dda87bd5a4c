"""The layouts study in the report: the advised shape against the measured best per mix, a
figure of every measured shape's total per mix, and the finding."""

import math

from climio.present.sections import Figure, Finding, Paragraph, Section, Table
from . import STUDY
from .summary import TARGET, summarise


def section(records) -> Section:
    s = summarise(records)
    sec = Section("study-layouts", "One layout for several read patterns: advised against measured")
    if not s["mixes"]:
        return sec.add(Paragraph("No mix was measured."))
    sec.add(key_figure(records, s))
    sec.add(Paragraph(
        f"For each mix the model's layout search picked the chunk shape with the least predicted reads plus conversion "
        f"(climio advise --read ... --passes ...). The file was converted with climio rechunk to it and to {s['n_shapes']} "
        f"shapes in all, and every pattern was read cold on each. Measured total = passes x the median cold read of each "
        f"pattern + the measured conversion (0 for the file as it is). Target: the advised shape within {TARGET}x of the "
        f"measured best for every mix: {'met' if s['meets_target'] else 'NOT met'} (worst "
        f"{s['worst_ratio']:.2f}x)." if s["worst_ratio"] else "No advised shape was measured."))
    rows = [[m["mix"], m["advised"], _s(m["advised_predicted_total_s"]), _s(m["advised_total_s"]), m["best"],
             _s(m["best_total_s"]), _x(m["ratio_to_best"]), m["best_same_codec"] or "-",
             _x(m["ratio_to_best_same_codec"]), f"{m['rank_of_advised']} of {m['shapes_measured']}"
             if m["rank_of_advised"] else "-", _s(m["default_total_s"]), _x(m["speedup_over_default"])]
            for m in s["mixes"]]
    sec.add(Table(["mix (pattern:passes)", "advised chunks", "predicted [s]", "measured [s]", "measured best",
                   "best [s]", "advised/best", "best keeping the codec", "advised/that", "rank",
                   "library default [s]", "speed-up over default"], rows,
                  "Totals are reads + conversion, cold reads, medians of the repetitions; 'keeping the codec' leaves out "
                  "shapes stored with another codec than the advised one (contiguous data is stored uncompressed: it "
                  "trades disk for read speed, which the search does not weigh); the library default's total is "
                  "its reads alone (the data as the library would have written it), and the speed-up is that over the "
                  "advised total."))
    rows = [[k, v["why"], _s(v["convert_s"])] + [_s(s["read_s"].get(f"{k} {p}")) for p in ("xy", "xt", "xyt")]
            for k, v in s["shapes"].items()]
    sec.add(Table(["chunks", "why measured", "conversion [s]", "xy pass [s]", "xt pass [s]", "xyt pass [s]"], rows,
                  "Every measured shape: its conversion and the median cold time of one pass of each pattern "
                  "(- : not read, predicted past --max-s)."))
    return sec


def _s(x) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.3g}"


def _x(x) -> str:
    return "-" if x is None else f"{x:.2f}x"


def findings(records) -> list:
    s = summarise(records)
    if not s["mixes"] or s["worst_ratio"] is None:
        return []
    sp = [m["speedup_over_default"] for m in s["mixes"] if m["speedup_over_default"]]
    return [Finding(STUDY, f"one layout for several read patterns (target: advised within {TARGET}x of the measured "
                           f"best): over {len(s['mixes'])} mixes and {s['n_shapes']} measured shapes the advised shape "
                           f"was within {s['worst_ratio']:.2f}x of the best"
                           + (f" ({s['worst_ratio_same_codec']:.2f}x of the best keeping its codec)"
                              if s.get("worst_ratio_same_codec") else "")
                           + (f"; {min(sp):.1f}x to {max(sp):.1f}x faster than the library default" if sp else ""),
                    verdict="met" if s["meets_target"] else "not met")]


def key_figure(records, s=None):
    s = s or summarise(records)
    if not s["mixes"]:
        return None
    from . import figures
    return Figure(lambda: figures.totals_by_mix(s), "measured total per shape and mix",
                  "Each mix's measured reads + conversion on every shape relative to that mix's best (1 = best), "
                  "the advised shape boxed: a good search puts its box on the darkest cell of each column.")
