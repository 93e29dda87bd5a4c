"""platform.json describes the file system of the data measured, and platform_id is stable."""

import json
import os
from dataclasses import dataclass

from climio import api

from climio.machine import platform
from climio.bench import base


def test_platform_id_is_stable_for_one_file_system(tmp_path):
    a, b = platform.collect(tmp_path), platform.collect(os.path.dirname(tmp_path))
    assert a["filesystem"]["path"] != b["filesystem"]["path"]
    if a["filesystem"]["mount_point"] == b["filesystem"]["mount_point"]:
        assert a["platform_id"] == b["platform_id"]
    assert platform.collect(tmp_path)["platform_id"] == a["platform_id"]   # and across runs


def test_tmpfs_file_is_described_as_tmpfs(tmp_path):
    shm = "/dev/shm"
    info = platform.collect(shm)
    assert info["filesystem"]["type"] == "tmpfs" and info["filesystem"]["device"]["block_device"] is None
    disk = platform.collect(tmp_path)
    assert disk["platform_id"] != info["platform_id"]
    if disk["filesystem"]["device"].get("block_device"):
        assert isinstance(disk["filesystem"]["device"].get("read_ahead_kb"), int)


def test_run_dir_platform_is_the_measured_files(tmp_path):
    """A study reading a user's file on tmpfs records tmpfs, not the temporary data directory."""
    @dataclass
    class G:
        source: str = "/dev/shm/somefile.nc:ta"

    loc = base.Study().data_location(G(), str(tmp_path / "data"))
    assert loc == "/dev/shm"
    run = tmp_path / "run"
    api.run_studies(run, str(tmp_path), [], report=False, measured_dir=loc)
    fs = json.loads((run / "platform.json").read_text())["filesystem"]
    assert fs["type"] == "tmpfs" and fs["path"] == "/dev/shm"
