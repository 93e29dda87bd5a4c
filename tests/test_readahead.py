"""The model's readahead (climio.model.predict._Storage) against the kernel's: a file is evicted,
read with preads in a pattern, and the pages the kernel brought in (mincore) are compared with the
pages the simulation fetched, with the device's own read_ahead_kb. Random reads (strided runs,
HDF5's sieve reads), gaps of a page, chunk columns and reads larger than the window must agree
page for page within 3%; a plain sequential scan may read up to two windows further ahead in the
simulation than in the kernel (whose large folios place the async mark later), never less."""

import os

import numpy as np
import pytest

from climio.machine import cache
from climio.model.predict import _Storage
from climio.machine.platform import filesystem_of

PAGE = 4096


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    path = tmp_path_factory.mktemp("ra") / "raw.bin"
    path.write_bytes(np.random.default_rng(3).integers(0, 255, 64 << 20, dtype=np.uint8).tobytes())
    ra_kb = (filesystem_of(str(path)).get("device") or {}).get("read_ahead_kb")
    assert ra_kb, f"no read_ahead_kb for the file system of {path}: the test needs a block device's readahead"
    return str(path), int(ra_kb) * 1024


def _kernel_pages(path, reqs) -> int:
    cache.evict(path)
    assert cache.resident_fraction(path) <= cache.COLD_THRESHOLD, "the test file could not be evicted"
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, n in reqs:
            os.pread(fd, n, off)
    finally:
        os.close(fd)
    npages = (os.path.getsize(path) + PAGE - 1) // PAGE
    return round(cache.resident_fraction(path) * npages)


def _model_pages(path, ra, reqs) -> tuple:
    st = _Storage(PAGE, 64 << 10, ra, os.path.getsize(path))
    for off, n in reqs:
        st.fetch(off, n)
    return len(st.seen), st.req


PATTERNS = {
    "sieve reads of strided runs": [(o, 65536) for o in range(0, 32 << 20, 135168)],
    "64 KiB every MiB": [(o, 65536) for o in range(0, 64 << 20, 1 << 20)],
    "a page every other page": [(o, 4096) for o in range(0, 4 << 20, 8192)],
    "8 KiB every 33 KiB": [(o, 8192) for o in range(0, 8 << 20, 33792)],
    "chunk columns": [(t * (1 << 20) + z * (256 << 10), 256 << 10) for z in range(4) for t in range(16)],
    "8 MiB reads": [(o, 8 << 20) for o in range(0, 64 << 20, 16 << 20)],
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pages_fetched_match_the_kernel(raw, name):
    path, ra = raw
    reqs = PATTERNS[name]
    real = _kernel_pages(path, reqs)
    sim, _ = _model_pages(path, ra, reqs)
    assert abs(sim - real) <= 0.03 * real, f"{name}: kernel {real} pages, model {sim}"


def test_a_sequential_scan_is_one_stream(raw):
    path, ra = raw
    reqs = [(o, 65536) for o in range(0, 16 << 20, 65536)]
    real = _kernel_pages(path, reqs)
    sim, req = _model_pages(path, ra, reqs)
    assert real <= sim <= real + 2 * ra // PAGE, (real, sim)
    # one seek, then windows read ahead: no 64 KiB request of its own reaches storage after the first
    assert sum(n for (pat, _), n in req.items() if pat == "strided") == 1
    assert sum(n for (pat, _), n in req.items() if pat == "warm") == len(reqs) - 1


def test_random_reads_are_their_own_pages_without_readahead_state():
    st = _Storage(PAGE, 64 << 10, 8 << 20, 1 << 30)
    st.fetch(0, 65536)                        # the file's start: the initial window, 4 x 16 pages
    assert len(st.seen) == 64
    st.fetch(100 << 20, 65536)                # far away, nothing cached before it: 16 pages only
    assert len(st.seen) == 80 and st.req[("strided", 65536)] == 1
    plain = _Storage(PAGE, 64 << 10, 0, 1 << 30)   # no readahead recorded: the request's own pages
    plain.fetch(0, 65536)
    assert len(plain.seen) == 16
