"""Blocks: the pieces of a generated page section that ``report.json`` and the pilot readings hold and the site
renders as they are. Each is a dict with a ``kind``: ``heading`` (``level``, ``text``), ``text`` (a paragraph of
Markdown), ``table`` (``header``, ``rows``: display text), ``list`` (``items``) or ``code`` (``language``,
``lines``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pebench.render.tables import text_table, to_markdown

#: a piece of a page (a dict with a ``kind``); named apart from :class:`pebench.model.Block`, a transformer layer
PagePiece = dict
#: the kinds of block there are (the site renders each)
KINDS = ("heading", "text", "table", "list", "code")
#: each kind's fields and what each holds (:func:`block_problem`)
FIELDS = {"heading": {"level": "level", "text": "text"}, "text": {"text": "text"},
          "table": {"header": "texts", "rows": "rows"}, "list": {"items": "texts"},
          "code": {"language": "text", "lines": "texts"}}
_HOLDS = {"text": "a text", "texts": "a list of texts", "level": "a level (1-6)", "rows": "rows of cells"}


def heading(level: int, text: str) -> PagePiece:
    """A heading block."""
    return {"kind": "heading", "level": level, "text": text}


def text(paragraph: str) -> PagePiece:
    """A paragraph block (Markdown)."""
    return {"kind": "text", "text": paragraph}


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> PagePiece:
    """A table block: its header and rows as display text."""
    return {"kind": "table", "header": list(header), "rows": [[str(cell) for cell in row] for row in rows]}


def bullet_list(items: Iterable[str]) -> PagePiece:
    """A bulleted list block (each item Markdown)."""
    return {"kind": "list", "items": list(items)}


def code(language: str, lines: Iterable[str]) -> PagePiece:
    """A code block."""
    return {"kind": "code", "language": language, "lines": list(lines)}


def write_blocks(path: Path, blocks: Sequence[PagePiece], **fields: object) -> Path:
    """Write ``{"blocks": blocks, **fields}`` to ``path`` as JSON (a pilot's reading, which the site renders)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**fields, "blocks": list(blocks)}, indent=2, ensure_ascii=False) + "\n")
    return path


def _holds(value: object, holds: str) -> bool:
    """Whether a block's field ``value`` holds what :data:`FIELDS` says (``holds``, a key of :data:`_HOLDS`)."""
    if holds == "text":
        return isinstance(value, str)
    if holds == "texts":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if holds == "level":
        return type(value) is int and 1 <= value <= 6
    return isinstance(value, list) and all(
        isinstance(row, list) and all(cell is None or isinstance(cell, (str, int, float)) for cell in row)
        for row in value)


def block_problem(block: object) -> str | None:
    """What makes ``block`` (read from a file that may come from anyone) not a block the site renders, or
    ``None``: it is not an object, its kind is not one of :data:`KINDS`, or a field is missing or holds something
    else than :data:`FIELDS` says."""
    if not isinstance(block, dict):
        return "a block is not an object"
    kind = block.get("kind")
    if kind not in FIELDS:
        return f"a block of kind {kind!r} cannot be rendered; known: {', '.join(KINDS)}"
    for field, holds in FIELDS[kind].items():
        if not _holds(block.get(field), holds):
            return f"a {kind} block's {field!r} is not {_HOLDS[holds]}"
    return None


def markdown_lines(blocks: Iterable[PagePiece]) -> list[str]:
    """Blocks as Markdown (MyST) lines, as the site shows them: headings, paragraphs, tables
    (:func:`pebench.render.tables.to_markdown`), bulleted lists and code.

    Raises:
        ValueError: on one line, a block that is not one the site renders (:func:`block_problem`).
    """
    lines: list[str] = []
    for block in blocks:
        if problem := block_problem(block):
            raise ValueError(problem)
        kind = block["kind"]
        if kind == "heading":
            lines += [f"{'#' * block['level']} {block['text']}", ""]
        elif kind == "text":
            lines += [block["text"], ""]
        elif kind == "table":
            lines += [to_markdown(text_table(block["header"], block["rows"])), ""]
        elif kind == "list":
            lines += [f"- {item}" for item in block["items"]] + [""]
        elif kind == "code":
            lines += [f"```{block['language']}", *block["lines"], "```", ""]
    return lines
