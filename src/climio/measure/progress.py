"""Progress bars for long runs (rich), silent when stderr is not a terminal unless asked."""

import sys

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn, TransferSpeedColumn)

console = Console(stderr=True)


class _Bar:
    """A rich progress bar drawn on stderr, only when it is a terminal unless `enabled` says."""

    def __init__(self, total, label, enabled, *columns, **fields):
        self.enabled = console.is_terminal if enabled is None else enabled
        self._p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), *columns,
                           console=console, disable=not self.enabled)
        self._task = self._p.add_task(label, total=total, **fields)

    def __enter__(self):
        self._p.__enter__()
        return self

    def __exit__(self, *exc):
        self._p.__exit__(*exc)


class StudyProgress(_Bar):
    """Counts configurations x repetitions; shows the last rate measured."""

    def __init__(self, total: int, label: str, enabled=None):
        super().__init__(total, label, enabled, MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                         TimeElapsedColumn(), TimeRemainingColumn(), last="")

    def note(self, text: str) -> None:
        self._p.update(self._task, description=text)

    def advance(self, n=1, rec=None, last="") -> None:
        """`rec`: a read study's record, shown as layer/pattern/buffer; `last`: any other text."""
        if rec is not None:
            p, m = rec["params"], rec["metrics"]
            rate = f"< {m['rate_bound_MBps']:.1f}" if rec["status"] == "dnf" else f"{m.get('rate_MBps', 0):.1f}"
            last = f"{p.get('layer', '')} {p.get('pattern', '')} {p.get('buffer_bytes', '')} B: {rate} MB/s"
        self._p.update(self._task, advance=n, last=last)


class BytesProgress(_Bar):
    """A bar over bytes written, with throughput; `callback` plugs into the data writers."""

    def __init__(self, total: int, label: str, enabled=None):
        super().__init__(total, label, enabled, DownloadColumn(binary_units=True), TransferSpeedColumn(),
                         TimeRemainingColumn())

    def callback(self, nbytes: int) -> None:
        self._p.update(self._task, advance=nbytes)


def info(msg: str) -> None:
    console.print(msg, highlight=False, soft_wrap=True)


def err_line(msg: str) -> None:
    sys.stderr.write(msg.rstrip() + "\n")
