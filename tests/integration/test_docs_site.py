"""The documentation site: docs/ built with MkDocs in strict mode, every link of every page checked.

MkDocs refuses (strict) a page missing from the navigation, a link to a page
or an anchor that does not exist; then every ``href`` and ``src`` of the
built HTML that stays on the site must name a file that was built.  The
command-line reference page must be the real ``--help`` of today.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

from tests.support import docs_check

ROOT = Path(__file__).resolve().parents[2]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def test_the_site_builds_strictly_and_every_link_lands(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    pages = sorted(site.rglob("*.html"))
    assert {"cli/index.html", "cli-reference/index.html", "aio/index.html"} <= {
        str(p.relative_to(site)) for p in pages
    }
    broken = []
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            parsed = urlparse(link)
            if parsed.scheme or parsed.netloc or not parsed.path:
                continue  # another site, or an anchor on this page
            path = unquote(parsed.path)
            base = site if path.startswith("/") else page.parent  # 404.html links from the site's root
            target = (base / path.lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link}")
    assert not broken, broken
    reference = (site / "cli-reference" / "index.html").read_text(encoding="utf-8")
    assert re.search(r"usage: kafkacompat emulate", reference)


def test_the_cli_reference_is_todays_help() -> None:
    assert docs_check.REFERENCE.read_text(encoding="utf-8") == docs_check.cli_reference(), (
        "docs/cli-reference.md is stale: make docs"
    )
