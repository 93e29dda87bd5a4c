"""Explicit advice rules over an Analysis. Every threshold is a named constant below, shown in
the report next to the rule; every finding cites the counts, bytes and time share it rests on.

    findings(analysis) -> list of {"rule", "title", "severity", "message", "evidence", "advice", "thresholds"}
    RULES: the rule table (id, title, thresholds, what it looks for), for the report

Severity is the share of the traced I/O time the affected calls take: high >= 20 %, medium >= 5 %,
low below.
"""

from collections import Counter

import numpy as np

from ..units import format_size
from .analysis import LAYER_IDS, OFFSET_LAYERS, READ, WRITE

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

HIGH_SHARE, MEDIUM_SHARE = 0.20, 0.05

RULES = [
    ("small-requests", "Small requests",
     {"SMALL_REQUEST_BYTES": SMALL_REQUEST_BYTES, "SMALL_REQUEST_SHARE": SMALL_REQUEST_SHARE,
      "SMALL_REQUEST_MIN_COUNT": SMALL_REQUEST_MIN_COUNT},
     "reads (or writes) at each file's lowest traced layer mostly smaller than SMALL_REQUEST_BYTES; the advice "
     "depends on whether they are made inside collective MPI-IO calls, independent ones, or neither"),
    ("random-access", "Random access", {"RANDOM_MIN_ACCESSES": RANDOM_MIN_ACCESSES},
     "a file whose accesses classify as random (neither consecutive, strided nor sequential)"),
    ("partial-chunk-compressed", "Partial-chunk reads of compressed data", {"DECODE_AMPLIFICATION": DECODE_AMPLIFICATION},
     "a compressed netCDF variable whose reads decompress whole chunks they only partly need"),
    ("chunk-cache-small", "Chunk cache smaller than the chunks a read touches", {"CACHE_MISFIT_SHARE": CACHE_MISFIT_SHARE},
     "reads that need again the chunks of the previous read, but the cache cannot hold them"),
    ("independent-shared-writes", "Many ranks writing small pieces independently to the same offsets",
     {"SHARED_WRITE_MAX_BYTES": SHARED_WRITE_MAX_BYTES, "SHARED_WRITE_MIN_RANKS": SHARED_WRITE_MIN_RANKS},
     "non-collective writes of at most SHARED_WRITE_MAX_BYTES to one offset from several ranks"),
    ("close-truncate", "File size set at close (MPI_File_set_size / ftruncate)", {"TRUNCATE_SHARE": TRUNCATE_SHARE},
     "library calls that truncate the file take a large share of I/O time (HDF5 on Lustre)"),
    ("below-library-min-read", "Reads smaller than the library's minimum read",
     {"LIBRARY_MIN_READ_BYTES": LIBRARY_MIN_READ_BYTES, "READ_INFLATION": READ_INFLATION,
      "INFLATED_MIN_READS": INFLATED_MIN_READS},
     "small library reads of data not known to be chunked (netCDF aux says contiguous, or an HDF5 call "
     "without layout details) that make the library read far more from the file"),
    ("file-per-process-imbalance", "File-per-process imbalance",
     {"FPP_IMBALANCE": FPP_IMBALANCE, "FPP_MIN_RANKS": FPP_MIN_RANKS},
     "ranks writing or reading their own files spend very different times doing so"),
]
_THRESHOLDS = {r[0]: r[2] for r in RULES}
_TITLES = {r[0]: r[1] for r in RULES}


def _severity(share) -> str:
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


def _finding(rule, time_s, io_s, message, evidence, advice) -> dict:
    share = time_s / io_s if io_s > 0 else 0.0
    return {"rule": rule, "title": _TITLES[rule], "severity": _severity(share), "message": message,
            "evidence": {**evidence, "time_s": time_s, "share_of_io_time": share}, "advice": advice,
            "thresholds": _THRESHOLDS[rule]}


def _pct(x) -> str:
    return f"{100 * x:.0f}%"


def findings(an, facts=None) -> list:
    """All findings for Analysis `an`; `facts` is an.to_dict() when the caller already has it."""
    facts = facts or an.to_dict()
    io = facts["trace"]["io_time_s"]
    out = []
    for rule in (_small_requests, _random_access, _partial_chunks, _chunk_cache, _shared_writes, _truncate,
                 _library_min_read, _file_per_process):
        out.extend(rule(an, facts, io))
    order = {"high": 0, "medium": 1, "low": 2}
    out.sort(key=lambda f: (order[f["severity"]], -f["evidence"]["share_of_io_time"]))
    return out


