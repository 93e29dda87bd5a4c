"""Presentation: what a report says as data (sections), numbers as table cells (cells), shared
statistics (stats), figures (plotting) and the one HTML template (render).

May import climio.base, climio.runs and climio.dataset.stack_names; reads records, never measures."""
