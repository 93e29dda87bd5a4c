"""climio-probe-netcdf-slab delivers exactly the hyperslabs asked for, in any layout and type.

Small [t, z, y, x] files made here with netCDF4-python; the expected bytes and checksums come
from the same hyperslabs read with netCDF4-python (and agree with the values written).
"""

import json
import os
import subprocess

import netCDF4
import numpy as np
import pytest

from climio.machine import cache, native
from climio.measure.series import StreamChecksum
from climio.runs.records import validate

PROBE = "climio-probe-netcdf-slab"
SHAPE = (16, 4, 30, 60)
T, Z, Y, X = SHAPE
LAYOUTS = {
    # name: (dtype, createVariable keywords, expected params.chunking, deflate, shuffle)
    "contiguous": ("f8", {"contiguous": True}, "contiguous", 0, 0),
    "zlib": ("f8", {"chunksizes": (16, 1, 1, 60), "zlib": True, "complevel": 4, "shuffle": True},
             [16, 1, 1, 60], 4, 1),
    "nondividing": ("f8", {"chunksizes": (1, 1, 7, 11)}, [1, 1, 7, 11], 0, 0),
    "f4": ("f4", {"chunksizes": (4, 1, 15, 30)}, [4, 1, 15, 30], 0, 0),
    "i2": ("i2", {"chunksizes": (4, 2, 8, 8), "zlib": True, "complevel": 1, "shuffle": False}, [4, 2, 8, 8], 1, 0),
}
READS = {
    "xy": [((t, z, 0, 0), (1, 1, Y, X)) for t in range(T) for z in range(Z)],
    "xt": [((0, z, y, 0), (T, 1, 1, X)) for z in range(Z) for y in range(Y)],    # 120 > 100 slices
    "xyt": [((0, z, 0, 0), (T, 1, Y, X)) for z in range(Z)],
    # 3 + 0 + 5 int16 values: 16 bytes, and 3 values alone would not fill a word
    "odd": [((1, 2, 3, 4), (1, 1, 1, 3)), ((16, 4, 30, 60), (0, 0, 0, 0)), ((0, 0, 29, 55), (1, 1, 1, 5))],
}


def write_slices(path, slices, comment=True):
    with open(path, "w") as fh:
        if comment:
            fh.write("# start_t start_z start_y start_x count_t count_z count_y count_x\n\n")
        fh.writelines(" ".join(map(str, (*s, *c))) + "\n" for s, c in slices)
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("slab")
    values = np.random.default_rng(11).standard_normal(SHAPE) * 1000
    files = {}
    for name, (dtype, kw, *_rest) in LAYOUTS.items():
        path = d / f"{name}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            for dim, n in zip("tzyx", SHAPE):
                ds.createDimension(dim, n)
            ds.createVariable("ta", dtype, ("t", "z", "y", "x"), **kw)[:] = values.astype(dtype)
        files[name] = str(path)
    with netCDF4.Dataset(d / "text.nc", "w") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("s", "S1", ("x",))
    files["text"] = str(d / "text.nc")
    slices = {name: write_slices(d / f"{name}.txt", s) for name, s in READS.items()}
    return {"dir": d, "files": files, "slices": slices, "values": values}


def run(*args):
    out = subprocess.run([native.program(PROBE), *map(str, args)], capture_output=True, text=True, timeout=60)
    return [validate(json.loads(l)) for l in out.stdout.splitlines() if l.startswith("{")], out


def expected(path, slices):
    """(bytes, checksum) of the hyperslabs read with netCDF4-python, zero-padded to whole words."""
    raw = b""
    with netCDF4.Dataset(path) as ds:
        v = ds.variables["ta"]
        v.set_auto_maskandscale(False)
        for s, c in slices:
            raw += np.ascontiguousarray(v[tuple(slice(a, a + n) for a, n in zip(s, c))]).tobytes()
    nbytes = len(raw)
    raw += b"\0" * (-len(raw) % 8)
    summer = StreamChecksum()
    summer.update(raw)
    return nbytes, summer.hexdigest()


@pytest.mark.parametrize("layout,read", [(lay, r) for lay in ("contiguous", "zlib", "nondividing", "f4")
                                         for r in ("xy", "xt", "xyt")] + [("i2", "odd"), ("i2", "xt")])
