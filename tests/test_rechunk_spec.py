"""climio.rechunking.spec: user chunk options -> exact targets per variable (nccopy forms, --for,
--balanced, --contiguous, compression), checked on made-up VarInfos, on real files for the CF axis
lookup, and against the nccopy binary where its documentation and behaviour agree."""

import math
import subprocess

import netCDF4
import numpy as np
import pytest

from climio.dataset.compression import NONE
from climio.dataset.options import parse_compression
from climio.base.errors import DataError, InputError
from climio.dataset.layout import balanced_chunks
from climio.rechunking import spec as S
from climio.rechunking.model import Target, VarInfo

MiB = 1 << 20


def V(path, dims, shape, chunks=None, dtype="<f4", unlimited=(), comp=NONE, attrs=None):
    dims = tuple(dims)
    return VarInfo(path=path, dims=dims, shape=tuple(shape), unlimited=tuple(d in unlimited for d in dims),
                   dtype=dtype, itemsize=np.dtype(dtype).itemsize if dtype != "str" else 0,
                   chunks=None if chunks is None else tuple(chunks), compression=comp, attrs=attrs or {})


def coord(name, n, unlimited=False, **attrs):
    return V("/" + name, [name], [n], dtype="<f8", unlimited=(name,) if unlimited else (), attrs=attrs)


def resolve(infos, *args, **kw):
    return S.resolve_targets(infos, *args, **kw)


def error(fn, *args, **kw) -> str:
    """The message of the InputError (bad options) or DataError (a variable or dimension the file
    does not have: exit code 3) fn raises; every user error is one line."""
    with pytest.raises((InputError, DataError)) as exc:
        fn(*args, **kw)
    msg = str(exc.value)
    assert msg and "\n" not in msg
    return msg


# A 4-D [time, lev, lat, lon] file: chunked t, contiguous u, a netCDF-3 style record variable r.
T, Z, Y, X = 100, 10, 180, 360
CF = [coord("time", T, unlimited=True, axis="T"), coord("lev", Z, axis="Z"),
      coord("lat", Y, axis="Y"), coord("lon", X, axis="X")]
DIMS4 = ("time", "lev", "lat", "lon")
t4 = V("/t", DIMS4, (T, Z, Y, X), chunks=(10, 5, 90, 90), unlimited=("time",))
u3 = V("/u", ("lev", "lat", "lon"), (Z, Y, X))
r3 = V("/r", ("time", "lat", "lon"), (1000, Y, X), unlimited=("time",))
FILE = [*CF, t4, u3, r3]


# --- nccopy forms ------------------------------------------------------------------------------

