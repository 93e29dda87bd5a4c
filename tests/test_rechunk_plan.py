"""climio.model.convert: the pure planner, checked by enumeration on small random cases and on the
thesis's [T,Z,Y,X] case."""

import itertools
import json
import math
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from climio.dataset import layout as L
from climio.base.errors import InputError
from climio.model import convert as P
from climio.dataset.layout import iter_blocks
from climio.dataset.layout import chunks_in
from climio.model.convert import INTERMEDIATE_PIECE_BYTES, Layout, peak_memory, plan_variable
from climio.model.rates import Rates
from climio.base.units import format_size

FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAXD = {1: 12, 2: 7, 3: 5, 4: 4, 5: 3}   # small enough to enumerate every element and block shape


# --- independent re-statements of the model ----------------------------------------------------------

def ceil_div(a, b):
    return -(-a // b)


def ravel(idx, extents):
    pos = 0
    for i, e in zip(idx, extents):
        pos = pos * e + i
    return pos


def brute_runs(shape, chunks, start, count):
    """Runs on disk of a box, by placing every element: contiguous in C order of the array; chunked
    with each chunk stored separately (a gap between chunks) in C order of its full shape."""
    pos = []
    for idx in itertools.product(*[range(s, s + n) for s, n in zip(start, count)]):
        if chunks is None:
            pos.append(ravel(idx, shape))
        else:
            grid = [ceil_div(d, c) for d, c in zip(shape, chunks)]
            cid = ravel([i // c for i, c in zip(idx, chunks)], grid)
            pos.append(cid * (math.prod(chunks) + 1) + ravel([i % c for i, c in zip(idx, chunks)], chunks))
    pos.sort()
    return sum(1 for k, p in enumerate(pos) if k == 0 or p != pos[k - 1] + 1)


def model_peak(shape, block, itemsize, scratch, workers, own_chunk=None):
    """own_chunk: None, results written by the parent; else the workers write their own output,
    one target chunk of `own_chunk` bytes at a time (0: the block as it is)."""
    n = math.prod(ceil_div(d, b) for d, b in zip(shape, block))
    w = max(1, min(workers, n))
    b = math.prod(block) * itemsize
    if own_chunk is not None:
        return w * (b + scratch + 3 * own_chunk)
    return 2 * b + scratch if w == 1 else w * (3 * b + scratch) + w * b


def own_chunk(dst, own):
    """The own_chunk of model_peak for a pass writing `dst`: None unless the workers write it."""
    return (math.prod(dst.chunks) * dst.itemsize if dst.chunks else 0) if own else None


def any_fits(shape, units, itemsize, scratch, workers, max_mem, own=None, tiles=None):
    """Whether any block whose extents are multiples of `units` (or the full dimension) fits;
    `tiles`: the tile shape when the pass writes the tiled intermediate (each worker: its block and
    one gathered piece)."""
    axes = [[e for e in range(1, d + 1) if e % u == 0 or e == d] for d, u in zip(shape, units)]
    return any((tiled_peak(shape, b, itemsize, scratch, workers, tiles) if tiles else
                model_peak(shape, b, itemsize, scratch, workers, own)) <= max_mem
               for b in itertools.product(*axes))


def tiled_peak(shape, block, itemsize, scratch, workers, tile):
    """Peak of a pass writing the tiled intermediate: per worker its block, the piece it gathers for
    one write (at most the block and INTERMEDIATE_PIECE_BYTES) and the source scratch."""
    w = max(1, min(workers, math.prod(ceil_div(d, b) for d, b in zip(shape, block))))
    b = math.prod(block) * itemsize
    return w * (b + min(b, INTERMEDIATE_PIECE_BYTES) + scratch)


def scratch_of(src):
    return 2 * math.prod(src.chunks) * src.itemsize if src.compressed else 0


def feasible(src, dst, max_mem, workers, two_pass, own=False):
    ones = (1,) * len(src.shape)
    units = dst.chunks or ones
    if any_fits(src.shape, units, src.itemsize, scratch_of(src), workers, max_mem, own_chunk(dst, own)):
        return True
    # the intermediate file is always written by the workers themselves, the block as it is (in C
    # order; in tiles, with a gathered piece beside it, is the planner's other choice when it fits)
    return (src.compressed and two_pass
            and any_fits(src.shape, src.chunks, src.itemsize, scratch_of(src), workers, max_mem, 0)
            and any_fits(src.shape, units, src.itemsize, 0, workers, max_mem, own_chunk(dst, own)))


def all_chunks(shape, chunks):
    return set(itertools.product(*[range(ceil_div(d, c)) for d, c in zip(shape, chunks)]))


def check_pass(p, max_mem, workers, orig_src, rates, own=False):
    shape, src, dst = p.src.shape, p.src, p.dst
    blocks = list(iter_blocks(shape, p.block))
    assert len(blocks) == p.n_blocks
    assert p.workers == max(1, min(workers, p.n_blocks))
    assert p.own_writes == (own or p.name == "to-intermediate")
    tiled = p.name == "to-intermediate" and dst.chunks is not None    # the intermediate in tiles
    scratch, mine = scratch_of(src), own_chunk(dst, p.own_writes)
    if tiled:
        assert p.peak_mem == tiled_peak(shape, p.block, src.itemsize, scratch, workers, dst.chunks) <= max_mem
    else:
        assert p.peak_mem == model_peak(shape, p.block, src.itemsize, scratch, workers, mine) <= max_mem
        assert p.peak_mem == peak_memory(math.prod(p.block) * src.itemsize, scratch, p.workers, mine)
    assert all(1 <= b <= d for b, d in zip(p.block, shape))

    if tiled:   # a write per contiguous run of a block's piece of each tile it touches
        assert p.write_ops == sum(brute_runs(shape, dst.chunks, s, n) for s, n in blocks)
        assert p.write_ops == sum(L.contiguous_runs(shape, dst.chunks, s, n) for s, n in blocks)
    elif p.name == "from-intermediate" and src.chunks is not None:   # a block is a tile: one read (an edge one's, per run)
        assert src.chunks == p.block
        assert p.read_ops == p.n_blocks or any(d % b for d, b in zip(shape, p.block))
    # every target chunk lies in exactly one block
    if dst.chunks is not None and not tiled:
        assert all(b % c == 0 or b == d for b, c, d in zip(p.block, dst.chunks, shape))
        owner = Counter()
        for start, count in blocks:
            for idx in chunks_in(start, count, dst.chunks):
                for i, s, n, c, d in zip(idx, start, count, dst.chunks, shape):
                    assert s <= i * c and min(i * c + c, d) <= s + n
                owner[idx] += 1
        assert set(owner) == all_chunks(shape, dst.chunks) and set(owner.values()) == {1}
        assert p.write_ops == len(owner)
    elif not tiled:
        assert p.write_ops == sum(brute_runs(shape, None, s, n) for s, n in blocks)
        assert p.write_ops == sum(L.contiguous_runs(shape, None, s, n) for s, n in blocks)

    # source chunks: decodes and reads
    if src.chunks is not None:
        touched = Counter(idx for s, n in blocks for idx in chunks_in(s, n, src.chunks))
        assert set(touched) == all_chunks(shape, src.chunks)
        if p.strategy == "whole-chunks":
            assert set(touched.values()) == {1}
    if src.compressed:
        assert p.chunks_decoded == sum(touched.values())
        assert p.max_decodes_per_chunk == max(touched.values())
        assert p.read_ops == p.chunks_decoded
        assert p.bytes_decoded == p.chunks_decoded * math.prod(src.chunks) * src.itemsize
        assert p.bytes_read == round(src.stored * p.chunks_decoded / len(touched))
        if p.strategy == "whole-chunks":
            assert p.max_decodes_per_chunk == 1
    else:
        assert p.chunks_decoded == p.max_decodes_per_chunk == p.bytes_decoded == 0
        assert p.bytes_read == src.nbytes
        assert p.read_ops == sum(brute_runs(shape, src.chunks, s, n) for s, n in blocks)
        if src.chunks is None or all(c <= d for c, d in zip(src.chunks, shape)):
            assert p.read_ops == sum(L.contiguous_runs(shape, src.chunks, s, n) for s, n in blocks)

    assert p.bytes_encoded == (dst.nbytes if dst.compressed else 0)
    if dst.stored_bytes is not None:
        written = dst.stored_bytes
    elif dst.compressed and orig_src.compressed:
        written = round(dst.nbytes * orig_src.stored / orig_src.nbytes)
    else:
        written = dst.nbytes
    assert p.bytes_written == written
    cost = (p.bytes_read / rates.read_Bps + p.read_ops * rates.op_s
            + (p.bytes_decoded / rates.decode_Bps + p.bytes_encoded / rates.encode_Bps) / p.workers
            * (max(math.ceil(p.n_blocks / p.workers) * p.workers / p.n_blocks,
                   p.workers * math.prod(min(b, d) / d for b, d in zip(p.block, shape)), 1.0)
               if p.n_blocks and p.workers > 1 else 1)
            + p.bytes_written / rates.write_Bps + p.write_ops * rates.op_s
            + p.n_blocks * (rates.task_s if p.workers == 1 else rates.pool_task_s))
    assert p.predicted_s == pytest.approx(cost, rel=1e-12)
    assert p.cache_bytes >= (src.chunk_nbytes if src.chunks else 0)


def check_plan(plan, src, dst, max_mem, workers, two_pass, rates, own=False):
    assert plan.peak_mem <= max_mem and plan.workers == workers and plan.max_mem == max_mem
    shape = src.shape
    lcm = tuple(min(math.lcm(a, c), d) for a, c, d in
                zip(dst.chunks or (1,) * len(shape), src.chunks or (1,) * len(shape), shape))
    if model_peak(shape, lcm, src.itemsize, scratch_of(src), workers, own_chunk(dst, own)) <= max_mem:
        assert plan.strategy == "single-pass"
    if plan.strategy == "two-pass":
        assert src.compressed and two_pass
        first, second = plan.passes
        assert (first.name, first.strategy, second.name, second.strategy) == \
            ("to-intermediate", "whole-chunks", "from-intermediate", "strided")
        tile = second.block if first.dst.chunks is not None else None
        inter = Layout(shape, src.itemsize, tile, False)
        assert first.src == src and first.dst == inter and second.src == inter and second.dst == dst
        assert plan.tmp_bytes == (math.prod(-(-d // b) * b for d, b in zip(shape, tile)) * src.itemsize if tile
                                  else src.nbytes)
    else:
        (only,) = plan.passes
        assert only.name == "copy" and only.src == src and only.dst == dst and plan.tmp_bytes == 0
        expected = {"single-pass": "whole-chunks", "strided": "strided", "redecode": "redecode"}[plan.strategy]
        assert only.strategy == expected
        assert (plan.strategy == "redecode") == (src.compressed and plan.strategy != "single-pass")
        if plan.strategy == "single-pass":
            assert all(b % l == 0 or b == d for b, l, d in zip(only.block, lcm, shape))
    for p in plan.passes:
        check_pass(p, max_mem, workers, src, rates, own)
    assert plan.peak_mem == max(p.peak_mem for p in plan.passes)
    assert plan.predicted_s == pytest.approx(sum(p.predicted_s for p in plan.passes))
    json.dumps(plan.to_dict())
    assert plan.describe()


# --- random cases ------------------------------------------------------------------------------------

@st.composite
def layouts(draw, zero=False):
    rank = draw(st.integers(1, 5))
    shape = draw(st.lists(st.integers(1, MAXD[rank]), min_size=rank, max_size=rank))
    if zero:
        shape[draw(st.integers(0, rank - 1))] = 0
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))

    def layout(kind):
        if kind == "contiguous":
            chunks = None
        elif kind == "random":
            # chunk extents up to d + 1: a chunk longer than its (unlimited) dimension is legal in HDF5
            chunks = tuple(draw(st.integers(1, max(d, 1) + 1)) for d in shape)
        else:   # the thesis's conversions: whole trailing axes -> whole leading axes, or back
            cut = draw(st.integers(0, rank))
            whole = [max(d, 1) for d in shape]
            ones = [draw(st.integers(1, 2)) for _ in shape]
            chunks = tuple(ones[:cut] + whole[cut:]) if kind == "maps" else tuple(whole[:cut] + ones[cut:])
        compressed = chunks is not None and draw(st.booleans())
        nbytes = math.prod(shape) * itemsize
        stored = draw(st.one_of(st.none(), st.integers(0, nbytes))) if compressed else None
        return Layout(tuple(shape), itemsize, chunks, compressed, stored)

    kinds = st.sampled_from(["contiguous", "random", "random", "maps", "series"])
    return layout(draw(kinds)), layout(draw(kinds))


@st.composite
def cases(draw):
    src, dst = draw(layouts())
    workers = draw(st.integers(1, 4))
    if draw(st.booleans()):
        max_mem = draw(st.integers(0, 6 * workers * (src.nbytes + scratch_of(src)) + 16))
    else:
        # near the peak of some aligned block (target- or source-aligned), where the choices are made
        units = draw(st.sampled_from([dst.chunks or (1,) * len(src.shape), src.chunks or (1,) * len(src.shape)]))
        block = tuple(draw(st.sampled_from([e for e in range(1, d + 1) if e % u == 0 or e == d]))
                      for d, u in zip(src.shape, units))
        scratch = draw(st.sampled_from([0, scratch_of(src)]))
        own = draw(st.sampled_from([None, 0, own_chunk(dst, True)]))
        max_mem = int(model_peak(src.shape, block, src.itemsize, scratch, workers, own) * draw(st.floats(0.8, 1.25)))
    return src, dst, max_mem, workers, draw(st.booleans()), Rates(), draw(st.booleans())


def run_case(case):
    """Plan one case and check it against the enumeration; the strategy or "infeasible"."""
    src, dst, max_mem, workers, two_pass, rates, *own = case
    own = bool(own and own[0])   # the workers write the output themselves (a local Zarr store)
    ok = feasible(src, dst, max_mem, workers, two_pass, own)
    try:
        plan = plan_variable(src, dst, max_mem, workers, rates, allow_two_pass=two_pass, own_writes=own)
    except InputError as e:
        assert not ok, f"a plan exists but the planner said: {e}"
        msg = str(e)
        assert msg.startswith(f"--max-mem {format_size(max_mem)} is too small") and "\n" not in msg
        assert f"with {workers} worker" in msg
        return "infeasible"
    assert ok
    check_plan(plan, src, dst, max_mem, workers, two_pass, rates, own)
    assert plan_variable(src, dst, max_mem, workers, rates, allow_two_pass=two_pass, own_writes=own) == plan
    return plan.strategy


@FAST
@given(cases())
def test_plans_fit_and_count_right(case):
    event(run_case(case))


@st.composite
def transposes(draw):
    """Maps -> series (the thesis's conversion) at sizes where every strategy can win: budgets
    from the smallest block's peak to a little over the whole-chunk block's."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(2, {2: 9, 3: 6, 4: 5}[rank]), min_size=rank, max_size=rank)))
    cut = draw(st.integers(1, rank - 1))
    src_chunks = tuple([draw(st.integers(1, 2)) for _ in shape[:cut]] + list(shape[cut:]))
    dst_chunks = tuple(list(shape[:cut]) + [draw(st.integers(1, 2)) for _ in shape[cut:]])
    itemsize = draw(st.sampled_from([4, 8]))
    nbytes = math.prod(shape) * itemsize
    src = Layout(shape, itemsize, src_chunks, draw(st.integers(0, 3)) > 0, None)
    if src.compressed:
        src = Layout(shape, itemsize, src_chunks, True, draw(st.integers(nbytes // 10, nbytes)))
    chunked = draw(st.integers(0, 3)) > 0
    dst = Layout(shape, itemsize, dst_chunks if chunked else None, chunked and draw(st.booleans()))
    workers = draw(st.integers(1, 4))
    lcm = tuple(math.lcm(a, c) for a, c in zip(dst.chunks or (1,) * rank, src_chunks))
    lo = model_peak(shape, dst.chunks or (1,) * rank, itemsize, scratch_of(src), workers)
    hi = model_peak(shape, tuple(min(l, d) for l, d in zip(lcm, shape)), itemsize, scratch_of(src), workers)
    lo, hi = sorted((lo, hi))
    frac = draw(st.sampled_from(range(1001))) / 1000   # near uniform: floats and integers crowd the ends
    max_mem = math.ceil(lo * (hi * 1.1 / lo) ** frac)   # always feasible: the generic cases test the rest
    # with tiny arrays requests dominate the cost; a cheap request lets bytes (and two-pass) matter
    rates = draw(st.sampled_from([Rates(), Rates(op_s=1e-9), Rates(op_s=1e-9, encode_Bps=1e12)]))
    return src, dst, max_mem, workers, draw(st.booleans()), rates, draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(transposes())
def test_transposes_fit_and_count_right(case):
    event(run_case(case))


def test_transpose_sweep_reaches_every_strategy():
    """A seeded sweep of the same checks; hypothesis favours the simplest budgets, where two-pass
    (which needs room for a whole source chunk and re-decoding to be costly) rarely wins."""
    rng = random.Random(20240611)
    seen = Counter()
    for _ in range(300):
        rank = rng.randint(2, 4)
        shape = tuple(rng.randint(2, {2: 9, 3: 6, 4: 5}[rank]) for _ in range(rank))
        cut = rng.randint(1, rank - 1)
        src_chunks = tuple([rng.randint(1, 2) for _ in shape[:cut]] + list(shape[cut:]))
        dst_chunks = tuple(list(shape[:cut]) + [rng.randint(1, 2) for _ in shape[cut:]])
        compressed = rng.random() < 0.8
        src = Layout(shape, 4, src_chunks, compressed, rng.randint(1, math.prod(shape) * 4) if compressed else None)
        chunked = rng.random() < 0.8
        dst = Layout(shape, 4, dst_chunks if chunked else None, chunked and rng.random() < 0.5)
        workers = rng.randint(1, 4)
        max_mem = rng.randint(50, 4 * math.prod(shape) * 4 * workers)
        rates = rng.choice([Rates(), Rates(op_s=1e-9), Rates(op_s=1e-9, encode_Bps=1e12)])
        seen[run_case((src, dst, max_mem, workers, rng.random() < 0.8, rates))] += 1
    assert min(seen[k] for k in ("single-pass", "strided", "redecode", "two-pass", "infeasible")) >= 5, seen


@settings(max_examples=60, deadline=None)
@given(layouts(zero=True), st.integers(0, 1000), st.integers(1, 4))
def test_zero_length_dimension_plans_nothing(pair, max_mem, workers):
    src, dst = pair
    plan = plan_variable(src, dst, max_mem, workers)
    (p,) = plan.passes
    assert plan.strategy == "single-pass" and p.n_blocks == 0 and plan.peak_mem == 0
    assert plan.predicted_s == 0 and p.read_ops == p.write_ops == p.chunks_decoded == 0
    assert list(iter_blocks(src.shape, p.block)) == []
    json.dumps(plan.to_dict())


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_iter_blocks_tiles_in_c_order(data):
    rank = data.draw(st.integers(1, 5))
    shape = tuple(data.draw(st.lists(st.integers(1, MAXD[rank] + 2), min_size=rank, max_size=rank)))
    block = tuple(data.draw(st.integers(1, d + 2)) for d in shape)
    blocks = list(iter_blocks(shape, block))
    starts = [s for s, _ in blocks]
    assert starts == sorted(starts) and len(blocks) == math.prod(ceil_div(d, b) for d, b in zip(shape, block))
    cover = Counter()
    for s, n in blocks:
        assert all(c == min(b, d - a) for a, c, b, d in zip(s, n, block, shape))
        cover.update(itertools.product(*[range(a, a + c) for a, c in zip(s, n)]))
    assert set(cover) == set(itertools.product(*map(range, shape))) and set(cover.values()) == {1}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_chunks_in_matches_elements(data):
    rank = data.draw(st.integers(1, 4))
    shape = data.draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank))
    chunks = [data.draw(st.integers(1, d + 1)) for d in shape]
    start = [data.draw(st.integers(0, d)) for d in shape]
    count = [data.draw(st.integers(0, d - s)) for s, d in zip(start, shape)]
    got = list(chunks_in(start, count, chunks))
    elems = itertools.product(*[range(s, s + n) for s, n in zip(start, count)])
    assert got == sorted({tuple(i // c for i, c in zip(e, chunks)) for e in elems})
    assert list(chunks_in(start, count, None)) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(1, 40), st.integers(0, 100), st.integers(0, 100))
def test_floor_sum(n, m, a, b):
    assert P._floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


# --- examples ----------------------------------------------------------------------------------------

T, Z, Y, X = 365, 4, 90, 180
MiB = 2**20


def thesis(compressed=True):
    nbytes = T * Z * Y * X * 4
    src = Layout((T, Z, Y, X), 4, (1, 1, Y, X), compressed, nbytes // 3 if compressed else None)
    dst = Layout((T, Z, Y, X), 4, (T, 1, 1, X), compressed)
    return src, dst


def test_thesis_big_budget_single_pass():
    src, dst = thesis()
    plan = plan_variable(src, dst, 2**30, workers=1)
    (p,) = plan.passes
    # the whole field fits the budget twice over: one block (each block costs its task's Python)
    assert plan.strategy == "single-pass" and p.block == (T, Z, Y, X) and p.n_blocks == 1
    assert p.chunks_decoded == T * Z and p.max_decodes_per_chunk == 1 and p.write_ops == Z * Y
    assert p.bytes_read == src.stored_bytes and p.bytes_written == round(dst.nbytes / 3)
    assert plan.peak_mem == 2 * T * Z * Y * X * 4 + 2 * Y * X * 4
    # a budget for one level at a time: the levels' blocks, the lcm of the two chunk shapes
    (p,) = plan_variable(src, dst, 2 * T * Y * X * 4 + 2 * Y * X * 4, workers=1).passes
    assert p.block == (T, 1, Y, X) and p.n_blocks == Z


def test_thesis_small_budget_redecode_or_two_pass():
    src, dst = thesis()
    # room for a third of the y rows: each source chunk decoded 3 times, or a detour on disk whose
    # second pass reads each block as one tile; the planner takes the cheaper
    plan = plan_variable(src, dst, 16 * MiB, workers=1)
    redecode = plan_variable(src, dst, 16 * MiB, workers=1, allow_two_pass=False)
    assert redecode.strategy == "redecode" and redecode.peak_mem <= 16 * MiB
    (p,) = redecode.passes
    assert p.block == (T, 1, 30, X) and p.max_decodes_per_chunk == 3 and p.chunks_decoded == 3 * T * Z
    assert plan.predicted_s <= redecode.predicted_s and plan.peak_mem <= 16 * MiB
    if plan.strategy == "two-pass":
        assert plan.passes[1].read_ops == plan.passes[1].n_blocks      # whole tiles, one read each
    # room for a few rows only: re-decoding would decode every chunk many times, two passes win
    for max_mem, workers in ((8 * MiB, 1), (8 * MiB, 2), (2 * MiB, 1)):
        plan = plan_variable(src, dst, max_mem, workers)
        redecode = plan_variable(src, dst, max_mem, workers, allow_two_pass=False)
        assert redecode.strategy == "redecode" and redecode.passes[0].max_decodes_per_chunk >= 6
        assert plan.strategy == "two-pass" and plan.predicted_s < redecode.predicted_s
        assert plan.peak_mem <= max_mem and plan.tmp_bytes == src.nbytes     # the tiles divide the array
        first, second = plan.passes
        assert first.max_decodes_per_chunk == 1 and first.chunks_decoded == T * Z
        assert first.block[1:] == (Z, Y, X)      # whole trailing axes: long writes to the intermediate
        assert second.block[0] == T and second.block[3] == X


def test_thesis_uncompressed_small_budget_strided():
    src, dst = thesis(compressed=False)
    plan = plan_variable(src, dst, 8 * MiB, workers=2)
    (p,) = plan.passes
    assert plan.strategy == "strided" and p.strategy == "strided" and plan.peak_mem <= 8 * MiB
    assert p.chunks_decoded == 0 and p.bytes_read == src.nbytes and p.read_ops > T * Z


def test_infeasible_message():
    src, dst = thesis()
    with pytest.raises(InputError) as e:
        plan_variable(src, dst, 1 * MiB, workers=2)
    msg = str(e.value)
    assert msg.startswith("--max-mem 1MiB is too small: one target chunk [365,1,1,180]")
    assert msg.endswith("with 2 workers") and "\n" not in msg
    need = msg.split("needs at least ")[1].split(" with")[0]
    # the stated need is enough
    plan_variable(src, dst, parse_shown(need), workers=2)


def parse_shown(text):
    """Bytes of a size as format_size shows it ('2.1MiB'), rounded up."""
    value, unit = float(text[:-3]), text[-3:]
    return math.ceil(value * {"KiB": 1024, "MiB": MiB, "GiB": 2**30}[unit])


def test_describe_mentions_block_and_peak():
    src, dst = thesis()
    for max_mem in (2**30, 8 * MiB):
        plan = plan_variable(src, dst, max_mem, workers=2)
        text = "\n".join(plan.describe())
        for p in plan.passes:
            assert L.format_chunks(p.block) in text and format_size(p.peak_mem) in text
        assert format_size(plan.peak_mem) in text and plan.strategy in text
    assert "temporary file" in text


def test_more_workers_than_blocks():
    src = Layout((10,), 8, (10,), True)
    dst = Layout((10,), 8, (5,), True)
    plan = plan_variable(src, dst, 10**6, workers=4)
    (p,) = plan.passes
    assert p.n_blocks == 1 and p.workers == 1 and p.peak_mem == 2 * 80 + 2 * 80


def test_contiguous_both_sides():
    src = Layout((6, 5, 7), 4, None)
    dst = Layout((6, 5, 7), 4, None)
    plan = plan_variable(src, dst, 10**6)
    (p,) = plan.passes
    assert plan.strategy == "single-pass" and p.cache_bytes == 0
    assert p.block == (6, 5, 7) and p.read_ops == p.write_ops == 1   # grown to one long request


def test_peak_memory_model():
    assert peak_memory(10, 4, 1) == 24
    assert peak_memory(10, 4, 3) == 3 * 34 + 30
    # each worker writes its own output: its block, its scratch, one target chunk three times over
    assert peak_memory(10, 4, 1, 2) == 20
    assert peak_memory(10, 4, 3, 2) == 3 * 20
    assert peak_memory(10, 4, 3, 0) == 3 * 14     # the intermediate file: the block as it is


@pytest.mark.parametrize("decode_Bps,taken", [(1e8, "redecode"), (6e7, "redecode"), (5e7, "redecode"),
                                               (4e7, "two-pass"), (3e7, "two-pass")])
def test_two_passes_must_beat_one_file_by_the_margin(monkeypatch, decode_Bps, taken):
    """Two passes are taken over re-decoding only when predicted TWO_PASS_MARGIN (1.25x) faster: the
    intermediate costs more than its rates say (convert.TWO_PASS_MARGIN's comment has the
    measurement). The bench's 200 MiB case with re-decoding priced dearer and dearer: without the
    margin two passes win every time; with it, re-decoding is kept while within 1.25x."""
    shape = (91, 10, 240, 240)
    src = Layout(shape, 4, (1, 1, 240, 240), True, 111_000_000)
    dst = Layout(shape, 4, (91, 1, 1, 240), True)
    rates = Rates(decode_Bps=decode_Bps)
    one_file = plan_variable(src, dst, 128 << 20, 2, rates, allow_two_pass=False)
    monkeypatch.setattr(P, "TWO_PASS_MARGIN", 1.0)
    two = plan_variable(src, dst, 128 << 20, 2, rates)
    monkeypatch.undo()
    plan = plan_variable(src, dst, 128 << 20, 2, rates)
    assert one_file.strategy == "redecode" and two.strategy == "two-pass"
    assert two.predicted_s < one_file.predicted_s
    assert plan.strategy == taken
    assert (taken == "two-pass") == (one_file.predicted_s > P.TWO_PASS_MARGIN * two.predicted_s)
    assert plan.predicted_s == (two if taken == "two-pass" else one_file).predicted_s
    # the plan says what it declined (--dry-run prints it, --json carries it)
    if taken == "two-pass":
        assert not plan.declined and "declined" not in " ".join(plan.describe())
    else:
        assert plan.declined.startswith(f"two-pass (predicted {two.predicted_s:.2f} s of conversion, temporary file ")
        assert plan.declined in plan.describe() and plan.to_dict()["declined"] == plan.declined


def test_own_writes_takes_one_pass_where_it_fits():
    """The bench's 200 MiB case (bench/rechunk_zarr_vs_peers.py): deflated maps [1,1,240,240] to
    series [91,1,1,240] in a local Zarr store at 128 MiB with 2 workers. Results written by the
    parent need 4 blocks of [91,1,240,240] (20 MiB) per worker: no single pass fits (two passes
    or re-decoding). Workers writing their own chunks need one block each: one pass, its peak the
    model's to the byte."""
    shape = (91, 10, 240, 240)
    src = Layout(shape, 4, (1, 1, 240, 240), True, 111_000_000)
    dst = Layout(shape, 4, (91, 1, 1, 240), True)
    parent = plan_variable(src, dst, 128 << 20, 2)
    assert parent.strategy != "single-pass" and not parent.passes[-1].own_writes
    two = plan_variable(src, dst, 128 << 20, 2, Rates(decode_Bps=3e7))   # re-decoding made dear
    assert two.strategy == "two-pass" and two.passes[0].own_writes and not two.passes[1].own_writes
    own = plan_variable(src, dst, 128 << 20, 2, own_writes=True)
    (p,) = own.passes
    assert own.strategy == "single-pass" and p.own_writes and p.workers == 2
    assert p.block[0] == 91 and p.block[2:] == (240, 240)
    block = math.prod(p.block) * 4
    assert p.peak_mem == 2 * (block + 2 * 240 * 240 * 4 + 3 * 91 * 240 * 4)
    assert own.to_dict()["passes"][0]["own_writes"] is True


def test_bad_inputs():
    with pytest.raises(InputError):
        plan_variable(Layout((4, 4), 4, None), Layout((4, 5), 4, None), 10**6)
    with pytest.raises(InputError):
        plan_variable(Layout((4, 4), 4, None), Layout((4, 4), 8, None), 10**6)
    with pytest.raises(InputError):
        Layout((4, 4), 4, None, compressed=True)
    with pytest.raises(InputError):
        Layout((4, 4), 4, (2,))
    with pytest.raises(InputError):
        Layout((4, 4), 0, None)
    with pytest.raises(InputError):
        plan_variable(Layout((4,), 4, None), Layout((4,), 4, None), 10**6, workers=0)


def test_the_last_round_of_blocks_leaves_workers_idle():
    from climio.model.convert import rounds_factor
    assert [rounds_factor(n, 2) for n in (2, 3, 4, 5, 9, 40)] == [1.0, 4 / 3, 1.0, 6 / 5, 10 / 9, 1.0]
    assert rounds_factor(7, 1) == rounds_factor(0, 4) == 1.0 and rounds_factor(5, 4) == 8 / 5
    assert rounds_factor(2, 2, 960 / 1440) == pytest.approx(4 / 3)      # 960 + 480 rows: the larger decides
    # plans whose blocks split unevenly over 2 workers pay for the idle worker in their codec time
    src = Layout((1440, 1, 64, 128), 4, (1, 1, 64, 128), True, 36_000_000)
    rates = Rates(decode_Bps=400e6, encode_Bps=150e6)
    uneven = plan_variable(src, Layout((1440, 1, 64, 128), 4, (480, 1, 2, 128), True), 1 << 30, 2, rates)
    even = plan_variable(src, Layout((1440, 1, 64, 128), 4, (36, 1, 64, 128), True), 1 << 30, 2, rates)
    (pu,), (pe,) = uneven.passes, even.passes
    assert pe.n_blocks % 2 == 0 and pe.block[0] * pe.n_blocks == 1440
    codec = (pu.bytes_decoded / rates.decode_Bps + pu.bytes_encoded / rates.encode_Bps) / rates.speedup(2)
    ops = (pu.read_ops + pu.write_ops - pe.read_ops - pe.write_ops) * rates.op_s
    tasks = (pu.n_blocks - pe.n_blocks) * rates.pool_task_s     # both on 2 workers
    assert pu.predicted_s - pe.predicted_s == pytest.approx(codec / 3 + ops + tasks, rel=1e-9)


def test_narrow_second_pass_blocks_read_the_intermediate_in_tiles():
    """The S3 bench's field: [1024,5,192,256] float32 in [1,1,192,256] chunks to [1024,1,24,32] at
    64 MiB per worker. Read from a C-order intermediate the second pass's [1024,1,24,128] blocks
    were 1.97 million reads of 512 bytes; tiled by those blocks, one read each."""
    shape = (1024, 5, 192, 256)
    n = math.prod(shape) * 4
    src = Layout(shape, 4, (1, 1, 192, 256), True, n // 2)
    dst = Layout(shape, 4, (1024, 1, 24, 32), True)
    plan = plan_variable(src, dst, 64 * MiB, workers=2)
    first, second = plan.passes
    assert plan.strategy == "two-pass" and first.dst.chunks == second.block == second.src.chunks
    assert second.read_ops == second.n_blocks
    assert P._runs(shape, second.block, None) > 1000 * second.n_blocks    # what C order would have cost
    assert plan.peak_mem <= 64 * MiB and plan.tmp_bytes == n
