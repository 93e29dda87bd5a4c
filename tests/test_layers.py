"""Every top-level module of climio has a place in pyproject.toml's import-linter picture: a layer
(cli, api, report, the studies, model) or the core list, so a new core module cannot slip past the
"core imports no study" contract unchecked."""

import pkgutil
import tomllib
from pathlib import Path

import climio

ROOT = Path(__file__).resolve().parents[1]


def test_every_top_level_module_is_a_layer_or_core():
    contracts = {c["name"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}
    layers = {m.strip() for layer in contracts["cli and api > report > studies (independent siblings) > model"]["layers"]
              for m in layer.split("|")}
    core = contracts["the core imports no study, report or command"]
    top = {f"climio.{m.name}" for m in pkgutil.iter_modules(climio.__path__)}
    assert not layers & set(core["source_modules"])
    assert top - layers - set(core["source_modules"]) == set()      # every module placed
    assert set(core["source_modules"]) <= top                         # and no stale name
    assert layers - {"climio.model"} <= set(core["forbidden_modules"])  # the core imports none above it
