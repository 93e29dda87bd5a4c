"""`climio survey`: every study that exists, at a size that runs on a laptop, into one run directory.

Each study contributes a step `step(run)`; later studies add themselves to STEPS.
"""

import os

from .bench import chunking as ck
from .bench import parallel_write as pw
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


def parallel_write_step(data_dir, quick):
    """benchio and the model-output emulator with 2 and 4 ranks, every backend and strategy."""
    preset = "quick" if quick else "survey"

    def step(run):
        from .launcher import Launcher
        for mode in pw.MODES:
            pw.run_study(run, pw.build_grid(mode, preset=preset), data_dir, Launcher(timeout_s=900))

    return step


STEPS = (read_stack_step, chunking_step, parallel_write_step)


def survey_steps(data_dir, quick: bool) -> list:
    return [make(data_dir, quick) for make in STEPS]
