"""Rules of the tree that grew out of true when later work added to it: every top-level module of
climio has a place in pyproject.toml's import-linter picture (a layer: cli, api, report, the
studies, model; or the core list), so a new core module cannot slip past the "core imports no
study" contract unchecked; no function over 80 lines lacks a `# long:` reason; and the model touches no file (import-linter
cannot forbid open() or pathlib's reads, so this greps climio/model for them)."""

import ast
import pkgutil
import tomllib
from pathlib import Path

import climio

ROOT = Path(__file__).resolve().parents[1]


def test_every_top_level_module_is_a_layer_or_core():
    contracts = {c["name"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}
    layers = {m.strip() for layer in contracts["cli and api > report > studies (independent siblings) > profiles on disk > model"]["layers"]
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


# The layers of the whole package, lowest first (pyproject.toml's contracts, as one list): an import
# from a module to one in a higher layer runs up the layers.
LAYERS = ("climio.base", "climio.machine", "climio.runs", "climio.stores", "climio.dataset", "climio.measure",
          "climio.rules | climio.data | climio.present", "climio.model", "climio.profiles",
          "climio.bench | climio.rechunking | climio.trace | climio.stsa | climio.advice",
          "climio.report", "climio.api", "climio.cli")
MAX_CYCLES, MAX_UPWARD = 2, 10     # issue 34's targets: 7 cycles and 26 upward imports before it


def _graph() -> dict:
    import grimp
    g = grimp.build_graph("climio", cache_dir=None)
    return {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}


def import_cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n[0]; n[0] += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        x = stack.pop(); on.discard(x); comp.add(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = n[0]; n[0] += 1; stack.append(w); on.add(w)
                work.append((w, iter(sorted(graph.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def _layer(module: str):
    found = None
    for i, layer in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in (s.strip() for s in layer.split("|"))):
            found = i
    return found


def upward_imports(graph: dict) -> list:
    return sorted((a, b) for a, deps in graph.items() for b in deps
                  if _layer(a) is not None and _layer(b) is not None and _layer(b) > _layer(a))


def test_import_cycles_counted():
    assert import_cycles({"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"d"}}) == [["a", "b"]]


def test_few_import_cycles_and_few_imports_up_the_layers():
    graph = _graph()
    cycles, up = import_cycles(graph), upward_imports(graph)
    assert len(cycles) <= MAX_CYCLES, cycles
    assert len(up) <= MAX_UPWARD, up


# file and environment access the pure model must not make (issue 34, item 6): its profiles are
# read and written by climio.profiles, the rechunk planner's defaults (memory, workers, the page
# cache) asked of the kernel by climio.machine.memory and passed in. One exception, named: the built-in
# default profile (used when nothing is calibrated) takes this machine's core count
FILE_ACCESS = ("open(", "sched_getaffinity(", "cpu_count(", ".read_text(", ".write_text(", ".read_bytes(", ".write_bytes(", "Path.home(", "os.environ",
               ".glob(", "os.replace(", ".mkdir(", "json.load(", "json.dump(", "yaml.")
MODEL_EXCEPTIONS = {("profile.py", "os.cpu_count()")}


def test_the_model_touches_no_file():
    found = []
    for path in sorted((ROOT / "src" / "climio" / "model").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            for pat in FILE_ACCESS:
                if pat in code and not any(path.name == f and ex in code for f, ex in MODEL_EXCEPTIONS):
                    found.append(f"{path.name}:{n}: {line.strip()}")
    assert found == []
