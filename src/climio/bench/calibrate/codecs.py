"""What a layout conversion costs beyond reading, measured here for the conversion planner
(climio.model.rates): the rate of writing chunks into a new HDF5 file, and per codec the rates at
which the converter encodes and decodes.

  convert-write   chunk-sized HDF5 direct chunk writes of a new file, as the converter writes its
                  output (no fsync: the converter leaves write-back to the kernel; the fsync that
                  follows is kept in the record as fsync_s)
  convert-encode  `climio rechunk` itself (workers 1, a warm source): an uncompressed map-chunked
                  variable to time-series chunks compressed with the codec; the twin ("none") is
                  the same conversion uncompressed
  convert-decode  the same conversion from a source compressed with the codec to uncompressed
                  chunks (the twin is shared)

The converter runs as a user runs it (its own process, its --json summary; the time is the
summary's `seconds`, without the interpreter's start), so the rates are those of the code that
converts: libdeflate and climio's shuffle for deflate, HDF5 and its filter plugins otherwise.
The profile's fit (climio.model.fit.fit) takes write = the bandwidth of a line through the
two chunk sizes' times per write, encode = encoded bytes / (time - the twin's time + what writing
the fewer compressed bytes saved), decode = decoded bytes / (time - the twin's time). Every
conversion record carries the planner's counts and the bytes its output variable took.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

from climio.machine import cache
from ...data.writer import write_4d
from climio.base.errors import ClimioError, NativeError
from ...measure.procs import failure_line, kill_group
from climio.dataset.options import parse_compression
from climio.runs.records import make_record
from . import STUDY

CONVERT_SHAPE = {"full": (96, 4, 192, 192), "quick": (48, 4, 192, 192)}    # f4: 54 / 27 MiB
# (netCDF-4 output refuses shuffle with zstd: zstd3+shuffle, a common Zarr codec, takes zstd3's
# rates, climio.model.rates.codec_rate)
CONVERT_CODECS = {"full": ("deflate1", "deflate1+shuffle", "deflate4", "deflate4+shuffle", "deflate9+shuffle", "zstd3"),
                  "quick": ("deflate1+shuffle", "deflate4+shuffle")}
WRITE_BYTES = {"full": 128 << 20, "quick": 32 << 20}
WRITE_CHUNKS = (64 << 10, 1 << 20)      # two chunk sizes: the fit separates per-write cost from bandwidth
RUN_TIMEOUT_S = 600.0


def codecs_for(grid) -> list:
    """The codecs whose conversion rates are measured: the preset's and the --codecs list."""
    preset = "quick" if grid.preset in ("quick", "survey") else "full"
    return list(dict.fromkeys([*CONVERT_CODECS[preset], *grid.codec_list]))


def _climio() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    if not os.access(exe, os.X_OK):
        raise NativeError(f"calibrate: the climio command is not beside {sys.executable}: cannot run the converter")
    return exe


def _source(d, shape, codec) -> str:
    path = os.path.join(d, f"convert-{codec}-{'x'.join(map(str, shape))}.nc")
    if not os.path.exists(path):
        comp = parse_compression(codec) if codec != "none" else None
        write_4d(path, shape, chunks=[1, 1, shape[2], shape[3]], dtype="f4", compression=comp)
    return path


