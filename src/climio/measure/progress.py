"""Progress of long runs: a rich bar on a terminal; in a batch log (stderr not a terminal, as under
Slurm) one plain line per configuration at most every BATCH_EVERY_S seconds, and always the last;
silent when the caller says so (enabled=False)."""

import sys
import time

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn, TransferSpeedColumn)

from climio.runs import stopping

console = Console(stderr=True)
BATCH_EVERY_S = 10.0


class _Bar:
    """A rich progress bar drawn on stderr when it is a terminal; plain timed lines otherwise
    (enabled=None), nothing with enabled=False."""

    def __init__(self, total, label, enabled, *columns, **fields):
        self.enabled = console.is_terminal if enabled is None else enabled
        self.batch = enabled is None and not console.is_terminal
        self._p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), *columns,
                           console=console, disable=not self.enabled)
        self._task = self._p.add_task(label, total=total, **fields)
        self._label, self._total, self._done, self._t0 = label, total, 0, time.monotonic()
        self._last_line = -BATCH_EVERY_S

    def _batch_line(self, n, text="", force=False) -> None:
        """One line for a batch log: `label: done/total (pct) elapsed text`."""
        self._done += n
        now = time.monotonic()
        if not self.batch or not (force or self._done >= self._total or now - self._last_line >= BATCH_EVERY_S):
            return
        self._last_line = now
        pct = f" ({100 * self._done / self._total:.0f}%)" if self._total else ""
        fmt = getattr(self, "_fmt", str)
        err_line(f"{self._label}: {fmt(self._done)}/{fmt(self._total)}{pct} after {now - self._t0:.0f} s"
                 + (f"  {text}" if text else ""))

    def __enter__(self):
        self._p.__enter__()
        return self

    def __exit__(self, *exc):
        self._p.__exit__(*exc)


# The parameters a progress line names, in this order, where a record has them (any study's).
PROGRESS_PARAMS = ("layer", "stack", "pattern", "read_shape", "chunk_label", "chunking", "compression",
                   "cache_setting", "buffer_bytes", "ranks")


def config_text(params: dict) -> str:
    """A record's configuration in a few words: the parameters it has, none left blank."""
    words = []
    for k in PROGRESS_PARAMS:
        v = params.get(k)
        if v in (None, "", [], "none"):
            continue
        words.append(f"{v} B" if k == "buffer_bytes" else f"{v} ranks" if k == "ranks" else str(v))
    return " ".join(words) or "configuration"


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
            last = f"{config_text(p)}: {rate} MB/s"
        self._p.update(self._task, advance=n, last=last)
        self._batch_line(n, last)
        stopping.check()     # a stop swallowed by library code during the step just counted


class BytesProgress(_Bar):
    """A bar over bytes written, with throughput; `callback` plugs into the data writers."""

    def __init__(self, total: int, label: str, enabled=None):
        super().__init__(total, label, enabled, DownloadColumn(binary_units=True), TransferSpeedColumn(),
                         TimeRemainingColumn())

    def _fmt(self, nbytes):
        from climio.base.units import format_size
        return format_size(nbytes)

    def callback(self, nbytes: int) -> None:
        self._p.update(self._task, advance=nbytes)
        self._batch_line(nbytes)
        stopping.check()


def info(msg: str) -> None:
    console.print(msg, highlight=False, soft_wrap=True)


def err_line(msg: str) -> None:
    sys.stderr.write(msg.rstrip() + "\n")
