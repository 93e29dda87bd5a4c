"""trace report ranks a layout fix net of its predicted conversion over RANK_PASSES runs: a rechunk whose
one-off cost is more than ten runs' saving never comes first (climio bench advice found a 12.6 s
conversion ranked first for a 0.1 s saving on a 1.9 s job)."""

from types import SimpleNamespace

from climio import rules
from climio.trace import report


def _finding(rule, saves, run=2.0, io=1.5):
    facts = SimpleNamespace(run={"process_time_s": run, "io_time_s": io})
    share = saves / run
    return facts, {"rule": rule, "title": rule, "severity": rules.severity(share), "message": "m.",
                   "evidence": {"time_s": io, "share_of_io_time": 1.0, "could_save_s": saves, "share_of_run": share},
                   "advice": "a", "thresholds": {}}


def test_a_conversion_dearer_than_ten_runs_saving_falls_below_a_cheap_fix():
    facts, layout = _finding("partial-chunk-compressed", saves=1.2)
    _, cache = _finding("chunk-cache-small", saves=0.5)
    assert rules.rank([layout, cache])[0] is layout              # gross: the rechunk first
    report._net_of_conversion(facts, layout, conv_s=12.6)        # net: 1.2 - 12.6/10 < 0
    ev = layout["evidence"]
    assert ev["could_save_s"] == 0.0 and ev["could_save_gross_s"] == 1.2 and ev["conversion_s"] == 12.6
    assert layout["severity"] == "low" and "repays in 10 runs" in layout["message"]
    assert rules.rank([layout, cache])[0] is cache


def test_a_cheap_conversion_keeps_most_of_the_saving():
    facts, layout = _finding("partial-chunk-compressed", saves=1.2)
    report._net_of_conversion(facts, layout, conv_s=2.0)
    assert abs(layout["evidence"]["could_save_s"] - 1.0) < 1e-12
    assert abs(layout["evidence"]["share_of_run"] - 0.5) < 1e-12 and layout["severity"] == rules.severity(0.5)
    facts, unknown = _finding("partial-chunk-compressed", saves=1.2)
    report._net_of_conversion(facts, unknown, conv_s=None)        # not predicted: left as it was
    assert unknown["evidence"]["could_save_s"] == 1.2 and "conversion_s" not in unknown["evidence"]
