"""The Study contract and the registry: a study is one package and one line in _load.

A study declares (the shape of IOR's `ior_aiori_t`: one object per backend, options in a table):

    name      "read-stack"; the CLI command is `climio bench NAME`, records carry study=NAME
    title     one line for `climio bench --help` and the report's heading
    Grid      a dataclass: every field whose metadata comes from `option(...)` is a CLI option
              (flag, help, metavar); the rest are derived when the grid is built
    presets   {"full": {...}, "survey": {...}, "quick": {...}}: defaults of the Grid's fields
    grid(preset, **values) -> Grid      parse and check the user's values (one-line InputError)
    run(ctx, grid) -> int               measure into ctx.run (an open RunDir); records written
    summarise(records) -> dict          pure: numbers from records (the predictor reads these too)
    section(records) -> Section         figures and tables as data (climio.present.sections)
    findings(records) -> [Finding]      the key findings this study contributes to the report
    headline(records) -> Headline|None  its rows of the report's first-screen summary table, its key
                                        figure and what would decide its undecided findings

`climio bench`, `climio survey` and `climio report` iterate `studies()`; nothing else lists them.
"""

import dataclasses
import importlib
import sys
from dataclasses import dataclass
from typing import Any, Optional

from climio.base.errors import InputError

_REGISTRY = {}


@dataclass(frozen=True)
class Opt:
    """A Grid field's command-line form."""

    flag: str                      # "--buffers"; "--odirect/--no-odirect" for a switch pair
    help: str
    metavar: Optional[str] = None  # SIZE, LIST, SHAPE, N, SECONDS, FILE, DIR ...
    short: Optional[str] = None
    repeat: bool = False           # may be given several times (a list of values)
    deprecated: tuple = ()         # old spellings ("--cache",): hidden, still work, print a note


def option(flag, help, metavar=None, short=None, repeat=False, deprecated=()) -> dict:
    """Field metadata making a Grid field a CLI option: `field(default=..., metadata=option(...))`.

    The CLI parses a value by the field's type (int, float, bool, Path, else text); a field with
    metavar SIZE is passed as text ("4KiB") for the study's grid() to parse, as are lists.
    `deprecated` names old spellings of the flag kept for one release: hidden in --help, they set
    the same field and print a one-line note (giving both the old and the new one is an error)."""
    return {"climio": Opt(flag, help, metavar, short, repeat, tuple(deprecated))}


def options_of(grid_cls) -> list:
    """[(field, Opt)] of the Grid's fields that are CLI options, in declaration order."""
    return [(f, f.metadata["climio"]) for f in dataclasses.fields(grid_cls) if "climio" in f.metadata]


def keyword_of(flag: str) -> str:
    """The Python keyword of a flag: --page-cache -> page_cache, --odirect/--no-odirect -> odirect."""
    return flag.split("/")[0].lstrip("-").replace("-", "_")


def rename_deprecated(grid_cls, values) -> dict:
    """`values` (a grid()'s keyword arguments) with those given under another name of a field
    moved to it: a deprecated option's (--caches: caches=) or, when the flag was renamed from the
    field's own name, the new flag's (--layers became --stacks: stacks= sets layers). Two names
    at once is an InputError."""
    values = dict(values)
    fields = {f.name for f, _ in options_of(grid_cls)}
    for f, opt in options_of(grid_cls):
        renamed = any(keyword_of(old) == f.name for old in opt.deprecated)
        for old in ((opt.flag,) if renamed else ()) + opt.deprecated:
            kw = keyword_of(old)
            if kw in fields or kw not in values:
                continue
            value = values.pop(kw)
            if value is None:
                continue
            if values.get(f.name) is not None:
                raise InputError(f"{kw} is {'the old name' if old in opt.deprecated else 'another name'} of "
                                 f"{f.name}: give one")
            values[f.name] = value
    return values


def checked_values(study: str, grid_cls, presets, preset, values, also=()) -> dict:
    """What every study's build_grid checks first: a known preset, deprecated option names moved
    to their fields (rename_deprecated), and no name that is not an option of the Grid (or in
    `also`). Returns the values; InputError naming the bad preset or names."""
    if preset not in presets:
        raise InputError(f"unknown preset '{preset}': choose from {', '.join(presets)}")
    values = rename_deprecated(grid_cls, values)
    names = {f.name for f, _ in options_of(grid_cls)} | set(also)
    unknown = sorted(set(values) - names)
    if unknown:
        raise InputError(f"unknown {study} option: there is no setting '{unknown[0]}' (use {', '.join(sorted(names))})")
    return values


