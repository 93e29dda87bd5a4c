"""Fitting a platform Profile from calibration records (pure): `fit` groups the records of
`climio calibrate` by what each measured (params.kind) and solves the profile's rates from them,
with the model's own request counts of the same reads (climio.model.predict.simulate, recorded
in the params) taken off where a record's time includes them; `fit_storage` fits one pattern's
latency and rates against request size; `warm_io` prices a record's page-cache requests."""

import math
from dataclasses import asdict
from typing import Optional

from .profile import COPY_MAX_BPS, COPY_MIN_BPS, PROFILE_PATTERNS, Profile, StackRates


def fit_storage(points) -> tuple:
    """points: [(size, seconds per request)] of one pattern -> (latency, [[size, rate]]).

    A line t = latency + size / rate fitted by least squares in relative error (weights 1/t)
    over all points gives the latency (clamped to [0, 0.9 x the fastest request]) and a line
    rate R; each point keeps its own rate size / (t - latency), bounded to [R/3, 3R] so that
    one noisy point does not bend the curve. Points on a line are reproduced exactly."""
    pts = sorted((float(s), float(t)) for s, t in points if t and t > 0)
    if not pts:
        return 0.0, []
    if len(pts) == 1:
        s, t = pts[0]
        return 0.0, [[s, s / t]]
    # weighted least squares of t_i = a + c s_i, weights 1/t_i^2
    w = [1.0 / (t * t) for _, t in pts]
    sw = sum(w)
    sx = sum(wi * s for wi, (s, _) in zip(w, pts))
    sy = sum(wi * t for wi, (_, t) in zip(w, pts))
    sxx = sum(wi * s * s for wi, (s, _) in zip(w, pts))
    sxy = sum(wi * s * t for wi, (s, t) in zip(w, pts))
    det = sw * sxx - sx * sx
    c = (sw * sxy - sx * sy) / det if det else 0.0
    a = (sy - c * sx) / sw if sw else 0.0
    lat = min(max(a, 0.0), 0.9 * min(t for _, t in pts))
    if c <= 0:   # time does not grow with size: a rate from the largest request
        s, t = pts[-1]
        c = max(t - lat, 1e-12) / s
    line = 1.0 / c
    table = []
    for s, t in pts:
        r = s / (t - lat) if t > lat else 3 * line
        table.append([s, min(max(r, line / 3), 3 * line)])
    return lat, table


