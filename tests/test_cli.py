"""The `climio` command end to end on small real files, and its answers to bad input."""

import json
import os


from climio.runs.records import read_records
from conftest import run_cli


def test_help_explains_subcommands():
    out = run_cli("--help")
    assert out.returncode == 0
    for cmd in ("make-data", "bench", "report", "survey"):
        assert cmd in out.stdout
    out = run_cli("bench", "read-stack", "--help")
    assert out.returncode == 0 and "--buffers" in out.stdout and "--stacks" in out.stdout
    assert "--layers" not in out.stdout   # the old spelling works, hidden


def test_version_and_help_flags():
    from climio import __version__
    for flag in ("--version", "-V"):
        out = run_cli(flag)
        lines = out.stdout.splitlines()
        assert (out.returncode, out.stderr, lines[0]) == (0, "", f"climio {__version__}")
        assert lines[1].startswith("python layer: netCDF4 ") and lines[2].startswith("native layer: netCDF-C ")
    short, long = run_cli("-h"), run_cli("--help")
    assert short.returncode == 0 and short.stdout == long.stdout and "exit codes:" in short.stdout
    assert run_cli("bench", "-h").stdout == run_cli("bench", "--help").stdout


def test_bare_commands_print_their_usage():
    """Usage is not an error: bare `climio` and bare groups print their help on stdout, exit 0."""
    out = run_cli()
    assert (out.returncode, out.stderr) == (0, "") and out.stdout.startswith("Usage: climio [OPTIONS] COMMAND")
    for group, command in (("bench", "read-stack"), ("trace", "report"), ("tune", "write")):
        out = run_cli(group)
        assert (out.returncode, out.stderr) == (0, ""), (group, out.stderr)
        assert out.stdout.startswith(f"Usage: climio {group} [OPTIONS] COMMAND") and command in out.stdout
    assert out.stdout == run_cli("tune", "--help").stdout


def test_read_stack_end_to_end(tmp_path):
    run = tmp_path / "run"
    out = run_cli("bench", "read-stack", "--size", "2MiB", "--stacks", "c-posix,c-netcdf,numpy,netcdf4-python",
                  "--patterns", "sequential,strided", "--buffers", "64KiB,1MiB", "--reps", "2",
                  "--data-dir", tmp_path / "data", "--out", run)
    assert out.returncode == 0, out.stderr
    recs = read_records(run)
    assert len(recs) == 4 * 2 * 2 * 2
    assert {r["params"]["layer"] for r in recs} == {"c-posix", "c-netcdf", "numpy", "netcdf4-python"}
    platform = json.loads((run / "platform.json").read_text())
    assert all(r["platform_id"] == platform["platform_id"] for r in recs)
    assert platform["filesystem"]["type"] and platform["versions"]["python"]["netCDF4"]
    for r in recs:
        assert r["metrics"]["bytes"] == 2 << 20 if r["params"]["pattern"] == "sequential" else True
        assert r["metrics"]["syscalls"]["tool"] == "strace"
        assert r["cache"]["state"] == "cold"
    html = (run / "report.html").read_text()
    assert "read-stack" in html and "data:image/png;base64," in html
    # Generated data kept where asked; the run directory lists only results.
    assert (tmp_path / "data" / "data1d.nc").exists()


def test_report_command_rerenders(tmp_path):
    run = tmp_path / "run"
    assert run_cli("bench", "read-stack", "--size", "1MiB", "--stacks", "c-posix", "--buffers", "1MiB",
                   "--reps", "1", "--no-syscalls", "--no-report", "--out", run).returncode == 0
    assert not (run / "report.html").exists()
    out = run_cli("report", run)
    assert out.returncode == 0, out.stderr
    assert (run / "report.html").exists()


def one_line_error(out, code):
    assert out.returncode == code, (out.returncode, out.stderr)
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr and lines[0].startswith("climio: error:")
    return lines[0]


def test_unknown_layer(tmp_path):
    msg = one_line_error(run_cli("bench", "read-stack", "--size", "1MiB", "--stacks", "fortran",
                                 "--out", tmp_path / "r"), 2)
    assert "fortran" in msg and "c-posix" in msg


def test_unknown_pattern(tmp_path):
    one_line_error(run_cli("bench", "read-stack", "--size", "1MiB", "--patterns", "zigzag", "--out", tmp_path / "r"), 2)


def test_malformed_size(tmp_path):
    msg = one_line_error(run_cli("bench", "read-stack", "--size", "12 parsecs", "--out", tmp_path / "r"), 2)
    assert "12 parsecs" in msg


def test_missing_file(tmp_path):
    one_line_error(run_cli("bench", "read-stack", "--file", tmp_path / "nope.nc", "--out", tmp_path / "r"), 3)


def test_missing_variable(files_1d, tmp_path):
    msg = one_line_error(run_cli("bench", "read-stack", "--file", files_1d["nc"], "--var", "tas",
                                 "--stacks", "netcdf4-python", "--out", tmp_path / "r"), 3)
    assert "tas" in msg


def test_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            # root ignores mode bits: use a path under a regular file instead, which nobody can create.
            target = tmp_path / "afile"
            target.write_text("x")
            target = target / "sub"
        else:
            target = locked / "sub"
        one_line_error(run_cli("make-data", target, "--size", "1MiB"), 3)
    finally:
        locked.chmod(0o700)


def test_too_little_disk_leaves_nothing(tmp_path):
    msg = one_line_error(run_cli("make-data", tmp_path / "d", "--size", "900TiB"), 4)
    assert "free" in msg
    assert not (tmp_path / "d").exists()   # nothing written, and no empty directory left (issue 17)


def test_survey_quick(quick_survey):
    run, out = quick_survey        # the session's one quick survey (conftest), shared with export and browser tests
    assert out.returncode == 0, out.stderr
    recs = read_records(run)
    layers = {r["params"]["layer"] for r in recs if r["study"] == "read-stack"}
    assert layers == {"c-posix", "c-netcdf", "py-file", "numpy", "netcdf4-python", "h5py", "h5netcdf", "xarray"}
    pw = [r for r in recs if r["study"] == "parallel-write"]
    assert {(r["params"]["mode"], r["params"]["ranks"]) for r in pw} == {(m, n) for m in ("benchio", "model") for n in (2, 4)}
    assert {r["params"]["backend"] for r in pw} == {"mpiio", "hdf5", "netcdf4", "pnetcdf"}
    assert all(r["metrics"]["verified"] is True for r in pw)
    assert "Study: parallel-write" in (run / "report.html").read_text()
    assert str(run / "report.html") in out.stdout + out.stderr


def test_usage_errors_are_one_line():
    one_line_error(run_cli("make-data"), 2)
    one_line_error(run_cli("bench", "read-stack", "--bogus"), 2)
    one_line_error(run_cli("bench", "read-stack", "--reps", "0"), 2)


def test_impossible_chunk_shape_leaves_no_file(tmp_path):
    msg = one_line_error(run_cli("make-data", tmp_path, "--kind", "4d", "--shape", "10,4,30,60",
                                 "--chunks", "0,1,10,10"), 2)
    assert "impossible" in msg
    assert list(tmp_path.iterdir()) == []
