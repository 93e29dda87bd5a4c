"""The Python API a notebook calls: climio.rechunk and climio.load_records on real files."""

import netCDF4
import numpy as np
import pytest

import climio
from climio.data import write_4d
from climio.base.errors import InputError


@pytest.mark.parametrize("workers", [1, 2])
def test_rechunk_from_python(tmp_path, workers):
    src, dst = tmp_path / "in.nc", tmp_path / "out.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], seed=3)
    summary = climio.rechunk(src, dst, chunks={"time": 8, "lat": 4}, compression="deflate1+shuffle",
                             workers=workers, verify=True)
    assert isinstance(summary, dict)
    with netCDF4.Dataset(dst) as a, netCDF4.Dataset(src) as b:
        assert a["ta"].chunking() == [8, 1, 4, 32]
        f = a["ta"].filters()
        assert f["zlib"] and f["complevel"] == 1 and f["shuffle"]
        assert np.array_equal(a["ta"][:], b["ta"][:])


def test_rechunk_per_variable_chunks_and_bad_input(tmp_path):
    src = tmp_path / "in.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], seed=4)
    climio.rechunk(src, tmp_path / "o.nc", chunks={"ta": [4, 1, 8, 32]}, workers=1)
    with netCDF4.Dataset(tmp_path / "o.nc") as a:
        assert a["ta"].chunking() == [4, 1, 8, 32]
    with pytest.raises(InputError):
        climio.rechunk(src, tmp_path / "x.nc", chunks={"time": -3}, workers=1)
    assert not (tmp_path / "x.nc").exists()


# --- climio.predict and climio.advise ---------------------------------------------------------------

def _profile_file(tmp_path):
    from climio.model import profile as profmod
    p = tmp_path / "profile.json"
    p.write_text(profmod.default_profile("api-test").to_json())
    return p


def test_predict_from_python_has_the_numbers_and_matches_the_command(tmp_path):
    import json
    from conftest import run_cli
    src = tmp_path / "maps.nc"
    write_4d(src, [24, 2, 16, 32], chunks=[1, 1, 16, 32], deflate=1, shuffle=True, seed=5)
    prof = _profile_file(tmp_path)
    p = climio.predict(src, var="ta", read=["xy", "xt"], passes=[30, 5], profile=str(prof))
    assert [(s.read, s.passes) for s, _, _, _ in p.items] == [("xy", 30), ("xt", 5)]
    xy, xt = p.items[0][3], p.items[1][3]
    assert xy.passes == 30 and xt.passes == 5
    assert p.seconds == pytest.approx(xy.seconds + xt.seconds) and p.total_s > p.seconds
    assert xy.counts.decodes == 24 * 2                     # one decode per map chunk, every chunk read once
    assert xt.chunk_cache["nbytes"] > 0 and xt.chunk_cache["nslots"] > 0
    d = p.to_dict()
    assert json.loads(json.dumps(d)) == d
    cli = run_cli("predict", src, "--var", "ta", "--read", "xy", "--passes", "30", "--read", "xt", "--passes", "5",
                  "--profile", prof, "--json")
    assert cli.returncode == 0, cli.stderr
    got = json.loads(cli.stdout)
    assert got["seconds"] == pytest.approx(d["seconds"])
    assert [r["prediction"]["counts"]["decodes"] for r in got["reads"]] == [r["prediction"]["counts"]["decodes"]
                                                                            for r in d["reads"]]


def test_advise_from_python_ranks_with_numbers(tmp_path):
    import json
    src = tmp_path / "maps.nc"
    write_4d(src, [48, 2, 16, 32], chunks=[1, 1, 16, 32], deflate=4, shuffle=True, seed=6)
    a = climio.advise(src, var="ta", read="xt", passes=20, profile=str(_profile_file(tmp_path)))
    assert a.predicted_s == pytest.approx(a.prediction.total_s) and a.predicted_s > 0
    best = a.best
    assert best is not None and best["after_s"] < best["before_s"]
    assert best == a.ranked()[0]
    d = a.to_dict()
    assert json.loads(json.dumps(d, default=str))["recommendations"][0]["rule"] == best["rule"]
    assert "advice for" in str(a)


def test_predict_and_advise_bad_input_is_one_error(tmp_path):
    from climio.base.errors import ClimioError
    src = tmp_path / "m.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], seed=7)
    with pytest.raises(InputError):
        climio.predict(src, var="ta", read=["xy", "xt"], passes=[1, 2, 3])
    with pytest.raises(ClimioError):
        climio.advise(tmp_path / "missing.nc", var="ta", read="xt")
