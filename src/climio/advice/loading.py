"""What the pure model needs, loaded: a workflow file (YAML/JSON), the descriptions of its data
(climio.dataset.describe, once per file and variable) and the profile of this platform.

    load_workflow(path) -> Workflow        a YAML/JSON workflow file
    describe_workflow(wf) -> wf            every read's variable described into wf.described
    profile_for(path, profile, warn)       the Profile (climio.profiles.for_data); `warn(line)` hears which and why
"""

import json
from pathlib import Path

from climio.base.errors import DataError, InputError
from climio.dataset.description import describe
from climio import profiles
from ..model import workflow as wfmod
from ..model.profile import Profile


def load_workflow(path) -> "wfmod.Workflow":
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise DataError(f"cannot read workflow {p}: {exc.strerror}") from None
    try:
        if p.suffix.lower() == ".json":
            d = json.loads(text)
        else:
            import yaml
            d = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001  (json/yaml parse errors: one line)
        raise InputError(f"workflow {p} is not valid {'JSON' if p.suffix.lower() == '.json' else 'YAML'}: "
                         f"{str(exc).splitlines()[0]}") from None
    return wfmod.from_mapping(d, p.parent)


def describe_workflow(wf):
    """`wf` with every read's variable described (wf.described), each file and variable opened once."""
    for spec in wf.reads:
        key = wfmod.workflow_key(wf, spec)
        if key not in wf.described:
            wf.described[key] = describe(key[0] if key[0] is not None else wf.dataset, key[1], wf.endpoint_url)
    return wf



def profile_for(path=None, profile=None, warn=None) -> Profile:
    """The calibrated profile for the file system of `path` (or `profile`, a Profile or a path);
    `warn(line)` hears why another platform's profile or the defaults are used."""
    prof, line = profiles.for_data(path, profile)
    if line and warn:
        warn(line)
    return prof
