"""The trace advice rules live in climio.advise.rules (one registry for workflows, traces and
Darshan logs); this name stays for the trace report, the counters path and old imports: it IS
that module."""

import sys

from ..advise import rules as _rules

sys.modules[__name__] = _rules
