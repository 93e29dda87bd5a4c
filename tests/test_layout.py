"""climio.dataset.layout (chunk geometry), climio.dataset.access (read shapes) and the chunking catalogue, checked
against brute force, the thesis's numbers, and netCDF-C."""

import itertools
import math
import random

import netCDF4
import numpy as np
import pytest

from climio.dataset import access as A
from climio.dataset import layout as L
from climio.dataset import options as O
from climio.dataset import reads as R
from climio.bench.chunking import catalogue as C
from climio.base.errors import InputError

S430 = [430] * 4


# --- brute force --------------------------------------------------------------------------------

def brute(shape, chunks, start, count):
    """(chunks touched, partial chunks, runs) by placing every element of the hyperslab on disk.

    Contiguous: the element's C-order offset in the array. Chunked: chunks are stored one after
    another with a gap between them (runs never join across chunks), each in the C order of its
    full chunk shape, so edge chunks keep their padding."""
    shape, start, count = (np.array(v, dtype=np.int64) for v in (shape, start, count))
    r = len(shape)
    idx = np.indices(tuple(count)).reshape(r, -1) + start[:, None]
    if idx.shape[1] == 0:
        return 0, 0, 0
    if chunks is None:
        pos = np.ravel_multi_index(tuple(idx), tuple(shape))
        touched = partial = 0
    else:
        c = np.array(chunks, dtype=np.int64)
        grid = -(-shape // c)
        cid = np.ravel_multi_index(tuple(idx // c[:, None]), tuple(grid))
        off = np.ravel_multi_index(tuple(idx % c[:, None]), tuple(c))
        pos = cid * (int(np.prod(c)) + 1) + off
        ids, n_in = np.unique(cid, return_counts=True)
        cj = np.array(np.unravel_index(ids, tuple(grid)))           # (r, touched)
        in_array = np.prod(np.minimum((cj + 1) * c[:, None], shape[:, None]) - cj * c[:, None], axis=0)
        touched, partial = len(ids), int(np.sum(n_in < in_array))
    pos = np.sort(pos)
    runs = 1 + int(np.sum(np.diff(pos) != 1))
    return touched, partial, runs


def random_case(rng):
    r = rng.randint(1, 4)
    shape = [rng.randint(1, 9) for _ in range(r)]
    chunks = None if rng.random() < 0.2 else [rng.randint(1, d) for d in shape]
    start, count = [], []
    for d in shape:
        s = rng.randint(0, d - 1)
        # mostly full or partial spans; sometimes a whole dimension or an empty one
        n = d if rng.random() < 0.25 else rng.randint(0 if rng.random() < 0.03 else 1, d - s)
        if n == d:
            s = 0
        start.append(s)
        count.append(n)
    return shape, chunks, start, count


def test_closed_forms_match_brute_force():
    rng = random.Random(20240501)
    kinds = {"contiguous": 0, "non-dividing": 0, "partial": 0, "empty": 0}
    for _ in range(3000):
        shape, chunks, start, count = random_case(rng)
        touched, partial, runs = brute(shape, chunks, start, count)
        case = (shape, chunks, start, count)
        assert L.chunks_touched(shape, chunks, start, count) == touched, case
        assert L.partial_chunks(shape, chunks, start, count) == partial, case
        assert L.contiguous_runs(shape, chunks, start, count) == runs, case
        wanted = math.prod(count) * 8
        assert L.bytes_wanted(count, 8) == wanted
        decoded = wanted if chunks is None else touched * math.prod(chunks) * 8
        assert L.bytes_decoded(shape, chunks, start, count, 8) == decoded, case
        assert L.amplification(shape, chunks, start, count, 8) == (decoded / wanted if wanted else 1.0)
        kinds["contiguous"] += chunks is None
        kinds["non-dividing"] += chunks is not None and any(d % c for d, c in zip(shape, chunks))
        kinds["partial"] += partial > 0
        kinds["empty"] += wanted == 0
    assert all(v >= 20 for v in kinds.values()), kinds   # the random cases cover every situation


def test_edge_chunk_padding_breaks_runs_and_counts_as_covered():
    # shape 5, chunk 3: chunks [0,3) and [3,5)+1 padding element
    assert L.contiguous_runs([5], [3], [0], [5]) == 2
    assert L.partial_chunks([5], [3], [3], [2]) == 0          # all of the edge chunk's in-array part
    assert L.partial_chunks([5], [3], [3], [1]) == 1
    # 2-D: rows of the edge chunk are separated by padding, rows of a full chunk are not
    assert L.contiguous_runs([4, 5], [2, 5], [0, 0], [2, 5]) == 1
    assert L.contiguous_runs([4, 5], [2, 3], [0, 3], [2, 2]) == 2
    assert L.chunk_grid([4, 5], [2, 3]) == (2, 2)
    assert L.allocated_bytes([4, 5], [2, 3], 8) == 2 * 2 * 6 * 8


def test_slice_starts_tile_the_array_once_in_c_order():
    rng = random.Random(7)
    for _ in range(200):
        r = rng.randint(1, 4)
        shape = [rng.randint(1, 7) for _ in range(r)]
        count = [rng.randint(1, d) for d in shape]
        slabs = A.slice_starts(shape, count)
        assert len(slabs) == A.n_slices(shape, count) == math.prod(-(-d // n) for d, n in zip(shape, count))
        starts = [s for s, _ in slabs]
        assert starts == sorted(starts)                       # C order of the start positions
        hits = np.zeros(shape, dtype=int)
        for s, n in slabs:
            assert all(0 < b <= a for a, b in zip(count, n))     # clipped only, never grown
            hits[tuple(slice(a, a + b) for a, b in zip(s, n))] += 1
        assert (hits == 1).all()
    # the thesis's xy loop: t outer, z inner
    slabs = A.slice_starts([3, 2, 4, 5], R.read_count("xy", [3, 2, 4, 5]))
    assert [s for s, _ in slabs[:3]] == [(0, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 0)]
    assert A.slice_starts([5], [2]) == [((0,), (2,)), ((2,), (2,)), ((4,), (1,))]
    assert A.n_slices(S430, R.read_count("xy", S430)) == 430 * 430
    with pytest.raises(InputError):
        A.slice_starts(S430, [1, 1, 1, 1])                  # 3.4e10 hyperslabs: refused, not built


# --- blocks ------------------------------------------------------------------------------------------

def test_iter_blocks_cover_every_element_once_edges_clipped():
    assert list(L.iter_blocks((5, 7), (2, 3))) == [
        ((0, 0), (2, 3)), ((0, 3), (2, 3)), ((0, 6), (2, 1)),
        ((2, 0), (2, 3)), ((2, 3), (2, 3)), ((2, 6), (2, 1)),
        ((4, 0), (1, 3)), ((4, 3), (1, 3)), ((4, 6), (1, 1))]
    rng = random.Random(11)
    for _ in range(100):
        shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 4)))
        block = tuple(rng.randint(1, d + 2) for d in shape)
        seen = np.zeros(shape, dtype=int)
        boxes = list(L.iter_blocks(shape, block))
        for (start, count), index in zip(boxes, L.iter_block_slices(shape, block), strict=True):
            assert all(n == min(b, d - s) for s, n, b, d in zip(start, count, block, shape))
            assert index == tuple(slice(s, s + n) for s, n in zip(start, count))
            seen[index] += 1
        assert (seen == 1).all() and [s for s, _ in boxes] == sorted(s for s, _ in boxes)
    assert list(L.iter_blocks((3, 0, 2), (1, 1, 1))) == []
    assert list(L.iter_blocks((), ())) == [((), ())] and list(L.iter_block_slices((), ())) == [Ellipsis]
    one_line_error(lambda *a: list(L.iter_blocks(*a)), (4, 4), (2,))
    one_line_error(lambda *a: list(L.iter_blocks(*a)), (4, 4), (2, 0))


@pytest.mark.parametrize("shape,chunks,itemsize,max_bytes,block", [
    ((10, 8, 6), (3, 4, 4), 4, 1000, (3, 8, 6)),      # inner dims whole, the outer one a chunk
    ((10, 8, 6), (3, 4, 4), 4, 2000, (9, 8, 6)),      # ... or a multiple of it
    ((10, 8, 6), (3, 4, 4), 4, 3000, (10, 8, 6)),     # the whole array fits
    ((10, 8, 6), (3, 4, 4), 4, 500, (3, 4, 6)),       # a chunk along y, whole rows along x
    ((10, 8, 6), (3, 4, 4), 4, 100, (1, 4, 6)),       # one chunk (192 B) does not fit: single values
    ((10, 8, 6), (3, 4, 4), 4, 3, (1, 1, 1)),         # one value does not fit: one value
    ((2, 10, 6), (1, 4, 6), 1, 60, (1, 10, 6)),       # a whole dimension fits though not a multiple
    ((4, 3, 5), None, 8, 100, (1, 2, 5)),             # contiguous: whole rows, one byte range
    ((4, 3, 5), None, 8, 30, (1, 1, 3)),              # part of a row
    ((5, 4), (8, 4), 1, 100, (5, 4)),                 # a chunk longer than its (unlimited) dimension
    ((3, 0, 2), (1, 1, 1), 8, 100, (3, 0, 2)),        # nothing to read: its own block
    ((), None, 8, 100, ()),
])
def test_bounded_block(shape, chunks, itemsize, max_bytes, block):
    assert L.bounded_block(shape, chunks, itemsize, max_bytes) == block


# --- the thesis's numbers -----------------------------------------------------------------------

def test_thesis_uneven_chunks_explain_the_larger_file():
    assert L.chunk_grid(S430, [43] * 4) == (10, 10, 10, 10)
    assert L.chunk_grid(S430, [1, 1, 45, 45]) == (430, 430, 10, 10)
    a = L.allocated_bytes(S430, None, 8)
    assert a == 430**4 * 8 and round(a / 2**30) == 255                  # "255GiB"
    assert L.allocated_bytes(S430, [43] * 4, 8) == a                     # B divides: no padding
    d = L.allocated_bytes(S430, [1, 1, 45, 45], 8)
    assert d == 430 * 430 * 10 * 10 * 45 * 45 * 8
    assert d / a == pytest.approx((450 / 430) ** 2)
    assert d / a == pytest.approx(277 / 255, rel=0.01)                   # "277GiB" for D
    assert L.chunk_bytes([1, 1, 45, 45], 8) == 16200                     # "16.2KB"


def test_thesis_reads_against_chunk_shapes():
    F, zero = [430, 1, 1, 430], [0, 0, 0, 0]
    xy, xt, xyt = (R.read_count(n, S430) for n in ("xy", "xt", "xyt"))
    assert (xy, xt, xyt) == ((1, 1, 430, 430), (430, 1, 1, 430), (430, 1, 430, 430))
    assert L.chunks_touched(S430, F, zero, xt) == 1
    assert L.partial_chunks(S430, F, zero, xt) == 0
    assert L.amplification(S430, F, zero, xt, 8) == 1.0
    assert L.chunks_touched(S430, F, zero, xy) == 430
    assert L.partial_chunks(S430, F, zero, xy) == 430
    assert L.amplification(S430, F, zero, xy, 8) == pytest.approx(430)
    assert L.contiguous_runs(S430, None, zero, xt) == 430
    assert L.contiguous_runs(S430, None, zero, xy) == 1
    assert L.contiguous_runs(S430, None, zero, xyt) == 430
    assert L.amplification(S430, None, zero, xt, 8) == 1.0
    assert L.chunks_touched(S430, None, zero, xy) == 0                   # contiguous: no chunks
    # G = [T,1,Y,X]: xy and xyt are runs inside one chunk, xt is 430 rows of one chunk
    G = [430, 1, 430, 430]
    assert L.contiguous_runs(S430, G, zero, xyt) == 1
    assert L.contiguous_runs(S430, G, zero, xy) == 1
    assert L.contiguous_runs(S430, G, zero, xt) == 430
    # B = 43^4: an xy map touches 100 chunks and decodes 43*43 maps' worth
    assert L.chunks_touched(S430, [43] * 4, zero, xy) == 100
    assert L.amplification(S430, [43] * 4, zero, xy, 8) == pytest.approx(43 * 43)
    # D's edge tiles: 45-wide tiles on a 430 map, the last 25 wide but stored 45 wide
    D = [1, 1, 45, 45]
    assert L.chunks_touched(S430, D, zero, xy) == 100 and L.partial_chunks(S430, D, zero, xy) == 0
    assert L.amplification(S430, D, zero, xy, 8) == pytest.approx((450 / 430) ** 2)
    # 81 full tiles: 1 run each; 9 tiles cut at y=430 (25 whole rows): 1 run each; 9 tiles cut at
    # x=430 (45 rows of 25, padded to 45): 45 runs each; the corner tile: 25 runs
    assert L.contiguous_runs(S430, D, zero, xy) == 81 + 9 + 9 * 45 + 25


def test_named_chunk_shapes_thesis_file():
    named = C.named_chunk_shapes(S430, 8)
    assert list(named) == ["A", "B", "C", "D", "E", "F", "G", "default", "balanced"]
    assert list(named) == list(C.CHUNK_LABELS)
    n = named["C"][2]
    assert named["C"] == [1, 1, n, n] and 4 * n * n * 8 <= 64000 < 4 * (n + 1) ** 2 * 8
    assert n == 44
    assert named["D"] == [1, 1, 45, 45] and 4 * L.chunk_bytes(named["D"], 8) > 64000
    assert named["A"] is None
    assert named["B"] == [43, 43, 43, 43]
    assert named["E"] == [1, 1, 430, 430]
    assert named["F"] == [430, 1, 1, 430]
    assert named["G"] == [430, 1, 430, 430]
    for label, chunks in named.items():
        L.validate_chunks(S430, chunks)
    # single precision: larger tiles, four still fit 64000 B
    c4 = C.named_chunk_shapes([10, 2, 100, 120], 4)
    assert c4["C"] == [1, 1, 63, 63] and c4["D"] == [1, 1, 64, 64]
    assert c4["B"] == [1, 1, 10, 12]
    # tiles clipped to small maps
    small = C.named_chunk_shapes([4, 3, 20, 50], 8)
    assert small["C"] == [1, 1, 20, 44] and small["D"] == [1, 1, 20, 45]


def written_default_chunks(path, shape, dtype="f8", unlimited=False):
    with netCDF4.Dataset(path, "w") as ds:
        names = []
        for i, d in enumerate(shape):
            names.append(L.DIMS[i] if len(shape) == 4 else f"d{i}")
            ds.createDimension(names[-1], None if unlimited and i == 0 else d)
        ds.createVariable("ta", dtype, names, zlib=True)     # chunking left to the library
    with netCDF4.Dataset(path) as ds:
        return ds.variables["ta"].chunking()


@pytest.mark.parametrize("shape,dtype", [(S430, "f8"), ([64, 8, 96, 192], "f8"), ([48, 8, 96, 192], "f4"),
                                         ([7, 1000], "f8")])
def test_default_is_what_netcdf_writes(tmp_path, shape, dtype):
    itemsize = np.dtype(dtype).itemsize
    got = L.library_default_chunks(shape, itemsize)
    assert got == written_default_chunks(tmp_path / "d.nc", shape, dtype)
    if len(shape) == 4:
        assert C.named_chunk_shapes(shape, itemsize)["default"] == got
    L.validate_chunks(shape, got)


def test_default_unlimited_and_cache_returns_copies(tmp_path):
    got = L.library_default_chunks([430, 430, 430, 430], 8, unlimited=True)
    assert got == written_default_chunks(tmp_path / "u.nc", S430, unlimited=True)
    got.append(99)
    assert len(L.library_default_chunks([430, 430, 430, 430], 8, unlimited=True)) == 4


# --- balanced -----------------------------------------------------------------------------------

def counts(shape, chunks):
    return [-(-d // c) for d, c in zip(shape, chunks)]


def test_balanced_bounds_and_size_on_random_shapes():
    rng = random.Random(11)
    for _ in range(500):
        r = rng.randint(1, 5)
        shape = [rng.randint(1, 600) for _ in range(r)]
        itemsize = rng.choice([1, 2, 4, 8])
        cb = rng.choice([4 * 2**20, 1 << 16, 1 << 20, 12345, 1 << 10])
        c = L.balanced_chunks(shape, itemsize, cb)
        assert len(c) == r and all(isinstance(v, int) and 1 <= v <= d for v, d in zip(c, shape)), (shape, c)
        size = math.prod(c) * itemsize
        if math.prod(shape) * itemsize > cb:
            assert cb / 2 <= size <= cb * 2, (shape, itemsize, cb, c)
        else:
            assert c == shape                                    # small enough: one chunk


def test_balanced_series_and_map_cost_comparable_chunks():
    # [T,Y,X]: Rew's case. Time series at a point, a row along x, and a map.
    shape = [1000, 180, 360]
    c = L.balanced_chunks(shape, 4)
    assert 2**21 <= math.prod(c) * 4 <= 2**23
    nt, ny, nx = counts(shape, c)
    t_series, x_series, y_series, xy_map = nt, nx, ny, ny * nx
    assert max(t_series, xy_map) / min(t_series, xy_map) <= 1.5
    assert max(t_series, x_series, xy_map) / min(t_series, x_series, xy_map) <= 4
    assert max(x_series, y_series) / min(x_series, y_series) <= 1.5
    # [t,z,y,x]: series along t and along z cost as much as a map
    c4 = L.balanced_chunks(S430, 8)
    n = counts(S430, c4)
    costs = [n[0], n[1], n[2] * n[3]]
    assert max(costs) / min(costs) <= 1.1
    assert max(n[2], n[3]) / min(n[2], n[3]) <= 1.2
    assert 0.8 <= math.prod(c4) * 8 / 2**22 <= 1.25


def test_balanced_is_near_minimax_against_exhaustive_search():
    """No chunk shape of at most the same size makes the worst of (series along each leading
    dimension, map) much cheaper: checked by trying every chunk shape of small arrays."""
    rng = random.Random(5)
    for _ in range(60):
        r = rng.randint(2, 3)
        shape = [rng.randint(1, 24) for _ in range(r)]
        total = math.prod(shape)
        target = rng.randint(2, max(2, total // 3))
        c = L.balanced_chunks(shape, 1, target)

        def worst(ch):
            n = counts(shape, ch)
            return max(n[:-2] + [n[-2] * n[-1]])

        best = min(worst(ch) for ch in itertools.product(*[range(1, d + 1) for d in shape])
                   if math.prod(ch) <= math.prod(c))
        assert worst(c) <= 1.34 * best, (shape, target, c, worst(c), best)


# --- parsing and errors -------------------------------------------------------------------------

def one_line_error(fn, *args):
    with pytest.raises(InputError) as exc:
        fn(*args)
    msg = str(exc.value)
    assert msg and "\n" not in msg
    return msg


def test_parse_read():
    assert R.read_count("xy", S430) == (1, 1, 430, 430)
    assert R.read_count(" XT ", S430) == (430, 1, 1, 430)
    assert R.read_count("xyt", S430) == (430, 1, 430, 430)
    assert R.read_count("1,1,Y,X", S430) == (1, 1, 430, 430)
    assert R.read_count("T,1,10,X", S430) == (430, 1, 10, 430)
    assert R.read_count("[24,1,y,x]", [48, 8, 96, 192]) == (24, 1, 96, 192)
    assert R.read_count("3,X", [5, 6]) == (3, 6)                      # other ranks: a letter is "all"
    assert R.read_count("yz", S430) == (1, 430, 430, 1)                # sections by roles
    assert "unknown read shape 'yq'" in one_line_error(R.read_count, "yq", S430)
    assert "outside 1..430" in one_line_error(R.read_count, "500,1,Y,X", S430)
    one_line_error(R.read_count, "0,1,Y,X", S430)
    one_line_error(R.read_count, "1,Y,X", S430)
    one_line_error(R.read_count, "X,1,Y,T", S430)                     # letters name their position
    one_line_error(R.read_count, "1,1,Y,Q", S430)
    assert R.read_count("xy", [10, 10, 10]) == (1, 10, 10)           # any rank: by roles
    assert "needs a vertical dimension" in one_line_error(R.read_count, "z", [10, 10, 10])


def test_parse_chunk_spec():
    got = C.parse_chunk_spec("A,E,F,[10,1,20,40]", S430, 8)
    assert got == [("A", None), ("E", [1, 1, 430, 430]), ("F", [430, 1, 1, 430]), ("custom", [10, 1, 20, 40])]
    got = C.parse_chunk_spec("b; default ;balanced;[T,1,1,X];[1,1,45,45];contiguous", S430, 8)
    assert [lab for lab, _ in got] == ["B", "default", "balanced", "custom", "custom2", "A"]
    assert got[3][1] == [430, 1, 1, 430] and got[4][1] == [1, 1, 45, 45]
    assert got[1][1] == L.library_default_chunks(S430, 8) and got[2][1] == L.balanced_chunks(S430, 8)
    assert C.parse_chunk_spec("10,1,20,40", S430, 8) == [("custom", [10, 1, 20, 40])]
    assert C.parse_chunk_spec("A,A,contiguous", S430, 8) == [("A", None)]
    assert C.parse_chunk_spec("default,[2,3]", [10, 10], 4)[1] == ("custom", [2, 3])
    msg = one_line_error(C.parse_chunk_spec, "A,[500,1,1,430]", S430, 8)
    assert msg == ("chunk shape [500,1,1,430] impossible for shape [430,430,430,430]: "
                   "chunk dimension 1 (500) exceeds the dimension (430)")
    assert "unknown chunk shape 'H'" in one_line_error(C.parse_chunk_spec, "A,H", S430, 8)
    one_line_error(C.parse_chunk_spec, "", S430, 8)
    one_line_error(C.parse_chunk_spec, "A,10", S430, 8)
    one_line_error(C.parse_chunk_spec, "[0,1,1,1]", S430, 8)
    one_line_error(C.parse_chunk_spec, "[1,1,1]", S430, 8)
    one_line_error(C.parse_chunk_spec, "[1,1,1,1", S430, 8)
    one_line_error(C.parse_chunk_spec, "E", [10, 10, 10], 8)          # letters need [t,z,y,x]


def test_validation_errors():
    L.validate_chunks(S430, None)
    L.validate_chunks([4, 5], (np.int64(2), 5))
    for bad in ([1, 1, 1], [0, 1, 1, 1], [1.5, 1, 1, 1], [True, 1, 1, 1], "1111"):
        one_line_error(L.validate_chunks, S430, bad)
    one_line_error(L.chunks_touched, [4, 4], [2, 2], [3, 0], [2, 1])   # hyperslab past the end
    one_line_error(L.chunks_touched, [4, 4], [2, 2], [0], [1])
    one_line_error(L.chunk_grid, [0, 4], [1, 1])
    one_line_error(C.named_chunk_shapes, [10, 10, 10], 8)
    one_line_error(A.n_slices, [4, 4], [5, 1])
    assert L.format_chunks(None) == "contiguous"
    assert L.format_chunks([1, 1, 45, 45]) == "[1,1,45,45]"
    assert L.format_chunks((np.int64(3), 4)) == "[3,4]"