def _median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def fit(records, platform_id: str, platform: Optional[dict] = None, source="calibration",
        base: Optional["Profile"] = None) -> "Profile":
    # long: one pass over the record groups, one short block per kind of calibration record
    """A Profile from calibration records (study "calibrate", params.kind says what each measured).

    kinds: storage (pattern, request_bytes; wall / ops per request), stack-call / stack-runs /
    stack-copy / stack-chunks (warm library costs, per stack), decode (codec; the decoded bytes
    and the time beyond the uncompressed twin), parallel (io|cpu, tasks; speed-up against 1 task),
    open, convert-write / convert-encode / convert-decode (the conversion planner's rates: _fit_convert).
    Fields no record measures keep `base`'s values (or the defaults)."""
    ok = [r for r in records if r.get("status", "ok") == "ok" and r.get("study") == "calibrate"]
    ok += [_storage_from_read_stack(r) for r in records if r.get("study") == "read-stack"
           and r.get("status", "ok") == "ok" and r.get("params", {}).get("layer") in ("c-posix", "py-file", "numpy")
           and r.get("params", {}).get("pattern") in ("sequential", "strided")
           and (r.get("cache") or {}).get("effective", (r.get("cache") or {}).get("state")) == "cold"]
    prof = Profile(platform_id=platform_id, source=source)
    if base is not None:
        prof = Profile.from_dict({**base.to_dict(), "platform_id": platform_id, "source": source, "records": []})
    groups = {}
    for r in ok:
        p = r["params"]
        key = (p.get("kind"), p.get("stack"), p.get("pattern"), p.get("request_bytes"), p.get("codec"),
               p.get("what"), p.get("tasks"), p.get("case"), p.get("itemsize"))
        groups.setdefault(key, []).append(r)
    med = {k: _median([r["metrics"]["wall_s"] for r in v]) for k, v in groups.items()}
    fast = {k: min(r["metrics"]["wall_s"] for r in v) for k, v in groups.items()}
    one = {k: v[0] for k, v in groups.items()}
    # storage
    for pattern in PROFILE_PATTERNS:
        pts = [(k[3], med[k] / max(one[k]["metrics"].get("ops") or 1, 1)) for k in groups
               if k[0] == "storage" and k[2] == pattern]
        if pts:
            prof.latency_s[pattern], prof.rate_Bps[pattern] = fit_storage(pts)
    # stacks: the warm library costs, solved from the model's request counts of the same reads
    names = sorted({k[1] for k in groups if k[0] and k[0].startswith("stack-") and k[1]})
    solved = {}
    for name in names:
        vals = asdict(prof.stacks.get(name, StackRates()))

        def get(kind):
            # the fastest repetition: warm library costs are CPU work, which another program's load
            # only ever stretches (as for the converter's rates below)
            k = next((k for k in groups if k[0] == kind and k[1] == name), None)
            return (fast[k] - warm_io(prof, one[k]["params"]), one[k]["params"]) if k else None
        call, runs, copy, chunks = get("stack-call"), get("stack-runs"), get("stack-copy"), get("stack-chunks")
        many = get("stack-chunks-many")
        direct = get("stack-direct")
        for _ in range(3):   # the copy term is small in the call/run cases: iterate the two solutions
            if call and runs:
                (r1, p1), (r2, p2) = call, runs
                r1 -= p1["bytes_wanted"] / vals["copy_Bps"]
                r2 -= p2["bytes_wanted"] / vals["copy_Bps"]
                a1, n1, a2, n2 = p1["calls"], p1["pieces"], p2["calls"], p2["pieces"]
                det = a1 * n2 - a2 * n1
                piece = (a1 * r2 - a2 * r1) / det if det else 0.0
                piece = max(piece, 0.0)
                vals["piece_s"] = piece
                vals["call_s"] = max(r1 - n1 * piece, 0.0) / a1
            elif call:
                r1, p1 = call
                vals["call_s"] = max(r1 - p1["pieces"] * vals["piece_s"], 0.0) / p1["calls"]
            if copy:
                r, p = copy
                rest = r - p["calls"] * vals["call_s"] - p["pieces"] * vals["piece_s"]
                vals["copy_Bps"] = min(max(p["bytes_wanted"] / max(rest, 1e-9), COPY_MIN_BPS), COPY_MAX_BPS)
        if chunks:
            r, p = chunks
            rest = r - p["calls"] * vals["call_s"] - p["pieces"] * vals["piece_s"] - p["bytes_wanted"] / vals["copy_Bps"]
            vals["chunk_s"] = max(rest, 0.0) / max(p["chunks"], 1)
        if direct:
            vals["direct_sieve"] = _direct_sieve(prof, direct, vals)
        if many:
            r, p = many
            rest = r - p["calls"] * vals["call_s"] - p["pieces"] * vals["piece_s"] - p["bytes_wanted"] / vals["copy_Bps"]
            vals["chunk_many_s"] = max(rest / max(p["chunks"], 1), vals["chunk_s"])
        opk = next((k for k in groups if k[0] == "stack-open" and k[1] == name), None)
        if opk:
            vals["open_s"] = med[opk]
            if one[opk]["params"].get("chunk_cache_bytes"):
                vals["chunk_cache_bytes"] = int(one[opk]["params"]["chunk_cache_bytes"])
            cc = one[opk]["params"].get("chunk_cache") or {}
            if cc.get("nslots"):
                vals["chunk_cache_nslots"], vals["chunk_cache_w0"] = int(cc["nslots"]), float(cc.get("w0", 0.75))
        prof.stacks[name] = StackRates(**vals)
        solved[name] = call
    _share_library_costs(prof, solved)
    # decode: decoded bytes over the time beyond the uncompressed twin (same stack, same reads); once
    # any codec is measured, the base's unmeasured ones go (a codec not measured then takes its
    # family's measured rate, not a built-in laptop figure)
    if any(k[0] == "decode" and k[4] and k[4] != "none" for k in groups):
        prof.decode_Bps, prof.decode_ratio, prof.decode_random, prof.decode_f4 = {}, {}, {}, {}
    for k in groups:
        if k[0] == "decode" and k[4] and k[4] != "none" and k[8] != 4:
            p = one[k]["params"]
            twin = next((kk for kk in groups if kk[0] == "decode" and kk[4] == "none" and kk[1] == k[1]
                         and kk[8] != 4), None)
            extra = med[k] - warm_io(prof, p)
            if twin:
                extra -= med[twin] - warm_io(prof, one[twin]["params"])
            else:
                sr = prof.stacks.get(k[1], StackRates())
                extra -= p["calls"] * sr.call_s + p["chunks"] * sr.chunk_s + p["bytes_wanted"] / sr.copy_Bps
            prof.decode_Bps[k[4]] = p["bytes_decoded"] / max(extra, 1e-6)
            if p.get("bytes_stored"):
                prof.decode_ratio[k[4]] = p["bytes_decoded"] / p["bytes_stored"]
    _fit_decode_random(prof, groups, med, one)
    _fit_decode_chunk(prof, groups, fast)
    _fit_convert(prof, groups, one)
    # parallel speed-ups: time of the same total work with 1 task over time with n tasks
    for kind in ("io", "cpu"):
        base1 = [med[k] for k in groups if k[0] == "parallel" and k[5] == kind and int(k[6]) == 1]
        if base1:
            # bounded to [1/2, n]: more than n times faster with n tasks is noise (a shared machine)
            pts = {str(int(k[6])): min(max(base1[0] / med[k], 0.5), int(k[6])) for k in groups
                   if k[0] == "parallel" and k[5] == kind and int(k[6]) > 1}
            prof.parallel[kind] = pts
    if any(k[0] == "parallel" for k in groups):
        prof.parallel["cores"] = max(int(one[k]["params"].get("cores") or 1) for k in groups if k[0] == "parallel")
    # cold requests through the library: the time beyond the warm twin, beyond what raw preads predict
    extras = []
    for k in groups:
        if k[0] == "cold-extra" and k[5] == "cold":
            twin = next((kk for kk in groups if kk[0] == "cold-extra" and kk[5] == "warm" and kk[1] == k[1]
                         and kk[7] == k[7]), None)
            if not twin:
                continue
            p = one[k]["params"]
            n_cold = sum(n for pat, s, n in p["requests"] if pat == "strided")
            raw_cold = sum(n * (prof.latency(pat) + s / prof.rate(pat, s)) for pat, s, n in p["requests"])
            if n_cold >= 16:
                extras.append((med[k] - med[twin] - (raw_cold - warm_io(prof, p))) / n_cold)
    if extras:
        prof.cold_extra_s = max(_median(extras), 0.0)
    for k in groups:
        if k[0] == "cache-effect":
            prof.checks.setdefault("chunk_cache", {})[k[5]] = med[k]
    if platform:
        prof.host = platform.get("host", "")
        fs = platform.get("filesystem", {})
        prof.filesystem = {x: fs.get(x) for x in ("type", "source", "mount_point")}
        ra_kb = (fs.get("device") or {}).get("read_ahead_kb")
        if ra_kb:
            prof.readahead_bytes = int(ra_kb) * 1024
        prof.versions = (platform.get("versions") or {}).get("python", {})
    prof.records = [{"params": one[k]["params"], "median_wall_s": med[k], "reps": len(groups[k])} for k in groups]
    prof.records += _mpiio_rates(records)
    return prof


