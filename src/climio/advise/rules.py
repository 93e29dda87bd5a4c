"""One rule registry for the three inputs the advisor reads: a workflow description (predicted
by the model), a climio trace directory and a Darshan log (their facts, climio.trace).

    REGISTRY: every rule, {"id", "title", "inputs", "thresholds", "looks_for"}; `inputs` says which
              of "workflow", "trace", "darshan" it judges
    RULES:    the trace / Darshan rules as the trace report lists them (id, title, thresholds, what)
    findings(analysis) -> list of {"rule", "title", "severity", "message", "evidence", "advice", "thresholds"}
    workflow_rules(context) -> list of recommendations (climio.advise.recommend ranks them)
    collective_findings(findings, profile, tasks) -> collective-vs-independent on a trace's or Darshan
              log's findings (the one rule of COLLECTIVE_RULES, which judges all three inputs)

The trace rules moved here from climio.trace.advice (which is now this module under its old
name). Every threshold is a named constant below, shown in the report next to the rule; every
finding cites the counts, bytes and time share it rests on. Severity of a trace finding is the
share of the traced I/O time the affected calls take: high >= 20 %, medium >= 5 %, low below.
"""

import math
from collections import Counter

import numpy as np

from ..trace.analysis import LAYER_IDS, OFFSET_LAYERS, READ, WRITE
from ..units import format_size

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
# The workflow rules: judged on the model's predictions of a workflow (climio.model.predict), each
# with the predicted time before and after, the one-off cost and the break-even passes.
MIN_GAIN_SHARE = 0.10        # a recommendation must save at least this share of the predicted time
NODE_COUNTS = (1, 2, 4, 8, 16)   # node counts the tasks rule weighs (each node like this one)
MOST_OF_THE_GAIN = 0.9       # ... it advises the fewest tasks and nodes that reach this share of the best gain
ADVISED_MAX_CHUNK_BYTES = 16 << 20   # candidate chunk shapes are clipped to at most this many bytes
CACHE_HEADROOM = 1.25        # a recommended chunk cache holds this much more than one read touches
WORKFLOW_RULES = [
    ("chunk-shape", "A chunk shape for the workflow's reads", {"MIN_GAIN_SHARE": MIN_GAIN_SHARE,
                                                                "ADVISED_MAX_CHUNK_BYTES": ADVISED_MAX_CHUNK_BYTES},
     "the chunk shape (of each read's shape, Rew's balanced one, the current one) with the least predicted time "
     "over all the workflow's reads; one-off cost from the rechunk planner"),
    ("chunk-cache", "A chunk cache that holds what one read touches", {"CACHE_HEADROOM": CACHE_HEADROOM},
     "partial-chunk reads of chunks shared by consecutive reads, with a chunk cache smaller than one read's chunks"),
    ("tasks", "Tasks per node and nodes / Dask workers", {"MIN_GAIN_SHARE": MIN_GAIN_SHARE, "NODE_COUNTS": NODE_COUNTS,
                                                          "MOST_OF_THE_GAIN": MOST_OF_THE_GAIN},
     "tasks per node among 1, the cores and twice the cores, on NODE_COUNTS nodes of this platform (the calibrated "
     "per-node speed-ups, capped by a shared-file-system bandwidth when the profile has one): the fewest tasks and "
     "nodes that reach MOST_OF_THE_GAIN of the best predicted gain"),
    ("stack", "A different software stack", {"MIN_GAIN_SHARE": MIN_GAIN_SHARE},
     "the calibrated stack with the least predicted time for the same reads"),
    ("compression", "Compression trade-off", {"MIN_GAIN_SHARE": MIN_GAIN_SHARE},
     "compressed chunks read partly (decoded whole for part of them): uncompressed chunks of the same shape, or "
     "the decode share of a whole-chunk read"),
    ("one-file-vs-many", "One shared file or one file per task", {},
     "several tasks reading one file, or a workflow reading several files: files opened x the stack's calibrated "
     "open time, against one file (the one-off cost of merging: the rechunk planner's copy time)"),
]
# Rules every input is judged by: workflows through the model, traces and Darshan logs through their facts.
COLLECTIVE_RULES = [
    ("collective-vs-independent", "Collective or independent MPI-IO",
     {"SMALL_REQUEST_BYTES": SMALL_REQUEST_BYTES, "SMALL_REQUEST_MIN_COUNT": SMALL_REQUEST_MIN_COUNT,
      "MIN_GAIN_SHARE": MIN_GAIN_SHARE},
     "several tasks whose reads are small strided pieces (workflow: runs below SMALL_REQUEST_BYTES, several per read; "
     "trace / Darshan: the small requests made in MPI-IO calls); predicted from the profile's parallel-read MPI-IO "
     "records (collective against independent rate) when it has them"),
]
REGISTRY = ([{"id": r[0], "title": r[1], "inputs": ["trace", "darshan"], "thresholds": r[2], "looks_for": r[3]}
             for r in RULES]
            + [{"id": r[0], "title": r[1], "inputs": ["workflow"], "thresholds": r[2], "looks_for": r[3]}
               for r in WORKFLOW_RULES]
            + [{"id": r[0], "title": r[1], "inputs": ["workflow", "trace", "darshan"], "thresholds": r[2],
                "looks_for": r[3]} for r in COLLECTIVE_RULES])
