"""The study framework: a study defined here, in tests/, registers itself, runs through the shared
measuring loop, writes valid records, gets a CLI command from its Grid's field metadata, and
appears in the report with its key finding, without any other module knowing it."""

import json
import os
from dataclasses import dataclass, field

import pytest
import typer
from typer.testing import CliRunner

from climio import api
from climio.bench import base
from climio.cli.bench import make_command
from climio.base.errors import InputError
from climio.measure.series import Series, StreamChecksum, distinct_bytes, run_series
from climio.runs.records import SCHEMA_VERSION, read_records, to_frame
from climio.present.sections import Figure, Finding, Paragraph, Section, Table
from climio.present.stats import describe
from climio.dataset.options import parse_size


@dataclass
class TinyGrid:
    size: int = field(default=1 << 16, metadata=base.option("--size", "Bytes of the file to read.", "SIZE"))
    buffer: int = field(default=1 << 12, metadata=base.option("--buffer", "Bytes per read request.", "SIZE"))
    reps: int = field(default=2, metadata=base.option("--reps", "Cold repetitions.", "N"))


class _FileReader:
    def __init__(self, path):
        self.fh = open(path, "rb")

    def read(self, req):
        off, n = req
        self.fh.seek(off)
        return self.fh.read(n)

    def close(self):
        self.fh.close()


class Tiny(base.Study):
    name = "tiny-test"
    title = "Sequential reads of one small file (a study defined in a test)"
    Grid = TinyGrid
    presets = {"full": {}, "quick": {"reps": 1}}

    def grid(self, preset="full", **values):
        vals = {**self.presets[preset], **values}
        for key in ("size", "buffer"):
            if isinstance(vals.get(key), str):
                vals[key] = parse_size(vals[key])
        g = TinyGrid(**vals)
        if g.buffer > g.size:
            raise InputError(f"--buffer {g.buffer} is larger than --size {g.size}")
        return g

    def run(self, ctx, grid):
        path = os.path.join(ctx.data_dir, "tiny.bin")
        with open(path, "wb") as fh:
            fh.write(os.urandom(grid.size))
            fh.flush()
            os.fsync(fh.fileno())
        reqs = [(off, min(grid.buffer, grid.size - off)) for off in range(0, grid.size, grid.buffer)]
        s = Series(study=self.name, path=path, params={"stack": "py-file", "buffer_bytes": grid.buffer},
                   requests=reqs, open=lambda: _FileReader(path),
                   needed_bytes=lambda n: distinct_bytes(reqs[:n]), planned_bytes=grid.size, reps=grid.reps,
                   verify=True, checksum=StreamChecksum, platform_id=ctx.run.platform_id)
        n = []
        run_series(s, lambda rec: (ctx.run.writer.write(rec), n.append(1)))
        return len(n)

    def summarise(self, records):
        st = describe(r["metrics"]["rate_MBps"] for r in records if r["status"] == "ok")
        return {"mean_MBps": st.mean if st else None, "n": len(records)}

    def section(self, records):
        s = self.summarise(records)
        return Section("study-tiny-test", "Study: tiny-test").add(
            Paragraph(f"{s['n']} repetitions."),
            Table(["repetitions", "mean rate [MB/s]"], [[s["n"], f"{s['mean_MBps']:.1f}"]]),
            Figure(lambda: None, "nothing to draw"))

    def findings(self, records):
        return [Finding(self.name, f"py-file read the tiny file at {self.summarise(records)['mean_MBps']:.1f} MB/s")]


@pytest.fixture
def tiny():
    study = base.register(Tiny())
    yield study
    base.unregister(study.name)


