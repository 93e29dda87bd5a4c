"""The validation study of the read-time model (issues 15 and 26): configurations drawn with a
seed from a declared space (space.py: shape and dtype; chunk shapes including edge chunks and
lengths that do not divide the dimensions, or contiguous; deflate, zstd, shuffle or none; xy, xt,
xyt, sub-block count templates and the STSA read; every Python stack and c-netcdf; 1, 2 and 4
tasks; the chunk cache the stack defaults to or a size asked), each on a new file the calibration
never read, predicted from the platform's profile with the chunk cache the stack really has, its
chunk reads counted from HDF5 and its time measured cold; the median, 90th percentile and max of
|log(predicted / measured)| and the worst configurations with simulated against counted chunk
reads.

    space.py    the declared space and its seeded draw (pure)
    counts.py   chunk reads counted from the library (h5py on a counting file object)
    run.py      the files, predict + count + measure
    summary.py  errors per configuration, median / p90 / max factors, worst configurations (pure)
    section.py  the table in the report

`--store s3://BUCKET/PREFIX`: the object-store model instead (issue 35 item 6), on Zarr arrays in
S3 the calibration never read (store_space.py: 2-D to 5-D, shards or not, the codecs climio
writes, t/xy/xt/xyt/box, both Zarr stacks, 0 and 20 ms; store_run.py: the bench's own server,
`climio calibrate --store --quick` per latency, then predict + measure); the same records and
summary.
"""

from dataclasses import dataclass, field
from pathlib import Path

from .. import base
from ..base import option
from climio.base.errors import InputError

STUDY = "predict"
PRESETS = {
    "full": {"configs": 100, "seed": 1, "reps": 2, "max_s": 12.0, "only": ""},
    "quick": {"configs": 30, "seed": 1, "reps": 2, "max_s": 6.0, "only": ""},
}
PRESETS["survey"] = PRESETS["quick"]
STORE_REPS = 3


@dataclass
class Grid:
    configs: int = field(default=100, metadata=option("--configs", "Configurations drawn from the declared space.", "N"))
    seed: int = field(default=1, metadata=option("--seed", "Seed of the draw (another seed, other configurations).", "N"))
    reps: int = field(default=2, metadata=option("--reps", "Cold repetitions per configuration (--store: 3 unless given).", "N"))
    max_s: float = field(default=12.0, metadata=option("--max-s", "Configurations predicted to take longer are not run (a dnf record says so).", "S"))
    only: str = field(default="", metadata=option("--only", "Run only configurations whose id contains one of these words (comma list).", "LIST"))
    profile: str = field(default="", metadata=option("--profile", "Profile to predict with (default: this platform's, from climio calibrate).", "FILE"))
    store: str = field(default="", metadata=option("--store", "Validate the object-store model instead: Zarr arrays written under s3://BUCKET/PREFIX on climio's own server (SeaweedFS behind Toxiproxy, started by the bench), calibrated first with climio calibrate --store --quick.", "URL"))
    endpoint_url: str = field(default="", metadata=option("--endpoint-url", "With --store: measure this S3 endpoint as it is instead of the bench's own server (0 ms only, nothing evicted; credentials from the AWS_* variables).", "URL"))
    calibration: str = field(default="", metadata=option("--calibration", "With --store and --endpoint-url: the object-stores.json an earlier `climio calibrate --store` of that endpoint wrote (its run directory's), instead of calibrating again.", "FILE"))
    latency: str = field(default="", metadata=option("--latency", "With --store on the bench's own server: round-trip latencies injected by the proxy, ms (default 0,20).", "LIST"))
    preset: str = "full"
    latency_list: tuple = ()


def build_grid(preset="full", **values) -> Grid:
    if preset not in PRESETS:
        raise InputError(f"unknown preset '{preset}': choose from {', '.join(PRESETS)}")
    v = {"profile": "", **PRESETS[preset], **{k: x for k, x in values.items() if x is not None}}
    if values.get("store") and values.get("reps") is None:
        v["reps"] = STORE_REPS      # --store: the median of three, a shared machine's bursts land on one
    try:
        configs, seed, reps, max_s = int(v["configs"]), int(v["seed"]), int(v["reps"]), float(v["max_s"])
    except (TypeError, ValueError):
        raise InputError("--configs, --seed and --reps take integers, --max-s seconds") from None
    if configs < 1 or reps < 1 or max_s <= 0 or seed < 0:
        raise InputError(f"--configs {configs} and --reps {reps} must be at least 1, --max-s {max_s:g} positive, "
                         f"--seed {seed} not negative")
    store, endpoint_url = str(v.get("store") or ""), str(v.get("endpoint_url") or "")
    latency = _latencies(store, endpoint_url, str(v.get("latency") or ""))
    calibration = str(v.get("calibration") or "")
    if calibration and not endpoint_url:
        raise InputError("--calibration goes with --store and --endpoint-url (the bench's own server is new each run: "
                         "it is calibrated each run)")
    if calibration and not Path(calibration).is_file():
        raise InputError(f"--calibration {calibration}: no such file")
    return Grid(configs=configs, seed=seed, reps=reps, max_s=max_s, only=str(v["only"] or ""),
                profile=str(v["profile"] or ""), store=store, endpoint_url=endpoint_url, calibration=calibration,
                latency=",".join(f"{x:g}" for x in latency), preset=preset, latency_list=latency)


def _latencies(store, endpoint_url, text) -> tuple:
    """The injected latencies of a --store run (0 and 20 ms on the bench's own server)."""
    if (endpoint_url or text) and not store:
        raise InputError("--endpoint-url and --latency go with --store s3://BUCKET/PREFIX")
    if not store:
        return ()
    from ...stores.endpoint import parse_s3_url
    parse_s3_url(store)
    try:
        lat = tuple(sorted({float(x) for x in (text or ("0" if endpoint_url else "0,20")).split(",")}))
    except ValueError:
        raise InputError(f"--latency '{text}': give milliseconds separated by commas") from None
    if any(x < 0 or x > 10000 for x in lat):
        raise InputError(f"--latency '{text}': 0 to 10000 ms")
    if endpoint_url and any(lat):
        raise InputError("--endpoint-url measures a store as it is: latency is injected only into the bench's own "
                         "server (give --latency 0)")
    return lat


class Predict(base.Study):
    name = STUDY
    title = "Validation of the read-time model: predicted against measured on configurations not used to calibrate it."
    description = ("Configurations drawn with --seed from a declared space (shapes, dtypes, chunk shapes with edge "
                   "chunks, deflate/zstd/shuffle/none, xy/xt/xyt/sub-block/STSA reads, every stack, 1-4 tasks, default "
                   "or sized chunk cache), each predicted from the platform's profile (climio calibrate) with the "
                   "stack's real chunk cache, its chunk reads counted from HDF5, and measured cold.")
    Grid = Grid
    presets = PRESETS
    in_survey = False
    preset_help = {"quick": "30 configurations, two repetitions: a few minutes."}
    # --store: Zarr arrays in S3 (store_space.py, store_run.py), the same records and summary

    def run(self, ctx, grid) -> int:
        if grid.store:
            return self._part("store_run").run_store_validation(ctx, grid)
        return self._part("run").run_validation(ctx, grid)   # by name, as base.Study.run: no import cycle


base.register(Predict())
