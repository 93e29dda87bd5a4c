"""One flag vocabulary across the commands (issue 18, item 2): renamed flags keep their old
spelling one release as a hidden alias with a note, conflicting or ignored options are one-line
errors with exit 2, and every --help shows readable metavars, never Python types."""

import json
import re
import sys

import pytest
from typer.testing import CliRunner

from climio.bench import base, registry
from climio.cli import app
from climio.cli import bench as cli_bench
from conftest import run_cli


@pytest.fixture
def captured(monkeypatch):
    """`climio bench STUDY` without running it: the study and the keyword values it was given."""
    seen = {}

    def fake_run_study(study, preset, **kw):
        seen.update(study=study.name, preset=preset, **kw)
        return kw["out"]

    monkeypatch.setattr(cli_bench, "run_study", fake_run_study)
    monkeypatch.setattr(cli_bench, "results_table", lambda run_dir: "")
    return seen


@pytest.mark.parametrize("args, field, value, old, new", [
    (["read-stack", "--cache", "warm"], "page_cache", "warm", "--cache", "--page-cache"),
    (["chunking", "--caches", "fit"], "chunk_cache", "fit", "--caches", "--chunk-cache"),
    (["parallel-write", "--mode", "model", "--chunk", "16,8"], "chunk", "16,8", "--chunk", "--chunks"),
    (["parallel-write", "--mode", "model", "--vars", "2,1,1"], "variables", "2,1,1", "--vars", "--var-counts"),
    (["read-stack", "--layers", "numpy"], "layers", "numpy", "--layers", "--stacks"),
    (["chunking", "--layers", "h5py"], "layers", "h5py", "--layers", "--stacks"),
])
def test_old_spelling_still_works_with_a_note(captured, tmp_path, args, field, value, old, new):
    res = CliRunner().invoke(app, ["bench", *args, "-o", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert captured[field] == value
    note = [line for line in res.stderr.splitlines() if line.strip()]
    assert note == [f"climio: note: {old} is deprecated and will be removed; use {new}"]
    # the new spelling: no note
    new_args = [new if a == old else a for a in args]
    res = CliRunner().invoke(app, ["bench", *new_args, "-o", str(tmp_path / "r")])
    assert res.exit_code == 0 and captured[field] == value and not res.stderr.strip()


def test_old_aliases_are_hidden_in_help():
    for name, old in (("read-stack", "--cache"), ("chunking", "--caches"), ("parallel-write", "--vars"),
                      ("read-stack", "--layers"), ("chunking", "--layers")):
        text = run_cli("bench", name, "--help").stdout
        assert not re.search(rf"{old}\b(?!-)", text.replace("--cache-", "")), (name, old)
    for name, new in (("read-stack", "--page-cache"), ("chunking", "--chunk-cache"),
                      ("parallel-write", "--var-counts"), ("read-stack", "--stacks LIST"),
                      ("chunking", "--stacks LIST")):
        assert new in run_cli("bench", name, "--help").stdout


def test_python_keywords_are_the_flags_names():
    """From Python the flag's name sets the field as the field's own name does (stacks= is layers=)."""
    from climio.base.errors import InputError
    rs, ch = registry.get("read-stack"), registry.get("chunking")
    assert rs.grid("quick", stacks="numpy,h5py").layers == rs.grid("quick", layers="numpy,h5py").layers == ["numpy", "h5py"]
    assert ch.grid("quick", stacks="h5py").layers == ["h5py"]
    with pytest.raises(InputError, match="stacks is another name of layers: give one"):
        rs.grid("quick", stacks="numpy", layers="h5py")


def one_line_error(out, code=2):
    assert out.returncode == code, (out.returncode, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.strip() and not line.startswith("climio: note:")]
    assert len(lines) == 1 and lines[0].startswith("climio: error:"), out.stderr
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["bench", "read-stack", "--quick", "--full"], "--quick and --full contradict each other"),
    (["bench", "read-stack", "--size", "1MiB", "--bin-file", __file__], "--size generates files"),
    (["bench", "read-stack", "--stacks", "numpy", "--odirect"], "--odirect applies to the c-posix layer only"),
    (["bench", "read-stack", "--stacks", "h5py", "--c-api", "fread"], "--c-api applies to the c-posix layer only"),
    (["bench", "read-stack", "--patterns", "sequential,strided", "--seed", "3"],
     "--seed applies to the random pattern only"),
    (["bench", "read-stack", "--layers", "numpy", "--stacks", "h5py"], "--layers is the old name of --stacks"),
    (["bench", "chunking", "--chunks", "A", "--compression", "deflate4"],
     "--compression deflate4 needs a chunked shape: every shape in --chunks is contiguous (A)"),
    (["bench", "chunking", "--chunks", "A,E", "--compression", "none,deflate4", "--compress-chunks", "A"],
     "--compress-chunks A: chunk shape A is contiguous and cannot be compressed"),
    (["bench", "chunking", "--chunks", "A,E", "--compression", "deflate4", "--compress-chunks", "E"],
     "--chunks A: chunk shape A is contiguous, measured uncompressed only"),
    (["bench", "chunking", "--chunks", "E,F", "--compression", "deflate4", "--compress-chunks", "E"],
     "--chunks F: no --compression setting applies to chunk shape F"),
    (["bench", "chunking", "--compression", "none", "--compress-chunks", "E"],
     "--compress-chunks applies to compressed settings"),
    (["bench", "read-stack", "--cache", "warm", "--page-cache", "cold"], "--cache is the old name of --page-cache"),
    (["bench", "chunking", "--source", "x.nc:ta", "--shape", "4,2,8,16"], "--source takes the shape"),
    (["bench", "chunking", "--source", "x.nc:ta", "--dtype", "f4"], "not with --dtype"),
    (["bench", "stsa", "--source", "x.nc:u", "--shape", "4,2,8,16"], "--source takes the shape"),
    (["bench", "parallel-write", "--local", "8,8,8", "--global", "16,16,16"], "not both"),
    (["bench", "parallel-write", "--mode", "model", "--local", "8,8,8"], "--local applies to --mode benchio only"),
    (["bench", "parallel-write", "--grid", "mom5", "--select", "0.1"],
     "--grid, --select apply to --mode model only"),
    (["bench", "parallel-write", "--io-layout", "2,1"], "--io-layout applies to --mode model only"),
    (["bench", "parallel-read", "--experiments", "tasks", "--backends", "hdf5"],
     "--backends applies to experiment mpiio only"),
    (["bench", "parallel-read", "--experiments", "mpiio", "--stacks", "posix", "--buffers", "1MiB"],
     "--buffers, --stacks apply to experiment tasks only"),
    (["rechunk", "a.nc", "b.nc", "--chunk", "t/1", "-c", "t/2"], "--chunk is the old name of -c/--chunks"),
])
def test_conflicting_and_ignored_options_are_errors(tmp_path, args, message):
    msg = one_line_error(run_cli(*args, "-o" if args[0] == "bench" else "--force",
                                 *([str(tmp_path / "r")] if args[0] == "bench" else [])))
    assert message in msg, msg


