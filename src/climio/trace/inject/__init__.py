"""Python-level injection into a traced job (`climio trace try`, the object-store tracer).

The job's own Python imports `sitecustomize.py` from a scratch directory put first on its
PYTHONPATH (`install(dir)` copies this directory's modules there). That file is a dispatcher: each
feature is a small module here, enabled by its own environment variable (FEATURES). These modules
run inside the job's interpreter, which may not have climio: they import nothing of climio.
"""

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def install(scratch_dir) -> str:
    """Copy the dispatcher and its feature modules into `scratch_dir` (made if missing): the
    directory to put first on the job's PYTHONPATH."""
    os.makedirs(scratch_dir, exist_ok=True)
    for name in os.listdir(HERE):
        if name.endswith(".py") and name != "__init__.py":
            shutil.copyfile(os.path.join(HERE, name), os.path.join(scratch_dir, name))
    return str(scratch_dir)


def python_path(scratch_dir, existing=None) -> str:
    """PYTHONPATH with `scratch_dir` first (the job's own entries keep their order after it)."""
    return os.pathsep.join([str(scratch_dir), *[p for p in (existing or "").split(os.pathsep) if p]])
