"""The rules on measured facts (climio traces, counters-mode traces, Darshan logs), written once.

Every threshold is a named constant below, shown in the report next to the rule; every finding
cites the counts, bytes and time it rests on, and its fix in the program's own stack (fixes.py).
The sources count with the same thresholds (SMALL_REQUEST_BYTES, LIBRARY_MIN_READ_BYTES).
"""

import math

from . import fixes
from .registry import finding, rule
from .chunks import bounded_chunks
from .facts import OFFSET_LAYERS
from climio.base.units import format_size

KiB = 1024
# Small requests: over all files, at each file's lowest traced layer with offsets.
SMALL_REQUEST_BYTES = 64 * KiB        # below a typical read-ahead window and a tenth of a Lustre stripe (1 MiB)
SMALL_REQUEST_SHARE = 0.5             # ... when at least half of the file's requests are smaller
SMALL_REQUEST_MIN_COUNT = 100         # ... and there are at least this many of them
# Random access: a file classified random (analysis.classify) with at least this many accesses.
RANDOM_MIN_ACCESSES = 32
# Partial-chunk reads of compressed data: bytes decompressed per byte requested, after crediting the cache.
DECODE_AMPLIFICATION = 2.0
# Chunk cache: share of a variable's reads that need chunks of the previous read the cache cannot keep.
CACHE_MISFIT_SHARE = 0.5
# Independent writes to the same offset by several ranks (ROMS define phase).
SHARED_WRITE_MAX_BYTES = 64 * KiB
SHARED_WRITE_MIN_RANKS = 2
# Close cost: time in MPI_File_set_size / ftruncate under the libraries, share of traced I/O time.
TRUNCATE_SHARE = 0.05
# Reads below a library's minimum read size (HDF5's 64 KiB sieve buffer for contiguous data).
LIBRARY_MIN_READ_BYTES = 64 * KiB
READ_INFLATION = 2.0                  # POSIX bytes read per byte requested
INFLATED_MIN_READS = 10
# File per process: slowest rank's time on its own files over the mean.
FPP_IMBALANCE = 1.5
FPP_MIN_RANKS = 2

MEASURED_INPUTS = ("trace", "darshan")


def _pct(x) -> str:
    return f"{100 * x:.0f}%"


SMALL_EVIDENCE = ("kind", "requests", "small_requests", "small_bytes", "common_sizes", "files", "top_files",
                  "issued_by", "counted_by")


@rule("small-requests", "Small requests", inputs=MEASURED_INPUTS, needs=("small_requests",),
      thresholds={"SMALL_REQUEST_BYTES": SMALL_REQUEST_BYTES, "SMALL_REQUEST_SHARE": SMALL_REQUEST_SHARE,
                  "SMALL_REQUEST_MIN_COUNT": SMALL_REQUEST_MIN_COUNT},
      evidence=SMALL_EVIDENCE,
      looks_for="reads (or writes) at each file's lowest traced layer mostly smaller than SMALL_REQUEST_BYTES; the "
                "advice depends on whether they are made inside collective MPI-IO calls, independent ones, or neither")
def small_requests(facts):
    out = []
    for kind in ("read", "write"):
        s = facts.small_requests.get(kind)
        if not s or s["small_requests"] < SMALL_REQUEST_MIN_COUNT or s["small_requests"] < SMALL_REQUEST_SHARE * s["requests"]:
            continue
        files = s["top_files"]
        where = files[0][0] if s["files"] == 1 else f"{s['files']} files (most in {files[0][0]}: {files[0][1]})"
        sizes = ", ".join(f"{z} B x{c}" for z, c in s["common_sizes"]) or "not among the recorded common sizes"
        text, advice = _issuers(s, facts.stack)
        counted = f" ({s['counted_by']})" if s["counted_by"] != "events" else ""
        out.append(finding(
            "small-requests", facts, s["time_s"],
            f"{s['small_requests']} of {s['requests']} {kind}s are smaller than {format_size(SMALL_REQUEST_BYTES)}"
            f"{counted}, in {where}; most common sizes: {sizes}.{text}",
            {"kind": kind, **{k: s[k] for k in SMALL_EVIDENCE if k != "kind"}}, advice))
    return out


