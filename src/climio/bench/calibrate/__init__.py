"""The calibration study (issue 15): measure the rates the read-time model needs, on the file
system where the data lives, and write the platform's profile.

    run.py      storage latency and rate against request size (sequential, strided, page cache),
                per stack the library costs (per call, per run, per chunk, copying, open, chunk
                cache), decode rates per codec, the chunk-cache effect, parallel scaling
    codecs.py   what the conversion planner needs: chunk writes of a new file, and the
                converter's (climio rechunk's) encode and decode rates per codec
    summary.py  the profile fitted from the records (pure: climio.model.fit.fit)
    section.py  the profile in the report

`climio calibrate` runs it (about 5 minutes; --quick about 1) and saves the profile under
~/.cache/climio/profiles/<platform_id>.json and in the run directory (profile.json).
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError
from climio.machine.memory import core_counts
from climio.dataset.stack_names import HYPERSLAB_STACKS

STUDY = "calibrate"
CALIBRATED_STACKS = HYPERSLAB_STACKS
PRESETS = {
    "full": {"size": "512MiB", "stacks": "netcdf4-python,h5py,h5netcdf,xarray,c-netcdf",
             "codecs": "deflate1,deflate4+shuffle,zstd3", "reps": 5, "tasks": "oversubscribe"},
    # quick calibrates every stack and codec family the validation (climio bench predict) draws
    "quick": {"size": "64MiB", "stacks": "netcdf4-python,h5py,h5netcdf,xarray,c-netcdf",
              "codecs": "deflate1,deflate4+shuffle,zstd3",
              "reps": 3, "tasks": ""},
}
PRESETS["survey"] = PRESETS["quick"]


@dataclass
class Grid:
    size: str = field(default="512MiB", metadata=option("--size", "Bytes of the raw file the storage curves read.", "SIZE"))
    stacks: str = field(default="", metadata=option("--stacks", f"Stacks to calibrate: {', '.join(CALIBRATED_STACKS)}.", "LIST"))
    codecs: str = field(default="", metadata=option("--codecs", "Codecs whose decode rate is measured, e.g. deflate4+shuffle,zstd3.", "LIST"))
    reps: int = field(default=3, metadata=option("--reps", "Repetitions per measurement.", "N"))
    tasks: str = field(default="", metadata=option("--tasks", "Task counts for the parallel scaling (default 1, 2, 4 ... up to the cores).", "LIST"))
    preset: str = "full"
    size_bytes: int = 0
    stack_list: list = None
    codec_list: list = None
    task_list: list = None


def build_grid(preset="full", **values) -> Grid:
    from climio.dataset.options import parse_compression
    from climio.dataset.options import parse_int_list
    from climio.dataset.options import parse_size
    values = base.checked_values("calibrate", Grid, PRESETS, preset, values)
    v = {**PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    size = parse_size(str(v["size"]))
    if size < 8 << 20:
        raise InputError(f"--size {v['size']} is too small: the storage curves need at least 8 MiB")
    stacks = [s.strip() for s in str(v["stacks"]).split(",") if s.strip()]
    bad = [s for s in stacks if s not in CALIBRATED_STACKS]
    if bad or not stacks:
        raise InputError(f"unknown stack '{(bad or [''])[0]}': use {', '.join(CALIBRATED_STACKS)}")
    codecs = [parse_compression(c).label for c in str(v["codecs"]).split(",") if c.strip()]
    text = str(v["tasks"]).strip()
    if text == "oversubscribe":     # the cores and twice the cores (tasks sharing cores)
        tasks = core_counts() + [2 * core_counts()[-1]]
    else:
        tasks = parse_int_list(text, "--tasks") if text else core_counts()
    reps = int(v["reps"])
    if reps < 1:
        raise InputError(f"--reps {reps} must be at least 1")
    return Grid(size=str(v["size"]), stacks=",".join(stacks), codecs=",".join(codecs), reps=reps,
                tasks=",".join(map(str, tasks)), preset=preset, size_bytes=size, stack_list=stacks,
                codec_list=codecs, task_list=sorted({1, *tasks}))


class Calibrate(base.Study):
    name = STUDY
    title = "Calibration of the read-time model: storage, library, decode and parallel rates."
    description = ("Storage latency and rate against request size (sequential, strided, page cache), per stack the "
                   "library's per-call, per-run and per-chunk costs, decode rates per codec, the chunk-cache effect "
                   "and parallel scaling; fitted into the platform's profile (climio predict / advise use it).")
    Grid = Grid
    presets = PRESETS
    in_survey = False
    preset_help = {"quick": "About a minute: a 64 MiB file, fewer stacks and codecs.",
                   "full": "About five minutes (the default)."}


    def run(self, ctx, grid) -> int:
        return self._part("run").run_calibration(ctx, grid)   # by name, as base.Study.run: no import cycle


base.register(Calibrate())
