"""One registry of advice rules on one Facts type (climio.rules.registry says how a rule is written,
judged and ranked). This face re-exports the registry and imports the rule bodies (measured,
predicted), which register themselves."""

from .registry import (  # noqa: F401  (the package's face)
    FACT_NAMES, Facts, HIGH_SHARE, INPUTS, IO_BOTTLENECK_SHARE, MEDIUM_SHARE, REGISTRY, Rule,
    SEVERITY_ORDER, finding, judge, not_checked, rank, rule, rules_for, saving_share,
    severity, table, verdict,
)

# The rule bodies register themselves on import (static imports, so the import linter sees them).
from . import measured, object_store, objects, predicted  # noqa: E402,F401
