"""Wall seconds of reading hyperslabs of an array in object storage through an object-store stack
(`climio predict --check` for an s3:// store). The store is not evicted: a remote store's caches
are not climio's."""

from climio.measure.stacks_s3 import OBJECT_STACKS
from .series import timed_requests


def slab_walls(endpoint, url: str, var: str, slabs, stack: str, reps: int) -> list:
    """Per repetition, the wall seconds of reading every (start, count) of `slabs` of `url`'s `var`
    through `stack` (opened untimed, once per repetition)."""
    walls = []
    for _ in range(reps):
        reader = OBJECT_STACKS[stack](endpoint)
        reader.open(url, var)
        try:
            t, _, _ = timed_requests(slabs, lambda slab: reader.read_slab(*slab))
            walls.append(t.wall_s)
        finally:
            reader.close()
    return walls