COMMANDS = [["make-data"], ["bench", "read-stack"], ["bench", "chunking"], ["bench", "parallel-write"],
            ["bench", "parallel-read"], ["bench", "stsa"], ["tune", "write"], ["rechunk"], ["trace", "run"],
            ["trace", "report"], ["report"], ["export"], ["survey"], ["stsa"]]


def test_help_shows_readable_metavars():
    for cmd in COMMANDS:
        out = run_cli(*cmd, "--help")
        assert out.returncode == 0, (cmd, out.stderr)
        python_types = re.findall(r"<[a-z]+(?:\[[a-z]+\])?>", out.stdout)   # typer's <int>, <path>, <list[str]>
        assert not python_types, (cmd, python_types)
        assert not re.search(r"\{[a-z_]+\}", out.stdout.splitlines()[0]), (cmd, out.stdout.splitlines()[0])


def test_every_study_has_out_and_the_variable_is_var():
    for study in registry.studies():
        text = run_cli("bench", study.name, "--help").stdout
        assert "-o, --out DIR" in text, study.name
        assert not re.search(r"^\s+-v,", text, re.M), study.name
    assert "--var NAME" in run_cli("stsa", "--help").stdout and not re.search(r"-v, --var", run_cli("stsa", "--help").stdout)


def test_report_on_a_trace_points_to_trace_report(tmp_path):
    """`climio report` given a trace directory (any process's files, meta.json or not) or a Darshan
    log names the command that reads it."""
    for name in ("meta.json", "host-12.events", "host-12.counters"):
        d = tmp_path / name.replace(".", "_")
        d.mkdir()
        (d / name).write_text("{}")
        msg = one_line_error(run_cli("report", d), 3)
        assert f"is a trace directory: use `climio trace report {d}`" in msg
    log = tmp_path / "run.darshan"
    log.write_bytes(b"\0")
    assert f"is a Darshan log: use `climio trace report {log}`" in one_line_error(run_cli("report", log), 3)