def _lowest(entry):
    """The access entries of a file at its lowest traced layer with offsets."""
    layers = [a["layer"] for a in entry["access"]]
    low = next((l for l in OFFSET_LAYERS if l in layers), None)
    return [a for a in entry["access"] if a["layer"] == low]


def _small_requests(an, facts, io):
    """Over all files, at each file's lowest traced layer with offsets (the requests the storage sees)."""
    dm = an.data_mask()
    order = np.array([OFFSET_LAYERS.index(an.layer_name(l)) if an.layer_name(l) in OFFSET_LAYERS else 99
                      for l in range(max(LAYER_IDS.values()) + 1)])
    lvl = order[an.layer]
    low = np.full(len(an.trace.strings), 99)
    np.minimum.at(low, an.file[dm], lvl[dm])
    at_lowest = dm & (lvl == low[an.file])
    out = []
    for kind, kname in ((READ, "read"), (WRITE, "write")):
        m = at_lowest & (an.kind == kind)
        small = m & (an.size < SMALL_REQUEST_BYTES)
        n, n_small = int(m.sum()), int(small.sum())
        if n_small < SMALL_REQUEST_MIN_COUNT or n_small < SMALL_REQUEST_SHARE * n:
            continue
        t = float(an.dur[small].sum()) / 1e9
        sizes = Counter(an.size[small].tolist()).most_common(3)
        per_file = np.bincount(an.file[small], minlength=len(an.trace.strings))
        top = np.argsort(-per_file, kind="stable")[:5]
        files = [[an.name(f), int(per_file[f])] for f in top if per_file[f]]
        nfiles = int((per_file > 0).sum())
        where = files[0][0] if nfiles == 1 else f"{nfiles} files (most in {files[0][0]}: {files[0][1]})"
        context, advice_text = _small_request_context(an, np.flatnonzero(small))
        out.append(_finding(
            "small-requests", t, io,
            f"{n_small} of {n} {kname}s are smaller than {format_size(SMALL_REQUEST_BYTES)}, in {where}; most "
            f"common sizes: {', '.join(f'{s} B x{c}' for s, c in sizes)}.{context['text']}",
            {"kind": kname, "requests": n, "small_requests": n_small, "small_bytes": int(an.nbytes[small].sum()),
             "common_sizes": [[int(s), int(c)] for s, c in sizes], "files": nfiles, "top_files": files,
             "issued_by": context["issued_by"]},
            advice_text))
    return out


SMALL_ADVICE = ("Read or write larger blocks (aggregate in memory, a larger buffer, or collective MPI-IO that "
                "merges requests); on a parallel file system aim at whole stripes (MiB).")
COLLECTIVE_ADVICE = (
    "The collective calls reached the file in small pieces: the MPI-IO layer did not aggregate them. Check its "
    "collective buffering (ROMIO hints romio_cb_write / romio_cb_read = enable, cb_buffer_size; with Open MPI "
    "compare its two implementations, OMPI_MCA_io=romio321 or ompio, e.g. climio bench parallel-write "
    "--mpi-io), and lay the file out so that each rank's part is contiguous (chunk shape against the "
    "decomposition).")
INDEPENDENT_ADVICE = (
    "Make these accesses collective (nc_var_par_access(ncid, varid, NC_COLLECTIVE); "
    "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE); MPI_File_*_all), so that the MPI-IO layer aggregates the "
    "ranks' pieces into large contiguous requests.")


def _small_request_context(an, idx):
    """Who issued the small requests: inside collective MPI-IO calls, inside independent ones, or
    with no MPI-IO call around them (the call itself counts when it is an MPI-IO one). The advice
    follows the largest group; ({"text", "issued_by"}, advice)."""
    mpi = an.layer == LAYER_IDS["mpiio"]
    host = np.where(mpi[idx], idx, an.mpi_parent[idx])
    inside = host >= 0
    coll = np.zeros(len(idx), dtype=bool)
    coll[inside] = an.coll_of[an.func[host[inside]]]
    groups = {"collective_mpiio": coll, "independent_mpiio": inside & ~coll, "no_mpiio": ~inside}
    issued = {k: int(m.sum()) for k, m in groups.items()}
    top = max(issued, key=issued.get)
    if top == "no_mpiio":
        return {"text": "", "issued_by": issued}, SMALL_ADVICE
    calls = np.unique(host[groups[top]])
    funcs = ", ".join(f"{f} x{c}" for f, c in Counter(an.name(f) for f in an.func[calls].tolist()).most_common(2))
    mode = "collective" if top == "collective_mpiio" else "independent"
    if mpi[idx[groups[top]]].all():   # the small requests are the program's own MPI-IO calls
        text = f" {issued[top]} of them are {mode} MPI-IO calls ({funcs})."
        return {"text": text, "issued_by": issued}, SMALL_ADVICE if mode == "collective" else INDEPENDENT_ADVICE
    text = f" {issued[top]} of them are made inside {len(calls)} {mode} MPI-IO calls ({funcs})."
    return {"text": text, "issued_by": issued}, COLLECTIVE_ADVICE if mode == "collective" else INDEPENDENT_ADVICE


