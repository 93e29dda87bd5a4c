"""One Jinja2 template renders every report page (study runs and traces) from climio.present.sections
objects: a self-contained HTML file, CSS inline, figures as base64 PNG data URIs, no JavaScript,
nothing fetched from the network; autoescape escapes every text from records and platform.json.
"""

import base64
import functools
from importlib import resources

import jinja2

FOOTER = ("climio — I/O benchmarking for netCDF/HDF5 climate data. Units: MB/s = 10^6 B/s; "
          "sizes in KiB/MiB/GiB = 2^10/2^20/2^30 B.")


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    templates = resources.files("climio") / "templates"
    loader = jinja2.FunctionLoader(lambda name: (templates / name).read_text(encoding="utf-8"))
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.Undefined,
                              trim_blocks=False, lstrip_blocks=False)


def draw(fig) -> dict:
    """{"data": base64 PNG, "width", "height" (pixels, from the PNG header)} of a sections.Figure,
    {} when it has nothing to draw, or {"error": text}: a figure that fails to draw must not cost
    the reader the tables."""
    try:
        png = fig.draw()
    except Exception as exc:  # noqa: BLE001  (any plotting failure becomes a visible note)
        return {"error": f"{type(exc).__name__}: {exc}"}
    if not png:
        return {}
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return {"error": "the figure is not a PNG image"}
    return {"data": base64.b64encode(png).decode("ascii"), "width": int.from_bytes(png[16:20], "big"),
            "height": int.from_bytes(png[20:24], "big")}


# The findings in the order a reader wants them: what the measurements decided first, then the
# headline numbers (no verdict) and what the noise left open. The verdicts that decide nothing at
# this size are collapsed, one line per study with a count and what would decide them.
GROUPS = (("reproduced", "Reproduced"), ("refuted", "Refuted"), ("not reproduced", "Not reproduced"),
          ("met", "Met (climio's own targets)"), ("not met", "Not met (climio's own targets)"),
          (None, "Measured on this platform"), ("inconclusive", "Inconclusive (within the noise)"))
UNDECIDED = ("not decidable", "not measured", "not measurable here")
_UNDECIDED_WORDS = {"not decidable": "not decidable at this size", "not measured": "not measured",
                    "not measurable here": "not measurable on this platform"}


def finding_groups(findings, measured="Measured on this platform") -> list:
    """[(title, [Finding])] of the decided and headline findings, in GROUPS order, empty groups left
    out; `measured` titles the findings without a verdict (the headline numbers)."""
    return [(measured if v is None else title, [f for f in findings if f.verdict == v]) for v, title in GROUPS
            if any(f.verdict == v for f in findings)]


def undecided_groups(findings, decide=None) -> list:
    """[(line, [Finding])]: per study, the findings this run could not decide, as one line with
    their count per verdict and (from `decide` {study: text}) the size or setup that would."""
    decide = decide or {}
    out = []
    for study in dict.fromkeys(f.study for f in findings if f.verdict in UNDECIDED):
        mine = [f for f in findings if f.study == study and f.verdict in UNDECIDED]
        counts = [f"{sum(f.verdict == v for f in mine)} {_UNDECIDED_WORDS[v]}" for v in UNDECIDED
                  if any(f.verdict == v for f in mine)]
        line = f"{study}: {len(mine)} finding{'s' if len(mine) != 1 else ''} open ({', '.join(counts)})"
        if decide.get(study):
            line += f"; decided by {decide[study]}"
        out.append((line, mine))
    return out


def page(title, meta, sections, findings=(), notes=(), provenance=(), footer=FOOTER, lead=None, decide=None,
         measured="Measured on this platform") -> str:
    """The HTML page: `meta` [(key, value)] in one line under the title, the `lead` (a
    sections.Lead: what was learned beside the headline figure), `notes` (warnings), the findings
    grouped by verdict (finding_groups; the undecided collapsed per study with `decide`), the
    sections, then the provenance blocks (collapsed by the caller with a Details); `measured`
    titles the findings without a verdict."""
    env = _env()
    css = (resources.files("climio") / "templates" / "report.css").read_text(encoding="utf-8")
    findings = list(findings)
    return env.get_template("report.html.j2").render(
        title=title, meta=meta, sections=list(sections), findings=findings, groups=finding_groups(findings, measured),
        undecided=undecided_groups(findings, decide), notes=list(notes), lead=lead,
        provenance=list(provenance), footer=footer, css=css, draw=draw)
