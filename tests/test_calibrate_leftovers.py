"""Calibration leaves nothing behind (issue 38 item 1, fourth case): its measuring files under
--data-dir are removed when it ends, done or failed, and said so with their size (353 MB stayed
in DIR/calibrate without a word before); a run that fails before its first record leaves no run
directory that then refuses the retry ("already holds a run", before)."""

import os
import sys
import subprocess
from types import SimpleNamespace

import pytest

from climio.bench.calibrate.run import calibration_files, make_files
from climio.runs.rundir import discard_empty_run

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def _small_grid():
    return SimpleNamespace(size_bytes=1 << 20, codec_list=["deflate1"])


def test_calibration_files_are_removed_and_said(tmp_path):
    said = []
    with calibration_files(tmp_path, said.append) as d:
        files = make_files(_small_grid(), tmp_path)   # the real files of a calibration, at a small size
        assert all(os.path.isfile(p) for p in files.values()) and d == tmp_path / "calibrate"
    assert not (tmp_path / "calibrate").exists() and list(tmp_path.iterdir()) == []
    assert len(said) == 1 and said[0].startswith("calibrate: removed the calibration files (")
    assert said[0].endswith(f" in {tmp_path / 'calibrate'})")


def test_calibration_files_go_when_it_fails_and_a_users_files_stay(tmp_path):
    mine = tmp_path / "calibrate" / "notes.txt"
    mine.parent.mkdir()
    mine.write_text("the user's")
    with pytest.raises(RuntimeError):
        with calibration_files(tmp_path, lambda _: None):
            make_files(_small_grid(), tmp_path)
            raise RuntimeError("a measurement failed")
    assert sorted(p.name for p in (tmp_path / "calibrate").iterdir()) == ["notes.txt"]


def test_empty_run_directory_is_discarded_but_a_run_is_kept(tmp_path):
    empty = tmp_path / "failed"
    empty.mkdir()
    (empty / "platform.json").write_text("{}")
    (empty / "records.jsonl").write_text("")
    assert discard_empty_run(empty) and not empty.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "platform.json").write_text("{}")
    (kept / "records.jsonl").write_text('{"study": "x"}\n')
    assert not discard_empty_run(kept) and kept.is_dir()


def test_failed_calibrate_store_can_be_retried(s3_server, tmp_path):
    """A wrong secret: the study fails writing its arrays; the same command again fails the same way
    (not 'already holds a run'), and no run directory is left."""
    env = {**os.environ, **s3_server.endpoint.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret",
           "CLIMIO_PROFILE_DIR": str(tmp_path / "profiles")}
    run = tmp_path / "cal"
    outs = [subprocess.run([CLIMIO, "calibrate", "--store", "s3://climio/cal-retry", "--quick", "-o", str(run)],
                           capture_output=True, text=True, timeout=300, env=env) for _ in range(2)]
    for r in outs:
        assert r.returncode == 3, r.stderr[-2000:]
        assert r.stderr.strip().splitlines()[-1].startswith("climio: error: s3://climio/cal-retry: "), r.stderr
        assert "refused access" in r.stderr and "already holds" not in r.stderr
    assert not run.exists()


def test_profile_that_cannot_be_saved_is_one_line(tmp_path, monkeypatch):
    """CLIMIO_PROFILE_DIR naming a file: calibrate measured for minutes and then ended in a
    FileExistsError traceback; now one DataError line."""
    from climio.base.errors import DataError
    from climio.model import profile as profmod
    from climio import profiles as on_disk
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "a-file"))
    with pytest.raises(DataError, match="^cannot save the profile to .*a-file/"):
        on_disk.save(profmod.default_profile())
