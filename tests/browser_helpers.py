"""Headless Chromium for the tests: Debian's ``chromium`` driven by Playwright for Python; and the
browser game's server, run in a thread on 127.0.0.1 with a clock the test moves.

The browser is started by the tests, headless, with no network of its own (the flags below; pages
are files or the tests' own server on 127.0.0.1), and closed by them. The browser is
``SPIT_CHROMIUM`` when it is set (a path that is not there fails the test, saying so: the tests
never run another browser than the one asked for), else ``chromium`` / ``chromium-browser`` on
the PATH. Without Chromium or Playwright a test skips, saying how to install them; with
``SPIT_REQUIRE_BROWSER=1`` (set by CI, which installs Chromium) it fails instead.
The README's screenshots (replay.png, terminal.png, browser.png) go to ``SPIT_SCREENSHOTS`` (a
folder) when it is set, else to a temporary folder; other screenshots go to the tests' temporary
folders.
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
    """The Chromium executable: ``SPIT_CHROMIUM``, else chromium / chromium-browser on PATH.

    Raises:
        pytest.fail.Exception: ``SPIT_CHROMIUM`` is set but names no executable (a test that
            asked for one browser never runs another).
    """
    asked = os.environ.get("SPIT_CHROMIUM")
    if asked:
        found = shutil.which(asked)
        if found is None:
            pytest.fail(f"SPIT_CHROMIUM={asked!r} is not an executable browser (nothing there, "
                        "or not executable); set it to Chromium's path or unset it", pytrace=False)
        return found
    for candidate in ("chromium", "chromium-browser"):
        if shutil.which(candidate):
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


class FakeClock:
    """A wall clock in ms that only the test moves (the browser game's server reads it)."""

    def __init__(self, ms: float = 0.0):
        self.ms = float(ms)

    def __call__(self) -> float:
        return self.ms


@contextmanager
def live_server(settings, clock, tick_s: float = 0.005):
    """The browser game's app (``experiments.realtime.web.create_app``) served by uvicorn in a
    thread, on a free port of 127.0.0.1: yields ``(app, base_url)``; stopped, its port freed, on
    exit. The socket listens before the thread starts, so clients may connect at once."""
    import asyncio
    import threading

    import uvicorn

    from experiments.realtime.web import create_app, free_socket

    app = create_app(settings, clock=clock, tick_s=tick_s)
    sock = free_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="auto", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])),
                              daemon=True)
    thread.start()
    try:
        yield app, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        assert not thread.is_alive(), "the server did not stop"


def wait_for(app, predicate, timeout: float = 30.0):
    """Wait (on the app's condition, not a sleep) until ``predicate(app.state.connections)``."""
    with app.state.changes:
        assert app.state.changes.wait_for(lambda: predicate(app.state.connections), timeout), \
            "the server never got there"
