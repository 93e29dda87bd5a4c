"""The STSA study (thesis ch. 6, Table 6.1): a real analysis -- Hayashi space-time spectra of every
latitude and level, split into latitude tasks on Dask workers -- reading one [t, z, y, x] variable
from different layouts: contiguous, the library's default chunks, x-t chunks, and compressed
default and x-t chunks; x worker counts x I/O only vs I/O + spectra, repeated from a cold cache.

    run.py       the layout files and the measuring loop (records into the run directory)
    summary.py   Table 6.1 rows, speed-ups and the checks of findings F12-F18 (pure)
    section.py   the report's section and key findings (climio.present.sections objects)
    figures.py   Figs 6.3-6.5 equivalents (PNG)

`climio bench stsa` is built from Grid's field metadata (climio.bench.base.option).
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError
from climio.machine.memory import core_counts
from .summary import STUDY

LAYOUT_LABELS = ("contiguous", "default", "xt")
STSA_MODES = ("io", "cpu")
PRESETS = {
    # x-t slabs of 240 x 1024 float64 (the thesis's 1.97 MB, 8 KiB pieces in a contiguous file)
    "full": {"shape": "240,10,64,1024", "layouts": "contiguous,default,xt,default+deflate4,xt+deflate4",
             "workers": "", "modes": "io,cpu", "reps": 3, "tasks": 16},
    "survey": {"shape": "96,4,32,1024", "layouts": "contiguous,default,xt,default+deflate4,xt+deflate4",
               "workers": "", "modes": "io,cpu", "reps": 2, "tasks": 16},
    "quick": {"shape": "48,2,16,512", "layouts": "contiguous,default,xt,default+deflate4",
              "workers": "1,2", "modes": "io,cpu", "reps": 1, "tasks": 8},
}


@dataclass
class Grid:
    shape: list = field(default=None, metadata=option(
        "--shape", "Generated variable T,Z,Y,X (default 240,10,64,1024; the thesis read 240,40,768,1024 of u).",
        "SHAPE"))
    layouts: list = field(default=None, metadata=option(
        "--layouts", "Layouts: contiguous, default (library chunks), xt ([T,1,1,X] chunks), each optionally "
        "+COMPRESSION (e.g. default+deflate4, xt+deflate1+shuffle); comma separated.", "LIST"))
    workers: list = field(default=None, metadata=option(
        "--workers", "Worker counts, e.g. 1,2,4 (default: 1, 2, 4, ... up to the cores, and the cores).", "LIST"))
    modes: list = field(default=None, metadata=option(
        "--modes", "io (read only) and/or cpu (read + Hayashi spectra), comma separated.", "LIST"))
    reps: int = field(default=3, metadata=option("--reps", "Cold repetitions per configuration (default 3).", "N"))
    tasks: int = field(default=16, metadata=option("--lat-tasks", "Latitude tasks per job (the thesis's 16); processes are --workers.", "N", deprecated=("--tasks",)))
    read_plan: str = field(default="latitude", metadata=option(
        "--read-plan", "How a task reads: latitude (the thesis's: one (t, x) slab per latitude and level, the "
        "default here) or runs (climio stsa's: one read per run of rows, chunk cache sized to the task).", "PLAN"))
    source: str = field(default="", metadata=option(
        "--source", "Use a real 4-D variable FILE:VAR (its values, shape and type) instead of generated data (not "
        "with --shape).",
        "FILE:VAR"))
    layout_specs: list = field(default_factory=list)   # [(label, chunk label, compression text)]
    dtype: str = "f8"
    preset: str = "full"

    def runs(self) -> int:
        return len(self.layout_specs) * len(self.workers) * len(self.modes) * self.reps


def _read_plan(text) -> str:
    from ...stsa.readplan import READ_PLANS
    if text not in READ_PLANS:
        raise InputError(f"unknown --read-plan '{text}': choose from {', '.join(READ_PLANS)}")
    return text


def build_grid(preset="full", **values) -> Grid:
    from climio.dataset.options import parse_choice, parse_count, parse_int_list, parse_layouts, parse_shape
    values = base.checked_values("stsa", Grid, PRESETS, preset, values)
    if values.get("source") and values.get("shape") is not None:
        raise InputError("--source takes the shape of its variable: not with --shape")
    v = {"source": "", **PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    text = {k: ",".join(map(str, x)) if isinstance(x, (list, tuple)) else x for k, x in v.items()}
    source, dtype = str(v["source"] or ""), "f8"
    if source:
        from .run import open_source
        shape, dtype, _ = open_source(source)
    else:
        shape = parse_shape(text["shape"])
    if shape[2] < 2 or shape[3] < 4:
        raise InputError(f"shape {shape}: need at least 2 latitudes and 4 longitudes")
    workers = parse_int_list(text["workers"], "--workers") if str(text["workers"]).strip() else core_counts()
    return Grid(shape=shape, layouts=text["layouts"], workers=sorted(dict.fromkeys(workers)),
                modes=parse_choice(text["modes"], STSA_MODES, "mode"), reps=parse_count(v["reps"], "--reps"),
                tasks=parse_count(v["tasks"], "--tasks"), read_plan=_read_plan(v.get("read_plan", "latitude")), source=source, layout_specs=parse_layouts(text["layouts"], LAYOUT_LABELS),
                dtype=dtype, preset=preset)


class Stsa(base.Study):
    name = STUDY
    title = "STSA (Hayashi spectra) on Dask: layouts x workers x I/O only vs I/O + compute (thesis ch. 6, Table 6.1)."
    description = ("Every latitude and level of a [t,z,y,x] variable is read as (t, x) slabs by latitude tasks on a "
                   "Dask LocalCluster and (mode cpu) turned into Hayashi spectra; per-task wall and CPU of read and "
                   "compute, the job wall and the equivalent read rate, from a cold page cache.")
    Grid = Grid
    presets = PRESETS


study = base.register(Stsa())
