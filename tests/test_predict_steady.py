"""The simulation's shortcut for reads that repeat (climio.model.predict._Steady, issue 34 item 5)
changes nothing but the time: on seeded variables, chunk shapes, read orders, chunk caches (few
slots, small, every w0), tasks, per-read caches and windows, the counts equal those of the walk
read by read (the shortcut switched off); and on the advise benchmark's time-series reads it
really skips (the few reads walked are counted)."""

import itertools
import random

import pytest

from climio.dataset.access import slice_starts
from climio.dataset.layout import Layout
from climio.dataset.reads import read_count
from climio.model import predict as model
from climio.model.chunk_cache import CacheSpec
from climio.model.profile import default_profile


def walked(monkeypatch, *args, **kw):
    """The counts with the shortcut off: every read walked."""
    with monkeypatch.context() as m:
        m.setattr(model._Steady, "after", lambda *a, **k: 0)
        return model.simulate(*args, **kw)


def reads_for(rng, shape):
    """A tiled read pattern in C order (a named shape or a random count), sometimes shuffled or
    repeated, as programs read."""
    count = tuple(rng.randint(1, d) if rng.random() < 0.5 else rng.choice((1, d)) for d in shape)
    reads = [(s, count) for s in itertools.product(*[range(0, d - c + 1, c) for d, c in zip(shape, count)])]
    if rng.random() < 0.2:
        rng.shuffle(reads)
    if rng.random() < 0.3:
        reads = reads * 2
    return reads


@pytest.mark.parametrize("seed", range(6))
def test_counts_equal_the_walk(monkeypatch, seed):
    rng = random.Random(seed)
    prof = default_profile()
    for _ in range(40):
        nd = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 24) for _ in range(nd))
        chunks = tuple(rng.randint(1, d) for d in shape)
        compressed = rng.random() < 0.6
        lay = Layout(shape, 4, chunks, compressed, max(1, Layout(shape, 4, chunks).allocated_bytes // 2)
                     if compressed else None)
        cbytes = lay.chunk_nbytes
        spec = CacheSpec(rng.choice((cbytes - 1, cbytes * rng.randint(1, 12), 1 << 20)),
                         rng.choice((1, 3, 7, 64, 521)), rng.choice((0.0, 0.5, 0.75, 1.0)))
        kw = dict(tasks=rng.choice((1, 1, 2, 3)), cache_per_read=rng.random() < 0.2,
                  direct_sieve=rng.random() < 0.5)
        if rng.random() < 0.3:
            kw.update(max_requests=rng.randint(5, 200), max_visits=rng.choice((None, rng.randint(5, 300))))
        reads = reads_for(rng, shape)
        fast = model.simulate(lay, reads, spec, prof, **kw)
        assert fast.to_dict() == walked(monkeypatch, lay, reads, spec, prof, **kw).to_dict(), (shape, chunks, spec, kw)


@pytest.mark.parametrize("read, chunks", [("t", (1, 90, 180)), ("xy", (3650, 1, 5)), ("t", (730, 18, 180)),
                                          ("xy", (730, 18, 180))])
def test_the_benchmarks_reads_are_skipped_not_walked(monkeypatch, read, chunks):
    """tas[3650,90,180] (bench/make_cmor_tas.py) with netCDF4-python's 64 MiB / 1,000-slot cache:
    time series on map chunks miss every chunk the same way each read (a fixed point); maps on
    [730,18,180] hit the same 5 chunks for 729 reads after the first (all hits)."""
    shape = (3650, 90, 180)
    lay = Layout(shape, 4, chunks, True, Layout(shape, 4, chunks).allocated_bytes // 2)
    reads = slice_starts(shape, read_count(read, shape))
    spec = CacheSpec(64 << 20, 1000, 0.75)
    walks = []
    real = model._chunked_read
    monkeypatch.setattr(model, "_chunked_read", lambda *a: (walks.append(1), real(*a)))
    fast = model.simulate(lay, reads, spec, default_profile(), max_visits=30_000)
    assert fast.reads_simulated >= 3 * len(walks)
    monkeypatch.setattr(model, "_chunked_read", real)
    assert fast.to_dict() == walked(monkeypatch, lay, reads, spec, default_profile(), max_visits=30_000).to_dict()
