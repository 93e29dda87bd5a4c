"""The base every layer may import: user-facing errors and their exit codes (errors), byte sizes (units).

Imports nothing of climio."""
