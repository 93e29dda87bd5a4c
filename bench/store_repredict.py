"""Re-predict a `climio bench predict --store` run's configurations with the current model, from
its own records and calibrations (object-stores-*ms.json), without measuring again: the measured
times do not depend on the model, so a model change is judged on the same measurements (and a run
measured with an older model is re-scored). Prints median / 90th percentile / max of the error
factor exp(|log(predicted / measured)|), the measured time being the median of the repetitions,
and the worst configurations with the model's parts.

    .venv/bin/python bench/store_repredict.py RUN_DIR [--worst 8] [--share calibration|one]

--share one: the CPU side on a whole core (the model before the calibration's share was used).
A calibration written while the share was named calibration_cpu_share is read as cpu_share.
"""

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402


def _rates(run: Path) -> dict:
    from climio.model.object_store import StoreRates
    out = {}
    for f in run.glob("object-stores-*ms.json"):
        lat = float(f.name[len("object-stores-"):-len("ms.json")])
        (_, v), = json.loads(f.read_text())["object_stores"].items()
        if "calibration_cpu_share" in v:
            v = {**v, "cpu_share": v["calibration_cpu_share"]}
        out[lat] = StoreRates.from_dict(v)
    return out


def _description(p):
    from climio.dataset import cf
    from climio.dataset.description import Description
    dims = tuple(p["dims"])
    return Description("v", dims, cf.roles_of(dims), tuple(p["shape"]), "f4", tuple(p["chunks"]), p["compression"],
                       "zarr-s3", "s3://x", tuple(p["shards"]) if p["shards"] else None,
                       chunk_ratio=p["stored_ratio"] if p["compression"] != "none" else None)


def repredict(run: Path, share: str = "calibration") -> list:
    from climio.profiles import decode_rate
    from climio.model.object_store import predict_layout
    from climio.runs.records import read_records
    rates = _rates(run)
    by = {}
    for r in read_records(run):
        if r.get("study") == "predict" and r.get("status") == "ok":
            by.setdefault(r["params"]["config"], []).append(r)
    rows = []
    for cfg, recs in sorted(by.items()):
        p = recs[0]["params"]
        R = rates[p["latency_ms"]]
        if share == "one":
            R = dataclasses.replace(R, cpu_share=1.0)
        d = _description(p)
        q = predict_layout(d, d.chunks, d.shards, p["read"], R, p["stack"], decode_rate(d.codecs, None, R, p["stack"])[0])
        walls = [x["metrics"]["wall_s"] for x in recs]
        meas = median(walls)
        rows.append({"config": cfg, "predicted_s": q["time_s"], "measured_s": meas, "ratio": q["time_s"] / meas,
                     "factor": math.exp(abs(math.log(q["time_s"] / meas))), "spread": max(walls) / min(walls),
                     "parts": q, "recorded_s": p["predicted_s"]})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--worst", type=int, default=8)
    ap.add_argument("--share", choices=("calibration", "one"), default="calibration")
    a = ap.parse_args(argv)
    rows = repredict(a.run, a.share)
    f = np.array([r["factor"] for r in rows])
    print(f"{a.run}: {len(rows)} configurations, median {np.median(f):.2f}x, 90th percentile "
          f"{np.quantile(f, 0.9):.2f}x, max {f.max():.2f}x (share: {a.share}); median predicted/measured "
          f"{np.median([r['ratio'] for r in rows]):.2f}")
    for r in sorted(rows, key=lambda r: -r["factor"])[:a.worst]:
        q = r["parts"]
        print(f"  {r['ratio']:5.2f}  {r['config']}: predicted {r['predicted_s']:.3g} s (wire {q['wire_s']:.3g}, "
              f"CPU {q['cpu_s']:.3g} + decode {q['decode_s']:.3g} over share {q['cpu_share']:.2f}; {q['gets']:.0f} GETs, "
              f"{q['slabs']} hyperslabs), measured {r['measured_s']:.3g} s (repetitions {r['spread']:.2f}x apart)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