def _issuers(s, stack) -> tuple:
    """Who issued the small requests (the largest group): inside collective MPI-IO calls, inside
    independent ones, or with no MPI-IO call around them; (text, advice)."""
    issued = s["issued_by"]
    top = max(issued, key=issued.get)
    if top == "no_mpiio" or not issued[top]:
        return "", fixes.small_requests(stack)
    mode = "collective" if top == "collective_mpiio" else "independent"
    who = s["issuer"]
    if who["own"]:     # the small requests are the program's own MPI-IO calls
        text = f" {issued[top]} of them are {mode} MPI-IO calls ({who['note']})."
        return text, fixes.SMALL_ADVICE if mode == "collective" else fixes.INDEPENDENT_ADVICE
    if who.get("calls") is None:
        text = f" {issued[top]} of them are on files the program accessed with {mode} MPI-IO calls ({who['note']})."
    else:
        text = f" {issued[top]} of them are made inside {who['calls']} {mode} MPI-IO calls ({who['note']})."
    return text, fixes.COLLECTIVE_ADVICE if mode == "collective" else fixes.INDEPENDENT_ADVICE


def _lowest(entry):
    """The access entries of a file at its lowest traced layer with offsets."""
    layers = [a["layer"] for a in entry["access"]]
    low = next((l for l in OFFSET_LAYERS if l in layers), None)
    return [a for a in entry["access"] if a["layer"] == low]


@rule("random-access", "Random access", inputs=MEASURED_INPUTS, needs=("files",),
      thresholds={"RANDOM_MIN_ACCESSES": RANDOM_MIN_ACCESSES},
      evidence=("file", "layer", "kind", "accesses", "sequential_share", "consecutive", "bytes"),
      looks_for="a file whose accesses classify as random (neither consecutive, strided nor sequential)")
def random_access(facts):
    out = []
    for entry in facts.files:
        for acc in _lowest(entry):
            if acc["classification"] != "random" or acc["accesses"] < RANDOM_MIN_ACCESSES:
                continue
            seq = acc["sequential"] / acc["transitions"] if acc["transitions"] else 0.0
            out.append(finding(
                "random-access", facts, acc["time_s"],
                f"{acc['accesses']} {acc['kind']}s of {entry['file']} ({acc['layer']}) are random: only "
                f"{_pct(seq)} start at or after the previous one's end, {acc['consecutive']} are consecutive.",
                {"file": entry["file"], "layer": acc["layer"], "kind": acc["kind"], "accesses": acc["accesses"],
                 "sequential_share": seq, "consecutive": acc["consecutive"], "bytes": acc["bytes"]},
                fixes.random_access(facts.stack)))
    return out


