"""One cost model: the advisor's one-off "rechunk first" cost is the number `climio rechunk
--dry-run` predicts for the command the advice prints, on real netCDF-4 files, with this
platform's calibrated profile and with the built-in defaults; and the planner's rates say which
come from the profile and which are defaults."""

import json
import os
import shlex
import sys

import pytest

from climio.data.writer import write_4d
from climio.model import profile as profmod
from climio import profiles as on_disk
from climio.dataset.layout import Layout
from climio.model.convert import conversion_plan, plan_variable
from climio.model.profile import default_profile
from climio.model.rates import Rates, codec_key
from climio.machine.platform import platform_id_here as platform_id_of
from climio.dataset.options import parse_compression
from conftest import run_cli


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

SHAPE = (96, 2, 24, 48)
T, Z, Y, X = SHAPE
# (name, chunks, codec, read): the advisor picks the target chunks for the read (and, for a
# compressed variable read in part, also proposes dropping the compression)
CASES = [
    ("none", [1, 1, Y, X], "none", "xt"),
    ("deflate1", [1, 1, Y, X], "deflate1", "xt"),
    ("deflate4+shuffle", [1, 1, Y, X], "deflate4+shuffle", "xt"),
    ("deflate9+shuffle", [1, 1, Y, X], "deflate9+shuffle", "xt"),
    ("zstd3", [1, 1, Y, X], "zstd3", "xt"),
    ("contiguous", "contiguous", "none", "xt"),
    ("xt-chunks", [T, 1, 1, X], "deflate4+shuffle", "xy"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("oneoff")
    out = {}
    for name, chunks, codec, _ in CASES:
        path = d / f"{name}.nc"
        comp = parse_compression(codec) if codec != "none" else None
        write_4d(path, SHAPE, chunks=chunks, dtype="f4", compression=comp)
        out[name] = path
    return out


def calibrated(pid) -> profmod.Profile:
    """A profile of this platform as `climio calibrate` leaves it: storage, write and the
    converter's codec rates for some codecs (deflate9+shuffle and zstd3 left out: the nearest
    level and the default stand in, and both commands must agree on that too)."""
    p = default_profile(pid)
    p.source = "calibration"
    p.rate_Bps["sequential"] = [[4096, 3e8], [4 << 20, 9e8]]
    p.latency_s["strided"] = 150e-6
    p.write_Bps = 700e6
    p.codec_Bps = {"deflate1": {"encode": 120e6, "decode": 500e6},
                   "deflate4+shuffle": {"encode": 70e6, "decode": 450e6},
                   "deflate4": {"encode": 60e6, "decode": 400e6}}
    return p


def rechunk_dry_run_seconds(command) -> tuple:
    """(predicted seconds, rate lines) of `climio rechunk ... --dry-run --json` for a printed command."""
    argv = shlex.split(command)
    assert argv[:2] == ["climio", "rechunk"], command
    res = run_cli(*argv[1:], "--dry-run", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    return sum(p["predicted_s"] for p in summary["plans"].values()), \
        [ln for ln in res.stderr.splitlines() if ln.startswith("rate ")]


@pytest.mark.parametrize("with_profile,cases", [(True, CASES), (False, CASES[2:4])], ids=["calibrated", "defaults"])
def test_advice_one_off_cost_is_the_dry_run_prediction(files, tmp_path, monkeypatch, with_profile, cases):
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    if with_profile:
        on_disk.save(calibrated(platform_id_of(next(iter(files.values())))))
    compared = []
    for name, _, codec, read in cases:
        res = run_cli("advise", files[name], "--var", "ta", "--read", read, "--json")
        assert res.returncode == 0, res.stderr
        recs = [r for r in json.loads(res.stdout)["recommendations"] if r.get("command", "").startswith("climio rechunk")]
        assert any(r["rule"] == "chunk-shape" for r in recs), (name, [r["rule"] for r in recs])
        for r in recs:
            predicted, rate_lines = rechunk_dry_run_seconds(r["command"])
            assert r["one_off_s"] > 0
            assert r["one_off_s"] == pytest.approx(predicted, rel=1e-12), (name, r["rule"], r["command"])
            compared.append((name, r["rule"]))
            if with_profile:
                assert any(ln.startswith("rate read: 900 MB/s, from the calibrated profile") for ln in rate_lines)
                assert any(ln.startswith("rate write: 700 MB/s, from the calibrated profile") for ln in rate_lines)
            else:
                assert all("built-in default" in ln for ln in rate_lines), rate_lines
    assert len({c for c, _ in compared}) == len(cases) and len(compared) >= min(5, len(cases)), compared


def test_rates_come_from_one_profile_and_say_which_are_defaults():
    prof = calibrated("pid-rates")
    r = Rates.from_profile(prof, "deflate4+shuffle", "deflate4+shuffle")
    assert (r.read_Bps, r.write_Bps, r.decode_Bps, r.encode_Bps) == (9e8, 7e8, 450e6, 70e6)
    assert r.op_s == pytest.approx(150e-6) and r.defaulted == ()
    # deflate9+shuffle is not calibrated: the same family and shuffle at the nearest level, said so
    near = Rates.from_profile(prof, "deflate4+shuffle", "deflate9+shuffle")
    assert near.encode_Bps == 70e6 and "deflate4+shuffle for deflate9+shuffle" in dict(near.origin)["encode_Bps"]
    # no deflate9 with shuffle... and none without: deflate4+shuffle stays nearest; deflate2+shuffle
    # is uncalibrated but its family is, with and without shuffle: the same shuffle wins
    assert Rates.from_profile(prof, "none", "deflate2+shuffle").encode_Bps == 70e6
    # deflate1+shuffle: no deflate with shuffle at level 1, deflate4+shuffle is of the same shuffle
    assert Rates.from_profile(prof, "none", "deflate1+shuffle").encode_Bps == 70e6
    # a family calibrated only without shuffle stands in for its shuffled form, said so
    prof_z = calibrated("pid-z")
    prof_z.codec_Bps = {**prof_z.codec_Bps, "zstd3": {"encode": 270e6, "decode": 650e6}}
    zs = Rates.from_profile(prof_z, "zstd3+shuffle", "zstd3+shuffle")
    assert zs.encode_Bps == 270e6 and "encode_Bps" not in zs.defaulted
    assert "zstd3 for zstd3+shuffle" in dict(zs.origin)["encode_Bps"]
    # decoding: the read studies' rate of the codec itself comes before the other shuffle's
    assert zs.decode_Bps == prof_z.decode("zstd3+shuffle") != 650e6
    prof_z.decode_Bps = {}
    assert Rates.from_profile(prof_z, "zstd3+shuffle").decode_Bps == 650e6
    # zstd3 has no calibrated family member: the built-in encode rate, flagged as a default
    z = Rates.from_profile(prof, "none", "zstd3")
    assert z.encode_Bps == Rates().encode_Bps and "encode_Bps" in z.defaulted and "write_Bps" not in z.defaulted
    assert any(ln.startswith("rate encode zstd3: 90 MB/s, built-in default") for ln in z.describe("none", "zstd3"))
    assert not any("decode" in ln for ln in z.describe("none", "zstd3"))
    # a profile of built-in defaults prices with the planner's built-in rates, every one flagged
    d = Rates.from_profile(default_profile("pid-d"), "deflate4+shuffle")
    assert d == Rates() and set(d.defaulted) == {"read_Bps", "write_Bps", "decode_Bps", "encode_Bps", "op_s"}
    # an older profile without write or codec rates: read and decode from it, write and encode defaults
    old = default_profile("pid-old")
    old.source = "calibration"
    o = Rates.from_profile(old, "deflate4+shuffle")
    assert o.decode_Bps == old.decode("deflate4+shuffle") and set(o.defaulted) == {"write_Bps", "encode_Bps"}
    assert codec_key("bitround12+deflate4") == "deflate4" and codec_key("") == "none"
    # parallel workers decode and encode as much faster as calibration measured, not w times
    slow = calibrated("pid-par")
    slow.parallel = {"cores": 2, "cpu": {"2": 1.25}}
    src, dst = Layout((64, 4, 32, 64), 4, (1, 1, 32, 64), True, 1 << 19), Layout((64, 4, 32, 64), 4, (64, 1, 1, 64), True)
    fast_plan = conversion_plan(src, dst, calibrated("pid-par"), "deflate4+shuffle", None, 1 << 30, 2)
    slow_plan = conversion_plan(src, dst, slow, "deflate4+shuffle", None, 1 << 30, 2)
    (f,), (sl,) = fast_plan.passes, slow_plan.passes
    cpu = f.bytes_decoded / 450e6 + f.bytes_encoded / 70e6
    assert Rates.from_profile(slow, "deflate4+shuffle").speedup(2) == 1.25
    assert sl.predicted_s - f.predicted_s == pytest.approx(cpu / 1.25 - cpu / 2, rel=1e-9)
    # a two-pass plan reads its intermediate back from the page cache when it fits in memory
    r = Rates.from_profile(calibrated("pid-warm"), "deflate4+shuffle")
    assert r.warm_read_Bps > r.read_Bps
    cold = plan_variable(src, dst, 100 << 10, 1, r, page_cache_bytes=0)
    warm = plan_variable(src, dst, 100 << 10, 1, r, page_cache_bytes=1 << 40)
    assert cold.strategy == warm.strategy == "two-pass" and warm.passes[0] == cold.passes[0]
    assert warm.passes[1].predicted_s < cold.passes[1].predicted_s
    # the profile's JSON keeps the new rates
    again = profmod.Profile.from_json(prof.to_json())
    assert again.write_Bps == 7e8 and again.codec_Bps == prof.codec_Bps


def test_a_blosc_codec_is_priced_as_its_inner_compressor():
    """A Zarr store's blosc(zstd) takes zstd's calibrated rates (the family of blosc_X is X), not the
    slowest calibrated codec's: deflate1's 287 MB/s priced a blosc zstd3 source that decoded at
    1.9 GB/s, and the planner chose two passes (5.6 s) over re-decoding (3.9 s) at 1 GiB."""
    assert profmod.codec_family("blosc_zstd3+shuffle") == "zstd"
    assert profmod.codec_family("blosc_lz4:5") == "lz4" and profmod.codec_family("blosc") == "blosc"
    prof = calibrated("pid-blosc")
    prof.decode_Bps = {"deflate1": 287e6, "zstd3": 1196e6}
    prof.codec_Bps = {**prof.codec_Bps, "zstd3": {"encode": 285e6, "decode": 661e6}}
    assert prof.decode("blosc_zstd3+shuffle") == 1196e6      # the read studies' zstd, not deflate1's
    r = Rates.from_profile(prof, "blosc_zstd3+shuffle", "blosc_zstd5")
    assert r.decode_Bps == 1196e6 and r.encode_Bps == 285e6, r
    assert "zstd3 for blosc_zstd5" in dict(r.origin)["encode_Bps"]
    prof.decode_Bps = {}
    assert Rates.from_profile(prof, "blosc_zstd3+shuffle").decode_Bps == 661e6   # the converter's own zstd3
    # a blosc with an inner compressor nobody calibrated: no family member, the built-in default
    assert Rates.from_profile(prof, "none", "blosc_lz4:5").encode_Bps == Rates().encode_Bps


def _convert_record(kind, codec, wall, rep, **params):
    return {"study": "calibrate", "status": "ok", "rep": rep, "cache": {"state": "warm"}, "platform_id": "pid-c",
            "params": {"kind": kind, "codec": codec, "stack": "climio-rechunk", **params},
            "metrics": {"wall_s": wall, "bytes": params.get("bytes", 0), "ops": params.get("ops", 1)}}


def test_calibration_records_give_the_converter_rates():
    """climio.bench.calibrate.codecs' records -> the profile's write and per-codec encode/decode
    rates: a line through the two chunk sizes' write times gives the bandwidth, the conversions
    beyond their uncompressed twin give encode and decode (the fastest repetition of each), and
    the planner then prices with them."""
    from climio.model.fit import fit
    n = 100e6                                      # bytes of the variable
    recs = []
    for rep, noise in enumerate((0.0, 0.3)):       # a slower second repetition is not taken
        for size, count in ((64 << 10, 512), (1 << 20, 32)):
            per = 50e-6 + size / 1e9               # 50 us per write + 1 GB/s
            recs.append(_convert_record("convert-write", None, count * per * (1 + noise), rep, request_bytes=size,
                                        bytes=count * size, ops=count))
        twin = dict(bytes_encoded=0, bytes_decoded=0, stored_out=int(n))
        recs.append(_convert_record("convert-encode", "none", 1.0 + noise, rep, **twin))
        # encoding 100 MB at 50 MB/s, and writing 60 MB less at 1 GB/s saved 0.06 s
        recs.append(_convert_record("convert-encode", "deflate1+shuffle", 1.0 + 2.0 - 0.06 + noise, rep,
                                    bytes_encoded=n, bytes_decoded=0, stored_out=int(0.4 * n)))
        recs.append(_convert_record("convert-decode", "deflate1+shuffle", 1.0 + 0.25 + noise, rep,
                                    bytes_encoded=0, bytes_decoded=n, stored_out=int(n)))
    prof = fit(recs, "pid-c", base=default_profile("pid-c"))
    assert prof.write_Bps == pytest.approx(1e9, rel=1e-6)
    assert prof.codec_Bps["deflate1+shuffle"]["encode"] == pytest.approx(50e6, rel=1e-6)
    assert prof.codec_Bps["deflate1+shuffle"]["decode"] == pytest.approx(400e6, rel=1e-6)
    r = Rates.from_profile(prof, "deflate1+shuffle")
    assert (r.write_Bps, r.encode_Bps, r.decode_Bps) == pytest.approx((1e9, 50e6, 400e6), rel=1e-6)
    assert "converter's own encoding" in dict(r.origin)["encode_Bps"] and r.defaulted == ()


if __name__ == "__main__":
    sys.exit(pytest.main([os.path.abspath(__file__), "-q"]))
