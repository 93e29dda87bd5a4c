"""`climio survey`: every study that exists, at a size that runs on a laptop, into one run directory.

Each study contributes a step `step(run)`; later studies add themselves to STEPS.
"""

from .bench import read_stack as rs


def read_stack_step(data_dir, quick):
    preset = rs.PRESETS["quick" if quick else "survey"]

    def step(run):
        files = rs.prepare_files(size=preset["size"], data_dir=data_dir)
        grid = rs.grid_from_options(files, None, None, preset["buffers"], preset["reps"], "cold", preset["budget_s"])
        rs.run_study(run, files, grid)

    return step


STEPS = (read_stack_step,)


def survey_steps(data_dir, quick: bool) -> list:
    return [make(data_dir, quick) for make in STEPS]
