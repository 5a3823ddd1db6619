"""The site's search from file://: ranked results with snippets (docs/_static/econarena-search.js and the
page texts docs/_ext/econarena_docs.py writes), checked in headless Chromium where it is installed."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from timing import budget

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, timeout=budget(300))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_every_page_text_is_written_for_the_snippets(site: Path) -> None:
    text = (site / "_static" / "econarena-pages.js").read_text(encoding="utf-8")
    assert text.startswith("window.ECONARENA_PAGES = ") and text.rstrip().endswith(";")
    pages = json.loads(text[len("window.ECONARENA_PAGES = "):].rstrip().rstrip(";"))
    assert "players" in pages and "tutorial/rational" in pages and "own-games" in pages
    assert "Local Hugging Face models" in pages["players"]
    assert "</" not in text  # a page's text can never close the script that holds it
    search = (site / "search.html").read_text(encoding="utf-8")
    assert search.index("econarena-search.js") < search.index("searchtools.js")  # our Scorer is defined first


def _results(site: Path, query: str, tmp: Path) -> list[tuple[str, str]]:
    binary = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={tmp}",
             "--virtual-time-budget=15000", "--dump-dom"]
    url = (site / "search.html").as_uri() + "?q=" + query.replace(" ", "+")
    dom = subprocess.run([binary, *flags, url], capture_output=True, text=True, timeout=budget(120)).stdout
    out = []
    for item in re.findall(r'<li class="kind-[a-z]+">(.*?)</li>', dom, re.S):
        link = re.search(r'<a href="([^"#]+)[^"]*"[^>]*>', item)
        out.append((link.group(1) if link else "", html.unescape(re.sub(r"<[^>]+>", "", item))))
    return out


@pytest.mark.parametrize(("query", "page", "words"), [
    ("hugging face", "players.html", "hugging face"),
    ("rate limit", "players.html", "rate limits"),
    ("price file", "players.html", "file"),
])
def test_search_from_file_ranks_the_answer_first_with_a_snippet(site: Path, tmp_path: Path, query: str, page: str,
                                                                 words: str) -> None:
    results = _results(site, query, tmp_path)
    assert results, "no results"
    assert results[0][0] == page, results[:3]
    assert words in results[0][1].lower()  # the snippet: text of the page, cut from file://
    assert all(link != "changelog.html" for link, _ in results[:3])
