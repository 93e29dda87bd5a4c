"""The calibration measurements. Every record: study "calibrate", params.kind says what it measured:

  storage       raw pread of the --size file: pattern sequential / strided (1 in 4) from a cold
                page cache, or warm (the page cache) x request size; wall and ops per repetition
  stack-call    one-element reads (one call, one run): the library's cost per call      (warm)
  stack-runs    reads of 64 runs of one element each inside one sieve window: per run   (warm)
  stack-copy    1 MiB single-run reads: bytes delivered per second                        (warm)
  stack-chunks  half-chunk strips of a file with 1 KiB chunks: per (partial) chunk visited (warm)
  stack-chunks-many  that file in one read (8,192 chunk visits per call): per chunk visited (warm)
  stack-direct  128-byte strips of uncompressed chunks, chunk cache off: through the sieve or
                one pread per piece (warm)
  stack-open    open + close; the chunk cache the stack opens a variable with
  decode        whole-chunk reads of a compressed file and of its uncompressed twin, chunk cache
                off, warm: decoded bytes per extra second                                  (per codec)
  cache-effect  x-t reads of compressed chunks, cold: chunk cache off against one that holds a read
  parallel      N tasks (processes): io = cold 1 MiB preads of 1/N of the file each; cpu = warm
                decoding of 1/N of a compressed file each; speed-up = time(1 task) / time(N)

The warm library costs are solved from the model's own request counts for the same reads
(climio.model.predict.simulate), so the fitted profile reproduces them.
"""

import functools
import math
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from climio.machine import cache, memory
from ...model import profile as profmod
from climio import profiles
from ...model.predict import simulate
from climio.dataset.options import parse_compression
from climio.machine.platform import filesystem_of
from ...data.writer import write_4d
from climio.dataset.description import stored_bytes
from climio.dataset.layout import Layout
from climio.base.units import format_size
from ...measure import probes
from ...measure.progress import info
from ...measure.series import Timer, storage_checked
from ...measure.tasks import TaskPool, gathered, task_record
from climio.runs.records import make_record
from climio.measure.stacks import STACKS, chunk_cache_of
from . import STUDY

