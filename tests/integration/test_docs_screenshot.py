"""The documentation site in a real browser: headless Chromium renders a page and takes its picture.

Chromium is Debian's ``chromium`` package (``make system-tools`` installs it; ``make
test`` runs that first).  It starts with a fresh profile and nothing that
reaches the network; the page is the built site's command-line guide, read
from disk.  The DOM after rendering must hold the page's title and the
navigation to the command-line reference, and the screenshot must be a PNG of
the window's size that is not a blank page.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 900
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium is not installed: `make system-tools` installs Debian's chromium package"
    return found


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, the decompressed scanlines) of a PNG: enough to tell a blank page."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, width, height, idat = 8, 0, 0, b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        chunk = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        offset += 12 + length
    return width, height, zlib.decompress(idat)


def test_the_cli_guide_renders_in_headless_chromium(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    page = (site / "cli" / "index.html").as_uri()
    profile = f"--user-data-dir={tmp_path / 'profile'}"
    browser = [_chromium(), *FLAGS, profile, f"--window-size={WIDTH},{HEIGHT}"]

    dom = subprocess.run(
        [*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=False
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "command line</h1>" in dom.stdout and "cli-reference/" in dom.stdout

    picture = tmp_path / "cli.png"
    shot = subprocess.run(
        [*browser, f"--screenshot={picture}", page], capture_output=True, text=True, timeout=120, check=False
    )
    assert shot.returncode == 0 and picture.exists(), shot.stderr[-2000:]
    width, height, pixels = _png_pixels(picture.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    assert len(set(pixels[1 : 1 + width * 3 * 200])) > 8, "the page looks blank"
