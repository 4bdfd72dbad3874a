"""Headless Chromium for the tests: Debian's ``chromium`` driven by Playwright for Python.

The browser is started by the tests, headless, with no network of its own (the flags below; pages
are files), and closed by them. Without Chromium or Playwright a test skips, saying how to install
them; with ``SPIT_REQUIRE_BROWSER=1`` (set by CI, which installs Chromium) it fails instead.
The README's screenshots (replay.png, terminal.png) go to ``SPIT_SCREENSHOTS`` (a folder) when it
is set, else to a temporary folder; other screenshots go to the tests' temporary folders.
"""

from __future__ import annotations

import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

INSTALL = ("install Chromium (Debian: apt-get install chromium) and Playwright "
           "(pip install -c constraints.txt -e '.[browser]'); .ci/run does both")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions"]


def chromium_path() -> str | None:
    """The Chromium executable: ``SPIT_CHROMIUM``, else chromium / chromium-browser on PATH."""
    for candidate in (os.environ.get("SPIT_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def unavailable(why: str):
    """Skip (or fail, under SPIT_REQUIRE_BROWSER=1) a test that needs the browser."""
    if os.environ.get("SPIT_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required (SPIT_REQUIRE_BROWSER=1) but {why}; {INSTALL}")
    pytest.skip(f"{why}; {INSTALL}")


@contextmanager
def chromium():
    """A headless Chromium (Playwright Browser), closed on exit."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("Playwright is not installed")
    executable = chromium_path()
    if executable is None:
        unavailable("no chromium on PATH")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot_folder(tmp_path_factory) -> Path:
    """Where the README's screenshots go: ``SPIT_SCREENSHOTS``, else a temporary folder."""
    folder = os.environ.get("SPIT_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def svg_to_png(browser, svg_path: Path, png_path: Path) -> Path:
    """Draw an SVG file (a Textual screenshot) into a PNG with the browser. Web fonts the SVG
    names are dropped (no network): the browser's monospace font stands in."""
    svg = re.sub(r"@font-face\s*{[^}]*}", "", Path(svg_path).read_text(encoding="utf-8"))
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    try:
        page.set_content('<html><body style="margin:0;background:#0f1a14">' + svg + "</body></html>")
        page.locator("svg").first.screenshot(path=str(png_path))
    finally:
        page.close()
    return png_path
