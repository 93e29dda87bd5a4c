"""What a rechunk to object storage leaves so that `--resume` can continue it after a kill.

Under the store's prefix, beside the chunk objects and never readable as Zarr (no metadata is
written before the store is complete):

    .climio-rechunk/run.json                 what the run converts (input, variables, shapes,
                                             chunks, codecs): a resume of another run is refused
    .climio-rechunk/done/VAR/I0_I1_...json   per block, written by the worker once every chunk of
                                             the block is stored: [[key, size, md5], ...]

A resumed run skips a block when its line is there and every chunk it names is listed with that
size and an ETag equal to its MD5 (a single-part PUT's ETag is the MD5 of its bytes; a store that
answers otherwise has its objects read back and hashed). Anything else is written again.
"""

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

from climio.base.errors import InputError

DIR = ".climio-rechunk"


def _block_name(var: str, start) -> str:
    return f"{DIR}/done/{var.strip('/')}/{'_'.join(map(str, start)) or 'scalar'}.json"


def record_block(objs, var: str, start, written) -> None:
    """The block's manifest line (called by the worker after its chunks are stored)."""
    objs.put(_block_name(var, start), json.dumps([list(w) for w in written]).encode())


def fingerprint(in_url: str, jobs) -> dict:
    return {"input": str(in_url),
            "variables": [[j.out_path, list(j.info.shape), j.info.dtype,
                           list(j.target.chunks) if j.target.chunks else None, j.target.compression.label]
                          for j in jobs]}


def begin(objs, in_url: str, jobs, resume: bool) -> None:
    """Write run.json (a fresh run) or check it (--resume): the same conversion, or an InputError."""
    want = fingerprint(in_url, jobs)
    if resume:
        got = objs.get(f"{DIR}/run.json")
        if got is not None and json.loads(bytes(got)) != want:
            raise InputError(f"--resume: s3://{objs.url.bucket}/{objs.prefix} holds a run of another conversion "
                             "(other input, variables or chunks): run without --resume to start again")
    objs.put(f"{DIR}/run.json", json.dumps(want).encode())


def done_blocks(objs) -> dict:
    """{array path: {block start}} of the blocks whose every chunk is stored as recorded."""
    listing = objs.listing()
    lines = [k for k in listing if k.startswith(f"{DIR}/done/") and k.endswith(".json")]
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(objs.get, lines))
    out = {}
    for name, body in zip(lines, bodies):
        if body is None:
            continue
        try:
            written = json.loads(bytes(body))
        except ValueError:
            continue   # a line cut short: that block is written again
        if all(_stored(objs, listing, key, size, md5) for key, size, md5 in written):
            var, start = name[len(DIR) + 6:-5].rsplit("/", 1)
            out.setdefault(var, set()).add(() if start == "scalar" else tuple(int(x) for x in start.split("_")))
    return out


def _stored(objs, listing, key, size, md5) -> bool:
    got = listing.get(key)
    if got is None or got[0] != size:
        return False
    if len(got[1]) == 32 and all(c in "0123456789abcdef" for c in got[1].lower()):
        return got[1].lower() == md5
    data = objs.get(key)   # not an MD5 ETag: read it back
    return data is not None and hashlib.md5(bytes(data)).hexdigest() == md5


def clear(objs) -> None:
    """Remove the manifest (before the metadata is published)."""
    objs.delete([k for k in objs.listing(f"{DIR}/")])