@dataclass
class RunContext:
    """Where a study runs: the open run directory, a data directory for generated files, and how
    it reports progress (bars on a terminal, lines in a batch log)."""

    run: Any                      # climio.runs.rundir.RunDir
    data_dir: str
    progress: bool = True


class Study:
    """Base class of every study; subclasses set the class attributes and override the methods."""

    name: str = ""
    title: str = ""
    description: str = ""         # more lines for `climio bench NAME --help`
    Grid: type = None
    presets: dict = {}
    default_preset: str = "full"  # the preset without --quick / --full
    preset_help: dict = {}        # help of --quick / --full when the generic text says too little
    in_survey: bool = True        # False: `climio survey` skips the study (survey_grid None)

    def grid(self, preset: Optional[str] = None, **values):
        """By default the package's build_grid(preset, **values) (which starts with checked_values);
        preset None is the study's default_preset."""
        preset = self.default_preset if preset is None else preset
        return sys.modules[type(self).__module__].build_grid(preset, **values)

    def run(self, ctx: RunContext, grid) -> int:
        """By default the study's run module: run.run_study(run_dir, grid, data_dir, progress)."""
        return self._part("run").run_study(ctx.run, grid, ctx.data_dir, ctx.progress)

    # By default the pure parts live beside the Study, in its package: summary.summarise(records),
    # section.<name>_section(records) (or section.section) and section.findings(records). They are
    # imported on first use, so registering a study loads no plotting or measuring code. By name:
    # static imports of all of them at once would load every study's measuring code into
    # `climio report` (0.17 s, 190 modules), one static import per part would be the same lines in
    # every study; these edges run from a study's package to its own modules, under no contract.
    def _part(self, name):
        return importlib.import_module(f"{type(self).__module__}.{name}")

    def summarise(self, records) -> dict:
        return self._part("summary").summarise(records)

    def section(self, records):
        mod = self._part("section")
        return (getattr(mod, "section", None) or getattr(mod, f"{self.name.replace('-', '_')}_section"))(records)

    def findings(self, records) -> list:
        try:
            part = self._part("section")
        except ModuleNotFoundError:   # a study without a section module adds no findings
            return []
        return getattr(part, "findings", lambda _: [])(records)

    def headline(self, records):
        """The study's part of the report's first screen (a sections.Headline) or None: by default
        summary.headline(records) (pure numbers), with section.key_figure(records) as its figure
        when the section module has one."""
        try:
            fn = getattr(self._part("summary"), "headline", None)
        except ModuleNotFoundError:
            return None
        head = fn(records) if fn else None
        if head is not None and head.figure is None:
            key = getattr(self._part("section"), "key_figure", None)
            head.figure = key(records) if key else None
        return head

    def survey_grid(self, quick: bool):
        """The grid `climio survey` runs (None: the survey skips this study, as one not in_survey)."""
        return self.grid("quick" if quick else "survey") if self.in_survey else None

    def data_location(self, grid, data_dir) -> str:
        """The directory whose file system is measured: the user's file (a Grid field named file,
        bin_file or source = FILE:VAR) when given, else the data directory."""
        import os
        for name in ("file", "bin_file", "source"):
            value = getattr(grid, name, None)
            if value:
                path = str(value)
                if name == "source" and ":" in path:
                    path = path.rpartition(":")[0]
                return os.path.dirname(os.path.abspath(path))
        return data_dir

    def check(self, grid, data_dir) -> None:
        """Checks before anything runs or is written (disk space, launcher); one-line errors. By
        default the run module's check_space(grid, data_dir), when the study has one."""
        try:
            part = self._part("run")
        except ModuleNotFoundError:
            return
        if hasattr(part, "check_space"):
            part.check_space(grid, data_dir)


def register(study: Study) -> Study:
    """Add a study (an instance) to the registry; a second study of the same name is an error."""
    if not study.name:
        raise ValueError("a study needs a name")
    old = _REGISTRY.get(study.name)
    if old is not None and type(old) is not type(study):
        raise ValueError(f"two studies named {study.name!r}: {type(old).__name__} and {type(study).__name__}")
    _REGISTRY[study.name] = study
    return study


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
