"""The layouts study's numbers (pure): per mix, each measured shape's total (its passes x the
median cold read of each pattern + its measured conversion), the advised shape's against the best,
and the library default's.

    summarise(records) -> {"mixes": [...], "shapes": {...}, "meets_target": bool, ...}
"""

import math
import statistics

from . import STUDY, parse_mix

TARGET = 1.15       # the advised shape's measured total within this factor of the measured best


def _median(xs):
    return statistics.median(xs) if xs else None


def summarise(records) -> dict:
    recs = [r for r in records if r.get("study") == STUDY]
    searches = [r["params"] for r in recs if r["params"].get("kind") == "search" and r.get("status") == "ok"]
    convert = {r["params"]["chunks"]: r["metrics"]["wall_s"] for r in recs
               if r["params"].get("kind") == "convert" and r.get("status") == "ok"}
    why = {r["params"]["chunks"]: r["params"].get("why", "") for r in recs if r["params"].get("kind") == "convert"}
    reads, predicted, dnf, codec_of = {}, {}, set(), {}
    for r in recs:
        p = r["params"]
        if p.get("kind") != "read":
            continue
        key = (p["chunks"], p["pattern"])
        codec_of[p["chunks"]] = p.get("compression")
        predicted[key] = p.get("predicted_s")
        if r.get("status") == "ok":
            reads.setdefault(key, []).append(r["metrics"]["wall_s"])
        elif r.get("status") == "dnf":
            dnf.add(key)
    read_s = {k: _median(v) for k, v in reads.items()}
    mixes = []
    for s in searches:
        _, parts = parse_mix(s["mix"])
        totals = {}
        for shape, conv in convert.items():
            if any((shape, p) in dnf or (shape, p) not in read_s for p, _ in parts):
                continue       # a pattern not read on this shape (predicted past --max-s): no total
            reads_total = sum(n * read_s[(shape, p)] for p, n in parts)
            totals[shape] = {"reads_s": reads_total, "convert_s": conv, "total_s": reads_total + conv,
                             "predicted_reads_s": sum(n * (predicted.get((shape, p)) or math.nan) for p, n in parts)}
        if not totals:
            continue
        best = min(totals, key=lambda k: totals[k]["total_s"])
        best_reads = min(totals, key=lambda k: totals[k]["reads_s"])
        adv = s["advised"]
        default = next((k for k, w in why.items() if w == "library default"), None)
        row = {"mix": s["mix"], "advised": adv, "best": best, "best_total_s": totals[best]["total_s"],
               "best_reads_only": best_reads, "shapes_measured": len(totals),
               "advised_predicted_total_s": s["advised_predicted"]["total_s"],
               "advised_total_s": totals[adv]["total_s"] if adv in totals else None,
               # the library default as if the data had been written that way: its reads alone
               "default": default, "default_total_s": totals[default]["reads_s"] if default in totals else None,
               "totals": totals}
        row["ratio_to_best"] = (row["advised_total_s"] / row["best_total_s"]
                                if row["advised_total_s"] is not None and row["best_total_s"] > 0 else None)
        row["speedup_over_default"] = (row["default_total_s"] / row["advised_total_s"]
                                       if row["default_total_s"] and row["advised_total_s"] else None)
        # the best of the shapes that keep the advised shape's codec (contiguous data cannot be
        # compressed: it trades disk for read speed, which the search does not weigh)
        same = [k for k in totals if codec_of.get(k) == codec_of.get(adv)]
        keep = min(same, key=lambda k: totals[k]["total_s"]) if adv in totals and same else None
        row["best_same_codec"] = keep
        row["ratio_to_best_same_codec"] = (row["advised_total_s"] / totals[keep]["total_s"]
                                           if keep and totals[keep]["total_s"] > 0 else None)
        row["rank_of_advised"] = (sorted(totals, key=lambda k: totals[k]["total_s"]).index(adv) + 1
                                  if adv in totals else None)
        mixes.append(row)
    ratios = [m["ratio_to_best"] for m in mixes if m["ratio_to_best"] is not None]
    same = [m["ratio_to_best_same_codec"] for m in mixes if m["ratio_to_best_same_codec"] is not None]
    return {"mixes": mixes, "shapes": {k: {"why": why.get(k, ""), "convert_s": v} for k, v in convert.items()},
            "read_s": {f"{k[0]} {k[1]}": v for k, v in read_s.items()}, "target": TARGET,
            "worst_ratio": max(ratios) if ratios else None,
            "worst_ratio_same_codec": max(same) if same else None,
            "meets_target": bool(ratios) and len(ratios) == len(mixes) and max(ratios) <= TARGET,
            "n_shapes": len(convert)}


def headline(records):
    """The study's rows of the report's first screen: the advised shape against the measured best."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    s = summarise(records)
    if not s["mixes"]:
        return None
    reads = [r for r in records if r.get("study") == STUDY and r["params"].get("kind") == "read"
             and r.get("status") == "ok"]
    text = (f"advised shape within {s['worst_ratio']:.2f}× of the best of {s['n_shapes']} measured shapes over "
            f"{len(s['mixes'])} read mixes (target {TARGET}×: {'met' if s['meets_target'] else 'not met'})")
    return Headline(STUDY, [HeadlineRow("one layout for several read patterns", text, cache_state(reads))])