# The C library that does a stack's per-run and per-chunk work (HDF5 below all of them, netCDF-C's
# hyperslab walk above it for three), and the stack whose fit of those costs is best conditioned:
# its per-call cost is the smallest, so the runs case separates the per-run cost from it.
LIBRARY_BELOW = {"c-netcdf": "netCDF-C", "netcdf4-python": "netCDF-C", "xarray": "netCDF-C",
                 "h5py": "HDF5", "h5netcdf": "HDF5"}
LIBRARY_REFERENCE = {"netCDF-C": "c-netcdf", "HDF5": "h5py"}


def _share_library_costs(prof: "Profile", solved) -> None:
    """Per-run and per-chunk costs are the C library's work, the same under every stack on it: the
    Python stacks take them from the library's reference stack (measured in the same calibration)
    and keep only their own per-call cost, re-solved from their call case. Fitted separately, a
    Python stack's per-run cost is a small difference of two large per-call times, and on a shared
    machine it came out 0 for one stack and 3 us for another."""
    for name, call in solved.items():
        ref = LIBRARY_REFERENCE.get(LIBRARY_BELOW.get(name, ""))
        if not ref or ref == name or ref not in solved:
            continue
        r, base = prof.stacks[ref], asdict(prof.stacks[name])
        base.update(piece_s=r.piece_s, chunk_s=r.chunk_s, chunk_many_s=r.chunk_many_s)
        if call:
            t, p = call
            t -= p["bytes_wanted"] / base["copy_Bps"]
            base["call_s"] = max(t - p["pieces"] * r.piece_s, 0.0) / max(p["calls"], 1)
        prof.stacks[name] = StackRates(**base)