SHAPE = (32, 4, 64, 128)          # 8 MiB of f8: the library-cost files
DECODE_SHAPE = (64, 4, 64, 128)   # 16 MiB: the decode files
DECODE_CHUNKS = (4, 1, 64, 128)   # 256 KiB chunks
DECODE_SMALL_CHUNKS = (4, 1, 8, 16)   # 4 KiB chunks: the per-chunk cost of the filter pipeline
SMALL_CHUNKS = (1, 1, 8, 16)      # 1 KiB chunks
# the stack-chunks-many case reads every small chunk in one call: the visits the model's chunk_many_s is at
assert math.prod(s // c for s, c in zip(SHAPE, SMALL_CHUNKS)) == profmod.CHUNK_VISITS_MANY
SEQ_SIZES = (4 << 10, 64 << 10, 1 << 20, 8 << 20)
STRIDED_SIZES = (4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20)
WARM_SIZES = (4 << 10, 64 << 10, 1 << 20)
MAX_OPS = 8192                    # requests per storage measurement at most
NOCACHE = 0
PROBE_TIMEOUT_S = 600.0           # one probe launch reads a few MiB: far longer means it hung


def _write_raw(path, nbytes):
    if os.path.exists(path) and os.path.getsize(path) == nbytes:
        return
    rng = np.random.default_rng(7)
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        left = nbytes
        while left:
            n = min(left, 16 << 20)
            fh.write(rng.bytes(n))
            left -= n
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _nc(path, shape, chunks=None, compression="none", random=False, dtype="f8"):
    if not os.path.exists(path):
        write_4d(path, shape, chunks=chunks if chunks else "contiguous", compression=parse_compression(compression),
                 random=random, dtype=dtype)
    return path


# --- storage -------------------------------------------------------------------------------------

def _preads(path, size, pattern, nbytes):
    step = size * (4 if pattern == "strided" else 1)
    n = max(1, min(MAX_OPS, (nbytes - size) // step + 1))
    buf = bytearray(size)
    fd = os.open(path, os.O_RDONLY)

    def read_all():
        for i in range(n):
            os.preadv(fd, [buf], i * step)
    try:
        if pattern == "warm":
            # The model prices with the warm rate a cold read's re-reads of pages its readahead
            # brought in. How pages entered the cache sets their copy rate on this kernel (large
            # folios): read in by readahead 10-12 GB/s here, left behind by the strided
            # measurements or written in small pieces 6-7 GB/s. So bring them in as a cold
            # sequential read of this request size does.
            cache.evict(path)
            read_all()
            state = cache.prepare([path], "warm")
            state["method"] = "evicted, then read in by a sequential read of the request size"
        else:
            state = cache.prepare([path], "cold")
        with Timer() as t:
            read_all()
    finally:
        os.close(fd)
    return t, n, state


def storage(path, nbytes, reps, emit, pid):
    for pattern, sizes in (("sequential", SEQ_SIZES), ("strided", STRIDED_SIZES), ("warm", WARM_SIZES)):
        for size in sizes:
            if size * 2 > nbytes:
                continue
            for rep in range(reps):
                t, n, state = _preads(path, size, pattern, nbytes)
                m = {"bytes": n * size, "ops": n, **t.metrics()}
                state = storage_checked(state, m, n * size)     # requests never overlap: n x size distinct bytes
                emit(make_record(STUDY, {"kind": "storage", "pattern": pattern, "request_bytes": size, "stack": "posix"},
                                 m, state, rep, "ok", pid))


# --- library costs --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _readahead_bytes(directory) -> int:
    """The readahead of the device holding `directory` (mountinfo and sysfs read once per directory,
    not once per calibration case)."""
    return int((filesystem_of(directory).get("device") or {}).get("read_ahead_kb") or 0) * 1024


def _counts_params(lay, reads, cache_bytes, path=None, direct_sieve=True):
    """The model's counts of `reads`, with the readahead of the device holding `path` (the
    profile fitted from these records simulates the same kernel readahead)."""
    prof = profmod.default_profile()
    if path:
        prof.readahead_bytes = _readahead_bytes(os.path.dirname(os.path.abspath(path)))
    c = simulate(lay, reads, cache_bytes, prof, direct_sieve=direct_sieve)
    return {"calls": c.calls, "pieces": c.pieces, "chunks": c.chunks_visited, "bytes_wanted": c.bytes_wanted,
            "requests": [[p, s, n] for (p, s), n in sorted(c.requests.items())],
            "bytes_read": sum(s * n for (p, s), n in c.requests.items()), "cold_bytes": int(c.cold_bytes()),
            "decodes": c.decodes, "bytes_decoded": c.bytes_decoded}


def _warm_py(stack, path, reads, reps, chunk_cache=None, state="warm"):
    """Times of `reads` through a Python stack, reopened per repetition (an empty chunk cache)."""
    out = []
    spec = None if chunk_cache is None else (int(chunk_cache), 4133, 0.75)
    for _ in range(reps):
        r = STACKS[stack]()
        r.open(path, "ta", spec)
        st = cache.prepare([path], state)
        with Timer() as t:
            for s, c in reads:
                r.read_slab(s, c)
        r.close()
        out.append((t, st))
    return out


def _probe(path, reads, reps, chunk_cache=None, state="warm", timeout_s=None):
    """Records of the native slab probe (measure.probes: the one streamer's timeout and group kill)."""
    return probes.slab_records(path, "ta", reads, reps, state, chunk_cache,
                               timeout_s=PROBE_TIMEOUT_S if timeout_s is None else timeout_s)


def _timed(stack, path, reads, reps, chunk_cache=None, state="warm"):
    """[(metrics, cache state)] of the reads through `stack`."""
    if stack == "c-netcdf":
        return [(r["metrics"], r.get("cache", {"state": state})) for r in _probe(path, reads, reps, chunk_cache, state)]
    return [(t.metrics(), st) for t, st in _warm_py(stack, path, reads, reps, chunk_cache, state)]


def _cache(stack, path) -> dict:
    """The chunk cache the stack opens a chunked variable with, as the library reports it
    ({nbytes, nslots, w0}; the native probe links the system's netCDF-C, whose default may differ
    from the Python wheel's)."""
    return chunk_cache_of(stack, path, "ta") or {"nbytes": 0, "nslots": 0, "w0": 0.75}


def library(stack, files, reps, emit, pid):
    contig, small = files["contig"], files["small"]
    T, Z, Y, X = SHAPE
    lay_c = Layout(SHAPE, 8, None)
    lay_s = Layout(SHAPE, 8, SMALL_CHUNKS)
    cache_d = _cache(stack, small)
    cache_b = cache_d["nbytes"]
    cases = {
        "stack-call": (contig, lay_c, [((0, 0, y, x), (1, 1, 1, 1)) for y in range(Y) for x in range(0, X, 2)][:3000]),
        "stack-runs": (contig, lay_c, [((t, z, 0, x), (1, 1, Y, 1)) for t in range(T) for z in range(Z)
                                       for x in range(0, X, 4)][:3000]),
        "stack-copy": (contig, lay_c, [((t, 0, 0, 0), (4, Z, Y, X)) for t in range(0, T, 4)]),
        # half-chunk map strips of 1 KiB chunks: 256 partial chunk visits per call, so the call cost is small
        "stack-chunks": (small, lay_s, [((0, z, y, 0), (T, 1, 4, X)) for z in range(Z) for y in range(2, Y, 8)]),
        # the whole file in one call: 8,192 chunk visits (CHUNK_VISITS_MANY), HDF5's per-chunk
        # bookkeeping beyond the CPU's caches
        "stack-chunks-many": (small, lay_s, [((0, 0, 0, 0), (T, Z, Y, X))]),
    }
    for kind, (path, lay, reads) in cases.items():
        params = {"kind": kind, "stack": stack, "file": os.path.basename(path),
                  **_counts_params(lay, reads, cache_d, path), "chunk_cache": cache_d}
        for rep, (m, st) in enumerate(_timed(stack, path, reads, reps)):
            emit(make_record(STUDY, params, {"bytes": int(params["bytes_wanted"]), "ops": len(reads), **m}, st, rep,
                             "ok", pid))
    # direct reads: uncompressed 256 KiB chunks with the chunk cache off, 128-byte strips of their
    # rows; the record holds the requests of both ways HDF5 versions read them (the sieve's 64 KiB
    # windows, or one pread per piece) and the fit keeps the one the time agrees with
    T2, Z2, Y2, X2 = DECODE_SHAPE
    lay_d = Layout(DECODE_SHAPE, 8, DECODE_CHUNKS)
    reads = [((0, z, 0, x), (T2, 1, Y2, 16)) for z in range(Z2) for x in range(0, X2, 16)]
    path = files["decode-none"]
    runs = _counts_params(lay_d, reads, NOCACHE, path, direct_sieve=False)
    params = {"kind": "stack-direct", "stack": stack, "file": os.path.basename(path),
              **_counts_params(lay_d, reads, NOCACHE, path), "requests_runs": runs["requests"],
              "chunk_cache": {"nbytes": 0, "nslots": 0, "w0": 0.75}}
    for rep, (m, st) in enumerate(_timed(stack, path, reads, reps, chunk_cache=NOCACHE)):
        emit(make_record(STUDY, params, {"bytes": int(params["bytes_wanted"]), "ops": len(reads), **m}, st, rep,
                         "ok", pid))
    # open + close (Python stacks in process; c-netcdf: the probe's open_s when it reports one)
    opens = []
    if stack != "c-netcdf":
        for _ in range(max(5, reps * 3)):
            t0 = time.perf_counter()
            r = STACKS[stack]()
            r.open(small, "ta")
            r.close()
            opens.append(time.perf_counter() - t0)
    else:
        recs = _probe(small, [((0, 0, 0, 0), (1, 1, 1, 1))], max(3, reps))
        opens = [r["metrics"].get("open_s", 0.002) for r in recs]
    for rep, w in enumerate(opens):
        emit(make_record(STUDY, {"kind": "stack-open", "stack": stack, "chunk_cache_bytes": cache_b,
                                 "chunk_cache": cache_d},
                         {"wall_s": w, "ops": 1, "bytes": 0}, {"state": "warm"}, rep, "ok", pid))


def cold_extra(files, reps, emit, pid):
    """Library reads cold and warm: contiguous map reads (64 KiB runs, consecutive) and whole
    256 KiB chunks (chunk cache off); the fit charges the cold time raw preads do not explain
    to each cold request."""
    T, Z, Y, X = SHAPE
    T2, Z2, Y2, X2 = DECODE_SHAPE
    cases = {"contiguous-xy": (files["contig"], Layout(SHAPE, 8, None),
                               [((t, z, 0, 0), (1, 1, Y, X)) for t in range(T) for z in range(Z)], None),
             "chunks": (files["decode-none"], Layout(DECODE_SHAPE, 8, DECODE_CHUNKS),
                        [((0, z, 0, 0), (T2, 1, Y2, X2)) for z in range(Z2)], NOCACHE)}
    for case, (path, lay, reads, cc) in cases.items():
        params = {"kind": "cold-extra", "stack": "netcdf4-python", "case": case,
                  **_counts_params(lay, reads, cc if cc is not None else 64 << 20, path)}
        for state in ("cold", "warm"):
            for rep, (m, st) in enumerate(_timed("netcdf4-python", path, reads, reps, chunk_cache=cc, state=state)):
                m = {"bytes": int(params["bytes_wanted"]), "ops": len(reads), **m}
                st = storage_checked(st, m, params["cold_bytes"])
                emit(make_record(STUDY, {**params, "what": state}, m, st, rep, "ok", pid))


def _decode_case(kind, codec, path, itemsize, chunks, reads, reps, emit, pid, decoded=None):
    """Records of `reads` of one decode file through netCDF4-python, chunk cache off."""
    comp = codec != "none"
    lay = Layout(DECODE_SHAPE, itemsize, chunks, comp, stored_bytes(path, "ta") if comp else None)
    params = {"kind": kind, "stack": "netcdf4-python", "codec": codec, **({"itemsize": 4} if itemsize == 4 else {}),
              **_counts_params(lay, reads, NOCACHE, path),
              "bytes_decoded": lay.nbytes if decoded is None else decoded, "bytes_stored": lay.stored}
    for rep, (m, st) in enumerate(_timed("netcdf4-python", path, reads, reps, chunk_cache=NOCACHE)):
        emit(make_record(STUDY, params, {"bytes": lay.nbytes, "ops": len(reads), **m}, st, rep, "ok", pid))


def decode(files, codecs, reps, emit, pid):
    T, Z, Y, X = DECODE_SHAPE
    reads = [((0, z, 0, 0), (T, 1, Y, X)) for z in range(Z)]
    # smooth values per codec and their uncompressed twin; then random values, which compress far
    # less (deflate keeps them nearly as they are, and its decoder then mostly copies): the decode
    # rate at a second compression ratio; then both for float32 (most model output), against its
    # own uncompressed twin
    cases = ([("decode", c, f"decode-{c}", 8) for c in ["none", *codecs]]
             + [("decode-random", c, f"decode-random-{c}", 8) for c in codecs]
             + [("decode", "none", "decode-f4-none", 4)]
             + [(k, c, f"{k}-f4-{c}", 4) for c in codecs for k in ("decode", "decode-random")])
    for kind, codec, key, itemsize in cases:
        _decode_case(kind, codec, files[key], itemsize, DECODE_CHUNKS, reads, reps, emit, pid)
    # the same reads of 4 KiB chunks, uncompressed and with the first codec: what each decode costs
    # beyond its bytes (the filter pipeline's set-up per chunk), which 256 KiB chunks hide
    for codec in ["none", *codecs[:1]]:
        _decode_case("decode-chunk", codec, files[f"decode-small-{codec}"], 8, DECODE_SMALL_CHUNKS, reads, reps,
                     emit, pid, decoded=None if codec != "none" else 0)


def cache_effect(files, codec, reps, emit, pid):
    T, Z, Y, X = DECODE_SHAPE
    path = files[f"decode-{codec}"]
    reads = [((0, z, y, 0), (T, 1, 1, X)) for z in range(Z) for y in range(Y)]
    fit = (T // DECODE_CHUNKS[0]) * 8 * math.prod(DECODE_CHUNKS) * 2
    needed = stored_bytes(path, "ta") or os.path.getsize(path)    # the reads cover every chunk of the variable
    for what, cc in (("off", NOCACHE), ("fit", fit)):
        params = {"kind": "cache-effect", "stack": "netcdf4-python", "codec": codec, "what": what, "chunk_cache": cc}
        for rep, (m, st) in enumerate(_timed("netcdf4-python", path, reads, reps, chunk_cache=cc, state="cold")):
            m = {"bytes": 0, "ops": len(reads), **m}
            emit(make_record(STUDY, params, m, storage_checked(st, m, needed), rep, "ok", pid))


# --- parallel ------------------------------------------------------------------------------------

class _Preads:
    """A parallel task (measure.tasks.TaskPool): 1 MiB preads of bytes [lo, hi) of a raw file."""

    def __init__(self, path, lo, hi):
        self.path, self.lo, self.hi = path, lo, hi

    def open(self):
        self.fd = os.open(self.path, os.O_RDONLY)
        self.buf = bytearray(1 << 20)

    def run(self):
        for off in range(self.lo, self.hi, 1 << 20):
            os.preadv(self.fd, [self.buf], off)

    def close(self):
        os.close(self.fd)


class _Decodes(_Preads):
    """A parallel task: whole-level reads [lo, hi) of a compressed file, chunk cache off (decoding)."""

    def open(self):
        self.reader = STACKS["netcdf4-python"]()
        self.reader.open(self.path, "ta", probes.chunk_cache_spec(NOCACHE))

    def run(self):
        T, Z, Y, X = DECODE_SHAPE
        for k in range(self.lo, self.hi):
            self.reader.read_slab((0, k % Z, 0, 0), (T, 1, Y, X))

    def close(self):
        self.reader.close()


def parallel(files, codec, task_list, reps, emit, pid):
    cores = memory.cores()
    raw, nbytes = files["raw"], os.path.getsize(files["raw"])
    comp = files[f"decode-{codec}"]
    work = {"io": (_Preads, raw, nbytes // (1 << 20) * (1 << 20), 1 << 20),
            "cpu": (_Decodes, comp, DECODE_SHAPE[1] * 4, 1)}
    for n in task_list:
        with TaskPool(n) as pool:
            for kind, (task, path, total, unit) in work.items():
                units = total // unit
                bounds = [round(i * units / n) * unit for i in range(n + 1)]
                for rep in range(reps):
                    res, st, _ = pool.run([task(path, a, b) for a, b in zip(bounds, bounds[1:])], [path],
                                          "cold" if kind == "io" else "warm")
                    # every task's own /proc/self/io; io: the tasks' shares cover `total` bytes of the raw
                    # file once (cpu runs warm)
                    m = {**gathered(res), "ops": n, "bytes": 0}
                    emit(task_record(STUDY, {"kind": "parallel", "what": kind, "tasks": n, "cores": cores},
                                     m, st, total if kind == "io" else 0, rep, pid))


# --- the study ---------------------------------------------------------------------------------------

def make_files(grid, data_dir) -> dict:
    d = os.path.join(data_dir, "calibrate")
    os.makedirs(d, exist_ok=True)
    files = {"raw": os.path.join(d, "raw.bin")}
    _write_raw(files["raw"], grid.size_bytes)
    files["contig"] = _nc(os.path.join(d, "contig.nc"), SHAPE)
    files["small"] = _nc(os.path.join(d, "small-chunks.nc"), SHAPE, SMALL_CHUNKS)
    for codec in ["none", *grid.codec_list]:
        files[f"decode-{codec}"] = _nc(os.path.join(d, f"decode-{codec}.nc"), DECODE_SHAPE, DECODE_CHUNKS, codec)
    for codec in grid.codec_list:
        files[f"decode-random-{codec}"] = _nc(os.path.join(d, f"decode-random-{codec}.nc"), DECODE_SHAPE,
                                              DECODE_CHUNKS, codec, random=True)
    for codec in ["none", *grid.codec_list]:
        files[f"decode-f4-{codec}"] = _nc(os.path.join(d, f"decode-f4-{codec}.nc"), DECODE_SHAPE, DECODE_CHUNKS,
                                          codec, dtype="f4")
        if codec != "none":
            files[f"decode-random-f4-{codec}"] = _nc(os.path.join(d, f"decode-random-f4-{codec}.nc"), DECODE_SHAPE,
                                                     DECODE_CHUNKS, codec, random=True, dtype="f4")
    for codec in ["none", *grid.codec_list[:1]]:
        files[f"decode-small-{codec}"] = _nc(os.path.join(d, f"decode-small-{codec}.nc"), DECODE_SHAPE,
                                             DECODE_SMALL_CHUNKS, codec)
    return files


def available(stack) -> bool:
    return stack != "c-netcdf" or probes.available(probes.SLAB)


def run_calibration(ctx, grid) -> int:
    n = [0]
    pid = ctx.run.platform_id

    def emit(rec):
        ctx.run.writer.write(rec)
        n[0] += 1
    t0 = time.perf_counter()
    say = info if ctx.progress else (lambda *_: None)
    say("calibrate: writing the calibration files")
    with calibration_files(ctx.data_dir, say):
        _measure_all(ctx, grid, emit, pid, say)
    # the profile, fitted from this run's records, next to them and in the profile cache
    from climio.runs.records import read_records
    from .summary import profile_from_records
    prof = profile_from_records(read_records(ctx.run.path), pid, ctx.run.platform)
    written = profiles.save(prof, os.path.join(ctx.run.path, profiles.PROFILE_NAME))
    say(f"calibrate: {n[0]} records in {time.perf_counter() - t0:.0f} s; profile {written[0]}")
    for line in prof.summary_lines():
        say(line)
    return n[0]


def _measure_all(ctx, grid, emit, pid, say) -> None:
    files = make_files(grid, ctx.data_dir)
    say("calibrate: storage latency and rate against request size")
    storage(files["raw"], grid.size_bytes, grid.reps, emit, pid)
    for stack in grid.stack_list:
        if not available(stack):
            say(f"calibrate: {stack} skipped (the native probe is not built)")
            continue
        say(f"calibrate: library costs of {stack}")
        library(stack, files, grid.reps, emit, pid)
    say("calibrate: cold library requests")
    cold_extra(files, grid.reps, emit, pid)
    say("calibrate: decode rates " + ", ".join(grid.codec_list))
    decode(files, grid.codec_list, grid.reps, emit, pid)
    say("calibrate: the converter's write, encode and decode rates (climio rechunk)")
    from . import codecs
    codecs.measure(ctx.data_dir, grid, emit, pid, say)
    codec = grid.codec_list[0] if grid.codec_list else None
    if codec:
        say("calibrate: chunk-cache effect")
        cache_effect(files, codec, grid.reps, emit, pid)
        say(f"calibrate: parallel scaling at {', '.join(map(str, grid.task_list))} tasks")
        parallel(files, codec, grid.task_list, grid.reps, emit, pid)


@contextmanager
def calibration_files(data_dir, say):
    """DATA_DIR/calibrate for the calibration's files, removed when it ends (done or failed): they
    are measuring material, a few hundred MB that a user's --data-dir kept without a word. A
    directory of that name that was there before keeps what it held; only our files go."""
    d = Path(data_dir) / "calibrate"
    before = {p for p in d.rglob("*")} if d.is_dir() else None
    try:
        yield d
    finally:
        made = [p for p in (d.rglob("*") if d.is_dir() else ()) if before is None or p not in before]
        size = sum(p.stat().st_size for p in made if p.is_file())
        if before is None:
            shutil.rmtree(d, ignore_errors=True)
        else:
            for p in sorted(made, key=lambda q: -len(q.parts)):
                (shutil.rmtree if p.is_dir() else os.unlink)(p)
        if made:
            say(f"calibrate: removed the calibration files ({format_size(size)} in {d})")
