"""A page as a person sees it: opened in headless Chromium (the Debian package, driven by Playwright),
with what it logged, what it asked the network for, and a screenshot."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}


@dataclass
class Opened:
    page: Page
    console: list[str] = field(default_factory=list)  # "type: text" of every console message and page error
    requests: list[str] = field(default_factory=list)  # every URL the page asked for


def require_chromium() -> None:
    """Fail (never skip) when Chromium is missing, naming the fix."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: 'make test' installs it (apt-get install chromium, as root or "
            "with sudo); the report's browser test needs it"
        )


@contextmanager
def opened(path: Path) -> Iterator[Opened]:
    """``path`` opened in Chromium, once it has loaded."""
    require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            seen = Opened(page)
            page.on("console", lambda message: seen.console.append(f"{message.type}: {message.text}"))
            page.on("pageerror", lambda error: seen.console.append(f"pageerror: {error}"))
            page.on("request", lambda request: seen.requests.append(request.url))
            page.goto(path.as_uri(), wait_until="load")
            yield seen
        finally:
            browser.close()


def drawn_share(page: Page, png: bytes) -> float:
    """The share of a screenshot's pixels that are not the page's white background: the image is
    decoded by the browser itself (a canvas), so no imaging library is needed."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    share: float = page.evaluate(
        """async (url) => {
            const image = new Image();
            image.src = url;
            await image.decode();
            const canvas = document.createElement("canvas");
            canvas.width = image.width;
            canvas.height = image.height;
            const context = canvas.getContext("2d");
            context.drawImage(image, 0, 0);
            const pixels = context.getImageData(0, 0, image.width, image.height).data;
            let drawn = 0;
            for (let i = 0; i < pixels.length; i += 4) {
                if (pixels[i] < 240 || pixels[i + 1] < 240 || pixels[i + 2] < 240) drawn++;
            }
            return drawn / (pixels.length / 4);
        }""",
        url,
    )
    return share
