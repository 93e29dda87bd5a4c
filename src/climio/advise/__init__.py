"""The advisor: say what to change, with the predicted time before and after (climio.model).

    predict.py   `climio predict` / climio.predict(): the model's prediction of a workflow and,
                 with --check, its reads run cold and compared
    rules.py     one rule registry for workflows, climio traces and Darshan logs
    recommend.py ranked recommendations: predicted time before/after, one-off cost, break-even

The model, its profile and workflows live in climio.model (pure, below the studies);
rules and recommend sit above the trace package they read (pyproject.toml).
"""
