"""The validation configurations: generate the layouts, predict each configuration from the
profile, measure it cold (climio.measure.tasks), write one record per repetition with the
prediction in its params."""

import math
import os
import time

from ...model import profile as profmod
from ...model.predict import predict
from ...model.workflow import layout_of, reads_for
from ...options import parse_compression
from ...data.writer import write_4d
from ...errors import InputError
from ...layout import library_default_chunks
from ...measure import probes
from ...measure.progress import info
from ...measure.tasks import measure
from . import STUDY


def layouts(shape) -> dict:
    T, Z, Y, X = shape
    default = tuple(library_default_chunks(shape, 8))
    return {
        "contiguous": (None, "none"),
        "xt": ((T, 1, 1, X), "none"),
        "xy": ((1, 1, Y, X), "none"),
        "default": (default, "none"),
        "cube": ((8, 2, 16, 32), "none"),
        "default+deflate4": (default, "deflate4+shuffle"),
        "xt+deflate4": ((T, 1, 1, X), "deflate4+shuffle"),
        "cube+zstd3": ((8, 2, 16, 32), "zstd3"),
    }


# (layout, read, stack, tasks): none of these is a calibration measurement (different files,
# shapes, chunk shapes and read shapes from the calibrate study's)
CONFIGS = [
    ("contiguous", "xy", "netcdf4-python", 1), ("contiguous", "xt", "netcdf4-python", 1),
    ("contiguous", "xyt", "netcdf4-python", 1), ("contiguous", "stsa", "netcdf4-python", 1),
    ("contiguous", "xt", "h5py", 1), ("contiguous", "xy", "xarray", 1), ("contiguous", "xt", "c-netcdf", 1),
    ("contiguous", "stsa", "netcdf4-python", 2),
    ("xt", "xt", "netcdf4-python", 1), ("xt", "xy", "netcdf4-python", 1), ("xt", "stsa", "netcdf4-python", 1),
    ("xt", "xt", "h5py", 1), ("xt", "stsa", "netcdf4-python", 2),
    ("xy", "xy", "netcdf4-python", 1), ("xy", "xt", "netcdf4-python", 1), ("xy", "xyt", "h5py", 1),
    ("default", "xy", "netcdf4-python", 1), ("default", "xt", "netcdf4-python", 1),
    ("default", "xyt", "netcdf4-python", 1), ("default", "xt", "c-netcdf", 1),
    ("cube", "xt", "netcdf4-python", 1), ("cube", "xy", "xarray", 1),
    ("default+deflate4", "xy", "netcdf4-python", 1), ("default+deflate4", "xt", "netcdf4-python", 1),
    ("default+deflate4", "stsa", "netcdf4-python", 1), ("default+deflate4", "xt", "h5py", 1),
    ("default+deflate4", "xt", "netcdf4-python", 2),
    ("xt+deflate4", "xt", "netcdf4-python", 1), ("xt+deflate4", "stsa", "netcdf4-python", 1),
    ("xt+deflate4", "xy", "netcdf4-python", 1),
    ("cube+zstd3", "xt", "netcdf4-python", 1), ("cube+zstd3", "xyt", "h5py", 1),
]


def config_id(c) -> str:
    lay, read, stack, tasks = c
    return f"{lay}/{read}/{stack}/{tasks}t"


def run_validation(ctx, grid) -> int:
    pid = ctx.run.platform_id
    say = info if ctx.progress else (lambda *_: None)
    prof, warn = profmod.find(pid, grid.profile or None)
    if prof is None:
        raise InputError(f"no calibrated profile for this platform ({pid}): run `climio calibrate` first "
                         "(or give --profile)")
    if warn:
        say(warn)
    shape = tuple(grid.shape_list)
    lays = layouts(shape)
    d = os.path.join(ctx.data_dir, "predict")
    os.makedirs(d, exist_ok=True)
    words = [w.strip() for w in grid.only.split(",") if w.strip()]
    configs = [c for c in CONFIGS if not words or any(w in config_id(c) for w in words)]
    if not probes.available(probes.SLAB):
        configs = [c for c in configs if c[2] != "c-netcdf"]
    files = {}
    for name in sorted({c[0] for c in configs}):
        chunks, codec = lays[name]
        path = os.path.join(d, f"{name.replace('+', '-')}-{'x'.join(map(str, shape))}.nc")
        if not os.path.exists(path):
            say(f"predict: writing {name} {list(chunks) if chunks else 'contiguous'} {codec}")
            write_4d(path, shape, chunks=list(chunks) if chunks else "contiguous", compression=parse_compression(codec))
        files[name] = path
    n = 0
    t0 = time.perf_counter()
    for i, c in enumerate(configs, 1):
        name, read, stack, tasks = c
        lay, codec, var = layout_of(files[name], "ta")
        reads = reads_for(lay, read, var)
        p = predict(lay, reads, stack, prof, tasks=tasks, codec=codec if lay.compressed else "")
        needed = p.counts.cold_bytes()
        params = {"config": config_id(c), "layout": name, "chunks": list(lay.chunks) if lay.chunks else "contiguous",
                  "compression": codec, "read": read, "stack": stack, "tasks": tasks, "shape": list(shape),
                  "predicted_s": p.seconds, "predicted": {"io_s": p.io_s, "decode_s": p.decode_s, "cpu_s": p.cpu_s,
                                                          "bound": p.bound, "path": p.path},
                  "profile": prof.platform_id, "profile_source": prof.source}
        recs = measure(files[name], var, reads, stack, tasks, grid.reps, platform_id=pid, study=STUDY,
                       params=params, needed_bytes=int(needed))
        for r in recs:
            ctx.run.writer.write(r)
            n += 1
        meas = sorted(r["metrics"]["wall_s"] for r in recs)[len(recs) // 2]
        say(f"predict [{i}/{len(configs)}] {config_id(c)}: predicted {p.seconds:.3g} s, measured {meas:.3g} s "
            f"({p.seconds / meas:.2f}x)")
    say(f"predict: {len(configs)} configurations in {time.perf_counter() - t0:.0f} s")
    return n