def _decoded_per_read(count, chunks, walk=None) -> float:
    """Elements a read of `count` (from a chunk boundary) decodes: whole chunks along every axis,
    shared by the consecutive reads that fit in a chunk along the axis the reads walk (`walk`,
    the trace's walk_axis: one task per time step of a series shares a time-series chunk)."""
    n = math.prod(-(-int(k) // int(c)) * int(c) for k, c in zip(count, chunks))
    if walk is not None and int(chunks[walk]) > int(count[walk]):
        n /= int(chunks[walk]) // max(int(count[walk]), 1)
    return n


def advised_chunks(v) -> tuple:
    """The chunk shape advised for a variable's typical read, within the chunk-size bounds; the
    file's own chunks when the bounded shape would decode no less per read (a small read grown to
    SMALL_CHUNK_BYTES can land on as many elements as the chunks it has: advising a conversion to
    it would be advising a slower job). Reads that walk an axis (walk_axis: a series read one time
    step per task) are sized as the line they read together, and share its chunks."""
    count, walk = list(v["typical_count"]), v.get("walk_axis")
    if walk is not None:
        count[walk] = min(int(v["shape"][walk]), int(count[walk] * (v.get("walk_reads") or 1)))
    target = bounded_chunks(count, v["shape"], v["itemsize"])
    chunks = v.get("chunks")
    typical = v["typical_count"]
    if not chunks:
        return target
    # now: the whole chunks a read meets, or more when the trace measured more decoded per read after
    # the cache's reuse (a cache too small for the reads of a line decodes their chunks again)
    measured = v["decoded_after_cache"] / v["reads"] / v["itemsize"] if v.get("reads") else 0.0
    now = max(_decoded_per_read(typical, chunks, walk), measured)
    if _decoded_per_read(typical, target, walk) >= now:
        return tuple(int(c) for c in chunks)
    return target


@rule("partial-chunk-compressed", "Partial-chunk reads of compressed data", inputs=MEASURED_INPUTS,
      needs=("netcdf",), thresholds={"DECODE_AMPLIFICATION": DECODE_AMPLIFICATION},
      evidence=("file", "var", "reads", "partial_reads", "requested", "decoded", "ratio", "chunks", "typical_count",
                "target_chunks", "filters"),
      looks_for="a compressed netCDF variable whose reads decompress whole chunks they only partly need")
def partial_chunks(facts):
    out = []
    for v in facts.netcdf["variables"]:
        ratio = v["decoded_after_cache"] / v["requested"] if v["requested"] else 1.0
        if not v["compressed"] or not v["partial_reads"] or ratio < DECODE_AMPLIFICATION:
            continue
        target = advised_chunks(v)
        out.append(finding(
            "partial-chunk-compressed", facts, v["time_s"],
            f"{v['partial_reads']} of {v['reads']} reads of {v['var']} ({v['file']}) touch compressed chunks "
            f"{v['chunks']} only partly: {format_size(v['decoded_after_cache'])} decompressed for "
            f"{format_size(v['requested'])} requested ({ratio:.1f}x, after crediting the chunk cache).",
            {"file": v["file"], "var": v["var"], "reads": v["reads"], "partial_reads": v["partial_reads"],
             "requested": v["requested"], "decoded": v["decoded_after_cache"], "ratio": ratio,
             "chunks": v["chunks"], "typical_count": v["typical_count"], "target_chunks": list(target),
             "filters": v["filters"]},
            fixes.whole_chunks(facts.stack, v["file"], v["var"], v["chunks"], v.get("dims"), target, v["shape"],
                               v["typical_count"], v["itemsize"])))
    return out


@rule("chunk-cache-small", "Chunk cache smaller than the chunks a read touches", inputs=MEASURED_INPUTS,
      needs=("netcdf",), thresholds={"CACHE_MISFIT_SHARE": CACHE_MISFIT_SHARE},
      evidence=("file", "var", "reads", "misfit_reuse_reads", "touched_bytes_max", "cache_bytes", "chunks"),
      looks_for="reads that need again the chunks of the previous read, but the cache cannot hold them")
def chunk_cache(facts):
    out = []
    for v in facts.netcdf["variables"]:
        bad = v["misfit_reuse_reads"]
        if not bad or bad < CACHE_MISFIT_SHARE * v["reads"]:
            continue
        need = v["max_touched_bytes"]
        out.append(finding(
            "chunk-cache-small", facts, v["misfit_reuse_time_s"],
            f"{bad} of {v['reads']} reads of {v['var']} ({v['file']}) need chunks of the previous read again, "
            f"but one read touches {format_size(need)} of chunks and the chunk cache holds "
            f"{format_size(v['cache_bytes'])}: those chunks are read and decoded again.",
            {"file": v["file"], "var": v["var"], "reads": v["reads"], "misfit_reuse_reads": bad,
             "touched_bytes_max": need, "cache_bytes": v["cache_bytes"], "chunks": v["chunks"]},
            fixes.chunk_cache(facts.stack, v["file"], v["var"], need, v["chunks"], v.get("dims"))))
    return out


SHARED_EVIDENCE = ("file", "layer", "offsets", "writes", "ranks", "max_ranks_per_offset", "bytes", "max_size",
                   "time_s", "functions")


@rule("independent-shared-writes", "Many ranks writing small pieces independently to the same offsets",
      inputs=MEASURED_INPUTS, needs=("shared_writes",),
      thresholds={"SHARED_WRITE_MAX_BYTES": SHARED_WRITE_MAX_BYTES, "SHARED_WRITE_MIN_RANKS": SHARED_WRITE_MIN_RANKS},
      evidence=SHARED_EVIDENCE,
      looks_for="non-collective writes of at most SHARED_WRITE_MAX_BYTES to one offset from several ranks")
def shared_writes(facts):
    out = []
    for s in facts.shared_writes:
        if s["max_size"] > SHARED_WRITE_MAX_BYTES or s["ranks"] < SHARED_WRITE_MIN_RANKS:
            continue
        out.append(finding(
            "independent-shared-writes", facts, s["time_s"],
            f"{s['ranks']} ranks wrote {s['offsets']} offsets of {s['file']} independently ({s['writes']} writes of "
            f"at most {format_size(s['max_size'])}, up to {s['max_ranks_per_offset']} ranks per offset, "
            f"{', '.join(s['functions'])}).",
            {k: s[k] for k in SHARED_EVIDENCE},
            "Write these small variables collectively (nc_var_par_access(..., NC_COLLECTIVE), "
            "MPI_File_write_at_all) or from one rank: every rank writing the same bytes serialises on "
            "file locks (the ROMS define-phase finding)."))
    return out


@rule("close-truncate", "File size set at close (MPI_File_set_size / ftruncate)", inputs=MEASURED_INPUTS,
      needs=("truncation",), thresholds={"TRUNCATE_SHARE": TRUNCATE_SHARE},
      evidence=("calls", "time_s", "share_of_io", "under_close", "max_rank_time_s", "close_time_s", "functions"),
      looks_for="library calls that truncate the file take a large share of I/O time (HDF5 on Lustre)")
def truncate(facts):
    t = facts.truncation
    if not t["calls"] or t["share_of_io"] < TRUNCATE_SHARE:
        return []
    return [finding(
        "close-truncate", facts, t["time_s"],
        f"{t['calls']} calls of {', '.join(t['functions'])} take {_pct(t['share_of_io'])} of the traced I/O time "
        f"({t['under_close']} of them inside a close; slowest rank {t['max_rank_time_s']:.3g} s).",
        dict(t),
        "HDF5 before 1.10 sets the file size (MPI_File_set_size -> ftruncate) at every close, which interacts "
        "badly with Lustre locking. Use HDF5 >= 1.10 (skips it when the end of allocation matches the file "
        "end), collective metadata writes (H5Pset_coll_metadata_write), or netCDF-3/PnetCDF for output.")]


@rule("below-library-min-read", "Reads smaller than the library's minimum read", inputs=MEASURED_INPUTS,
      needs=("library_reads",),
      thresholds={"LIBRARY_MIN_READ_BYTES": LIBRARY_MIN_READ_BYTES, "READ_INFLATION": READ_INFLATION,
                  "INFLATED_MIN_READS": INFLATED_MIN_READS},
      evidence=("reads", "requested", "posix_bytes", "inflation", "typical_posix_read", "functions", "counted_by"),
      looks_for="small library reads of data not known to be chunked (netCDF aux says contiguous, or an HDF5 call "
                "without layout details) that make the library read far more from the file")
def library_min_read(facts):
    lr = facts.library_reads
    n, req, got = lr["reads"], lr["requested"], lr["posix_bytes"]
    if n < INFLATED_MIN_READS or not req or got < READ_INFLATION * req:
        return []
    return [finding(
        "below-library-min-read", facts, lr["time_s"],
        f"{n} library reads ({', '.join(lr['functions'])}) ask for less than {format_size(LIBRARY_MIN_READ_BYTES)} "
        f"each ({format_size(req)} in all) but make the file system read {format_size(got)} ({got / req:.1f}x); "
        f"the typical POSIX read beneath them is {format_size(lr['typical_posix_read'])}"
        + (f" ({lr['counted_by']})." if lr["counted_by"] != "events" else "."),
        {"reads": n, "requested": req, "posix_bytes": got, "inflation": got / req,
         "typical_posix_read": lr["typical_posix_read"], "functions": lr["functions"], "counted_by": lr["counted_by"]},
        fixes.library_min_read(facts.stack))]


@rule("file-per-process-imbalance", "File-per-process imbalance", inputs=MEASURED_INPUTS, needs=("file_per_process",),
      thresholds={"FPP_IMBALANCE": FPP_IMBALANCE, "FPP_MIN_RANKS": FPP_MIN_RANKS},
      evidence=("files", "ranks", "time", "bytes", "slowest"),
      looks_for="ranks writing or reading their own files spend very different times doing so")
def file_per_process(facts):
    f = facts.file_per_process
    t = f.get("time") or {}
    if f.get("ranks", 0) < FPP_MIN_RANKS or f.get("files", 0) < FPP_MIN_RANKS or not t.get("imbalance") \
            or t["imbalance"] < FPP_IMBALANCE:
        return []
    slow = max(f["per_rank"], key=lambda r: r["time_s"])
    b = f["bytes"]
    return [finding(
        "file-per-process-imbalance", facts, t["max"] - t["mean"],
        f"{f['ranks']} ranks each use their own files ({f['files']} files): time min / mean / max "
        f"{t['min']:.3g} / {t['mean']:.3g} / {t['max']:.3g} s (max/mean {t['imbalance']:.2f}, slowest "
        f"{slow['rank']}); bytes min / mean / max {format_size(b['min'])} / {format_size(b['mean'])} / "
        f"{format_size(b['max'])}.",
        {"files": f["files"], "ranks": f["ranks"], "time": t, "bytes": b, "slowest": slow["rank"]},
        "Balance the data per rank (the slowest rank sets the run's I/O time), or if the bytes are balanced "
        "look at where the slow rank's files live (OST/disk contention, a slow node).")]
