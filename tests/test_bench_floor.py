"""bench/probe_vs_fio.py's arithmetic (`make bench`, issue 27 item 8): the ABBA order, the
best-of-N and median ratios, and the like-for-like ratio over the fast mode when runs split."""

import importlib.util
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "bench" / "probe_vs_fio.py"


@pytest.fixture(scope="module")
def floor():
    spec = importlib.util.spec_from_file_location("probe_vs_fio", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_abba_order_alternates_who_goes_first(floor):
    assert floor.abba(1) == ["probe", "fio"]
    assert floor.abba(3) == ["probe", "fio", "fio", "probe", "probe", "fio"]
    order = floor.abba(6)
    assert order.count("probe") == order.count("fio") == 6
    # neither tool always follows the other: each follows each
    follows = {(a, b) for a, b in zip(order, order[1:])}
    assert {("probe", "fio"), ("fio", "probe"), ("fio", "fio"), ("probe", "probe")} <= follows


def test_ratios_best_of_n_and_median(floor):
    got = floor.ratios([1700, 900, 1800, 1600], [1800, 1850, 1000, 1820])
    assert got["best"] == pytest.approx(1800 / 1850)
    assert got["median"] == pytest.approx(1650 / 1810)


def test_fast_mode_ratio_only_when_the_runs_split(floor):
    run = lambda mbps, s: {"MBps": mbps, "sys_s_per_GB": s}     # noqa: E731
    one_mode = {"probe": [run(1700, 0.07), run(1750, 0.08)], "fio": [run(1800, 0.07), run(1810, 0.09)]}
    assert floor.fast_mode_ratio(one_mode) is None
    split = {"probe": [run(1700, 0.07), run(300, 1.2), run(1720, 0.08)],
             "fio": [run(1800, 0.07), run(250, 1.4), run(1820, 0.08)]}
    ratio, n_probe, n_fio = floor.fast_mode_ratio(split)
    assert (n_probe, n_fio) == (2, 2) and ratio == pytest.approx(1710 / 1810)
    assert floor.mode_note([run(1700, 0.07), run(300, 1.2), run(1720, 0.08)]).startswith("TWO MODES")
    assert floor.mode_note(one_mode["probe"]) == "one mode"
