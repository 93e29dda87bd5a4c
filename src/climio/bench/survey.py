"""`climio survey`: every registered study at a laptop size, into one run directory."""

import os

from . import base, registry


def survey_steps(quick: bool) -> list:
    """One step per registered study whose survey_grid is not None; each generates its data in a
    directory of its own under the run's data directory."""
    steps = []
    for study in registry.studies():
        grid = study.survey_grid(quick)
        if grid is None:
            continue

        def step(ctx, study=study, grid=grid):
            sub = os.path.join(ctx.data_dir, study.name)
            os.makedirs(sub, exist_ok=True)
            study.check(grid, sub)
            study.run(base.RunContext(ctx.run, sub, ctx.progress), grid)

        steps.append(step)
    return steps
