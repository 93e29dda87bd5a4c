"""The read patterns touch exactly the intended offsets, identically in Python and in the C probes."""

import numpy as np
import pytest

from climio.dataset.access import plan, splitmix64
from climio.measure.series import StreamChecksum
from conftest import run_probe


def test_sequential_covers_file_once_with_partial_tail():
    reads = plan("sequential", 10_000, 4096)
    assert reads.tolist() == [[0, 4096], [4096, 4096], [8192, 10_000 - 8192]]


def test_strided_reads_one_buffer_skips_three():
    reads = plan("strided", 100_000, 1024)
    assert (reads[:, 0] == np.arange(0, 100_000, 4096)).all()
    assert (reads[:, 1] == 1024).all()
    # No byte read twice, three buffers skipped between reads.
    assert (np.diff(reads[:, 0]) - reads[:-1, 1] == 3 * 1024).all()


def test_random_offsets_uniform_in_range_aligned_deterministic():
    size, buf = 1 << 30, 1 << 20
    a = plan("random", size, buf, random_count=100, seed=1)
    b = plan("random", size, buf, random_count=100, seed=1)
    c = plan("random", size, buf, random_count=100, seed=2)
    assert len(a) == 100 and (a == b).all() and not (a == c).all()
    assert (a[:, 0] % 8 == 0).all() and (a[:, 0] + a[:, 1] <= size).all()
    # Seeks go both ways (not sorted) and spread over the file.
    steps = np.diff(a[:, 0])
    assert (steps > 0).any() and (steps < 0).any()
    assert a[:, 0].min() < size / 5 and a[:, 0].max() > 4 * size / 5


def test_splitmix64_reference_values():
    # First outputs for seed 0 as published with the reference implementation.
    g = splitmix64(0)
    assert [next(g) for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_checksum_is_position_weighted():
    words = np.arange(1, 5, dtype="<u8")
    c = StreamChecksum()
    c.update(words[:2].tobytes())
    c.update(words[2:].tobytes())
    assert int(c.hexdigest(), 16) == sum(int(w) * (2 * k + 1) for k, w in enumerate(words))
    swapped = StreamChecksum()
    swapped.update(words[::-1].copy().tobytes())
    assert swapped.hexdigest() != c.hexdigest()


@pytest.mark.parametrize("probe,extra", [("climio-probe-posix", []), ("climio-probe-posix", ["--odirect"]),
                                          ("climio-probe-netcdf", [])])
def test_c_probes_plan_the_same_reads_as_python(files_1d, probe, extra):
    path = files_1d["bin"] if probe.endswith("posix") else files_1d["nc"]
    size = (1 << 20) + 24
    _, out = run_probe(probe, "--file", path, "--buffers", "4096,65536", "--print-offsets", *extra)
    planned, key = {}, None
    for line in out.stdout.splitlines():
        if line.startswith("#"):
            _, pattern, buf = line.split()
            key = (pattern, int(buf))
            planned[key] = []
        elif line.strip():
            planned[key].append([int(x) for x in line.split()])
    align = 4096 if extra else 8
    assert set(planned) == {(p, b) for p in ("sequential", "strided", "random") for b in (4096, 65536)}
    for (pattern, buf), reads in planned.items():
        assert reads == plan(pattern, size, buf, 100, 1, align=align).tolist(), (pattern, buf)
