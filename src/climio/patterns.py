"""1-D read patterns of the thesis (ch. 3.1.2) as (offset, length) plans, plus the stream checksum.

Both must agree bit for bit with the C probes (csrc/common/pattern.c, checksum.c) so every
layer of the read-stack study reads the same bytes in the same order; a test checks it.
"""

import numpy as np

PATTERNS = ("sequential", "strided", "random")
STRIDE_FACTOR = 4          # strided: read one buffer, skip three
DEFAULT_RANDOM_COUNT = 100  # the thesis's 100 uniformly random offsets
_M64 = (1 << 64) - 1


def splitmix64(seed: int):
    """The splitmix64 generator (public domain, Vigna); chosen because it is a few lines in C too."""
    state = seed & _M64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        yield z ^ (z >> 31)


def plan(pattern: str, file_bytes: int, buffer: int, random_count=DEFAULT_RANDOM_COUNT, seed=1, align=8):
    """The reads of one repetition as an int64 array of shape (n, 2): offset, length."""
    if pattern == "sequential":
        offsets = np.arange(0, file_bytes, buffer, dtype=np.int64)
    elif pattern == "strided":
        offsets = np.arange(0, file_bytes, STRIDE_FACTOR * buffer, dtype=np.int64)
    elif pattern == "random":
        if buffer >= file_bytes:
            return np.array([[0, file_bytes]], dtype=np.int64)
        span = (file_bytes - buffer) // align + 1
        gen = splitmix64(seed)
        offsets = np.array([(next(gen) % span) * align for _ in range(random_count)], dtype=np.int64)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    lengths = np.minimum(buffer, file_bytes - offsets)
    return np.stack([offsets, lengths], axis=1)


class StreamChecksum:
    """sum_k w_k * (2k+1) mod 2**64 over the little-endian uint64 words of a byte stream.

    Position-weighted, so bytes delivered from a wrong offset or in a wrong order change it.
    """

    def __init__(self):
        self.k = 0
        self.value = np.uint64(0)

    def update(self, data) -> None:
        """Add the raw bytes of `data` (bytes, or any array, masked arrays included)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = np.ascontiguousarray(np.ma.getdata(data))
        words = np.frombuffer(memoryview(data).cast("B"), dtype="<u8")
        weights = np.arange(2 * self.k + 1, 2 * (self.k + len(words)) + 1, 2, dtype=np.uint64)
        with np.errstate(over="ignore"):
            self.value = np.uint64(self.value + np.sum(words * weights, dtype=np.uint64))
        self.k += len(words)

    def hexdigest(self) -> str:
        return f"{int(self.value):016x}"
