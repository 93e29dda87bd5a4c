"""Where the object-store programs are: SeaweedFS (`weed`) and Toxiproxy, built once by
scripts/setup.sh into a cache outside the repository, keyed by version.

The versions here and in scripts/setup.sh (install_object_store_tools) are the same; CLIMIO_WEED
and CLIMIO_TOXIPROXY name other builds, and CLIMIO_CACHE another cache directory.
"""

import os
import shutil
from pathlib import Path

from climio.base.errors import NativeError

SEAWEEDFS_VERSION = "v0.0.0-20261109003541-7506e5f91cd6"
TOXIPROXY_VERSION = "v2.5.0"


def cache_dir() -> Path:
    """$CLIMIO_CACHE, else $XDG_CACHE_HOME/climio, else ~/.cache/climio (as setup.sh)."""
    if os.environ.get("CLIMIO_CACHE"):
        return Path(os.environ["CLIMIO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "climio"


def _program(env: str, cached: Path, on_path: str, what: str) -> str:
    if os.environ.get(env):
        path = os.environ[env]
        if not os.access(path, os.X_OK):
            raise NativeError(f"{env}={path} is not an executable program")
        return path
    if os.access(cached, os.X_OK):
        return str(cached)
    found = shutil.which(on_path)
    if found:
        return found
    raise NativeError(f"{what} not found at {cached} nor as {on_path} on PATH: run `make setup` "
                      f"(scripts/setup.sh builds it once) or set {env}")


def weed() -> str:
    """The SeaweedFS program."""
    return _program("CLIMIO_WEED", cache_dir() / f"seaweedfs-{SEAWEEDFS_VERSION}" / "weed", "weed",
                    f"SeaweedFS {SEAWEEDFS_VERSION}")


def toxiproxy() -> str:
    """The Toxiproxy server program."""
    return _program("CLIMIO_TOXIPROXY", cache_dir() / f"toxiproxy-{TOXIPROXY_VERSION}" / "toxiproxy-server",
                    "toxiproxy-server", f"Toxiproxy {TOXIPROXY_VERSION}")
