"""The validation study of the read-time model (issue 15): configurations the calibration never
measured (layouts x read shapes x compression x stacks x task counts, including partial-chunk
compressed reads and the STSA read pattern), each predicted from the platform's profile and
then measured cold; per configuration and overall the median and 90th percentile of
|log(predicted / measured)|, next to the thesis's flowchart (4.7x optimistic for the STSA read).

    run.py      the files, the configurations, predict + measure
    summary.py  errors per configuration, median / p90 factors, worst configurations (pure)
    section.py  the table in the report
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from ...errors import InputError

STUDY = "predict"
PRESETS = {
    "full": {"shape": "64,8,96,192", "reps": 3, "only": ""},
    "quick": {"shape": "32,6,64,160", "reps": 2, "only": ""},
}
PRESETS["survey"] = PRESETS["quick"]


@dataclass
class Grid:
    shape: str = field(default="64,8,96,192", metadata=option("--shape", "Shape T,Z,Y,X of the generated f8 variable.", "SHAPE"))
    reps: int = field(default=3, metadata=option("--reps", "Cold repetitions per configuration.", "N"))
    only: str = field(default="", metadata=option("--only", "Run only configurations whose id contains one of these words (comma list).", "LIST"))
    profile: str = field(default="", metadata=option("--profile", "Profile to predict with (default: this platform's, from climio calibrate).", "FILE"))
    preset: str = "full"
    shape_list: list = None


def build_grid(preset="full", **values) -> Grid:
    from ...options import parse_shape
    if preset not in PRESETS:
        raise InputError(f"unknown preset '{preset}': choose from {', '.join(PRESETS)}")
    v = {"profile": "", **PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    shape = parse_shape(str(v["shape"]))
    if len(shape) != 4 or shape[0] < 8 or shape[1] < 2 or shape[2] < 16 or shape[3] < 32:
        raise InputError(f"--shape {v['shape']}: need T,Z,Y,X with T >= 8, Z >= 2, Y >= 16, X >= 32")
    reps = int(v["reps"])
    if reps < 1:
        raise InputError(f"--reps {reps} must be at least 1")
    return Grid(shape=str(v["shape"]), reps=reps, only=str(v["only"] or ""), profile=str(v["profile"] or ""),
                preset=preset, shape_list=list(shape))


class Predict(base.Study):
    name = STUDY
    title = "Validation of the read-time model: predicted against measured on configurations not used to calibrate it."
    description = ("About 32 configurations (contiguous, x-t, x-y, library-default and cube chunks; deflate and zstd; "
                   "xy, xt, xyt and the STSA read; netcdf4-python, h5py, xarray, c-netcdf; 1 and 2 tasks), predicted "
                   "from the platform's profile (climio calibrate) and measured cold.")
    Grid = Grid
    presets = PRESETS
    default_preset = "full"
    preset_help = {"quick": "A smaller variable (15 MiB) and two repetitions: a few minutes."}


    def run(self, ctx, grid) -> int:
        from .run import run_validation
        return run_validation(ctx, grid)

    def survey_grid(self, quick: bool):
        return None


base.register(Predict())
