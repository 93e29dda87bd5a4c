"""The validation study of the read-time model (issues 15 and 26): configurations drawn with a
seed from a declared space (space.py: shape and dtype; chunk shapes including edge chunks and
lengths that do not divide the dimensions, or contiguous; deflate, zstd, shuffle or none; xy, xt,
xyt, sub-block count templates and the STSA read; every Python stack and c-netcdf; 1, 2 and 4
tasks; the chunk cache the stack defaults to or a size asked), each on a new file the calibration
never read, predicted from the platform's profile with the chunk cache the stack really has, its
chunk reads counted from HDF5 and its time measured cold; the median, 90th percentile and max of
|log(predicted / measured)| and the worst configurations with simulated against counted chunk
reads.

    space.py    the declared space and its seeded draw (pure)
    counts.py   chunk reads counted from the library (h5py on a counting file object)
    run.py      the files, predict + count + measure
    summary.py  errors per configuration, median / p90 / max factors, worst configurations (pure)
    section.py  the table in the report
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError

STUDY = "predict"
PRESETS = {
    "full": {"configs": 100, "seed": 1, "reps": 2, "max_s": 12.0, "only": ""},
    "quick": {"configs": 30, "seed": 1, "reps": 2, "max_s": 6.0, "only": ""},
}
PRESETS["survey"] = PRESETS["quick"]


@dataclass
class Grid:
    configs: int = field(default=100, metadata=option("--configs", "Configurations drawn from the declared space.", "N"))
    seed: int = field(default=1, metadata=option("--seed", "Seed of the draw (another seed, other configurations).", "N"))
    reps: int = field(default=2, metadata=option("--reps", "Cold repetitions per configuration.", "N"))
    max_s: float = field(default=12.0, metadata=option("--max-s", "Configurations predicted to take longer are not run (a dnf record says so).", "S"))
    only: str = field(default="", metadata=option("--only", "Run only configurations whose id contains one of these words (comma list).", "LIST"))
    profile: str = field(default="", metadata=option("--profile", "Profile to predict with (default: this platform's, from climio calibrate).", "FILE"))
    preset: str = "full"


def build_grid(preset="full", **values) -> Grid:
    if preset not in PRESETS:
        raise InputError(f"unknown preset '{preset}': choose from {', '.join(PRESETS)}")
    v = {"profile": "", **PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    try:
        configs, seed, reps, max_s = int(v["configs"]), int(v["seed"]), int(v["reps"]), float(v["max_s"])
    except (TypeError, ValueError):
        raise InputError("--configs, --seed and --reps take integers, --max-s seconds") from None
    if configs < 1 or reps < 1 or max_s <= 0 or seed < 0:
        raise InputError(f"--configs {configs} and --reps {reps} must be at least 1, --max-s {max_s:g} positive, "
                         f"--seed {seed} not negative")
    return Grid(configs=configs, seed=seed, reps=reps, max_s=max_s, only=str(v["only"] or ""),
                profile=str(v["profile"] or ""), preset=preset)


class Predict(base.Study):
    name = STUDY
    title = "Validation of the read-time model: predicted against measured on configurations not used to calibrate it."
    description = ("Configurations drawn with --seed from a declared space (shapes, dtypes, chunk shapes with edge "
                   "chunks, deflate/zstd/shuffle/none, xy/xt/xyt/sub-block/STSA reads, every stack, 1-4 tasks, default "
                   "or sized chunk cache), each predicted from the platform's profile (climio calibrate) with the "
                   "stack's real chunk cache, its chunk reads counted from HDF5, and measured cold.")
    Grid = Grid
    presets = PRESETS
    default_preset = "full"
    preset_help = {"quick": "30 configurations, two repetitions: a few minutes."}

    def run(self, ctx, grid) -> int:
        return self._part("run").run_validation(ctx, grid)   # by name, as base.Study.run: no import cycle

    def survey_grid(self, quick: bool):
        return None


base.register(Predict())