def _rechunk(src, out, target, codec) -> tuple:
    """(the converter's --json summary, the source's cache state, the bytes the output variable
    takes) of one conversion (a warm source, one worker)."""
    import h5py
    state = cache.prepare([src], "warm")
    argv = [_climio(), "rechunk", src, out, "-c", f"ta:{','.join(map(str, target))}", "--compression", codec,
            "--workers", "1", "--force", "--json"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    stored = None
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
        process_wall = time.perf_counter() - t0
        if proc.returncode == 0:
            with h5py.File(out, "r") as f:
                stored = int(f["ta"].id.get_storage_size())
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise NativeError(f"climio rechunk to {codec} did not finish within {RUN_TIMEOUT_S:.0f} s") from None
    except BaseException:   # a stop: SIGTERM first, so the converter removes its temporary output
        kill_group(proc)
        proc.wait()
        raise
    finally:
        if os.path.exists(out):
            os.unlink(out)
    if proc.returncode != 0:
        raise ClimioError(f"climio rechunk to {codec} failed: {failure_line(stderr, 'climio')}")
    return {**json.loads(stdout), "process_wall_s": process_wall}, state, stored


def _params(kind, codec, summary, shape, target) -> dict:
    plan = next(iter(summary["plans"].values()))
    keep = ("bytes_read", "bytes_decoded", "bytes_encoded", "bytes_written", "read_ops", "write_ops")
    counts = {k: sum(p[k] for p in plan["passes"]) for k in keep}
    return {"kind": kind, "codec": codec, "stack": "climio-rechunk", "shape": list(shape),
            "from_chunks": [1, 1, shape[2], shape[3]], "to_chunks": list(target), "workers": 1, **counts}


def conversions(d, grid, reps, emit, pid, say) -> None:
    """The twin and, per codec, the encode and decode conversions, `reps` times each (interleaved,
    so that a slow spell of a shared machine falls on all of them)."""
    preset = "quick" if grid.preset in ("quick", "survey") else "full"
    shape = CONVERT_SHAPE[preset]
    target = (shape[0], 1, 1, shape[3])
    nbytes = int(np.prod(shape)) * 4
    out = os.path.join(d, "convert-out.nc")
    runs = [("convert-encode", "none", "none")]
    for codec in codecs_for(grid):
        runs += [("convert-encode", codec, "none"), ("convert-decode", codec, codec)]
    failed = set()
    for rep in range(reps):
        for kind, codec, src_codec in runs:
            if codec in failed:
                continue
            try:
                summary, state, stored = _rechunk(_source(d, shape, src_codec), out, target,
                                          "none" if kind == "convert-decode" else codec)
            except ClimioError as exc:     # e.g. zstd without its HDF5 plugin: said, the others go on
                say(f"calibrate: {codec} conversion rates not measured: {exc}")
                failed.add(codec)
                continue
            params = {**_params(kind, codec, summary, shape, target), "stored_out": stored}
            # process_wall_s: the command as a user runs it; beyond wall_s (its own timing) is the start-up
            emit(make_record(STUDY, params, {"wall_s": summary["seconds"], "process_wall_s": summary["process_wall_s"],
                                             "bytes": nbytes, "ops": 1}, state, rep, "ok", pid))


def write_rate(d, grid, reps, emit, pid) -> None:
    """Chunk writes of a new HDF5 file (h5py direct chunk writes, what the converter's output gets),
    at two chunk sizes."""
    import h5py
    preset = "quick" if grid.preset in ("quick", "survey") else "full"
    path = os.path.join(d, "convert-write.h5")
    for chunk_bytes in WRITE_CHUNKS:
        chunk = (chunk_bytes // 4,)
        n = max(2, WRITE_BYTES[preset] // chunk_bytes)
        payload = np.random.default_rng(3).random(chunk[0], dtype=np.float32).tobytes()
        for rep in range(reps):
            if os.path.exists(path):
                os.unlink(path)
            with h5py.File(path, "w") as f:
                ds = f.create_dataset("data", shape=(n * chunk[0],), chunks=chunk, dtype="f4")
                t0 = time.perf_counter()
                for i in range(n):
                    ds.id.write_direct_chunk((i * chunk[0],), payload, 0)
                f.flush()
                wall = time.perf_counter() - t0
            t1 = time.perf_counter()
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_s = time.perf_counter() - t1
            os.unlink(path)
            emit(make_record(STUDY, {"kind": "convert-write", "stack": "h5py", "request_bytes": chunk_bytes, "chunks": n},
                             {"wall_s": wall, "bytes": n * chunk_bytes, "ops": n, "fsync_s": fsync_s},
                             {"state": "warm", "method": "new file, no fsync in the timed part"}, rep, "ok", pid))


def measure(data_dir, grid, emit, pid, say) -> None:
    """Both measurements into `data_dir`/calibrate/convert (the run's hook)."""
    d = os.path.join(data_dir, "calibrate", "convert")
    os.makedirs(d, exist_ok=True)
    reps = max(2, min(grid.reps, 3))
    write_rate(d, grid, reps, emit, pid)
    conversions(d, grid, reps, emit, pid, say)
