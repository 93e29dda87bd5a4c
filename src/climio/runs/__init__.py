"""Runs, records and outputs: the JSON-lines record (records), a run directory (rundir), outputs
written under a temporary name (staging), the user's stop (stopping), flat tables (export).

May import climio.base and climio.machine; never the dataset readers, presentation or anything above."""
