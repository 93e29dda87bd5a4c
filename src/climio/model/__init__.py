"""The cost model: pure, below the studies (bench, rechunk, trace, stsa, advise) and above the core.

    profile.py   calibrated platform rates (Profile), keyed by platform_id; JSON round trip; built
                 from a calibration run or from existing run directories (pure fitting)
    predict.py   the read-time model: requests x latency + bytes / rate(size, pattern)
                 + bytes decoded / decode rate + per-call CPU, with parallel scaling; a breakdown
                 and the path through the thesis's flowchart (Fig. 7.1)
    workflow.py  workflows (reads, passes, tasks, stack) over described data, predicted read by
                 read; the loading (YAML/JSON, climio.dataset.describe, this platform's profile)
                 is the caller's (climio.advise.loading)
    rates.py     the conversion planner's rates (read, write, encode, decode, per request) from
                 the profile, each saying whether it is calibrated or a built-in default
    convert.py   the conversion planner (climio rechunk's plans) and the one-off cost of a
                 conversion (conversion_plan), which the advisor states and rechunk --dry-run prints

Everything is derived from one Profile; nothing here measures (climio.advise and the studies do).
"""
