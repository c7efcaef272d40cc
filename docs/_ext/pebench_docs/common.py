"""What every page module uses: the site's paths, writing a generated file, MyST tables and blocks, and the
committed ``report.json`` of a results folder (read, never computed; a build stops when it is stale)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import matplotlib

from pebench.render.page_check import check_page
from pebench.render.tables import text_table, to_markdown
from pebench.store.report_file import PAGE_FIELDS, current_report, display_path, filled

DOCS = Path(__file__).resolve().parents[2]
ROOT = DOCS.parent
#: committed reruns of a suite on other hardware, ``results/reruns/<name>/``, each shown beside ``results/<suite>``
RERUNS = "reruns"
FIGURE_FORMATS = ("svg",)  # what a page shows of a figure (pebench.report writes SVG and PDF)
TABLE_DOWNLOADS = ("tex", "csv")
#: the suite whose committed results the protocol page, the leaderboard's lead and the index quote
REFERENCE_SUITE = "standard"


def write(path: Path, text: str) -> None:
    """Write ``text`` if it differs from the file's content (quiet incremental builds); a page checked first."""
    check_page(text, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def source_path(path: Path, srcdir: Path = DOCS) -> str:
    """``path`` as a Sphinx source-absolute path (``/_generated/...``), for images and downloads."""
    return "/" + Path(path).resolve().relative_to(srcdir.resolve()).as_posix()


def shown(path: Path) -> str:
    """``path`` as a reader would type it (:func:`pebench.store.report_file.display_path` from the repository)."""
    return display_path(path, ROOT)


def fill(text: str, folder: Path, reference: Path | None = None) -> str:
    """A ``report.json``'s text, its folders' paths as a reader sees them (:func:`pebench.store.report_file.filled`)."""
    return filled(text, folder, ROOT, reference)


def markdown_table(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    """A MyST table of ``str(value)`` cells (:func:`pebench.render.tables.text_table`), escaped for ``|``."""
    return to_markdown(text_table(header, rows))


def save_figure(fig, stem: Path) -> None:
    """Save the matplotlib figure ``fig`` as ``stem.svg``: the same bytes every build (no date, fixed ids), written
    only where they differ from the file's, like :func:`write`."""
    svg = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "pebench"}):
        fig.savefig(svg, format="svg", bbox_inches="tight", dpi=110, metadata={"Date": None})
    path = stem.with_suffix(".svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != svg.getvalue():
        path.write_bytes(svg.getvalue())


def report_index(folder: Path) -> dict[str, Any]:
    """The ``report.json`` of ``folder``, checked to be current (:func:`pebench.store.report_file.current_report`; else
    the build stops with one line); read once per build (:func:`one_build`), which holds the tree's lock."""
    if _BUILD is not None and str(folder) in _BUILD:
        return _BUILD[str(folder)]
    index = current_report(folder, PAGE_FIELDS)
    if _BUILD is not None:
        _BUILD[str(folder)] = index
    return index


#: the reports :func:`report_index` read in the build under way (:func:`one_build`), by folder
_BUILD: dict[str, dict[str, Any]] | None = None


@contextlib.contextmanager
def one_build() -> Iterator[None]:
    """Within the block (or a function it decorates), :func:`report_index` reads each folder's report once."""
    global _BUILD
    _BUILD = {}
    try:
        yield
    finally:
        _BUILD = None


def table_text(section: Mapping[str, Any], folder: Path) -> str:
    """A table of a ``report.json`` (``{"lead", "header", "rows"}``, or ``{"missing"}``) as MyST."""
    if "missing" in section:
        return fill(section["missing"], folder)
    rows = [[fill(cell, folder) for cell in row] for row in section["rows"]]
    return f"{fill(section['lead'], folder)}\n\n" + markdown_table(section["header"], rows)


def tables_text(part: Mapping[str, Any], folder: Path) -> str:
    """Tables of a ``report.json`` (``{"sections": [...]}`` of :func:`table_text`'s, or ``{"missing"}``)."""
    return "\n".join(table_text(section, folder) for section in part.get("sections", [part]))