def _random_access(an, facts, io):
    out = []
    for entry in facts["files"]:
        for acc in _lowest(entry):
            if acc["classification"] != "random" or acc["accesses"] < RANDOM_MIN_ACCESSES:
                continue
            t = acc["time_s"]
            seq = acc["sequential"] / acc["transitions"] if acc["transitions"] else 0.0
            out.append(_finding(
                "random-access", t, io,
                f"{acc['accesses']} {acc['kind']}s of {entry['file']} ({acc['layer']}) are random: only "
                f"{_pct(seq)} start at or after the previous one's end, {acc['consecutive']} are consecutive.",
                {"file": entry["file"], "layer": acc["layer"], "kind": acc["kind"], "accesses": acc["accesses"],
                 "sequential_share": seq, "consecutive": acc["consecutive"], "bytes": acc["bytes"]},
                "Sort the requests by offset, read larger blocks that cover several requests, or change the "
                "layout (rechunk) so that what is read together is stored together."))
    return out


def rechunk_command(v) -> str:
    """The exact `climio rechunk` line for a variable whose reads touch chunks partly: target
    chunks equal to the typical read count (clipped to at least 1), output beside the input."""
    import os
    import shlex
    chunks = ",".join(str(max(1, int(c))) for c in v["typical_count"])
    src = str(v["file"])
    stem, ext = os.path.splitext(src)
    return (f"`climio rechunk {shlex.quote(src)} {shlex.quote(stem + '.rechunked' + (ext or '.nc'))} "
            f"-c {shlex.quote(str(v['var']).lstrip('/'))}:{chunks}`")


def _partial_chunks(an, facts, io):
    out = []
    for v in facts["netcdf"]["variables"]:
        ratio = v["decoded_after_cache"] / v["requested"] if v["requested"] else 1.0
        if not v["compressed"] or not v["partial_reads"] or ratio < DECODE_AMPLIFICATION:
            continue
        out.append(_finding(
            "partial-chunk-compressed", v["time_s"], io,
            f"{v['partial_reads']} of {v['reads']} reads of {v['var']} ({v['file']}) touch compressed chunks "
            f"{v['chunks']} only partly: {format_size(v['decoded_after_cache'])} decompressed for "
            f"{format_size(v['requested'])} requested ({ratio:.1f}x, after crediting the chunk cache).",
            {"file": v["file"], "var": v["var"], "reads": v["reads"], "partial_reads": v["partial_reads"],
             "requested": v["requested"], "decoded": v["decoded_after_cache"], "ratio": ratio,
             "chunks": v["chunks"], "typical_count": v["typical_count"], "filters": v["filters"]},
            f"Rechunk so that a read covers whole chunks: {rechunk_command(v)} (chunks equal to the typical "
            f"read {v['typical_count']}, so each read decodes exactly what it asks for); or read larger "
            "hyperslabs that cover whole chunks."))
    return out


def _chunk_cache(an, facts, io):
    out = []
    for v in facts["netcdf"]["variables"]:
        bad = v["misfit_reuse_reads"]
        if not bad or bad < CACHE_MISFIT_SHARE * v["reads"]:
            continue
        need = v["max_touched_bytes"]
        out.append(_finding(
            "chunk-cache-small", v["misfit_reuse_time_s"], io,
            f"{bad} of {v['reads']} reads of {v['var']} ({v['file']}) need chunks of the previous read again, "
            f"but one read touches {format_size(need)} of chunks and the chunk cache holds "
            f"{format_size(v['cache_bytes'])}: those chunks are read and decoded again.",
            {"file": v["file"], "var": v["var"], "reads": v["reads"], "misfit_reuse_reads": bad,
             "touched_bytes_max": need, "cache_bytes": v["cache_bytes"], "chunks": v["chunks"]},
            f"Enlarge the variable's chunk cache to at least {format_size(need)} "
            "(nc_set_var_chunk_cache, netCDF4 Variable.set_var_chunk_cache, h5py rdcc_nbytes) or rechunk."))
    return out


