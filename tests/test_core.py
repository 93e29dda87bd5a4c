"""Units, records and the strace parser of the measurement core."""

import json
from collections import Counter

import pytest

from climio.measure import syscalls
from climio.base.errors import DataError, InputError
from climio.runs.records import RecordWriter, make_record, read_records
from climio.base.units import format_size
from climio.dataset.options import parse_size, parse_size_list


def test_sizes():
    assert parse_size("512B") == 512 and parse_size("64KiB") == 65536 and parse_size("1GiB") == 1 << 30
    assert parse_size("2GB") == 2_000_000_000 and parse_size("1.5KiB") == 1536
    # bare k/m/g/t are binary as in fio and IOR; kB/MB/GB decimal
    assert parse_size("4k") == 4096 and parse_size("1m") == 1 << 20 and parse_size("2g") == 2 << 30
    assert parse_size("4kB") == 4000 and parse_size("1MB") == 10**6
    assert parse_size_list("512B..4KiB") == [512, 1024, 2048, 4096]
    assert parse_size_list("512B..32KiB:4") == [512, 2048, 8192, 32768]
    assert parse_size_list("1MiB,4KiB,4KiB") == [4096, 1 << 20]
    assert format_size(1 << 20) == "1MiB" and format_size(512) == "512B" and format_size(1536) == "1.5KiB"
    for bad in ("12 parsecs", "1.3B", "KiB", "-4KiB"):
        with pytest.raises(InputError):
            parse_size(bad)
    for bad in ("", "4KiB..1KiB", "1KiB..1MiB:1", "0B"):
        with pytest.raises(InputError):
            parse_size_list(bad)


def test_one_command_value_parsers_live_in_options():
    """--lat-band, --layouts, --mode and --chunk-cache are parsed in climio.dataset.options, the one place
    for value parsers; their commands use those functions (issue 12, 3)."""
    from climio.dataset import options as O
    from climio.bench import stsa as stsa_bench
    from climio.measure import worker
    from climio.stsa import inputs
    from climio.trace import run as trace_run
    assert inputs.parse_lat_band is O.parse_lat_band and trace_run.parse_mode is O.parse_mode
    assert worker.parse_cache_spec is O.parse_cache_spec and not hasattr(stsa_bench, "parse_layouts")
    assert O.parse_lat_band("-15,15") == (-15.0, 15.0) and O.parse_lat_band("all") is None
    assert O.parse_layouts("contiguous, xt+deflate4+shuffle", stsa_bench.LAYOUT_LABELS) == [
        ("contiguous", "contiguous", "none"), ("xt+deflate4+shuffle", "xt", "deflate4+shuffle")]
    assert stsa_bench.build_grid("quick", layouts="xt+deflate1").layout_specs == [("xt+deflate1", "xt", "deflate1")]
    assert O.parse_mode("counters:5") == ("counters", 5) and O.parse_mode(None) == ("full", 0)
    assert O.parse_cache_spec("default") is None and O.parse_cache_spec("1024,521,0.5") == (1024, 521, 0.5)
    for fn, bad in ((O.parse_lat_band, "15,-15"), (O.parse_lat_band, "north"),
                    (lambda t: O.parse_layouts(t, stsa_bench.LAYOUT_LABELS), "ab"),
                    (lambda t: O.parse_layouts(t, stsa_bench.LAYOUT_LABELS), "contiguous+deflate1"),
                    (O.parse_mode, "full:3"), (O.parse_cache_spec, "1,2"), (O.parse_cache_spec, "1,2,3")):
        with pytest.raises(InputError) as exc:
            fn(bad)
        assert str(exc.value) and "\n" not in str(exc.value)


def test_records_roundtrip_and_derived_metrics(tmp_path):
    rec = make_record("read-stack", {"layer": "numpy"}, {"bytes": 2_000_000, "wall_s": 2.0, "user_s": 0.5, "sys_s": 0.25},
                      {"state": "cold"}, rep=1, platform_id="abc")
    assert rec["metrics"]["rate_MBps"] == 1.0 and rec["metrics"]["cpu_s"] == 0.75
    with RecordWriter(tmp_path / "records.jsonl") as w:
        w.write(rec)
    assert read_records(tmp_path) == [json.loads(json.dumps(rec))]


def test_record_without_cache_state_is_rejected(tmp_path):
    (tmp_path / "records.jsonl").write_text(json.dumps(
        {"study": "x", "params": {}, "metrics": {}, "cache": {}, "rep": 0, "status": "ok", "time": "", "platform_id": ""}) + "\n")
    with pytest.raises(DataError, match="cache"):
        read_records(tmp_path)


STRACE = """\
101 write(4</dev/null>, "climio-mark sequential 512 0\\n", 29) = 29
101 read(3</data/f.nc>, "\\x89HDF"..., 65536) = 65536
101 read(5</usr/lib/python3/x.py>, "import"..., 4096) = 4096
101 pread64(3</data/f.nc>, "abc)def"..., 4096, 8192) = 4096
102 read(3</data/f.nc>,  <unfinished ...>
101 write(4</dev/null>, "climio-mark random 512 0\\n", 25) = 25
102 <... read resumed>"xyz"..., 512) = 512
101 read(3</data/f.nc>, "", 512) = 0
"""


def test_strace_parser_attributes_reads_to_markers():
    per = syscalls.parse(STRACE.splitlines(), "/data/f.nc")
    assert per[("sequential", "512", "0")] == Counter({65536: 1, 4096: 1})
    # The resumed read finished after the second marker: attributed to the configuration then running.
    assert per[("random", "512", "0")] == Counter({512: 1, 0: 1})
    s = syscalls.summarise(per[("sequential", "512", "0")], requests=2)
    assert s["calls_per_request"] == 1.0 and s["bytes_per_request"] == (65536 + 4096) / 2
