"""Sphinx configuration of the pebench site (``tox -e docs``; offline, warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))  # pebench_docs: the build-time page generators

from pebench_docs import excluded_sources  # noqa: E402

import pebench  # noqa: E402
from pebench.render.page_check import MYST_EXTENSIONS  # noqa: E402

project = "pebench"
author = "pebench developers"
copyright = "pebench developers"
release = pebench.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "mathml",
    "navtree",
    "sphinxcontrib.bibtex",
    "pebench_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# report artifacts (e.g. Markdown tables) under _generated/results/<suite>/ are included, not pages
exclude_patterns = ["_build", "_generated/includes", "_generated/.previous", "_generated/results/*/**", "examples", "Thumbs.db", ".DS_Store",
                    *excluded_sources(DOCS)]

# MyST: $...$ math, ::: fences, and {{ name }} values computed at build time (pebench_docs.generate)
myst_enable_extensions = list(MYST_EXTENSIONS)  # the page check parses pages as the site does
myst_substitutions: dict[str, str] = {}
myst_heading_anchors = 3

# autodoc + napoleon (Google-style docstrings)
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Shapes", "notes_style")]

# citations
bibtex_bibfiles = ["references.bib"]
bibtex_reference_style = "author_year"
bibtex_default_style = "plain"

# offline: no intersphinx, no remote assets; math is MathML written at build time (_ext/mathml.py)
html_math_renderer = "mathml"
html_theme = "furo"
html_title = f"pebench {release}"
html_static_path = ["_static"]
html_css_files = ["pebench.css"]  # tables: smaller font, numbers never wrapped
html_show_sourcelink = False
