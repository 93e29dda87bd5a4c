"""Kill points while writing (issue 38 item 3): three seeded points of each writing command (bench/
kill_points.py runs 20): SIGKILL, the output directory removed, the disk (a small tmpfs) full.

After each: nothing readable under the final name or the complete output (values equal to the
source's); any failure Python sees is one line with a documented exit code (4 for the full disk);
a study's records.jsonl is whole line by line; after a SIGKILL the next run, without --resume,
exits 0 and leaves no temporary behind. The tmpfs needs root, as tests/test_full_disk.py's: a mount
that is refused fails the test with the reason.
"""

import sys

import pytest
from conftest import load_bench

SEED = 38


K = load_bench("kill_points")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return tmp_path_factory.mktemp("kill-inputs")


@pytest.mark.parametrize("command", list(K.COMMANDS))
def test_three_seeded_kill_points(command, inputs, tmp_path):
    points = K.draw_points(command, 3, SEED)
    assert [p.kind for p in points] == ["kill", "vanish", "full"]
    failed = []
    for i, p in enumerate(points):
        problems = K.run_point(p, inputs, tmp_path / f"p{i}", rerun=p.kind == "kill")
        if problems:
            failed.append(f"{p.text()}: {problems}")
    assert not failed, "\n".join(failed)


def test_the_checks_can_fail(inputs, tmp_path):
    """The oracle refuses what it must: a half record line, and a cut output under the final name."""
    bad = tmp_path / "records.jsonl"
    bad.write_text('{"study": "x"}\n{"stu')
    assert len(K._check_records(bad)) == 2
    src = K.rechunk_source(inputs / "a.nc")
    cut = tmp_path / "o.nc"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    assert K._check_final(K.COMMANDS["rechunk-nc"], cut, inputs)


def test_an_output_directory_vanishing_before_the_rename_is_one_line(tmp_path):
    """make-data's directory removed just before its rename (a vanish point of seed 38's bench run):
    a FileNotFoundError traceback before, now one DataError line (exit 3)."""
    import shutil
    from climio.base.errors import DataError
    from climio.runs.staging import staged
    d = tmp_path / "d"
    d.mkdir()
    with pytest.raises(DataError, match="vanished while x.nc was written: nothing written"):
        with staged(d / "x.nc") as (tmp,):
            tmp.write_bytes(b"values")
            shutil.rmtree(d)
    assert not d.exists()
