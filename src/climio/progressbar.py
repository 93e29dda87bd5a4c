"""Progress bars for long runs (rich), silent when stderr is not a terminal unless asked."""

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)


class StudyProgress:
    """Counts configurations x repetitions; shows the last rate measured."""

    def __init__(self, total: int, label: str, enabled=None):
        self.enabled = console.is_terminal if enabled is None else enabled
        self._p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[last]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                           console=console, disable=not self.enabled)
        self._task = self._p.add_task(label, total=total, last="")

    def __enter__(self):
        self._p.__enter__()
        return self

    def __exit__(self, *exc):
        self._p.__exit__(*exc)

    def note(self, text: str) -> None:
        self._p.update(self._task, description=text)

    def advance(self, n=1, rec=None) -> None:
        last = ""
        if rec is not None:
            p, m = rec["params"], rec["metrics"]
            rate = f"< {m['rate_bound_MBps']:.1f}" if rec["status"] == "dnf" else f"{m.get('rate_MBps', 0):.1f}"
            last = f"{p.get('layer', '')} {p.get('pattern', '')} {p.get('buffer_bytes', '')} B: {rate} MB/s"
        self._p.update(self._task, advance=n, last=last)


class BytesProgress:
    """A bar over bytes written, with throughput; `callback` plugs into the data writers."""

    def __init__(self, total: int, label: str, enabled=None):
        from rich.progress import DownloadColumn, TransferSpeedColumn
        self.enabled = console.is_terminal if enabled is None else enabled
        self._p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(binary_units=True),
                           TransferSpeedColumn(), TimeRemainingColumn(), console=console, disable=not self.enabled)
        self._task = self._p.add_task(label, total=total)

    def __enter__(self):
        self._p.__enter__()
        return self

    def __exit__(self, *exc):
        self._p.__exit__(*exc)

    def callback(self, nbytes: int) -> None:
        self._p.update(self._task, advance=nbytes)


def info(msg: str) -> None:
    console.print(msg, highlight=False)


def err_line(msg: str) -> None:
    sys.stderr.write(msg.rstrip() + "\n")