def _direct_sieve(prof: "Profile", direct, vals) -> bool:
    """Whether the stack's direct chunk reads go through the sieve: the hypothesis (its request
    counts, both in the record) whose predicted time is nearer the measured one, in ratio."""
    (t, p) = direct
    t += warm_io(prof, p)       # get() took the sieve hypothesis' page-cache requests off
    cpu = p["calls"] * vals["call_s"] + p["pieces"] * vals["piece_s"] + p["bytes_wanted"] / vals["copy_Bps"]
    sieve = cpu + warm_io(prof, p)
    runs = cpu + warm_io(prof, {"requests": p.get("requests_runs") or []})
    return abs(math.log(max(sieve, 1e-9) / max(t, 1e-9))) <= abs(math.log(max(runs, 1e-9) / max(t, 1e-9)))


def _fit_decode_random(prof: "Profile", groups, med, one) -> None:
    """The decode rate on random values (a second compression ratio per codec), beyond the
    uncompressed twin as for decode_Bps."""
    def point(k, twin):
        p = one[k]["params"]
        extra = med[k] - warm_io(prof, p) - (med[twin] - warm_io(prof, one[twin]["params"]))
        return [p["bytes_decoded"] / p["bytes_stored"], p["bytes_decoded"] / max(extra, 1e-6)]
    twin = next((k for k in groups if k[0] == "decode" and k[4] == "none" and k[8] != 4), None)
    twin4 = next((k for k in groups if k[0] == "decode" and k[4] == "none" and k[8] == 4), None)
    f4 = {}
    for k in groups:
        if k[0] not in ("decode", "decode-random") or not k[4] or k[4] == "none":
            continue
        if k[8] == 4 and twin4 is not None:     # float32: smooth first, random second
            f4.setdefault(k[4], {})[k[0]] = point(k, twin4)
        elif k[8] != 4 and k[0] == "decode-random" and twin is not None:
            prof.decode_random[k[4]] = point(k, twin)
    for codec, pts in f4.items():
        if len(pts) == 2:
            prof.decode_f4[codec] = [pts["decode"], pts["decode-random"]]


def _fit_decode_chunk(prof: "Profile", groups, fast) -> None:
    """Each decode's fixed cost: 4 KiB chunks read with a codec, beyond their uncompressed twin
    (the same chunk visits) and beyond their bytes at the codec's decode rate, per decode; the
    fastest repetitions (CPU work)."""
    twin = next((k for k in groups if k[0] == "decode-chunk" and k[4] == "none"), None)
    for k in groups:
        if twin is None or k[0] != "decode-chunk" or k[4] in (None, "none"):
            continue
        p = groups[k][0]["params"]
        if not p.get("decodes"):
            continue
        extra = fast[k] - fast[twin] - p["bytes_decoded"] / prof.decode(k[4])
        prof.decode_chunk_s = max(extra, 0.0) / p["decodes"]