NOTE = "climio: note: {old} is deprecated and will be removed; use {new}"


def _notes(err) -> list:
    return [line for line in err.splitlines() if line.startswith("climio: note:")]


def test_every_old_spelling_outside_the_studies_works_with_its_one_note(tmp_path):
    """One mechanism for renamed flags (options.renamed): rechunk --chunk, trace report --format and
    stsa --tasks still work, each with the same one-line note the studies' old flags print, and the
    old and the new spelling together is one error line."""
    from climio.data import write_4d
    src = tmp_path / "in.nc"
    write_4d(str(src), [4, 2, 8, 16], chunks=[4, 1, 8, 16])
    old = run_cli("rechunk", src, tmp_path / "o.nc", "--chunk", "time/1", "--dry-run", "--json")
    new = run_cli("rechunk", src, tmp_path / "o.nc", "-c", "time/1", "--dry-run", "--json")
    assert old.returncode == new.returncode == 0, old.stderr
    assert _notes(old.stderr) == [NOTE.format(old="--chunk", new="-c/--chunks")] and not _notes(new.stderr)
    assert json.loads(old.stdout) == json.loads(new.stdout)     # the same plan

    trace = tmp_path / "trace"
    ran = run_cli("trace", "run", "-o", trace, "--", sys.executable, "-c", f"open({str(src)!r}, 'rb').read(64)")
    assert ran.returncode == 0, ran.stderr
    old = run_cli("trace", "report", trace, "--format", "json")
    new = run_cli("trace", "report", trace, "--json")
    assert old.returncode == new.returncode == 0, old.stderr
    assert _notes(old.stderr) == [NOTE.format(old="--format", new="--json / --html")] and not _notes(new.stderr)
    assert json.loads(old.stdout).keys() == json.loads(new.stdout).keys()
    assert "--format is the old name of --json / --html" in one_line_error(
        run_cli("trace", "report", trace, "--format", "json", "--html"))

    missing = tmp_path / "nosuch.nc"     # the note comes before the input is opened: exit 3 after it
    old = run_cli("stsa", missing, "--tasks", "3", "-o", tmp_path / "s")
    assert _notes(old.stderr) == [NOTE.format(old="--tasks", new="--lat-tasks")]
    assert one_line_error(old, 3) == one_line_error(run_cli("stsa", missing, "--lat-tasks", "3", "-o", tmp_path / "s"), 3)
    assert "--tasks is the old name of --lat-tasks" in one_line_error(
        run_cli("stsa", missing, "--tasks", "3", "--lat-tasks", "4"))
