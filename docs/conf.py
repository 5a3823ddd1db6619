"""Sphinx configuration of the documentation site (`make docs`; built in strict mode by the test suite)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

from econarena import __version__  # noqa: E402

project = "EconArena"
author = "the EconArena authors"
copyright = "the EconArena authors, MIT License"  # noqa: A001 - Sphinx's name; shown in every page's footer
version = release = __version__
extensions = ["myst_parser", "econarena_docs"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_ext", "examples"]
myst_heading_anchors = 3  # links to a page's sections by their titles: [text](page.md#a-section)
myst_enable_extensions = ["colon_fence"]
html_theme = "furo"
html_title = f"EconArena {__version__}"
html_static_path = ["_static"]  # econarena-search.js: snippets from file:// and the ranking (see the file)
suppress_warnings: list[str] = []