def _fit_convert(prof: "Profile", groups, one) -> None:
    """The conversion planner's rates (climio.model.rates) from calibrate's codec module: the write
    bandwidth of chunk writes of a new file (a line through two chunk sizes); per codec, the converter's encode rate (encoded bytes over
    the time beyond its uncompressed twin, plus what writing fewer compressed bytes saved) and
    decode rate (decoded bytes over the time beyond the twin). Each configuration's fastest
    repetition is taken (the least disturbed by a shared machine: differences of medians are
    noise there). A difference lost in noise is taken as a thousandth of the twin's time."""
    fast = {k: min(r["metrics"]["wall_s"] for r in groups[k]) for k in groups if str(k[0]).startswith("convert-")}
    writes = [(k[3], fast[k] / max(one[k]["metrics"].get("ops") or 1, 1)) for k in fast if k[0] == "convert-write"]
    if writes:
        _, table = fit_storage(writes)      # time per write = cost per write + size / bandwidth
        prof.write_Bps = float(table[-1][1])
    starts = [r["metrics"]["process_wall_s"] - r["metrics"]["wall_s"] for k in groups if str(k[0]).startswith("convert-e")
              or str(k[0]).startswith("convert-d") for r in groups[k] if r["metrics"].get("process_wall_s")]
    if starts:
        prof.convert_start_s = max(_median(starts), 0.0)
    twin = next((k for k in groups if k[0] == "convert-encode" and k[4] == "none"), None)
    if twin is None:
        return
    t0, p0 = fast[twin], one[twin]["params"]
    for k in fast:
        if k[0] not in ("convert-encode", "convert-decode") or k[4] in (None, "none"):
            continue
        p = one[k]["params"]
        extra = fast[k] - t0
        if k[0] == "convert-encode":
            if prof.write_Bps and p0.get("stored_out") and p.get("stored_out"):
                extra += (p0["stored_out"] - p["stored_out"]) / prof.write_Bps
            what, done = "encode", p["bytes_encoded"]
        else:
            what, done = "decode", p["bytes_decoded"]
        if done:
            prof.codec_Bps.setdefault(k[4], {})[what] = done / max(extra, 1e-3 * t0)


def _mpiio_rates(records) -> list:
    """The parallel-read study's MPI-IO records (climio calibrate --from a parallel-read run) as the
    profile records the collective-vs-independent advice reads: per (access, pattern, ranks) the
    median aggregate rate of the cold repetitions that read from storage."""
    groups = {}
    for r in records:
        p, c = r.get("params") or {}, r.get("cache") or {}
        if (r.get("study") == "parallel-read" and r.get("status", "ok") == "ok" and p.get("experiment") == "mpiio"
                and c.get("effective", c.get("state")) == "cold" and (r.get("metrics") or {}).get("rate_MBps")):
            key = (p.get("access"), p.get("pattern"), int(p.get("ranks") or 1))
            groups.setdefault(key, []).append(float(r["metrics"]["rate_MBps"]))
    return [{"params": {"experiment": "mpiio", "access": a, "pattern": pat, "ranks": n}, "rate_MBps": _median(v),
             "reps": len(v)} for (a, pat, n), v in sorted(groups.items())]


def _storage_from_read_stack(r) -> dict:
    """A read-stack record of a raw-file stack as a storage calibration point."""
    p = r["params"]
    return {"study": "calibrate", "status": "ok", "metrics": r["metrics"],
            "params": {"kind": "storage", "pattern": p["pattern"], "request_bytes": p.get("buffer_bytes"),
                       "stack": p.get("layer"), "from": "read-stack"}}


def warm_io(prof: Profile, params: dict) -> float:
    """Seconds of the page-cache requests the model counts for a warm calibration measurement."""
    if not prof.rate_Bps.get("warm"):
        return 0.0
    return sum(n * (prof.latency("warm") + s / prof.rate("warm", s)) for _, s, n in params.get("requests") or [])