def test_delivers_exactly_the_hyperslabs(data, layout, read):
    dtype, _, chunking, deflate, shuffle = LAYOUTS[layout]
    path = data["files"][layout]
    recs, out = run("--file", path, "--var", "ta", "--slices", data["slices"][read], "--reps", 2, "--verify",
                    "--platform-id", "pid")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    nbytes, checksum = expected(path, READS[read])
    itemsize = np.dtype(dtype).itemsize
    assert nbytes == sum(int(np.prod(c)) for _, c in READS[read]) * itemsize
    assert len(recs) == 2
    for rep, r in enumerate(recs):
        p, m = r["params"], r["metrics"]
        assert r["study"] == "chunking" and r["status"] == "ok" and r["rep"] == rep and r["platform_id"] == "pid"
        assert p["layer"] == "c-netcdf" and p["variable"] == "ta" and p["file"] == path
        assert p["var_shape"] == list(SHAPE) and p["dtype"] == dtype and p["slices_total"] == len(READS[read])
        assert p["chunking"] == chunking and p["deflate"] == deflate and p["shuffle"] == shuffle
        assert p["library"].startswith("netCDF-C ")
        assert m["bytes"] == nbytes and m["checksum"] == checksum
        assert m["ops"] == m["slices_read"] == len(READS[read]) and m["sampled"] is False
        assert m["wall_s"] > 0 and m["cpu_s"] == pytest.approx(m["user_s"] + m["sys_s"])
        assert m["storage_read_bytes"] >= 0 and "rate_MBps" in m
        assert r["cache"]["state"] == "cold" and r["cache"]["resident_fraction"] <= cache.COLD_THRESHOLD


def test_lossless_layouts_deliver_the_values_written(data):
    """The reference itself is right: netCDF4-python gives back what was written."""
    for layout in ("contiguous", "zlib", "nondividing", "f4"):
        dtype = LAYOUTS[layout][0]
        raw = b"".join(np.ascontiguousarray(data["values"].astype(dtype)[tuple(slice(a, a + n) for a, n in zip(s, c))])
                       .tobytes() for s, c in READS["xt"])
        assert expected(data["files"][layout], READS["xt"])[0] == len(raw)
        summer = StreamChecksum()
        summer.update(raw)
        assert expected(data["files"][layout], READS["xt"])[1] == summer.hexdigest()


def test_chunk_cache_is_set_and_read_back(data):
    common = ["--file", data["files"]["nondividing"], "--var", "ta", "--slices", data["slices"]["xyt"], "--reps", 1]
    recs, out = run(*common, "--chunk-cache", "1048576,101,0.75", "--label", "chunk_label=F",
                    "--label", "read_shape=xt", "--label", "note=a b=c")
    assert out.returncode == 0, out.stderr
    p = recs[0]["params"]
    assert p["chunk_cache"] == {"size": 1048576, "nelems": 101, "preemption": 0.75}
    assert p["chunk_label"] == "F" and p["read_shape"] == "xt" and p["note"] == "a b=c"
    recs, out = run(*common, "--chunk-cache", "default")
    cc = recs[0]["params"]["chunk_cache"]
    assert out.returncode == 0 and cc["size"] > 0 and cc["nelems"] > 0 and 0 <= cc["preemption"] <= 1


def test_budget_cut_gives_a_sample(data):
    # 64 hyperslabs: one read is over 1% of them, so the cut repetition is a sample.
    recs, out = run("--file", data["files"]["zlib"], "--var", "ta", "--slices", data["slices"]["xy"],
                    "--reps", 2, "--budget", "1e-9", "--verify")
    assert out.returncode == 0, out.stderr
    assert [r["status"] for r in recs] == ["ok", "ok"]
    for r in recs:
        m = r["metrics"]
        assert m["sampled"] is True and m["slices_read"] == m["ops"] == 1 < r["params"]["slices_total"] == 64
        assert m["bytes"] == Y * X * 8 and m["checksum"] == expected(data["files"]["zlib"], READS["xy"][:1])[1]
        assert "rate_bound_MBps" not in m


def test_budget_cut_too_early_is_dnf_and_ends_the_run(data):
    # 120 hyperslabs: one read is under 1% and fewer than 3: did not finish.
    recs, out = run("--file", data["files"]["nondividing"], "--var", "ta", "--slices", data["slices"]["xt"],
                    "--reps", 3, "--budget", "1e-9")
    assert out.returncode == 0, out.stderr
    assert len(recs) == 1 and recs[0]["status"] == "dnf"
    m = recs[0]["metrics"]
    assert m["slices_read"] == 1 and m["sampled"] is True and m["bytes"] == T * X * 8
    assert m["planned_bytes"] == 120 * T * X * 8 and m["budget_s"] == pytest.approx(1e-9)
    assert m["rate_bound_MBps"] == pytest.approx(m["bytes"] / 1e-9 / 1e6)


