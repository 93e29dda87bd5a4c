"""The dataset and what is asked of it: layout geometry (layout), codec settings (compression), read
plans and named read shapes (access), the parsers of option values (options), whole-file checks
(integrity), and the names of the software stacks (stack_names; the readers are climio.measure's).

May import climio.base, climio.runs and climio.machine; never measure, presentation, the model or above."""
