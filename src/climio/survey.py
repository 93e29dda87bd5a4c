"""`climio survey`: every study that exists, at a size that runs on a laptop, into one run directory.

Each study contributes a step `step(run)`; later studies add themselves to STEPS.
"""

import os

from .bench import chunking as ck
from .bench import read_stack as rs


def read_stack_step(data_dir, quick):
    preset = rs.PRESETS["quick" if quick else "survey"]

    def step(run):
        files = rs.prepare_files(size=preset["size"], data_dir=data_dir)
        grid = rs.grid_from_options(files, None, None, preset["buffers"], preset["reps"], "cold", preset["budget_s"])
        rs.run_study(run, files, grid)

    return step


def chunking_step(data_dir, quick):
    def step(run):
        grid = ck.build_grid(preset="quick" if quick else "survey")
        layouts_dir = os.path.join(data_dir, "chunking")
        ck.check_space(grid, data_dir)
        ck.run_study(run, grid, layouts_dir)

    return step


STEPS = (read_stack_step, chunking_step)


def survey_steps(data_dir, quick: bool) -> list:
    return [make(data_dir, quick) for make in STEPS]
