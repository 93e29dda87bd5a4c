"""Rules of the tree that grew out of true when later work added to it: every top-level module of
climio has a place in pyproject.toml's import-linter picture (a layer: cli, api, report, the
studies, model; or the core list), so a new core module cannot slip past the "core imports no
study" contract unchecked; and no function over 80 lines lacks a `# long:` reason."""

import ast
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


LONG = 80


def long_functions_without_a_reason(root: Path) -> list:
    """Functions over LONG lines under `root` with no `# long:` comment from the line above the def
    (or its decorators) to the third line of its body after the docstring."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.end_lineno - node.lineno + 1 <= LONG:
                continue
            top = min([d.lineno for d in node.decorator_list] + [node.lineno])
            body0 = node.body[0]
            docstring = isinstance(body0, ast.Expr) and isinstance(body0.value, ast.Constant) \
                and isinstance(body0.value.value, str)
            first = body0.end_lineno + 1 if docstring else body0.lineno
            near = lines[max(top - 2, 0):first + 2]     # 1-based line numbers
            if not any(line.strip().startswith("# long:") for line in near):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    return out


def test_no_long_function_without_a_reason():
    assert long_functions_without_a_reason(ROOT / "src" / "climio") == []
    assert long_functions_without_a_reason(ROOT / "bench") == []
