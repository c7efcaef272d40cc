"""What every page module uses: the paths of the site, writing a generated file, MyST tables, and the
committed ``report.json`` of a results folder (read, never computed; a build stops when it is stale)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pebench import store
from pebench.report_file import FOLDER, REFERENCE, StaleReport, current_report
from pebench.tables import text_table, to_markdown

DOCS = Path(__file__).resolve().parents[2]
ROOT = DOCS.parent
#: committed reruns of a suite on other hardware, ``results/reruns/<name>/``, each shown beside ``results/<suite>``
RERUNS = "reruns"
#: suite folders in results/ that are not reference suites
NOT_SUITES = {"local", "performance", RERUNS}
FIGURE_FORMATS = ("svg",)  # what a page shows of a figure (pebench.report writes SVG and PDF)
TABLE_DOWNLOADS = ("tex", "csv")
#: the suite whose committed results the protocol page, the leaderboard's lead and the index quote
REFERENCE_SUITE = "standard"


def write(path: Path, text: str) -> None:
    """Write ``text`` if it differs from the file's content (keeps Sphinx's incremental builds quiet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def source_path(path: Path, srcdir: Path = DOCS) -> str:
    """``path`` as a Sphinx source-absolute path (``/_generated/...``), for images and downloads."""
    return "/" + Path(path).resolve().relative_to(srcdir.resolve()).as_posix()


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (as a reader would type it), else absolute."""
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def markdown_table(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    """A MyST (GitHub-style) table of ``str(value)`` cells (:func:`pebench.tables.text_table`), escaped for ``|``."""
    return to_markdown(text_table(header, rows))


def save_figure(fig, stem: Path, formats: Iterable[str] = ("svg",)) -> None:
    """Save the matplotlib figure ``fig`` as ``stem.<ext>`` for each of ``formats``."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    for ext in formats:
        fig.savefig(stem.with_suffix(f".{ext}"), bbox_inches="tight", dpi=110)


def not_in_results(what: str, why: str) -> str:
    """The line a generated piece shows instead of numbers the committed results do not have."""
    return f"*{what}: not in these results ({why}).*\n"


def _has_results(folder: Path) -> bool:
    """Whether ``folder`` holds results (run files or a manifest), which then must have a current report."""
    return (folder / "raw").is_dir() or (folder / "manifest.json").exists()


def suite_folders(results: Path) -> list[Path]:
    """Reference suite folders in ``results/`` (those with run files or a manifest). A link there is refused on
    one line, never followed, and a name must be plain (:mod:`pebench.store`)."""
    if not store.refuse_link(results).is_dir():
        return []
    return [store.path_in(results, p.name) for p in sorted(results.iterdir())
            if p.name not in NOT_SUITES and store.refuse_link(p).is_dir() and _has_results(p)]


def report_file(folder: Path, relative: str) -> bytes:
    """The bytes of the file ``relative`` (as a ``report.json`` names it, e.g. ``figures/x.svg``) of ``folder``:
    each part a plain name (no ``..``, not absolute), no part a link, a regular file (:mod:`pebench.store`)."""
    path = folder
    for part in str(relative).split("/"):
        path = store.refuse_link(store.path_in(path, part))
    if path.is_dir():
        raise store.ResultsError(f"{path}: a folder, not a file of the report")
    return store.read_plain_file(path, "file of the report")


def _count_runs(folder: Path) -> int:
    return len(store.raw_files(folder / "raw"))


def _filled(text: str, folder: Path, reference: Path | None = None) -> str:
    """A text of a ``report.json`` with the paths of the folders it names (:data:`pebench.report.fit.FOLDER`,
    :data:`pebench.report.reruns.REFERENCE`) as the reader sees them."""
    text = str(text).replace(FOLDER, shown(folder))
    return text.replace(REFERENCE, shown(reference)) if reference is not None else text


def report_index(folder: Path) -> dict[str, Any]:
    """The ``report.json`` of ``folder``, the report of the run files there now (a build stops with one line
    saying which folder to report when it is missing or older than the run files). Checked once per build
    while neither the run files nor the report are written again (the pages of every encoding and task ask)."""
    paths = [*store.raw_files(folder / "raw"), folder / "report.json"]
    key = (folder.resolve(), store.files_fingerprint([path for path in paths if path.exists()]))
    if key not in _INDEXES:
        try:
            _INDEXES[key] = current_report(folder)
        except StaleReport as exc:
            raise RuntimeError(f"pebench_docs: {exc}") from None
    return _INDEXES[key]


#: the reports :func:`report_index` read in this process, by folder and the state of its files
_INDEXES: dict[tuple, dict[str, Any]] = {}


def table_text(section: Mapping[str, Any], folder: Path) -> str:
    """A table of a ``report.json`` (``{"lead", "header", "rows"}``, or ``{"missing"}``) as MyST."""
    if "missing" in section:
        return _filled(section["missing"], folder)
    rows = [[_filled(cell, folder) for cell in row] for row in section["rows"]]
    return f"{_filled(section['lead'], folder)}\n\n" + markdown_table(section["header"], rows)


def tables_text(part: Mapping[str, Any], folder: Path) -> str:
    """Tables of a ``report.json`` (``{"sections": [...]}``, each headed by its lead, or ``{"missing"}``)."""
    if "missing" in part:
        return _filled(part["missing"], folder)
    lines = []
    for section in part["sections"]:
        lines += [_filled(section["lead"], folder), "", markdown_table(section["header"], section["rows"])]
    return "\n".join(lines)


def render_blocks(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Markdown lines of blocks as ``pebench report`` and the pilot readers write them
    (:mod:`pebench.report.replications`): headings, paragraphs, tables, bulleted lists and code."""
    lines: list[str] = []
    for block in blocks:
        kind = block["kind"]
        if kind == "heading":
            lines += [f"{'#' * block['level']} {block['text']}", ""]
        elif kind == "text":
            lines += [block["text"], ""]
        elif kind == "table":
            lines += [markdown_table(block["header"], block["rows"]), ""]
        elif kind == "list":
            lines += [f"- {item}" for item in block["items"]] + [""]
        elif kind == "code":
            lines += [f"```{block['language']}", *block["lines"], "```", ""]
        else:
            raise ValueError(f"a block of kind {kind!r} cannot be rendered; known: heading, text, table, list, code")
    return lines
