"""The advisor: predict how long a read takes on this platform, and say what to change.

    profile.py   calibrated platform rates (Profile), keyed by platform_id; JSON round trip; built
                 from a calibration run or from existing run directories (pure fitting)
    model.py     the one explicit model: requests x latency + bytes / rate(size, pattern)
                 + bytes decoded / decode rate + per-call CPU, with parallel scaling; a breakdown
                 and the path through the thesis's flowchart (Fig. 7.1)
    workflow.py  workflow descriptions (reads, passes, tasks, stack) from the CLI, YAML or JSON,
                 and the Layout of a file's variable or an xarray Dataset's
    runner.py    run a workflow's reads cold with N tasks and time it (predict --check, the studies)
    rules.py     one rule registry for workflows, climio traces and Darshan logs
    recommend.py ranked recommendations: predicted time before/after, one-off cost, break-even

Layering: profile < model < workflow/runner are pure or core-only (the studies import them);
rules and recommend sit above the trace and rechunk packages they read (pyproject.toml).
"""
