"""A report looked at in a real browser: headless Chromium (Debian's `chromium`, installed by
scripts/setup.sh) driven by Playwright for Python against the system browser; Playwright's own
browser downloads are never used.

    open_page(path, width=1400, height=900, on_error=None)
                                               a context manager: (browser, page) with the file loaded;
                                               on_error(text) hears console errors, page errors and
                                               failed loads
    screenshot(html, png, width=1400)          a PNG of the page's first screen (what a reader sees first)

CLIMIO_CHROMIUM names another Chromium binary. A missing browser or Playwright is one line
(NativeError, exit 5), never a traceback.
"""

import contextlib
import os
import shutil
from pathlib import Path

from climio.base.errors import DataError, NativeError

FIRST_SCREEN = (1400, 900)        # pixels: a laptop's browser window


def chromium() -> str:
    """The Chromium binary: $CLIMIO_CHROMIUM, else chromium on PATH, else /usr/bin/chromium."""
    exe = os.environ.get("CLIMIO_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(exe, os.X_OK):
        raise NativeError(f"no Chromium at {exe}: run scripts/setup.sh (Debian package chromium) or set CLIMIO_CHROMIUM")
    return exe


@contextlib.contextmanager
def open_page(path, width=FIRST_SCREEN[0], height=FIRST_SCREEN[1], on_error=None):
    """(browser, page) of headless Chromium with the file `path` loaded at a `width` x `height`
    window; `on_error(text)` is called for every console error, uncaught page error and failed load."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise NativeError("Playwright for Python is not installed: run scripts/setup.sh (pip package playwright)") from None
    path = Path(path).resolve()
    if not path.is_file():
        raise DataError(f"no such report: {path}")
    exe = chromium()
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        except PlaywrightError as exc:
            raise NativeError(f"Chromium ({exe}) did not start: {str(exc).splitlines()[0]}") from None
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            if on_error is not None:
                page.on("console", lambda m: on_error(f"console: {m.text}") if m.type == "error" else None)
                page.on("pageerror", lambda e: on_error(f"page error: {e}"))
                page.on("requestfailed", lambda r: on_error(f"failed to load {r.url[:80]}: {r.failure}"))
            page.goto(path.as_uri(), wait_until="load")
            yield browser, page
        finally:
            browser.close()


def screenshot(html, png=None, width=FIRST_SCREEN[0], height=FIRST_SCREEN[1]) -> Path:
    """Write a PNG of the first screen of the page `html` (default: beside it, NAME-first-screen.png)."""
    html = Path(html)
    png = Path(png) if png else html.with_name(html.stem + "-first-screen.png")
    tmp = png.with_name(f".{png.name}.{os.getpid()}.tmp.png")
    with open_page(html, width, height) as (_, page):
        page.screenshot(path=str(tmp))
    os.replace(tmp, png)
    return png
