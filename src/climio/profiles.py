"""The calibrated profiles on disk: where they live, and finding, loading and saving them (the
model itself, climio.model.profile and climio.model.object_store, is pure: it turns dicts into
rates and back). Below the studies and the advice, above the model (pyproject.toml's layers).

    profile_dir()                       ~/.cache/climio/profiles (CLIMIO_PROFILE_DIR overrides)
    path_for(platform_id)               profile_dir()/<platform_id>.json
    save(profile, *paths) / load(path)  a Profile as JSON (a run directory: its PROFILE_NAME)
    find(platform_id, path)             (Profile or None, warning line or "") to predict with
    for_data(path, profile)             (Profile, warning line or "") for the data at `path`: find()'s, else the defaults
    calibrated(platform_id, path, say)  find()'s profile, or an InputError saying how to make one
    rates_path / load_rates / save_rates    an object store's measured rates per platform
    decode_rate(label, warn, rates, stack)  (B/s, where from) of decoding a codec on this machine
"""

import json
import math
import os
from pathlib import Path

from climio.base.errors import DataError, InputError
from climio.machine.platform import platform_id_here
from climio.model.object_store import StoreRates, stack_decode
from climio.model.profile import Profile, default_profile

PROFILE_NAME = "profile.json"


def profile_dir() -> Path:
    env = os.environ.get("CLIMIO_PROFILE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "climio" / "profiles"


def path_for(platform_id: str) -> Path:
    return profile_dir() / f"{platform_id}.json"


def _write(p: Path, text: str, what: str = "the profile") -> None:
    """`text` to `p` under a temporary name, renamed; one line when it cannot be written."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, p)
    except OSError as exc:   # e.g. CLIMIO_PROFILE_DIR names a file: one line, not a traceback
        raise DataError(f"cannot save {what} to {p}: {exc.strerror or exc}") from None


def save(prof: Profile, *paths) -> list:
    """Write the profile to the cache directory (by platform id) and to any extra paths."""
    out = []
    for p in (path_for(prof.platform_id), *paths):
        _write(Path(p), prof.to_json())
        out.append(Path(p))
    return out


def load(path) -> Profile:
    p = Path(path)
    if p.is_dir():
        p = p / PROFILE_NAME
    try:
        return Profile.from_json(p.read_text())
    except FileNotFoundError:
        raise DataError(f"no profile at {p}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{p} is not a climio profile: {exc}") from None


def calibrated(platform_id: str, path=None, say=None) -> Profile:
    """find()'s profile for a study that measures against it (the validation, the layouts study):
    a warning said through `say`; none at all is an InputError telling how to make one."""
    prof, warn = find(platform_id, path or None)
    if prof is None:
        raise InputError(f"no calibrated profile for this platform ({platform_id}): run `climio calibrate` first "
                         "(or give --profile)")
    if warn and say:
        say(warn)
    return prof


def find(platform_id: str, path=None):
    """The profile to predict with, and a warning line or "".

    `path` given: that profile; a different platform id than `platform_id` is used with a warning.
    Else the cached profile of this platform; else the newest cached profile of another platform
    with a warning; else None (the caller falls back to the built-in defaults, and says so)."""
    if path:
        prof = load(path)
        if platform_id and prof.platform_id != platform_id:
            return prof, (f"profile {path} is for platform {prof.platform_id}, not this one "
                          f"({platform_id}); predictions use another machine's rates")
        return prof, ""
    mine = path_for(platform_id) if platform_id else None
    if mine and mine.exists():
        return load(mine), ""
    others = sorted(profile_dir().glob("*.json"), key=lambda q: q.stat().st_mtime, reverse=True) \
        if profile_dir().is_dir() else []
    if others:
        prof = load(others[0])
        return prof, (f"no profile for this platform ({platform_id}); using {others[0]} from platform "
                      f"{prof.platform_id}: run `climio calibrate` here for this machine's rates")
    return None, (f"no calibrated profile for this platform ({platform_id}); using built-in laptop "
                  "defaults: run `climio calibrate` (about 5 minutes, --quick about 1)")


def for_data(path=None, profile=None) -> tuple:
    """(Profile, warning line or "") to price work on the data at `path` with: `profile` (a Profile,
    or a path to one), else this platform's calibrated profile, else the newest of another
    platform's (said), else the built-in defaults (said; their source is "defaults"). The one lookup
    of `climio predict`, `climio advise` and the trace's predicted effects."""
    if isinstance(profile, Profile):
        return profile, ""
    pid = platform_id_here(path)
    prof, line = find(pid, profile)
    return prof or default_profile(pid), line


# --- object stores: an endpoint's rates per platform, beside the platform profiles ------------------

def rates_path(platform_id: str) -> Path:
    """profiles/object-stores/PLATFORM_ID.json: kept apart from the file-system profile (which
    `climio calibrate` replaces whole) and out of find's glob of profiles."""
    return profile_dir() / "object-stores" / f"{platform_id}.json"


def load_rates(platform_id: str) -> dict:
    """{store key: StoreRates} measured from this platform ({} when none)."""
    p = rates_path(platform_id)
    if not p.is_file():
        return {}
    return {k: StoreRates.from_dict(v) for k, v in json.loads(p.read_text()).get("object_stores", {}).items()}


def save_rates(platform_id: str, key: str, rates: StoreRates, *extra) -> list:
    """Add (or replace) one store's rates in this platform's file and write it, and `extra` copies
    (a run directory's)."""
    stores = {k: v.to_dict() for k, v in load_rates(platform_id).items()}
    stores[key] = rates.to_dict()
    text = json.dumps({"platform_id": platform_id, "object_stores": stores}, indent=1)
    out = []
    for p in (rates_path(platform_id), *map(Path, extra)):
        _write(p, text, "the object-store rates")
        out.append(p)
    return out


def decode_rate(label: str, warn=None, rates=None, stack=None) -> tuple:
    """(B/s, where it comes from) of decoding `label` on this machine: the rate the stack decoded
    the codec at (or its family's nearest level) in `climio calibrate --store` (`rates`, StoreRates),
    else the file profile's codec rate (`climio calibrate`), else the built-in defaults'; inf for
    "none". The one fallback of `climio predict`/`advise` on S3 and of `climio bench predict --store`."""
    if label == "none":
        return math.inf, "nothing to decode"
    if rates is not None and stack:
        bps, measured = stack_decode(rates.stack(stack), label)
        if bps is not None:
            return bps, f"{stack} decoding {measured}, climio calibrate --store"
    prof, note = find(platform_id_here(None))
    if prof is not None and prof.decode_Bps:
        return prof.decode(label), f"calibrated on {prof.platform_id}"
    if warn and note:
        warn(note)
    return default_profile().decode(label), "built-in default"
