"""What a report says, as data: the objects every study's `section()` returns and one Jinja2
template renders (climio.report). Nothing here draws or formats HTML.

    Section(id, title, blocks=[Paragraph, Heading, Table, Figure, Note, Details], findings=[Finding])
    Headline(study, rows=[HeadlineRow], figure=Figure, decide=text)   a study's part of the first screen
    Lead(title, blocks, figure)             a page's first screen, built from the Headlines

A Figure holds a function that draws it (PNG bytes), called when the page is rendered, so a
section can be built cheaply and a figure that fails to draw becomes a visible note instead of
costing the reader the tables. Text is plain: the renderer escapes everything.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

# The verdicts a finding of the thesis can get, and what each means for the reader.
VERDICTS = {
    "reproduced": "the measurement shows the thesis's effect",
    "not reproduced": "measured at a size that decides it, and the effect is absent",
    "refuted": "measured, and the opposite holds",
    "not decidable": "measured at a size too small to decide it",
    "inconclusive": "measured, but the difference is within the noise",
    "not measured": "the records hold no measurement for it",
    "not measurable here": "this platform cannot show it (e.g. one node)",
    "met": "a target of climio's own (not a thesis finding), and the measurement meets it",
    "not met": "a target of climio's own, and the measurement misses it",
}


@dataclass
class Paragraph:
    text: str
    kind = "paragraph"


@dataclass
class Heading:
    text: str
    kind = "heading"


@dataclass
class Note:
    """A remark the reader must not miss (a warning) or a plain aside."""

    text: str
    warn: bool = True
    kind = "note"


@dataclass
class Cell:
    """A table cell with a style class (dnf, err, warm, prof-humped, ...)."""

    text: str
    cls: str = ""


@dataclass
class Link:
    """A table cell that links to an anchor of the page ("#study-chunking") or a file beside it."""

    text: str
    href: str


@dataclass
class Table:
    headers: list
    rows: list                                   # lists of str / numbers / Cell
    caption: str = ""
    numeric: bool = True                         # right-align the cells after the first two
    row_classes: Optional[list] = None           # one class per row ("dnf", "error", "") or None
    kind = "table"


@dataclass
class Figure:
    draw: Callable                               # () -> PNG bytes (or None: nothing to draw)
    alt: str
    caption: str = ""
    kind = "figure"


@dataclass
class ParamList:
    """Key = value pairs common to every configuration."""

    intro: str
    items: list                                  # [(key, value text)]
    kind = "params"


@dataclass
class Details:
    """A collapsed group: the full configuration tables, provenance."""

    summary: str
    blocks: list
    kind = "details"


@dataclass
class Finding:
    """One line of the key-findings block: a reproduction verdict or a headline number."""

    study: str
    text: str
    verdict: Optional[str] = None                # one of VERDICTS, or None for a headline

    def __post_init__(self):
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")


@dataclass
class Section:
    id: str
    title: str
    blocks: list = field(default_factory=list)
    findings: list = field(default_factory=list)

    def add(self, *blocks) -> "Section":
        self.blocks.extend(b for b in blocks if b is not None)
        return self


@dataclass
class Lead:
    """A page's first screen: what was learned (`blocks`: a verdict paragraph, a small table) beside
    one headline figure; rendered above the findings and the sections."""

    title: str
    blocks: list = field(default_factory=list)
    figure: Optional[Figure] = None
    kind = "lead"


@dataclass
class HeadlineRow:
    """One line of the report's "this platform" table: a question and what this run measured."""

    question: str                                # "fastest stack, sequential reads"
    answer: str                                  # "c-netcdf: 2,225 MB/s at 16 MiB"
    state: str = ""                              # the page cache behind the number: cold / warm / ...


@dataclass
class Headline:
    """What one study puts on the report's first screen: its rows of the summary table, its key
    figure (the report shows the first study's as the headline figure) and, for the findings this
    run could not decide, the size or setup that would decide them (one sentence)."""

    study: str
    rows: list = field(default_factory=list)     # [HeadlineRow]
    figure: Optional[Figure] = None
    decide: str = ""


def cache_state(records) -> str:
    """The page-cache state of the repetitions behind a number, for a headline: "cold", "warm",
    or the count of each ("cold ×4, effectively warm ×2") when they differ."""
    from collections import Counter
    c = Counter("effectively warm" if r.get("cache", {}).get("effective") == "effectively-warm"
                else str(r.get("cache", {}).get("state") or "not recorded") for r in records)
    if len(c) == 1:
        return next(iter(c))
    return ", ".join(f"{k} ×{v}" for k, v in sorted(c.items()))
