"""How wide a LaTeX table is set, estimated without TeX, and how pebench fits each table to a paper's page.

A table pasted into a paper must not run into its margin. :func:`pebench.render.tables.to_latex` asks :func:`fit` how
to set a table. :func:`fit` estimates the table's width from the widths of Computer Modern's glyphs (the font of
a default LaTeX document; Times, the font of most conference styles, is narrower), then takes the first of:

1. the table as its style declares it (float and font), when it fits one column of a two-column paper
   (:data:`COLUMN_WIDTH`), if need be with its headers broken over lines;
2. a float spanning both columns (``table*``, which a one-column paper sets as a ``table``) no wider than
   :data:`TEXT_WIDTH` (the text of NeurIPS and ICLR; a two-column style's text is wider): at the style's font,
   then with its headers broken over lines, then in ``\\small``, then ``\\footnotesize``, then with tighter
   columns (:data:`TIGHT_SEP`);
3. so, with its widest column of words (a verdict) set as a ragged-right paragraph;
4. in ``\\footnotesize`` with broken headers, its columns in blocks set one under the other, each repeating the
   key columns (as :func:`pebench.render.tables.to_text` does on a narrow terminal), a column of words too wide for a
   block set as a paragraph.

tests/test_latex.py sets every table of a report in pdfTeX and checks that none is wider than :data:`TEXT_WIDTH`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: the width in pt of each character pebench's tables print, as set in Computer Modern Roman at 10 pt (cmr10,
#: measured with pdfTeX; a character the tables print as LaTeX, like ``±``, by its LaTeX's width)
_GLYPHS: dict[float, str] = {
    2.78: "il!',.:;[]`|·", 3.06: "fj", 3.33: "- ", 3.61: "I_", 3.89: "t()", 3.92: "r", 3.94: "s",
    4.44: "cez†é", 4.72: "?", 5.0: "0123456789ago\"$*/\\^{}~–‖", 5.14: "J", 5.28: "kqvxy", 5.56: "bdhnpuS",
    6.11: "Z", 6.25: "L", 6.53: "F", 6.81: "EP", 7.08: "B", 7.22: "wCT", 7.36: "R", 7.5: "AHNUVXY", 7.64: "D",
    7.78: "KOQ&+<=>@±−≥≤×≈", 7.85: "G", 8.33: "m#%", 9.17: "M", 10.0: "—", 10.28: "W",
}
GLYPH_WIDTHS: dict[str, float] = {ch: width for width, chars in _GLYPHS.items() for ch in chars}
#: the pairs of characters cmr10 kerns apart, by how much (pt, measured with pdfTeX); the pairs it kerns closer
#: are left out (an estimate errs wide)
_KERNS: dict[float, str] = {0.28: "bc bd be bo bq gj oc od oe oo oq pc pd pe po pq II", 0.56: "aj bj oj pj",
                            0.78: "f) f] f' f! f?", 1.11: "'! '?"}
KERNS: dict[str, float] = {pair: width for width, pairs in _KERNS.items() for pair in pairs.split()}
#: what TeX adds to a space after a colon or a sentence's end (``.``, ``?``, ``!``; cmr10's extra space), pt; added
#: after a capital letter too, where TeX does not add it (an estimate errs wide)
SENTENCE_SPACE = 1.11
#: the width of a character missing from :data:`GLYPH_WIDTHS` (wider than any in it but ``W``)
OTHER_GLYPH = 10.0
#: bold (cmbx10) over roman, the largest ratio over the characters above (a best cell is set in bold)
BOLD = 1.26
#: the width of a text in each font size the tables use over its width at 10 pt, the largest ratio over the
#: characters above (a smaller size of Computer Modern is drawn relatively wider): ``\small`` 0.926,
# : ``\footnotesize`` 0.85 :
#: :meta hide-value:
FONT_SCALE: dict[str, float] = {"": 1.0, r"\small": 0.926, r"\footnotesize": 0.85}
#: the fonts a table may be set in, largest first (the keys of :data:`FONT_SCALE`)
#:
#: :meta hide-value:
FONTS: tuple[str, ...] = tuple(FONT_SCALE)
#: the space LaTeX puts on each side of a column (``\tabcolsep``, pt)
COLUMN_SEP = 6.0
#: the tighter space a table wider than the page gets before its columns are set in blocks (pt)
TIGHT_SEP = 4.0
#: the narrowest a column of words is set as a paragraph to fit a table on the page (pt)
PARAGRAPH_MIN = 100.0
#: the narrowest column of the major two-column styles (ACL's 7.7 cm; ICML's and AAAI's are 3.25 and 3.3 in), pt
COLUMN_WIDTH = 219.0
#: the narrowest text width of the major ML styles (NeurIPS's and ICLR's 5.5 in; a two-column style's text, which
#: a ``table*`` spans, is wider), pt: the widest a table is set
TEXT_WIDTH = 397.0

#: the narrowest text height of the major ML styles (NeurIPS's and ICML's 9 in; ACL's is 9.25 in), pt: the tallest
#: a table's float is set
TEXT_HEIGHT = 650.0
#: the height of a row in each font size the tables use (its ``\baselineskip``, the strut of a tabular's row), pt:
#: 12, 11 and 9.5 in 10 pt type, ``\small`` and ``\footnotesize``
#:
#: :meta hide-value:
ROW_HEIGHT: dict[str, float] = {"": 12.0, r"\small": 11.0, r"\footnotesize": 9.5}
#: the height booktabs gives a rule with the space around it (``\aboverulesep``, ``\belowrulesep`` and the rule:
#: 1.72 + 2.79 + 0.8 pt), rounded up, pt
RULE_HEIGHT = 5.5
#: the height of a caption's line (set in 10 pt type), pt
CAPTION_LINE = 12.0
#: the space above a caption and below it (``\abovecaptionskip`` and the ``\smallskip`` under it), pt
CAPTION_SKIP = 13.0
#: the width of a caption's label, ``Table 12:``, with the space after it, pt
CAPTION_LABEL = 45.0
#: the space between two blocks (``\medskip``), pt
BLOCK_SKIP = 6.0
#: the space above each note under a table (``\smallskip``), pt
NOTE_SKIP = 3.0


def text_width(text: str, font: str = "", bold: bool = False) -> float:
    """The width in pt of ``text`` (Unicode, as a cell shows it) set in ``font`` (one of :data:`FONT_SCALE`)."""
    width = sum(GLYPH_WIDTHS.get(ch, OTHER_GLYPH) for ch in text)
    width += sum(KERNS.get(text[i:i + 2], 0.0) for i in range(len(text) - 1))
    width += SENTENCE_SPACE * len(re.findall(r"[.:?!] ", text))
    return width * FONT_SCALE[font] * (BOLD if bold else 1.0)


def broken(header: str, room: float) -> list[str]:
    """``header`` broken at spaces into lines no wider than ``room`` pt where its words allow (a word wider than
    ``room`` gets a line of its own), each line filled greedily."""
    lines: list[str] = []
    for word in header.split():
        if lines and text_width(f"{lines[-1]} {word}") <= room:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines or [header]


@dataclass(frozen=True)
class Fit:
    """How a table is set: its float, its font, the space between its columns, each header's lines and its
    column blocks.

    Attributes:
        environment: ``table`` or ``table*``.
        font: a LaTeX size command (``\\small``) or ``""``.
        column_sep: the space on each side of a column (``\\tabcolsep``), pt.
        headers: each column's header, line by line.
        blocks: the columns of each tabular set (indices, the key columns first in every block).
        width: the estimated width of the widest block, pt.
        paragraphs: the columns of words set as ragged-right paragraphs, by index, with their width in pt.
    """

    environment: str
    font: str
    column_sep: float
    headers: list[list[str]]
    blocks: list[list[int]]
    width: float
    paragraphs: dict[int, float] = field(default_factory=dict)


def fit(headers: Sequence[str], rows: Sequence[Sequence[tuple[str, bool]]], keys: int, environment: str = "table",
        font: str = "", words: Sequence[bool] = ()) -> Fit:
    """How to set a table so that it fits a paper's page (the module's steps). Before the blocks, the space
    between columns is narrowed to :data:`TIGHT_SEP`, then the widest column of words is set as a paragraph (no
    narrower than :data:`PARAGRAPH_MIN` or its longest word); in the blocks, a column of words too wide for a
    block beside the key columns is set as a paragraph as wide as the block allows.

    Args:
        headers: the column headers.
        rows: each row's cells as ``(text, bold)``.
        keys: how many leading columns name a row (repeated in each block).
        environment: the float its style declares (``table`` or ``table*``).
        font: the font its style declares (one of :data:`FONT_SCALE`).
        words: per column, whether it holds words that may wrap (not numbers); default none.
    """
    cells = [max((text_width(text, bold=bold) for text, bold in column), default=0.0)
             for column in zip(*rows, strict=True)] if rows else [0.0] * len(headers)
    whole = [[header] for header in headers]
    split = [broken(header, max([cell, *(text_width(word) for word in header.split())]))
             for header, cell in zip(headers, cells, strict=True)]

    def widths(lines: list[list[str]], size: str, sep: float = COLUMN_SEP) -> list[float]:
        return [max([cell, *(text_width(line) for line in header)]) * FONT_SCALE[size] + 2 * sep
                for header, cell in zip(lines, cells, strict=True)]

    everything = list(range(len(headers)))
    for lines in (whole, split) if environment == "table" else ():
        if (width := sum(widths(lines, font))) <= COLUMN_WIDTH:
            return Fit("table", font, COLUMN_SEP, lines, [everything], width)
    smaller = FONTS[FONTS.index(font) + 1:] if font in FONTS else ()
    tries = [(whole, font, COLUMN_SEP), (split, font, COLUMN_SEP), *((split, size, COLUMN_SEP) for size in smaller),
             (split, FONTS[-1], TIGHT_SEP)]
    for lines, size, sep in tries:
        if (width := sum(widths(lines, size, sep))) <= TEXT_WIDTH:
            return Fit("table*", size, sep, lines, [everything], width)
    size, wrappable = FONTS[-1], [k for k in range(keys, len(headers)) if k < len(words) and words[k]]

    def paragraph(k: int, room: float) -> tuple[float, list[str]] | None:
        """Column ``k`` set as a paragraph ``room`` pt wide (whole points): its width and its header's lines
        broken to it, or ``None`` where ``room`` is under :data:`PARAGRAPH_MIN` or a word of it is wider."""
        room, lines = float(math.floor(room)), broken(headers[k], room / FONT_SCALE[size])
        longest = max([text_width(word, size, bold) for text, bold in (row[k] for row in rows) for word in text.split()]
                      + [text_width(line, size) for line in lines])
        return (room, lines) if room >= max(PARAGRAPH_MIN, longest) else None

    column = widths(split, size, TIGHT_SEP)
    if wrappable:
        k = max(wrappable, key=column.__getitem__)
        if (set_as := paragraph(k, column[k] - 2 * TIGHT_SEP - (sum(column) - TEXT_WIDTH))) is not None:
            room, lines = set_as
            return Fit("table*", size, TIGHT_SEP, [*split[:k], lines, *split[k + 1:]], [everything],
                       sum(column) - column[k] + room + 2 * TIGHT_SEP, {k: room})
    return min((_in_blocks(split, keys, wrappable, size, sep, widths, paragraph) for sep in (COLUMN_SEP, TIGHT_SEP)),
               key=lambda chosen: len(chosen.blocks))  # the tight columns only where they save a block


def _in_blocks(split: list[list[str]], keys: int, wrappable: Sequence[int], size: str, sep: float,
               widths: Callable[..., list[float]], paragraph: Callable[[int, float], tuple[float, list[str]] | None]
               ) -> Fit:
    """The table set in ``size`` with ``sep`` between columns, in as few blocks as fit the page, the widest no wider
    than that many need; a column of words too wide for a block beside the key columns set as a paragraph."""
    column, lines, paragraphs = widths(split, size, sep), list(split), {}
    for k in wrappable:
        if sum(column[:keys]) + column[k] > TEXT_WIDTH and (
                set_as := paragraph(k, TEXT_WIDTH - sum(column[:keys]) - 2 * sep)) is not None:
            (paragraphs[k], lines[k]), column[k] = set_as, set_as[0] + 2 * sep
    count = len(_blocks(column, keys, TEXT_WIDTH))
    room = min(w for w in sorted({sum(column[:keys]) + sum(column[i:j]) for i in range(keys, len(column))
                                  for j in range(i + 1, len(column) + 1)} | {TEXT_WIDTH})
               if len(_blocks(column, keys, w)) <= count)
    blocks = [list(range(keys)) + block for block in _blocks(column, keys, room)]
    return Fit("table*", size, sep, lines, blocks, max(sum(column[j] for j in block) for block in blocks), paragraphs)


def _blocks(column: Sequence[float], keys: int, room: float) -> list[list[int]]:
    """The columns after the ``keys`` key columns in consecutive blocks, each filled greedily up to ``room`` pt
    with the key columns (a column too wide for any block gets one of its own)."""
    blocks: list[list[int]] = []
    for k in range(keys, len(column)):
        if blocks and sum(column[:keys]) + sum(column[j] for j in blocks[-1]) + column[k] <= room:
            blocks[-1].append(k)
        else:
            blocks.append([k])
    return blocks or [[]]


def line_count(text: str, room: float, font: str = "") -> int:
    """How many lines ``text`` takes in a paragraph ``room`` pt wide (its words filled greedily; a word wider than
    ``room`` takes a line)."""
    return len(broken(text, room / FONT_SCALE[font])) if text.strip() else 1


def pages(fitted: Fit, rows: Sequence[Sequence[str]], group_starts: Sequence[int], caption: str,
          notes: Sequence[str]) -> list[range]:
    """The rows of each float a table is set in, so that none is taller than :data:`TEXT_HEIGHT`: one float
    where the table fits a page, else its rows split between floats at its groups' starts (within a group only
    where the group is taller than a float of its own holds). The first float has the caption, every later one
    a line of it ("continued"); each keeps room for the notes under it.

    Args:
        fitted: how the table is set (:func:`fit`).
        rows: each row's cell texts.
        group_starts: the rows that begin a group (a rule above them).
        caption: the caption as printed.
        notes: the lines printed under the table.
    """
    row = ROW_HEIGHT[fitted.font]
    blocks = len(fitted.blocks)
    tall = [row * max([1, *(line_count(cells[k], room, fitted.font) for k, room in fitted.paragraphs.items())])
            for cells in rows]
    fixed = sum(row * max(len(fitted.headers[k]) for k in block) + 3 * RULE_HEIGHT for block in fitted.blocks)
    fixed += (blocks - 1) * BLOCK_SKIP + sum(NOTE_SKIP + ROW_HEIGHT[r"\footnotesize"] *
                                             line_count(note, TEXT_WIDTH, r"\footnotesize") for note in notes)
    first = CAPTION_SKIP + CAPTION_LINE * line_count(caption, TEXT_WIDTH - CAPTION_LABEL)  # every line as the first
    later = CAPTION_SKIP + CAPTION_LINE

    ruled = set(group_starts)

    def height(part: range) -> float:
        rules = sum(1 for i in part if i in ruled and i != part.start)
        return blocks * (sum(tall[i] for i in part) + rules * RULE_HEIGHT)

    starts = sorted({0, *(i for i in group_starts if 0 < i < len(rows))})
    groups = [range(a, b) for a, b in zip(starts, [*starts[1:], len(rows)], strict=True)] if rows else []
    parts: list[range] = []
    for group in groups:  # a group joins the float before it whole, or begins a float of its own
        if parts and (first if len(parts) == 1 else later) + fixed + height(range(parts[-1].start, group.stop)) \
                <= TEXT_HEIGHT:
            parts[-1] = range(parts[-1].start, group.stop)
            continue
        parts.append(range(group.start, group.start + 1))
        for i in group[1:]:  # a group taller than a page is split where it must be
            if (first if len(parts) == 1 else later) + fixed + height(range(parts[-1].start, i + 1)) <= TEXT_HEIGHT:
                parts[-1] = range(parts[-1].start, i + 1)
            else:
                parts.append(range(i, i + 1))
    return parts or [range(0, 0)]