def test_dim_spec_unnamed_dims_follow_nccopy_rules():
    got = resolve(FILE, ["lat/30"])
    assert got["/t"].chunks == (10, 5, 30, 90)          # rule 3: unnamed dims keep the source chunks
    assert got["/u"].chunks == (Z, 30, X)               # rule 6: contiguous source, full fixed dims
    # rule 6, unlimited: as many records as fit in 4 MiB beside [30, 360] float32
    assert got["/r"].chunks == (4 * MiB // (30 * X * 4), 30, X)
    assert "/lat" not in got          # coordinate variables keep their layout unless named
    assert resolve(FILE, ["lat/30"], variables=["lat"])["/lat"].chunks == (30,)
    assert "/lon" not in got
    assert "/time" not in got
    # `dim/` = the whole dimension; several dims, comma-joined and repeated -c
    got = resolve(FILE, ["lat/,lon/40", "lev/2"])
    assert got["/t"].chunks == (10, 2, Y, 40)
    assert got["/u"].chunks == (2, Y, 40)


def test_dim_spec_unlimited_growth_caps_at_current_length():
    small = V("/s", ("time", "lat"), (3, 10), unlimited=("time",))
    assert resolve([small], ["lat/5"])["/s"].chunks == (3, 5)
    empty = V("/e", ("time", "lat"), (0, 10), unlimited=("time",))
    assert resolve([empty], ["lat/5"])["/e"].chunks == (1, 5)   # no records yet: chunk 1


def test_var_spec_and_mixed():
    assert resolve(FILE, ["t:1,2,3,4"])["/t"].chunks == (1, 2, 3, 4)
    got = resolve(FILE, ["lat/30,t:1,1,10,10", "lon/20"])
    assert got["/t"].chunks == (1, 1, 10, 10)           # the per-variable spec wins over dim specs
    assert got["/u"].chunks == (Z, 30, 20)
    assert got["/r"].chunks[1:] == (30, 20)
    # absolute path, and `var:` = contiguous (nccopy)
    assert resolve(FILE, ["/u:5,6,7"])["/u"].chunks == (5, 6, 7)
    assert resolve(FILE, ["u:"])["/u"].chunks is None
    msg = error(resolve, FILE, ["t:1,2,3"])
    assert "3 lengths for /t" in msg and "4 dimensions" in msg


def test_unknown_var_or_dim():
    assert "unknown dimension 'height'" in error(resolve, FILE, ["height/3"])
    msg = error(resolve, FILE, ["nope:1,2"])
    assert "unknown variable 'nope'" in msg and "t, u, r" in msg


def test_chunk_larger_than_dimension():
    assert error(resolve, [t4], ["lat/400"]) == \
        "chunk 400 for dimension lat (length 180) of /t is larger than the dimension"
    assert "chunk 400 for dimension lat (length 180) of /t" in error(resolve, FILE, ["t:1,1,400,1"])
    # unlimited: any positive length (the dimension grows)
    assert resolve(FILE, ["time/5000"])["/t"].chunks == (5000, 5, 90, 90)
    assert resolve(FILE, ["t:5000,1,1,1"])["/t"].chunks == (5000, 1, 1, 1)


@pytest.mark.parametrize("bad", ["lat/0", "lat/1.5", "lat/abc", "t:1,x,3,4", "t:0,1,1,1", "lat/3,,lon/4",
                                 "/3", "lat", "t:compact"])
def test_malformed_specs(bad):
    error(resolve, FILE, [bad])


def test_against_nccopy_binary(tmp_path):
    """Where nccopy(1) and nccopy agree (chunked source: rule 3; contiguous source with fixed
    dims: rule 6 full lengths), climio's targets equal nccopy's output chunks."""
    src, out = tmp_path / "in.nc", tmp_path / "out.nc"
    with netCDF4.Dataset(src, "w") as ds:
        for name, n in (("time", None), ("lev", 5), ("lat", 60), ("lon", 80)):
            ds.createDimension(name, n)
        a = ds.createVariable("a", "f4", ("time", "lat", "lon"), chunksizes=(4, 30, 16))
        a[:] = np.zeros((12, 60, 80))
        b = ds.createVariable("b", "f8", ("lev", "lat", "lon"), contiguous=True)
        b[:] = np.zeros((5, 60, 80))
    infos = scan(src)
    for spec in ("lat/7", "lon/9,lev/2", "lat/"):
        subprocess.run(["nccopy", "-c", spec, str(src), str(out)], check=True, capture_output=True)
        mine = resolve(infos, [spec])
        with netCDF4.Dataset(out) as ds:
            for name in ("a", "b"):
                assert mine["/" + name].chunks == tuple(ds[name].chunking()), (spec, name)


# --- --for -----------------------------------------------------------------------------------------

def scan(path):
    """VarInfos of a real file (what meta.scan will give), enough for these tests."""
    out = []

    def walk(g, prefix):
        for name, v in g.variables.items():
            ch = v.chunking()
            dt = np.dtype(v.dtype)
            out.append(VarInfo(path=f"{prefix}/{name}", dims=v.dimensions, shape=v.shape,
                               unlimited=tuple(g.dimensions[d].isunlimited() if d in g.dimensions else False
                                               for d in v.dimensions),
                               dtype=dt.str, itemsize=dt.itemsize,
                               chunks=None if ch == "contiguous" else tuple(ch), compression=NONE,
                               attrs={k: v.getncattr(k) for k in v.ncattrs()}))
        for name, sub in g.groups.items():
            walk(sub, f"{prefix}/{name}")

    with netCDF4.Dataset(path) as ds:
        walk(ds, "")
    return out


def make_file(path, dims, coord_attrs, nt=T):
    """A real [t, z, y, x] file with coordinate variables carrying only `coord_attrs`."""
    with netCDF4.Dataset(path, "w") as ds:
        for d, n in zip(dims, (None, Z, Y, X)):
            ds.createDimension(d, n)
        for d, attrs in zip(dims, coord_attrs):
            c = ds.createVariable(d, "f8", (d,))
            c.setncatts(attrs)
        data = ds.createVariable("data", "f4", dims)
        data[nt - 1, 0, 0, 0] = 1.0
    return scan(path)


# [T,1,1,X] = 144000 B; lat grows as far as 1 MiB allows (7), to the largest length that divides
# Y = 180 (6: no padded edge chunk); lev stays 1
XT = (T, 1, 6, X)


def test_for_xt_axis_attributes(tmp_path):
    dims = ("d0", "d1", "d2", "d3")            # names that tell nothing: only `axis` speaks
    infos = make_file(tmp_path / "axis.nc", dims, [{"axis": a} for a in "TZYX"])
    data = next(i for i in infos if i.path == "/data")
    assert S.resolve_axes(data, infos) == {"x": "d3", "y": "d2", "z": "d1", "t": "d0"}
    got = resolve(infos, for_axes="xt")
    assert XT == (100, 1, 6, 360) and got["/data"].chunks == XT
    assert math.prod(XT) * 4 <= MiB < math.prod((T, 1, 8, X)) * 4  # 7 would fit, 6 divides 180
    # coordinate variables: d0 (t) and d3 (x) chunked whole, d1/d2 have neither axis: unchanged
    assert "/d0" not in got and "/d3" not in got  # coordinate variables: not selected unless named
    assert "/d1" not in got
    # xy and a larger target; a chunk already over the target is not shrunk
    # lev grows first: 4 levels fit in 1 MiB, 2 divide Z = 10; then time grows into the room left (2)
    assert resolve(infos, for_axes="xy")["/data"].chunks == (2, 2, Y, X)
    assert resolve(infos, for_axes="xt", chunk_bytes="64KiB")["/data"].chunks == (T, 1, 1, X)
    # t alone: lon grows to its whole length first, then lat as far as 4 MiB allows (29) to a
    # divisor of 180 (20), lev stays 1
    assert resolve(infos, for_axes="t", chunk_bytes=4 * MiB)["/data"].chunks == (T, 1, 20, X)


def test_for_standard_name_only(tmp_path):
    dims = ("d0", "d1", "d2", "d3")
    attrs = [{"standard_name": s} for s in ("time", "atmosphere_hybrid_sigma_pressure_coordinate",
                                            "grid_latitude", "projection_x_coordinate")]
    infos = make_file(tmp_path / "std.nc", dims, attrs)
    data = next(i for i in infos if i.path == "/data")
    assert S.resolve_axes(data, infos) == {"x": "d3", "y": "d2", "z": "d1", "t": "d0"}
    assert resolve(infos, for_axes="xt")["/data"].chunks == XT


def test_for_units_only(tmp_path):
    dims = ("d0", "d1", "d2", "d3")
    attrs = [{"units": "days since 1850-01-01"}, {"units": "hPa"}, {"units": "degrees_north"},
             {"units": "degrees_east"}]
    infos = make_file(tmp_path / "units.nc", dims, attrs)
    data = next(i for i in infos if i.path == "/data")
    assert S.resolve_axes(data, infos) == {"x": "d3", "y": "d2", "z": "d1", "t": "d0"}
    assert resolve(infos, for_axes="xt")["/data"].chunks == XT
    # a `positive` attribute marks a vertical coordinate too
    infos = make_file(tmp_path / "pos.nc", dims, [attrs[0], {"units": "m", "positive": "down"}, *attrs[2:]])
    assert S.resolve_axes(next(i for i in infos if i.path == "/data"), infos)["z"] == "d1"


def test_for_names_only(tmp_path):
    infos = make_file(tmp_path / "names.nc", ("time", "plev", "latitude", "longitude"), [{}] * 4)
    data = next(i for i in infos if i.path == "/data")
    assert S.resolve_axes(data, infos) == {"x": "longitude", "y": "latitude", "z": "plev", "t": "time"}
    assert resolve(infos, for_axes="xt")["/data"].chunks == XT
    # no coordinate variables at all: the dimension names alone
    bare = V("/v", ("t", "z", "y", "x"), (T, Z, Y, X))
    assert S.resolve_axes(bare, [bare]) == {"x": "x", "y": "y", "z": "z", "t": "t"}


def test_axis_evidence_order():
    # the axis attribute beats a misleading name; standard_name beats units
    a = coord("lat", 10, axis="X")
    b = coord("q", 20, standard_name="latitude", units="degrees_east")
    v = V("/v", ("q", "lat"), (20, 10))
    assert S.resolve_axes(v, [a, b, v]) == {"x": "lat", "y": "q"}
    # a coordinate variable in an enclosing group is found
    g = V("/g/sub/v", ("q",), (20,))
    assert S.resolve_axes(g, [b, g]) == {"y": "q"}


def test_for_dim_names_and_missing_axes():
    got = resolve(FILE, for_axes="time,lon")
    assert got["/t"].chunks == XT
    assert got["/u"].chunks == (2, Y, X)  # no time: lon full, lat grows to Y, then lev (4 fit, 2 divide 10)
    assert "/lat" not in got                                # a coordinate variable: not selected
    assert "unknown dimension 'height'" in error(resolve, FILE, for_axes="time,height")
    # xyz on [time, lat, lon]: no z, so z is skipped; time grows
    assert resolve(FILE, for_axes="xyz")["/r"].chunks == (MiB // (Y * X * 4), Y, X)
    # explicitly selected variable with none of the axes: error
    msg = error(resolve, FILE, for_axes="xt", variables=["lat"])
    assert "/lat has none of the axes" in msg
    # an unlimited dimension with no records: chunk 1
    empty = V("/e", ("time", "lon"), (0, X), unlimited=("time",))
    assert resolve([*CF, empty], for_axes="t")["/e"].chunks == (1, X)


# --- balanced, contiguous, conflicts -------------------------------------------------------------

def test_balanced():
    got = resolve(FILE, balanced=True)
    assert got["/t"].chunks == tuple(balanced_chunks((T, Z, Y, X), 4, 4 * MiB))
    assert resolve(FILE, balanced=True, chunk_bytes="1MiB")["/t"].chunks == tuple(balanced_chunks((T, Z, Y, X), 4, MiB))
    assert resolve(FILE, chunk_bytes=256 * 1024)["/u"].chunks == tuple(balanced_chunks((Z, Y, X), 4, 256 * 1024))
    empty = V("/e", ("time", "lon"), (0, X), unlimited=("time",))
    assert resolve([empty], balanced=True)["/e"].chunks == tuple(balanced_chunks((1, X), 4, 4 * MiB))


def test_contiguous():
    fixed = [u3, V("/w", ("lat",), (Y,), chunks=(10,), comp=parse_compression("deflate4"))]
    got = resolve(fixed, contiguous=True, compression="none")
    assert got["/u"] == Target(None, NONE) and got["/w"] == Target(None, NONE)
    assert "/u cannot be contiguous" in error(resolve, fixed, contiguous=True, compression="deflate4")
    assert "/w cannot be contiguous" in error(resolve, fixed, contiguous=True)   # its own deflate
    assert "unlimited dimension" in error(resolve, [t4], contiguous=True)
    assert "unlimited dimension" in error(resolve, [t4], ["/"])                 # nccopy's `-c /`
    # quantization is no HDF5 filter: contiguous is fine
    assert resolve([u3], contiguous=True, compression="bitround9")["/u"].chunks is None


@pytest.mark.parametrize("kw", [dict(chunk_specs=["lat/3"], for_axes="xt"), dict(chunk_specs=["lat/3"], balanced=True),
                                dict(chunk_specs=["lat/3"], chunk_bytes=MiB), dict(for_axes="xt", balanced=True),
                                dict(for_axes="xt", contiguous=True), dict(balanced=True, contiguous=True),
                                dict(chunk_bytes=MiB, contiguous=True), dict(chunk_specs=["/", "lat/3"])])
def test_conflicting_options(kw):
    error(resolve, FILE, **kw)


def test_no_chunk_option_keeps_chunks():
    got = resolve(FILE)
    assert got["/t"] == Target(t4.chunks, NONE) and got["/u"] == Target(None, NONE)
    # a contiguous source given a filter, and a netCDF-3 record variable, must be chunked: balanced 4 MiB
    got = resolve(FILE, compression="deflate1")
    assert got["/u"].chunks == tuple(balanced_chunks((Z, Y, X), 4, 4 * MiB))
    assert got["/r"].chunks == tuple(balanced_chunks((1000, Y, X), 4, 4 * MiB))
    assert got["/t"].chunks == t4.chunks


def test_hdf5_chunk_limit():
    big = V("/big", ("a", "b"), (70000, 70000))
    assert "smaller than 4 GiB" in error(resolve, [big], ["big:70000,70000"])


# --- compression -----------------------------------------------------------------------------------

def test_compression_keep_and_override():
    zs = parse_compression("deflate5+shuffle")
    src = [V("/a", ("x",), (1000,), chunks=(100,), comp=zs), V("/b", ("x",), (1000,), chunks=(100,))]
    kept = resolve(src)
    assert kept["/a"] == Target((100,), zs) and kept["/b"] == Target((100,), NONE)
    new = resolve(src, compression="zstd3")
    assert {t.compression for t in new.values()} == {parse_compression("zstd3")}
    assert resolve(src, compression="none")["/a"].compression == NONE


def test_unwritable_codec(monkeypatch):
    monkeypatch.setattr(S, "writable_codecs", lambda: {"zlib"})
    msg = error(resolve, FILE, compression="zstd3")
    assert msg.startswith("zstd cannot be written by this netCDF build (netCDF4-python ")
    assert "with netCDF-C " in msg
    kept = [V("/a", ("x",), (10,), chunks=(10,), comp=parse_compression("bzip2:5"))]
    assert error(resolve, kept).startswith("bzip2 cannot be written")
    assert resolve(kept, compression="deflate1")["/a"].compression == parse_compression("deflate1")


def test_writable_codecs_real():
    got = S.writable_codecs()
    assert "zlib" in got and got <= {"zlib", "zstd", "bzip2", "blosc_lz4", "blosc_lz4hc", "blosc_lz",
                                     "blosc_zlib", "blosc_zstd"}
    assert ("zstd" in got) == bool(getattr(netCDF4, "__has_zstandard_support__", False))


def test_quantization_only_for_floats():
    ints = V("/n", ("x",), (100,), chunks=(100,), dtype="<i2")
    flt = V("/f", ("x",), (100,), chunks=(100,), dtype=">f8")
    got = resolve([ints, flt], compression="bitround10+deflate4")
    assert got["/f"].compression == parse_compression("bitround10+deflate4")
    assert got["/n"].compression == parse_compression("deflate4")   # dropped on the default pick
    assert "quantizes floating-point" in error(resolve, [ints, flt], compression="bitround10", variables=["n"])


# --- selection -------------------------------------------------------------------------------------

def test_selection():
    text = V("/names", ("n",), (4,), dtype="str")
    scalar = V("/s", (), ())
    grp = V("/g/t", ("lat",), (Y,))
    infos = [*FILE, text, scalar, grp]
    coords = {"/time", "/lev", "/lat", "/lon"}
    assert set(resolve(infos)) == ({i.path for i in FILE} - coords) | {"/g/t"}
    assert set(resolve(infos, variables=["t"])) == {"/t", "/g/t"}      # relative name: every match
    assert set(resolve(infos, variables=["/g/t", "u"])) == {"/g/t", "/u"}
    assert set(resolve(infos, variables=["/t,/u"])) == {"/t", "/u"}
    msg = error(resolve, infos, variables=["foo"], source="in.nc")
    assert msg.startswith("unknown variable 'foo' in in.nc: variables are time, lev, lat, lon, t, u, r")
    assert "numeric" in error(resolve, infos, variables=["names"])
    assert "scalar" in error(resolve, infos, variables=["s"])
    many = [V(f"/v{i}", ("x",), (5,)) for i in range(40)]
    assert "(28 more)" in error(resolve, many, variables=["nope"])
    # a var spec for a variable left out of the selection
    assert "not re-laid out" in error(resolve, infos, ["u:1,1,1"], variables=["t"])
