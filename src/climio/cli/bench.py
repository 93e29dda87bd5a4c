"""`climio bench STUDY`: one command per registered study, its options read from the study's
Grid dataclass (field metadata from bench.base.option), plus the options every study shares."""

import inspect
import typing
from pathlib import Path
from typing import List, Optional

import typer

from ..api import results_table, run_study
from ..bench import base, registry
from climio.base.errors import InputError
from climio.dataset.options import renamed
from . import CONTEXT, app
from .report import SCREENSHOT_HELP, keep_screenshot

bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, context_settings=CONTEXT,
                        help="Run a benchmark study and write its records and report. Studies: "
                             "one command each (below); every one takes --out, --data-dir and --report.")
app.add_typer(bench_app, name="bench")

PRESET_HELP = {
    "quick": "A small grid that finishes in about a minute.",
    "full": "The thesis's full grid (long).",
}
_POS = inspect.Parameter.KEYWORD_ONLY
_ALIAS = "deprecated_"   # parameter-name prefix of a hidden old spelling of an option


def _plain_type(tp):
    """The value type typer should parse for a Grid field's annotation (Optional/list unwrapped)."""
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _plain_type(args[0]) if len(args) == 1 else str
    if origin in (list, tuple, List):
        return str
    return tp if tp in (str, int, float, bool, Path) else str


def study_parameters(study) -> list:
    """inspect.Parameters of the command: the Grid's options, the presets, the shared options."""
    hints = typing.get_type_hints(study.Grid)
    params = []
    for f, opt in base.options_of(study.Grid):
        tp = _plain_type(hints.get(f.name, str))
        if opt.metavar == "SIZE":
            tp = str   # sizes are text ("4KiB") that the study's grid() parses with options.parse_size
        decls = [opt.flag] + ([opt.short] if opt.short else [])
        kw = {"help": opt.help}
        if opt.metavar and tp is not bool:
            kw["metavar"] = opt.metavar
        ann = Optional[List[tp]] if opt.repeat else Optional[tp]
        params.append(inspect.Parameter(f.name, _POS, default=typer.Option(None, *decls, **kw), annotation=ann))
        for i, old in enumerate(opt.deprecated):   # old spellings: hidden, same value type
            params.append(inspect.Parameter(f"{_ALIAS}{i}_{f.name}", _POS, annotation=ann,
                                            default=typer.Option(None, old, hidden=True, **kw)))
    for name in ("quick", "full"):
        if name in study.presets and name != study.default_preset:
            params.append(inspect.Parameter(f"preset_{name}", _POS, annotation=bool,
                                            default=typer.Option(False, f"--{name}", help=study.preset_help.get(name, PRESET_HELP[name]))))
    params += [
        inspect.Parameter("data_dir", _POS, annotation=Optional[Path], default=typer.Option(
            None, "--data-dir", metavar="DIR", help="Where generated files go (default: a temporary directory on "
                                                    "local disk, removed afterwards). Put it on the file system to measure.")),
        inspect.Parameter("out", _POS, annotation=Optional[Path], default=typer.Option(
            None, "--out", "-o", metavar="DIR", help=f"Run directory (default climio-runs/{study.name}-TIMESTAMP).")),
        inspect.Parameter("report", _POS, annotation=bool, default=typer.Option(
            True, "--report/--no-report", help="Render report.html at the end.")),
        inspect.Parameter("append", _POS, annotation=bool, default=typer.Option(
            False, "--append", help="Add to the run directory -o names when it already holds a run.")),
        inspect.Parameter("force", _POS, annotation=bool, default=typer.Option(
            False, "--force", help="Replace the run directory -o names, whole, when it already holds a run.")),
        inspect.Parameter("screenshot", _POS, annotation=bool, default=typer.Option(
            False, "--screenshot", help=SCREENSHOT_HELP)),
    ]
    return params


def chosen_preset(study, kw) -> str:
    chosen = [n for n in ("quick", "full") if kw.pop(f"preset_{n}", False)]
    if len(chosen) > 1:
        raise InputError("--quick and --full contradict each other: give one")
    return chosen[0] if chosen else study.default_preset


def resolve_aliases(study, kw) -> None:
    """Move the values given under a deprecated spelling to their field (options.renamed: a one-line
    note; the old and the new spelling together is an error)."""
    for f, opt in base.options_of(study.Grid):
        for i, old in enumerate(opt.deprecated):
            kw[f.name] = renamed(old, opt.flag, kw.pop(f"{_ALIAS}{i}_{f.name}", None), kw.get(f.name))


def make_command(study):
    def command(**kw):
        resolve_aliases(study, kw)
        preset = chosen_preset(study, kw)
        shared = {k: kw.pop(k) for k in ("data_dir", "out", "report", "append", "force")}
        shot = kw.pop("screenshot")
        if shot and not shared["report"]:
            raise InputError("--screenshot is of the report: not with --no-report")
        run_dir = run_study(study, preset, **shared, **kw)
        table = results_table(run_dir)
        if table:
            print(table)
        if shot:
            keep_screenshot(Path(run_dir) / "report.html")

    params = study_parameters(study)
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = study.name.replace("-", "_")
    command.__doc__ = study.title + ("\n\n" + study.description if getattr(study, "description", "") else "")
    return command


def register_study_commands() -> None:
    for study in registry.studies():
        # short_help given whole: click cuts its own summary at the first period ("(thesis ch.")
        bench_app.command(study.name, context_settings=CONTEXT, short_help=study.title)(make_command(study))


register_study_commands()

