"""The read-stack study (thesis ch. 3): serial read rate through the software stack, for layers
x patterns x buffer sizes, cold cache.

    grid.py     the Grid (its fields' option() metadata are `climio bench read-stack`'s options),
                the presets and the checks
    run.py      files, the strace pass and the timed pass (C probes and the Python worker)
    summary.py  series, profile classes, syscall table, facts (pure; records only)
    section.py  the report's section and key findings (climio.present.sections objects)
    figures.py  rate vs buffer, wall vs CPU, syscall sizes (PNG bytes)

From Python:

    from climio.bench.read_stack import study
    grid = study.grid("quick", stacks="c-posix,netcdf4-python")
    study.run(RunContext(run, data_dir), grid)          # run: an open climio.runs.rundir.RunDir

Importing this package is cheap: measuring code and matplotlib are imported when used.
"""

from .. import base
from .grid import PRESETS, Grid, build_grid  # noqa: F401  (build_grid: Study.grid finds it here)

STUDY = "read-stack"


class ReadStack(base.Study):
    name = STUDY
    title = "Serial read rate through the software stack (thesis ch. 3): layers x patterns x buffer sizes."
    description = ("Without --file/--bin-file, a 1-D float64 netCDF-4 file and a binary file holding the same "
                   "random numbers are generated at --size. Without --quick/--full the grid is the survey's "
                   "(128 MiB files, buffers 512 B..128 MiB in x4 steps, 3 cold repetitions).")
    Grid = Grid
    presets = PRESETS
    default_preset = "survey"
    preset_help = {"full": "The thesis's grid: 512 B to 1 GiB on a 1 GiB file.",
                   "quick": "A small grid that finishes in about a minute."}



study = base.register(ReadStack())