def _shared_writes(an, facts, io):
    out = []
    for s in facts["shared_writes"]:
        if s["max_size"] > SHARED_WRITE_MAX_BYTES or s["ranks"] < SHARED_WRITE_MIN_RANKS:
            continue
        out.append(_finding(
            "independent-shared-writes", s["time_s"], io,
            f"{s['ranks']} ranks wrote {s['offsets']} offsets of {s['file']} independently ({s['writes']} writes of "
            f"at most {format_size(s['max_size'])}, up to {s['max_ranks_per_offset']} ranks per offset, "
            f"{', '.join(s['functions'])}).",
            dict(s),
            "Write these small variables collectively (nc_var_par_access(..., NC_COLLECTIVE), "
            "MPI_File_write_at_all) or from one rank: every rank writing the same bytes serialises on "
            "file locks (the ROMS define-phase finding)."))
    return out


def _truncate(an, facts, io):
    t = facts["truncation"]
    if not t["calls"] or t["share_of_io"] < TRUNCATE_SHARE:
        return []
    return [_finding(
        "close-truncate", t["time_s"], io,
        f"{t['calls']} calls of {', '.join(t['functions'])} take {_pct(t['share_of_io'])} of the traced I/O time "
        f"({t['under_close']} of them inside a close; slowest rank {t['max_rank_time_s']:.3g} s).",
        dict(t),
        "HDF5 before 1.10 sets the file size (MPI_File_set_size -> ftruncate) at every close, which interacts "
        "badly with Lustre locking. Use HDF5 >= 1.10 (skips it when the end of allocation matches the file "
        "end), collective metadata writes (H5Pset_coll_metadata_write), or netCDF-3/PnetCDF for output.")]


def _library_min_read(an, facts, io):
    lib = an.library_reads()
    small = (lib["size"] > 0) & (lib["size"] < LIBRARY_MIN_READ_BYTES) & ~lib["chunked"]
    n = int(small.sum())
    req, got = int(lib["size"][small].sum()), int(lib["posix_bytes"][small].sum())
    if n < INFLATED_MIN_READS or not req or got < READ_INFLATION * req:
        return []
    idx = lib["idx"][small]
    under = np.isin(lib["posix_owner"], idx)
    common = Counter(an.size[lib["posix_idx"][under]].tolist()).most_common(1)
    typical = int(common[0][0]) if common else 0
    t = float(an.dur[idx].sum()) / 1e9
    funcs = sorted({an.name(f) for f in np.unique(an.func[idx])})
    return [_finding(
        "below-library-min-read", t, io,
        f"{n} library reads ({', '.join(funcs)}) ask for less than {format_size(LIBRARY_MIN_READ_BYTES)} each "
        f"({format_size(req)} in all) but make the file system read {format_size(got)} ({got / req:.1f}x); "
        f"the typical POSIX read beneath them is {format_size(typical)}.",
        {"reads": n, "requested": req, "posix_bytes": got, "inflation": got / req, "typical_posix_read": typical,
         "functions": funcs},
        "The library reads at least a buffer per access (HDF5's 64 KiB sieve buffer for contiguous data, as "
        "h5netcdf/h5py/netCDF4 reads show): read larger blocks per call, lower the sieve buffer "
        "(H5Pset_sieve_buf_size), or read contiguous raw data by offset (numpy.memmap).")]


def _file_per_process(an, facts, io):
    f = facts["file_per_process"]
    t = f.get("time") or {}
    if f.get("ranks", 0) < FPP_MIN_RANKS or f.get("files", 0) < FPP_MIN_RANKS or not t.get("imbalance") \
            or t["imbalance"] < FPP_IMBALANCE:
        return []
    slow = max(f["per_rank"], key=lambda r: r["time_s"])
    b = f["bytes"]
    return [_finding(
        "file-per-process-imbalance", t["max"] - t["mean"], io,
        f"{f['ranks']} ranks each use their own files ({f['files']} files): time min / mean / max "
        f"{t['min']:.3g} / {t['mean']:.3g} / {t['max']:.3g} s (max/mean {t['imbalance']:.2f}, slowest "
        f"{slow['rank']}); bytes min / mean / max {format_size(b['min'])} / {format_size(b['mean'])} / "
        f"{format_size(b['max'])}.",
        {"files": f["files"], "ranks": f["ranks"], "time": t, "bytes": b, "slowest": slow["rank"]},
        "Balance the data per rank (the slowest rank sets the run's I/O time), or if the bytes are balanced "
        "look at where the slow rank's files live (OST/disk contention, a slow node).")]