def test_version(data):
    out = subprocess.run([native.program(PROBE), "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    version = json.loads(out.stdout)["netcdf_c"]
    recs, _ = run("--file", data["files"]["f4"], "--var", "ta", "--slices", data["slices"]["xyt"], "--reps", 1)
    assert version and recs[0]["params"]["library"] == f"netCDF-C {version}"


@pytest.mark.parametrize("case,needle", [
    ("missing_file", "cannot open"),
    ("missing_var", "no variable 'nope'"),
    ("text_var", "numeric"),
    ("missing_slices", "cannot read slices file"),
    ("short_line", "needs 8"),
    ("outside", "outside variable 'ta'"),
    ("negative", "non-negative integer"),
    ("empty", "no hyperslabs"),
    ("cache_two", "--chunk-cache"),
    ("cache_preemption", "PREEMPTION"),
    ("cache_word", "--chunk-cache"),
    ("label", "--label"),
    ("no_var", "--var"),
])
def test_bad_input_one_line_exit_2(data, case, needle):
    d, f = data["dir"], data["files"]
    good = data["slices"]["xy"]
    args = {
        "missing_file": ["--file", d / "nope.nc", "--var", "ta", "--slices", good],
        "missing_var": ["--file", f["zlib"], "--var", "nope", "--slices", good],
        "text_var": ["--file", f["text"], "--var", "s", "--slices", good],
        "missing_slices": ["--file", f["zlib"], "--var", "ta", "--slices", d / "nope.txt"],
        "short_line": ["--file", f["zlib"], "--var", "ta",
                       "--slices", write_slices(d / "short.txt", [((0, 0, 0), (1, 1, 1, 1))])],
        "outside": ["--file", f["zlib"], "--var", "ta",
                    "--slices", write_slices(d / "outside.txt", [((0, 0, 0, 1), (1, 1, 1, 60))])],
        "negative": ["--file", f["zlib"], "--var", "ta",
                     "--slices", write_slices(d / "negative.txt", [((0, 0, 0, -1), (1, 1, 1, 1))])],
        "empty": ["--file", f["zlib"], "--var", "ta", "--slices", write_slices(d / "empty.txt", [])],
        "cache_two": ["--file", f["zlib"], "--var", "ta", "--slices", good, "--chunk-cache", "1048576,101"],
        "cache_preemption": ["--file", f["zlib"], "--var", "ta", "--slices", good, "--chunk-cache", "1048576,101,2"],
        "cache_word": ["--file", f["zlib"], "--var", "ta", "--slices", good, "--chunk-cache", "big"],
        "label": ["--file", f["zlib"], "--var", "ta", "--slices", good, "--label", "novalue"],
        "no_var": ["--file", f["zlib"], "--slices", good],
    }[case]
    recs, out = run(*args)
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and recs == [] and out.stdout == "", out
    assert len(lines) == 1 and lines[0].startswith(f"{PROBE}: error: ") and needle in lines[0], lines


def test_filter_the_library_cannot_load_is_bad_input(data, tmp_path):
    """zstd needs a plugin: without HDF5_PLUGIN_PATH (netCDF4-python points it at its own
    plugins when imported) the probe either reads the file or says which filter it lacks."""
    path = tmp_path / "zstd.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for dim, n in zip("tzyx", SHAPE):
            ds.createDimension(dim, n)
        ds.createVariable("ta", "f8", ("t", "z", "y", "x"), compression="zstd", chunksizes=(1, 1, Y, X))[:] = \
            data["values"]
    env = {k: v for k, v in os.environ.items() if k != "HDF5_PLUGIN_PATH"}
    out = subprocess.run([native.program(PROBE), "--file", path, "--var", "ta", "--slices", data["slices"]["xyt"],
                          "--reps", "1", "--verify"], capture_output=True, text=True, env=env)
    if out.returncode == 0:   # a netCDF-C with zstd built in
        rec = json.loads(out.stdout)
        assert rec["status"] == "ok" and rec["metrics"]["checksum"] == expected(str(path), READS["xyt"])[1]
    else:
        lines = out.stderr.splitlines()
        assert out.returncode == 2 and out.stdout == "" and len(lines) == 1
        assert "filter 32015 (zstd)" in lines[0], lines
