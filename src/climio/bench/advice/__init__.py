"""`climio bench advice`: is the advice right on real analysis jobs? (issue 35 item 5)

Eight analysis scripts (jobs/: xarray station series, a box-mean index, monthly and seasonal
climatologies with Dask, anomalies, a Hovmoeller, netCDF4-python point series, an h5py hyperslab
loop) run on a CMIP-style tas file in two layouts (one map per chunk, time-series chunks). For
each job x layout: `climio trace run` (cold), `climio trace report` (the item it ranks first,
recorded BEFORE anything is tried), `climio trace try --reps N` (every item's fixes, cold, the
baseline in the same rounds). The table: baseline, the first-ranked item's measured time, the
best tried item's, the conversion, predicted gain beside measured at P = 1 and P = 10. Targets:
the first-ranked item never slower than the baseline; its gain at least 80% of the best tried
item's at P = 10 on every job; a layout fix's predicted gain within 2x of the measured.

    data.py     the CMIP-style file in each layout
    jobs/       the analysis scripts (run as `python JOB.py FILE`, never imported)
    run.py      per job x layout: the three climio commands, one record
    outcome.py  (pure) the first-ranked fix, the best tried one and the predicted gains of a case
    summary.py  (pure) the table's rows and the three targets
    section.py  the report: targets first, then the table and every fix tried
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError
from .data import LAYOUTS
from .jobs import JOBS

STUDY = "advice"
PRESETS = {
    # three years of days on a 2-degree grid (71 MiB of float32): 20 minutes on 2 cores shared with
    # others (load 12-16), plus the anomalies on time-series chunks: xarray's groupby reads one day at
    # a time and the 67.7 MiB of decoded chunks overflow netCDF-C's 64 MiB default cache, so each of
    # the 1095 reads inflates the whole variable again (72.4 GiB, 148 s of CPU per run; 8-12 minutes
    # of wall at load 8-20). That is the case's point (the cache fix measured 150x, the rechunk 122x at
    # P=10); trace try runs one round there (every fix >= 3x: decisive), so the case costs the trace
    # run and one baseline run (21 minutes at load 8-17, against 26 and a timeout with two rounds).
    "full": {"days": 1095, "lat": 90, "lon": 180, "reps": 2, "jobs": list(JOBS), "layouts": list(LAYOUTS)},
    # one year on a 4-degree grid (6 MiB): every job and layout, one repetition, a few minutes
    "quick": {"days": 365, "lat": 45, "lon": 90, "reps": 1, "jobs": list(JOBS), "layouts": list(LAYOUTS)},
}
PRESETS["survey"] = PRESETS["quick"]


@dataclass
class Grid:
    days: int = field(default=1095, metadata=option("--days", "Days in the tas file (time steps).", "N"))
    lat: int = field(default=90, metadata=option("--lat", "Latitudes of the grid.", "N"))
    lon: int = field(default=180, metadata=option("--lon", "Longitudes of the grid.", "N"))
    jobs: list = field(default_factory=lambda: list(JOBS), metadata=option(
        "--job", f"An analysis job to run (repeatable; default all: {', '.join(JOBS)}).", "JOB", repeat=True))
    layouts: list = field(default_factory=lambda: list(LAYOUTS), metadata=option(
        "--layout", "A chunk layout of the file (repeatable): maps = [1,lat,lon], series = time-series chunks.",
        "LAYOUT", repeat=True))
    reps: int = field(default=2, metadata=option("--reps", "Cold runs of each fix and the baseline (trace try --reps).", "N"))
    seed: int = field(default=0, metadata=option("--seed", "Seed of the file's weather noise.", "N"))
    max_s: float = field(default=600.0, metadata=option(
        "--max-s", "A climio command (trace run / report / try) running longer is stopped: the case is an error.", "S"))
    preset: str = "full"


def _names(values, known, what) -> list:
    values = [values] if isinstance(values, str) else list(values)
    names = [s.strip() for v in values for s in str(v).split(",") if s.strip()]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise InputError(f"unknown {what} '{bad[0] if bad else ''}': choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def build_grid(preset="full", **values) -> Grid:
    v = base.checked_values(STUDY, Grid, PRESETS, preset, values)
    v = {"seed": 0, "max_s": 600.0, **PRESETS[preset], **{k: x for k, x in v.items() if x is not None and x != []}}
    try:
        days, lat, lon, reps, seed, max_s = (int(v["days"]), int(v["lat"]), int(v["lon"]), int(v["reps"]),
                                             int(v["seed"]), float(v["max_s"]))
    except (TypeError, ValueError):
        raise InputError("--days, --lat, --lon, --reps and --seed take integers, --max-s seconds") from None
    if days < 60 or lat < 20 or lon < 36 or reps < 1 or max_s <= 0:
        raise InputError(f"need --days >= 60, --lat >= 20, --lon >= 36 (the jobs' boxes and months), --reps >= 1 "
                         f"and --max-s > 0 (got {days}, {lat}, {lon}, {reps}, {max_s:g})")
    return Grid(days, lat, lon, _names(v["jobs"], JOBS, "--job"), _names(v["layouts"], LAYOUTS, "--layout"),
                reps, seed, max_s, preset)


class AdviceStudy(base.Study):
    name = STUDY
    title = "Advice tried on real analysis jobs: the first-ranked fix against the best measured one."
    description = ("Eight analysis scripts on a CMIP-style file in two layouts: each traced (climio trace run), "
                   "reported (the first-ranked item recorded before trying) and tried (climio trace try, cold, "
                   "baseline in the same rounds). Targets: the first item never slower than the baseline, its "
                   "gain >= 80% of the best tried item's at P=10 on every job, a layout fix's predicted gain "
                   "within 2x of the measured.")
    Grid = Grid
    presets = PRESETS
    in_survey = False
    preset_help = {"quick": "One year on a 4-degree grid, one repetition: every job and layout in a few minutes."}

    def run(self, ctx, grid) -> int:
        return self._part("run").run_advice(ctx, grid)


base.register(AdviceStudy())
