"""The rechunk planner lives in the cost model (climio.model.convert: the pure planner, the one-off
cost the advisor shares; climio.model.rates: its rates from the platform profile); the rechunk
modules take it from here."""

from climio.dataset.layout import chunks_in  # noqa: F401
from ..model.convert import (PASS_NAMES, PASS_STRATEGIES, PLAN_STRATEGIES, Layout, Pass, Plan,  # noqa: F401
                             conversion_plan, peak_memory, plan_variable)
from climio.machine.memory import default_max_mem, here  # noqa: F401  (the planner's defaults)
from ..model.rates import Rates  # noqa: F401
