"""The advisor: say what to change, with the predicted time before and after (climio.model).

    predict.py   `climio predict` / climio.predict(): the model's prediction of a workflow and,
                 with --check, its reads run cold and compared (climio.measure.tasks)
    recommend.py ranked recommendations: predicted time before/after, one-off cost, break-even
    measured.py  advice for the Facts of a climio trace or a Darshan log (climio.rules.facts)

The model, its profile and workflows live in climio.model (pure, below the studies); the rules
live in the core's one registry (climio.rules); advise imports no other study (pyproject.toml).
"""
