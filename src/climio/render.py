"""One Jinja2 template renders every report page (study runs and traces) from climio.sections
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
    """{"data": base64 PNG} of a sections.Figure, {} when it has nothing to draw, or {"error": text}:
    a figure that fails to draw must not cost the reader the tables."""
    try:
        png = fig.draw()
    except Exception as exc:  # noqa: BLE001  (any plotting failure becomes a visible note)
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"data": base64.b64encode(png).decode("ascii")} if png else {}


def page(title, meta, sections, findings=(), notes=(), provenance=(), footer=FOOTER) -> str:
    """The HTML page: `meta` [(key, value)] under the title, the key findings, `notes` (warnings),
    the sections, then the provenance blocks (collapsed by the caller with a Details)."""
    env = _env()
    css = (resources.files("climio") / "templates" / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(
        title=title, meta=meta, sections=list(sections), findings=list(findings), notes=list(notes),
        provenance=list(provenance), footer=footer, css=css, draw=draw)