# the trace rules whose findings the model can turn into a predicted before/after (file and variable known)
MODEL_BACKED = {"partial-chunk-compressed": "chunk-shape", "chunk-cache-small": "chunk-cache"}
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


# --- workflow rules ------------------------------------------------------------------------------------

_MODEL_RULES = {r[0]: r for r in WORKFLOW_RULES + COLLECTIVE_RULES}


def _rec(rule, message, evidence, before, after, one_off=0.0, per_pass_saving=None, command="", advice=""):
    """A workflow recommendation: gain = before - after (seconds over all passes); break-even
    passes = one-off cost / saving per pass (0 when there is no one-off cost)."""
    gain = None if before is None or after is None else before - after
    be = None
    if gain is not None and per_pass_saving:
        be = one_off / per_pass_saving if per_pass_saving > 0 else None
    return {"rule": rule, "title": _MODEL_RULES[rule][1], "message": message, "evidence": evidence, "before_s": before,
            "after_s": after, "gain_s": gain, "one_off_s": one_off, "break_even_passes": be,
            "command": command, "advice": advice, "thresholds": _MODEL_RULES[rule][2]}


def _chunks_for(count, shape, itemsize) -> tuple:
    """A chunk shape shaped like a read count, clipped to ADVISED_MAX_CHUNK_BYTES by halving its leading
    extents (then the others)."""
    c = [min(int(n), int(d)) for n, d in zip(count, shape)]
    while math.prod(c) * itemsize > ADVISED_MAX_CHUNK_BYTES:
        i = max(range(len(c)), key=lambda k: (c[k] > 1, -k if k < len(c) - 2 else -99, c[k]))
        if c[i] <= 1:
            break
        c[i] = -(-c[i] // 2)
    return tuple(c)


def workflow_rules(wf, profile, items, rechunk_cost, out_name="OUT.nc") -> list:
    """Recommendations for a workflow. `items`: [(spec, layout, codec, prediction, path, var, reads)];
    `rechunk_cost(src_layout, dst_layout, codec) -> seconds` is the rechunk planner's prediction."""
    from ..options import parse_read
    from ..layout import Layout, balanced_chunks
    from ..model.predict import predict
    total = sum(p.seconds for _, _, _, p, _, _, _ in items)
    per_pass = sum(p.seconds / s.passes for s, _, _, p, _, _, _ in items)
    out = []

    def again(layout=None, tasks=None, stack=None, cache=None, codec_of=None, nodes=1):
        t = tp = 0.0
        for s, lay, codec, p, _, _, reads in items:
            lay2 = layout(lay) if layout else lay
            c2 = codec_of(codec) if codec_of else codec
            # the same reads on the same layout: the simulated counts are the prediction's own
            q = predict(lay2, reads, stack or wf.stack, profile, tasks=tasks or wf.tasks,
                        codec=c2 if lay2.compressed else "", chunk_cache_bytes=cache if cache is not None else wf.chunk_cache,
                        passes=s.passes, nodes=nodes,
                        counts=p.counts if layout is None and stack is None and cache is None else None)
            t += q.seconds
            tp += q.seconds / s.passes
        return t, tp

    # chunk shape: one shape for the variable, judged over every read of it
    first = items[0]
    lay0, codec0, path0, var0 = first[1], first[2], first[4], first[5]
    same_var = all(it[4] == path0 and it[5] == var0 for it in items)
    if same_var and len(lay0.shape) >= 2:
        cands = {}
        for s, lay, _, _, _, _, _ in items:
            count = (lay.shape[0], 1, 1, lay.shape[3]) if s.read.strip().lower() == "stsa" else parse_read(s.read, lay.shape)
            cands[f"read {s.read}"] = _chunks_for(count, lay.shape, lay.itemsize)
        cands["balanced"] = tuple(balanced_chunks(lay0.shape, lay0.itemsize))
        best = None
        for label, ch in cands.items():
            if lay0.chunks is not None and tuple(lay0.chunks) == ch:
                continue
            ratio = (lay0.stored / lay0.nbytes) if lay0.compressed and lay0.nbytes else None

            def relayout(lay, ch=ch, ratio=ratio):
                return Layout(lay.shape, lay.itemsize, ch, lay.compressed,
                              round(lay.nbytes * ratio) if ratio else None)
            t, tp = again(layout=relayout)
            if best is None or t < best[1]:
                best = (label, t, tp, ch)
        if best and best[1] < (1 - MIN_GAIN_SHARE) * total:
            label, t, tp, ch = best
            dst = Layout(lay0.shape, lay0.itemsize, ch, lay0.compressed)
            one_off = rechunk_cost(lay0, dst, codec0)
            cmd = f"climio rechunk {path0} {out_name} -c {var0}:{','.join(map(str, ch))}"
            out.append(_rec("chunk-shape",
                            f"chunks {list(ch)} ({label}) instead of {lay0.label()}: predicted {total:.3g} s -> {t:.3g} s "
                            f"for the workflow ({total / t:.1f}x)",
                            {"current": lay0.to_dict(), "target_chunks": list(ch), "candidates": {k: list(v) for k, v in cands.items()},
                             "chosen_by": label},
                            total, t, one_off, per_pass - tp, cmd,
                            "Re-lay the variable out so that each read takes whole chunks (the thesis's x-t chunks: "
                            "24x for the STSA read); reading it in the new layout pays back after the break-even passes."))
    # chunk cache
    need = max((p.counts.max_touched_bytes for _, lay, _, p, _, _, _ in items
                if lay.chunks is not None and p.counts.partial_chunks), default=0)
    cache_now = wf.chunk_cache if wf.chunk_cache is not None else profile.stack(wf.stack).chunk_cache_bytes
    if need and need > cache_now:
        size = int(math.ceil(need * CACHE_HEADROOM / 2**20)) * 2**20
        t, tp = again(cache=size)
        if t < (1 - MIN_GAIN_SHARE) * total:
            out.append(_rec("chunk-cache",
                            f"one read touches {need / 2**20:.1f} MiB of chunks, the {wf.stack} chunk cache holds "
                            f"{cache_now / 2**20:.1f} MiB: a {size / 2**20:.0f} MiB cache predicts {total:.3g} s -> {t:.3g} s",
                            {"touched_bytes_max": need, "cache_bytes": cache_now, "recommended_bytes": size},
                            total, t, 0.0, per_pass - tp,
                            f"netCDF4: var.set_var_chunk_cache({size}); h5py: h5py.File(..., rdcc_nbytes={size}); "
                            f"C: nc_set_var_chunk_cache(ncid, varid, {size}, 4133, 0.75)"))
    # tasks per node and nodes
    out += _tasks_and_nodes(wf, profile, items, total, per_pass, again)
    # stack
    best = None
    for st in sorted(profile.stacks):
        if st == wf.stack:
            continue
        t, tp = again(stack=st)
        if best is None or t < best[1]:
            best = (st, t, tp)
    if best and best[1] < (1 - MIN_GAIN_SHARE) * total:
        st, t, tp = best
        out.append(_rec("stack", f"{st} instead of {wf.stack}: predicted {total:.3g} s -> {t:.3g} s "
                                 f"(per call {1e6 * profile.stack(st).call_s:.0f} us against "
                                 f"{1e6 * profile.stack(wf.stack).call_s:.0f} us)",
                        {"stack": st, "call_s": profile.stack(st).call_s}, total, t, 0.0, per_pass - tp, f"--stack {st}"))
    # compression
    comp = [(s, lay, codec, p) for s, lay, codec, p, _, _, _ in items if lay.compressed]
    if comp and same_var:
        decode = sum(p.decode_s for _, _, _, p in comp)
        partial = any(p.counts.partial_chunks for _, _, _, p in comp)
        t, tp = again(layout=lambda lay: Layout(lay.shape, lay.itemsize, lay.chunks, False), codec_of=lambda c: "none")
        if partial and t < (1 - MIN_GAIN_SHARE) * total:
            dst = Layout(lay0.shape, lay0.itemsize, lay0.chunks, False)
            out.append(_rec("compression",
                            f"{codec0} chunks read partly: {decode:.3g} s of {total:.3g} s is decoding; uncompressed "
                            f"chunks of the same shape predict {t:.3g} s (on disk {lay0.stored / 2**20:.0f} -> "
                            f"{lay0.nbytes / 2**20:.0f} MiB)",
                            {"codec": codec0, "decode_s": decode, "stored_bytes": lay0.stored, "nbytes": lay0.nbytes},
                            total, t, rechunk_cost(lay0, dst, codec0), per_pass - tp,
                            f"climio rechunk {path0} {out_name} --var {var0} --compression none",
                            "Or keep the compression and change the chunk shape so reads take whole chunks (chunk-shape)."))
    out += _one_file_vs_many(wf, profile, items, total, rechunk_cost)
    out += _collective_workflow(wf, profile, items, total, per_pass)
    return out


def _tasks_and_nodes(wf, profile, items, total, per_pass, again) -> list:
    """Tasks per node (1, the cores, twice the cores) x nodes (NODE_COUNTS) of this platform: of the
    configurations within MOST_OF_THE_GAIN of the best predicted gain, the one with the fewest
    tasks, then the fewest nodes. More tasks than the workflow has reads would sit idle: not weighed.
    Nodes are weighed only when the profile has the shared file system's bandwidth (measured across
    nodes): without it, more nodes would be predicted to add storage bandwidth without bound."""
    from ..model.predict import SHARED_FS_KEY
    cores = int(profile.parallel.get("cores") or 1)
    ceiling = profile.parallel.get(SHARED_FS_KEY)
    most = max(len(reads) for *_, reads in items)
    cands = {}
    for n in sorted({1, cores, 2 * cores}):
        for nodes in NODE_COUNTS if ceiling else (1,):
            if (n, nodes) != (wf.tasks, 1) and n * nodes <= max(most, wf.tasks):
                cands[(n, nodes)] = again(tasks=n, nodes=nodes)
    if not cands:
        return []
    (bn, bnodes), (best_t, _) = min(cands.items(), key=lambda kv: kv[1][0])
    if best_t >= (1 - MIN_GAIN_SHARE) * total:
        return []
    goal = total - MOST_OF_THE_GAIN * (total - best_t)
    (n, nodes), (t, tp) = min(((k, v) for k, v in cands.items() if v[0] <= goal),
                              key=lambda kv: (kv[0][0] * kv[0][1], kv[0][1], kv[1][0]))
    s_io, s_cpu = profile.speedup("io", n), profile.speedup("cpu", n)
    where = f"{n} task{'s' if n != 1 else ''} per node on {nodes} nodes ({n * nodes} tasks)" if nodes > 1 \
        else f"{n} tasks"
    bandwidth = (f"; the shared file system caps the nodes at {float(ceiling) / 1e6:.0f} MB/s together" if ceiling else
                 "; more nodes not predicted: the profile has no shared-file-system bandwidth (measure it across nodes "
                 "with climio bench parallel-read, then climio calibrate --from)")
    if nodes > 1:
        command = (f"{n * nodes} tasks, {n} per node: mpirun -n {n * nodes} --map-by ppr:{n}:node; Dask: {nodes} "
                   f"jobs of {n} worker{'s' if n != 1 else ''} (dask-jobqueue cores={n}, processes={n}; cluster.scale(jobs={nodes}))")
    else:
        command = f"--tasks {n} (Dask: n_workers={n}, threads_per_worker=1)"
    return [_rec("tasks",
                 f"{where} instead of {wf.tasks} on one node: predicted {total:.3g} s -> {t:.3g} s, "
                 f"{100 * (total - t) / (total - best_t):.0f}% of the best gain ({best_t:.3g} s with {bn} per node on "
                 f"{bnodes} node{'s' if bnodes != 1 else ''}); calibrated speed-up per node I/O {s_io:.2f}x, CPU "
                 f"{s_cpu:.2f}x on {cores} cores{bandwidth}",
                 {"cores": cores, "tasks_per_node": n, "nodes": nodes, "speedup_io": s_io, "speedup_cpu": s_cpu,
                  "shared_fs_Bps": float(ceiling) if ceiling else None, "best": [bn, bnodes, best_t],
                  "candidates": [[k[0], k[1], v[0]] for k, v in sorted(cands.items())]},
                 total, t, 0.0, per_pass - tp, command,
                 "Tasks per node beyond the cores only share them; more nodes add their storage bandwidth until the "
                 "shared file system's is reached (measure it with climio bench parallel-read across nodes).")]


def _one_file_vs_many(wf, profile, items, total, rechunk_cost) -> list:
    """Files the workflow opens x the stack's calibrated open time, against one file. Several tasks
    on one file: each task opens one file either way, and the calibrated I/O speed-up is the only
    parallel rate the profile has (measured with tasks sharing one file), so the model predicts no
    difference and says so; several files: merging them saves the opens and costs one copy."""
    files = list(dict.fromkeys(it[4] for it in items if it[4]))
    if wf.tasks <= 1 and len(files) <= 1:
        return []
    open_s = profile.stack(wf.stack).open_s
    s_io = profile.speedup("io", wf.tasks)
    speed = f"calibrated I/O speed-up {s_io:.2f}x with {wf.tasks} tasks ({100 * s_io / wf.tasks:.0f}% of linear)"
    if len(files) > 1:
        before, after = total + len(files) * open_s, total + open_s
        firsts = {}
        for _, lay, codec, _, path, _, _ in items:
            firsts.setdefault(path, (lay, codec))
        one_off = sum(rechunk_cost(lay, lay, codec) for lay, codec in firsts.values())
        return [_rec("one-file-vs-many",
                     f"the workflow opens {len(files)} files, {1e3 * open_s:.1f} ms each ({wf.stack}): one file predicts "
                     f"{before:.3g} s -> {after:.3g} s; copying the data into it once costs {one_off:.3g} s",
                     {"files": len(files), "open_s": open_s, "tasks": wf.tasks, "speedup_io": s_io},
                     before, after, one_off, before - after, "",
                     "The opens are all one file saves: the reads cost the same in one file or many.")]
    t = total + open_s
    return [_rec("one-file-vs-many",
                 f"{wf.tasks} tasks share one file: each opens it once ({1e3 * open_s:.1f} ms, {wf.stack}), as each "
                 f"would open its own file; {speed}, the one parallel rate the profile has, so one file per task "
                 f"predicts the same {t:.3g} s",
                 {"tasks": wf.tasks, "files": 1, "open_s": open_s, "speedup_io": s_io}, t, t, 0.0, None, "",
                 "No change predicted on one node (the thesis found a shared file and per-task files read alike, F4, "
                 "and a shared file scaling like many across nodes); measure both with climio bench parallel-read "
                 "--file-sets per-task,shared.")]


def mpiio_rates(profile, tasks) -> dict:
    """The profile's parallel-read MPI-IO records (records with params experiment "mpiio", access
    independent / collective, pattern, ranks, and rate_MBps) at the pattern closest to small
    strided pieces (striding, else sequential) and the task count nearest `tasks` that has both
    accesses: {"independent", "collective" (MB/s), "pattern", "ranks"}, or {} without them."""
    table = {}
    for r in getattr(profile, "records", None) or []:
        p = r.get("params") or {}
        if p.get("experiment") == "mpiio" and p.get("access") in ("independent", "collective") and r.get("rate_MBps"):
            key = (p.get("pattern"), int(p.get("ranks") or 1))
            table.setdefault(key, {})[p["access"]] = float(r["rate_MBps"])
    both = [k for k, v in table.items() if len(v) == 2]
    if not both:
        return {}
    pattern, ranks = min(both, key=lambda k: (k[0] != "striding", abs(math.log(k[1] / max(tasks, 1)))))
    return {**table[(pattern, ranks)], "pattern": pattern, "ranks": ranks}


def _mpiio_evidence(rates) -> str:
    if not rates:
        return ("no prediction: the profile has no parallel-read MPI-IO records (run climio bench parallel-read "
                "--experiments mpiio here and build the profile with them); the thesis measured collective beating "
                "independent reads for several tasks on one node (+60% sequential, more striding; F10)")
    return (f"the profile's MPI-IO {rates['pattern']} reads with {rates['ranks']} tasks: independent "
            f"{rates['independent']:.0f} MB/s, collective {rates['collective']:.0f} MB/s")


def _collective_workflow(wf, profile, items, total, per_pass) -> list:
    """Several tasks whose reads are small strided pieces of uncompressed data (a compressed
    variable is read chunk by chunk whatever the MPI-IO mode): collective MPI-IO merges the
    tasks' pieces into large requests. The workflow's reads are independent now."""
    plain = [p for _, lay, _, p, _, _, _ in items if not lay.compressed]
    pieces = sum(p.counts.pieces for p in plain)
    calls = sum(p.counts.calls for p in plain)
    wanted = sum(p.counts.bytes_wanted for p in plain)
    if wf.tasks <= 1 or pieces < SMALL_REQUEST_MIN_COUNT or pieces <= calls or wanted / pieces >= SMALL_REQUEST_BYTES:
        return []
    rates = mpiio_rates(profile, wf.tasks)
    io = sum(p.io_s for p in plain)
    io_pass = sum(p.io_s / s.passes for s, lay, _, p, _, _, _ in items if not lay.compressed)
    head = (f"{wf.tasks} tasks read {pieces:.0f} pieces of {format_size(wanted / pieces)} on average "
            f"({pieces / calls:.0f} per read, strided) independently")
    evidence = {"tasks": wf.tasks, "pieces": pieces, "reads": calls, "piece_bytes": wanted / pieces, "io_s": io,
                "mpiio_rates": rates}
    if not rates:
        return [_rec("collective-vs-independent", f"{head}: {_mpiio_evidence(rates)}", evidence, None, None,
                     advice=INDEPENDENT_ADVICE)]
    k = rates["independent"] / rates["collective"]
    after = total - io + io * k
    if after >= (1 - MIN_GAIN_SHARE) * total:
        return []
    return [_rec("collective-vs-independent",
                 f"{head}: collective reads predict {total:.3g} s -> {after:.3g} s ({_mpiio_evidence(rates)}; the "
                 f"{io:.3g} s of I/O scaled by {k:.2f})",
                 evidence, total, after, 0.0, io_pass * (1 - k), "nc_var_par_access(ncid, varid, NC_COLLECTIVE)",
                 INDEPENDENT_ADVICE)]


def collective_findings(findings, profile=None, tasks=1) -> list:
    """The collective-vs-independent rule on a trace's or Darshan log's findings: the small requests
    made in MPI-IO calls (small-requests' evidence says who issued them). Independent reads get a
    predicted before/after from the profile's MPI-IO records (the small requests' time scaled by
    independent / collective rate) when it has them; collective calls that still reach the file in
    small pieces get the collective-buffering advice."""
    out = []
    for f in findings:
        ev = f.get("evidence") or {}
        issued = ev.get("issued_by") or {}
        if f.get("rule") != "small-requests" or not issued:
            continue
        top = max(issued, key=issued.get)
        if top == "no_mpiio" or not issued[top]:
            continue
        mode = "collective" if top == "collective_mpiio" else "independent"
        kind = ev.get("kind", "read")
        rates = mpiio_rates(profile, tasks) if profile is not None and kind == "read" else {}
        before = after = None
        advice = COLLECTIVE_ADVICE if mode == "collective" else INDEPENDENT_ADVICE
        text = f"{issued[top]} of the {ev.get('small_requests')} small {kind}s are made in {mode} MPI-IO calls"
        if mode == "collective":
            text += ": the MPI-IO layer did not aggregate them (collective buffering)"
        elif kind != "read":
            text += "; no prediction: the profile's MPI-IO rates are read rates"
        elif rates and rates["collective"] > rates["independent"]:
            before = ev.get("time_s") or 0.0
            after = before * rates["independent"] / rates["collective"]
            text += f": collective predicts {before:.3g} s -> {after:.3g} s ({_mpiio_evidence(rates)})"
        elif rates:
            text += f"; {_mpiio_evidence(rates)}: collective reads are no faster here"
            advice = SMALL_ADVICE
        else:
            text += f"; {_mpiio_evidence(rates)}"
        out.append({"rule": "collective-vs-independent", "title": _MODEL_RULES["collective-vs-independent"][1],
                    "severity": f.get("severity"), "message": text,
                    "evidence": {"kind": kind, "issued_by": issued, "time_s": ev.get("time_s"),
                                 "share_of_io_time": ev.get("share_of_io_time"), "mpiio_rates": rates},
                    "advice": advice, "thresholds": _MODEL_RULES["collective-vs-independent"][2], "before_s": before, "after_s": after,
                    "gain_s": None if before is None else before - after, "one_off_s": 0.0,
                    "break_even_passes": None, "command": ""})
    return out