def test_registered_study_runs_writes_records_and_appears_in_report(tiny, tmp_path):
    run_dir = api.run_study("tiny-test", out=tmp_path / "run", data_dir=tmp_path / "data", progress=False,
                            reps=3, buffer="8KiB")
    recs = read_records(run_dir)
    assert len(recs) == 3 and {r["study"] for r in recs} == {"tiny-test"}
    assert all(r["schema"] == SCHEMA_VERSION and r["params"]["buffer_bytes"] == 8192 for r in recs)
    assert all(r["metrics"]["bytes"] == 1 << 16 and r["metrics"]["ops"] == 8 for r in recs)
    # the same checksum every repetition: the loop read the same bytes each time
    assert len({r["metrics"]["checksum"] for r in recs}) == 1
    df = to_frame(recs)
    assert list(df["stack"]) == ["py-file"] * 3 and "metrics.rate_MBps" in df and "cache.state" in df
    html = (run_dir / "report.html").read_text()
    assert "Study: tiny-test" in html and "Key findings" in html
    assert "py-file read the tiny file at" in html
    # provenance is collapsed at the end, after the study's section
    assert html.index("Study: tiny-test") < html.index("Platform and provenance")
    assert "<details><summary>Platform" in html


def test_cli_command_comes_from_grid_metadata(tiny, tmp_path):
    app = typer.Typer()
    app.command("tiny-test")(make_command(tiny))
    app.command("other")(lambda: None)   # a second command keeps typer from flattening the app
    runner = CliRunner()
    helptext = runner.invoke(app, ["tiny-test", "--help"]).output
    for flag, metavar in (("--size", "SIZE"), ("--buffer", "SIZE"), ("--reps", "N")):
        assert flag in helptext and metavar in helptext
    assert "--quick" in helptext and "--out" in helptext and "--data-dir" in helptext
    res = runner.invoke(app, ["tiny-test", "--quick", "--size", "32KiB", "-o", str(tmp_path / "r"),
                              "--data-dir", str(tmp_path / "d"), "--no-report"])
    assert res.exit_code == 0, res.output
    recs = read_records(tmp_path / "r")
    assert len(recs) == 1 and recs[0]["metrics"]["bytes"] == 32 << 10   # --quick: reps 1
    bad = runner.invoke(app, ["tiny-test", "--buffer", "1MiB", "--size", "4KiB", "-o", str(tmp_path / "x")])
    assert isinstance(bad.exception, InputError) and "larger than --size" in str(bad.exception)


def test_registry_refuses_two_studies_with_one_name(tiny):
    class Other(Tiny):
        pass
    with pytest.raises(ValueError, match="two studies named"):
        base.register(Other())


def test_old_records_without_schema_still_read(tmp_path):
    rec = {"study": "read-stack", "params": {"layer": "numpy", "pattern": "sequential", "buffer_bytes": 4096},
           "metrics": {"bytes": 4096, "wall_s": 0.001, "rate_MBps": 4.096}, "cache": {"state": "cold"},
           "rep": 0, "status": "ok", "time": "2026-01-01T00:00:00+00:00", "platform_id": "p"}
    (tmp_path / "records.jsonl").write_text(json.dumps(rec) + "\n")
    df = to_frame(read_records(tmp_path))
    assert df.loc[0, "schema"] == 1 and df.loc[0, "stack"] == "numpy" and df.loc[0, "params.buffer_bytes"] == 4096


# The contract's own names, defined once in each study package (bench/<study>/).
PER_STUDY_NAMES = {"Grid", "PRESETS", "STUDY", "TITLE", "OPTION_NAMES"}


def test_one_word_one_meaning_no_two_modules_define_the_same_class_or_constant():
    import ast
    import pathlib
    from collections import defaultdict

    import climio
    root = pathlib.Path(climio.__file__).parent
    where = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets = [node.name] if isinstance(node, ast.ClassDef) and not node.name.startswith("_") else [
                t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)
                and t.id.isupper() and not t.id.startswith("_")] if isinstance(node, ast.Assign) else []
            for name in targets:
                rel = path.relative_to(root).parts
                owner = "/".join(rel[:2]) if name in PER_STUDY_NAMES and rel[0] == "bench" else "climio"
                where[(owner, name)].append(str(path.relative_to(root)))
    dupes = {k[1]: v for k, v in where.items() if len(v) > 1}
    assert not dupes, f"defined more than once: {dupes}"
