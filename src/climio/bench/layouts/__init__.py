"""One layout for several read patterns, checked by measurement (issue 26, part 3; the thesis's
open problem). For each mix of read patterns (xy-only, xt-only, 30:5, 1:1, 5:30 and one with a
whole-field read), the model's layout search (climio.model.layout_search, what `climio advise
--read xy --passes 30 --read xt --passes 5` runs) picks the chunk shape that minimises the mix's
predicted reads plus the one-off conversion. The study then converts the file with `climio
rechunk` to that shape and to every shape of a measured grid (contiguous, the library's default,
Rew's balanced shape, each pattern's best, each mix's top 3 and the file as it is), reads every
pattern cold on each, and compares the advised shape's measured total (its passes x the measured
read times + the measured conversion) with the best measured total of the grid.

    run.py      the source file, the searches, the conversions and the cold reads
    summary.py  per mix: advised against measured best, the library default's total (pure)
    section.py  the table, the figure and the findings in the report
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError
from climio.dataset.options import parse_shape

STUDY = "layouts"
DEFAULT_MIXES = ("xy:1", "xt:1", "xy:30,xt:5", "xy:1,xt:1", "xy:5,xt:30", "xy:3,xt:3,xyt:1")
PRESETS = {
    "full": {"shape": "1440,1,64,128", "reps": 3, "max_s": 20.0, "mixes": list(DEFAULT_MIXES)},
    # quick: three mixes of a 2 MiB variable, for a look at the report (the full run checks the target)
    "quick": {"shape": "240,1,32,64", "reps": 2, "max_s": 8.0, "mixes": ["xy:1", "xt:1", "xy:30,xt:5"]},
}
PRESETS["survey"] = PRESETS["quick"]
MIN_SHAPES = 12


@dataclass
class Grid:
    shape: str = field(default="1440,1,64,128", metadata=option(
        "--shape", "The source variable's shape T,Z,Y,X (float32, chunked one map per time step).", "SHAPE"))
    compression: str = field(default="deflate1", metadata=option(
        "--compression", "The source's compression (the converted files keep it): none, deflateN[+shuffle], zstdN.",
        "SETTING"))
    mixes: list = field(default_factory=lambda: list(DEFAULT_MIXES), metadata=option(
        "--mix", "A mix of read patterns with their passes, e.g. xy:30,xt:5 (repeatable; default six mixes).",
        "MIX", repeat=True))
    stack: str = field(default="netcdf4-python", metadata=option("--stack", "The stack that reads.", "STACK"))
    reps: int = field(default=3, metadata=option("--reps", "Cold repetitions of each read pattern on each shape.", "N"))
    max_s: float = field(default=20.0, metadata=option(
        "--max-s", "A pattern predicted to take longer per pass on a shape is not read there (a dnf record).", "S"))
    profile: str = field(default="", metadata=option(
        "--profile", "Profile to search with (default: this platform's, from climio calibrate).", "FILE"))
    preset: str = "full"
    dims: tuple = ()
    mix_list: list = field(default_factory=list)    # [(name, [(pattern, passes)])]


def parse_mix(text: str) -> tuple:
    """'xy:30,xt:5' -> ('xy:30,xt:5', [('xy', 30), ('xt', 5)]); a pattern without ':N' is one pass."""
    parts = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, n = item.partition(":")
        try:
            passes = int(n) if n else 1
        except ValueError:
            raise InputError(f"--mix {text}: passes of {name} must be an integer, not '{n}'") from None
        if passes < 1:
            raise InputError(f"--mix {text}: passes of {name} must be at least 1")
        if name not in ("xy", "xt", "xyt"):
            raise InputError(f"--mix {text}: read patterns are xy, xt and xyt, not '{name}'")
        parts.append((name, passes))
    if not parts or len({p for p, _ in parts}) != len(parts):
        raise InputError(f"--mix {text}: give each of xy, xt, xyt at most once, at least one of them")
    return ",".join(f"{p}:{n}" for p, n in parts), parts


def build_grid(preset="full", **values) -> Grid:
    v = base.checked_values(STUDY, Grid, PRESETS, preset, values)
    v = {"compression": "deflate1", "stack": "netcdf4-python", "profile": "",
         **PRESETS[preset], **{k: x for k, x in v.items() if x is not None and x != []}}
    dims = tuple(parse_shape(str(v["shape"])))
    try:
        reps, max_s = int(v["reps"]), float(v["max_s"])
    except (TypeError, ValueError):
        raise InputError("--reps takes an integer, --max-s seconds") from None
    if reps < 1 or max_s <= 0:
        raise InputError(f"--reps {reps} must be at least 1 and --max-s {max_s:g} positive")
    mixes = v["mixes"] if isinstance(v["mixes"], (list, tuple)) else [v["mixes"]]
    mix_list = [parse_mix(m) for m in mixes]
    return Grid(shape=str(v["shape"]), compression=str(v["compression"]), mixes=[m for m, _ in mix_list],
                stack=str(v["stack"]), reps=reps, max_s=max_s, profile=str(v["profile"] or ""), preset=preset,
                dims=dims, mix_list=mix_list)


class Layouts(base.Study):
    name = STUDY
    title = "One layout for several read patterns: the advised chunk shape against the measured best."
    description = ("For each mix of read patterns the model's layout search (climio advise --read ... --passes ...) "
                   "picks a chunk shape; the file is converted with climio rechunk to it and to a grid of at least 12 "
                   "shapes (contiguous, library default, Rew's balanced, each pattern's best, each mix's top 3, the "
                   "file as it is), every pattern is read cold on each, and the advised shape's measured reads + "
                   "conversion is compared with the measured best (target: within 1.15x).")
    Grid = Grid
    presets = PRESETS
    in_survey = False
    preset_help = {"quick": "Three mixes of a 2 MiB variable, two repetitions: about a minute."}

    def run(self, ctx, grid) -> int:
        return self._part("run").run_layouts(ctx, grid)   # by name, as base.Study.run: no import cycle


base.register(Layouts())
