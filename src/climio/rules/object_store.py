"""The rules on reads of data in object storage (Facts.object_store): every GET pays a round trip,
so fewer, bigger GETs and more of them in flight are what helps. Each finding carries the predicted
time before and after (all passes) and the command; the caller (climio.advice) gives the what-if.
"""

import math

from .registry import rule
from .predicted import recommendation

MORE_IN_FLIGHT = 64           # GETs in flight the concurrency rule weighs
BIGGER_STEPS = 3              # the bigger-chunks rule doubles the chunk this many times (up to 8x)


def _spec(desc, lengths) -> str:
    return f"{desc.var or 'VAR'}:{','.join(map(str, lengths))}"


def _gain(facts, after) -> bool:
    return math.isfinite(after) and after < facts.object_store.now_s


def _bigger(chunks, shape, roles) -> list:
    """The chunk doubled along the first dimension that can grow: x, then y, then t (by role; the
    last, then the first dimension when no role says)."""
    order = [roles.index(r) for r in "xyt" if r in roles] or [len(shape) - 1, 0]
    for ax in order:
        if chunks[ax] < shape[ax]:
            c = list(chunks)
            c[ax] = min(shape[ax], c[ax] * 2)
            return c
    return list(chunks)


def _zarr(facts) -> bool:
    return facts.object_store.desc.store == "zarr-s3"


@rule("object-bigger-chunks", "Bigger chunks: fewer GETs, each longer than a round trip", inputs=("object-store",),
      needs=("object_store",), thresholds={"BIGGER_STEPS": BIGGER_STEPS}, evidence=("chunks", "target_chunks"),
      looks_for="a Zarr store whose reads are predicted faster with the chunk doubled along x, y, t (up to 8x)")
def bigger_chunks(facts):
    o = facts.object_store
    d = o.desc
    if not _zarr(facts):
        return []
    big = list(d.chunks)
    for _ in range(BIGGER_STEPS):
        big = _bigger(big, d.shape, d.roles)
    after = o.again(chunks=big, shards=None)
    if big == list(d.chunks) or not _gain(facts, after):
        return []
    return [recommendation("object-bigger-chunks", f"bigger chunks {big} (fewer GETs, each longer than a round trip)",
                           {"chunks": list(d.chunks), "target_chunks": big}, o.now_s, after, None, None,
                           o.rechunk_command("rechunked", f"-c {_spec(d, big)}"))]


@rule("object-shards-over-time", "Shards over time: a time-series read gets one shard per GET",
      inputs=("object-store",), needs=("object_store",), thresholds={}, evidence=("chunks", "shards"),
      looks_for="an unsharded Zarr store chunked along time whose reads are predicted faster sharded over all time")
def shards_over_time(facts):
    o = facts.object_store
    d = o.desc
    t = d.roles.index("t") if "t" in d.roles else 0
    if not _zarr(facts) or d.shards or d.chunks[t] >= d.shape[t]:
        return []
    sh = list(d.chunks)
    sh[t] = d.shape[t]
    after = o.again(chunks=list(d.chunks), shards=sh)
    if not _gain(facts, after):
        return []
    return [recommendation("object-shards-over-time", f"shards over time {sh} (a time-series read gets one shard "
                           "per GET)", {"chunks": list(d.chunks), "shards": sh}, o.now_s, after, None, None,
                           o.rechunk_command("sharded", f"-c {_spec(d, d.chunks)} --shards {_spec(d, sh)}"))]


@rule("object-more-in-flight", "More GETs in flight", inputs=("object-store",), needs=("object_store",),
      thresholds={"MORE_IN_FLIGHT": MORE_IN_FLIGHT}, evidence=("concurrency", "target_concurrency"),
      looks_for="reads predicted faster with MORE_IN_FLIGHT GETs in flight than the stack's measured concurrency")
def more_in_flight(facts):
    o = facts.object_store
    if not _zarr(facts):
        return []
    after = o.again(concurrency=MORE_IN_FLIGHT)
    if not _gain(facts, after):
        return []
    return [recommendation("object-more-in-flight", f"more GETs in flight ({MORE_IN_FLIGHT} instead of the "
                           f"{o.concurrency:.1f} measured)", {"concurrency": o.concurrency,
                                                              "target_concurrency": MORE_IN_FLIGHT},
                           o.now_s, after, None, None,
                           f"python: zarr.config.set({{'async.concurrency': {MORE_IN_FLIGHT}}}) before reading")]


@rule("object-obstore", "zarr-python on obstore instead of fsspec/s3fs", inputs=("object-store",),
      needs=("object_store",), thresholds={}, evidence=("stack",),
      looks_for="a Zarr store read through fsspec whose reads are predicted faster through obstore")
def obstore_stack(facts):
    o = facts.object_store
    if not _zarr(facts) or o.stack == "zarr-obstore":
        return []
    after = o.again(stack="zarr-obstore")
    if not _gain(facts, after):
        return []
    return [recommendation("object-obstore", "zarr-python on obstore instead of fsspec/s3fs", {"stack": o.stack},
                           o.now_s, after, None, None,
                           "zarr.storage.ObjectStore(obstore.store.S3Store(...)) in place of FsspecStore")]


@rule("object-reference", "Read a netCDF-4 object through a kerchunk reference", inputs=("object-store",),
      needs=("object_store",), thresholds={}, evidence=("chunks", "codecs"),
      looks_for="a netCDF-4 object: its reads through a reference (one GET per chunk) against downloading it "
                "first (shown either way: the ways to read it)")
def reference(facts):
    o = facts.object_store
    d = o.desc
    if d.store != "netcdf4-s3" or o.reference_s is None:     # ways to read it: shown, faster or not
        return []
    chunks = list(d.chunks or d.shape)
    return [recommendation("object-reference", f"read through a kerchunk reference (chunks {chunks}, {d.codecs}) "
                           "instead of downloading it first", {"chunks": chunks, "codecs": d.codecs},
                           o.now_s, o.reference_s, None, None, o.reference_command)]


@rule("object-zarr-copy", "A Zarr copy chunked for a read", inputs=("object-store",), needs=("object_store",),
      thresholds={}, evidence=("read", "target_chunks"),
      looks_for="a netCDF-4 object: its reads from a Zarr copy chunked for each read's shape, against "
                "downloading it first (shown either way)")
def zarr_copy(facts):
    o = facts.object_store
    d = o.desc
    if d.store != "netcdf4-s3":
        return []
    out = []
    for read, count in o.read_counts:
        after = o.again(chunks=list(count), shards=None, stack="zarr-obstore")
        if math.isfinite(after):
            out.append(recommendation(
                "object-zarr-copy", f"a Zarr copy chunked for {read} reads {list(count)} (zarr-python + obstore)",
                {"read": read, "target_chunks": list(count)}, o.now_s, after, None, None,
                o.rechunk_command(f"{d.var}-{read}", f"-c {_spec(d, count)}")))
    return out
