"""One table model and one renderer per format: Markdown, LaTeX (booktabs) and terminal text.

A :class:`Table` is a grid of :class:`Cell` s, each carrying the value it shows (a number, an interval, a
name) and its display text, under :class:`Column` s; with its caption, notes and the results version it was
made from. Every table pebench writes (the report's, the leaderboard's, the throughput page's, the site's)
is one, rendered by :func:`to_markdown`, :func:`to_latex` or :func:`to_text`::

    >>> table = Table("demo", "Demo", "Two cells.", [Column("Task", "l", key=True), Column("Acc", "r")],
    ...               [[Cell("copy", "copy"), Cell("0.97", 0.97, mark="best")]], version="standard v3-0123abcd",
    ...               style=RESULTS_STYLE) >>> print(to_markdown(table))
    | Task | Acc |
    |:--|--:|
    | copy | **0.97** |
    <BLANKLINE>
    Demo. Two cells.
    <BLANKLINE>
    pebench results: standard v3-0123abcd
    <BLANKLINE>

The LaTeX always compiles in a document with ``\\usepackage{booktabs,graphicx}``: every character is written
as LaTeX source in ASCII (:func:`latex_escape`), the results version is printed under the table, and a table
wider than the page is scaled down to it (:func:`to_latex`).
This module imports neither pandas nor the analysis modules: the site's extension renders with it too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: the marks a cell may carry: the best of its group, and not significantly worse than the best
MARKS = ("best", "tied")
#: the terminal's suffix of a marked cell, and the line explaining them
TEXT_MARKS = {"best": " *", "tied": " ~", None: ""}
TEXT_MARK_LEGEND = "* best mean of its task; ~ not significantly worse (Welch t-test, Holm, alpha 0.05)"
#: what every format prints before a cell that is only a lower bound, and the line under a table that has one
BOUND_PREFIX = "≥"
BOUND_LEGEND = "≥ marks a lower bound: the exact value is at least the number shown."
#: what a cell shows for an undefined number (:func:`format_number`)
UNDEFINED = "—"
#: Markdown's alignment row per column alignment ("": the renderer's default, left)
_MARKDOWN_ALIGN = {"l": ":--", "r": "--:", "c": ":-:", "": "---"}
#: a LaTeX table of more columns than this spans both columns of a two-column paper (``table*``): one column
#: (ACL's 219 pt) holds four of pebench's columns in ``\small`` (a task, an encoding, two counts), five only scaled down
WIDE_COLUMNS = 4
#: the most columns a LaTeX tabular sets beside those naming a row; more go in blocks one under the other, so that
#: a wide table is not scaled down to unreadable (a synthetic report's widest: 0.7 of their size in article's 469 pt)
BLOCK_COLUMNS = 8
#: a column of words whose longest cell has more characters than this (a verdict) wraps, in a ragged-right paragraph
PARAGRAPH_CHARS = 40
#: the width of that paragraph, and the characters a line of it holds (Computer Modern's are about half an em)
PARAGRAPH_WIDTH, PARAGRAPH_LINE = "15em", 30
#: the most lines a LaTeX float holds, each block's rows and each line of a wrapped cell counted; more continue in
#: further floats: 36 lines of ``\small`` (11 pt) with four blocks' rules, a caption and notes stay within
#: article's page (550 pt; the major ML styles' are taller)
FLOAT_ROWS = 36


# --------------------------------------------------------------------------- numbers and text


def format_number(value: float | None, kind: str = "acc") -> str:
    """A number as printed in tables, by its metric's format (:data:`pebench.metrics.FORMATS`): ``acc`` and
    ``ratio`` 2 decimals, ``length`` and ``int`` integers, ``ppl`` 3 significant digits up to 100, ``gap``
    scientific below 0.01, ``loss`` 3 decimals, ``seconds`` 1. A value that rounds to zero is printed
    without a sign (never ``-0.00``); an undefined one as ``—``.

    Raises:
        ValueError: an unknown format, naming the valid ones.
    """
    if value is None or not math.isfinite(value):
        return UNDEFINED
    text = _format_number(value, kind)
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text.split("e")[0]) else text


def _format_number(value: float, kind: str) -> str:
    if kind in ("acc", "ratio"):
        return f"{value:.2f}"
    if kind in ("length", "int"):
        return f"{value:.0f}"
    if kind == "ppl":
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if kind == "gap":
        return "0" if value == 0 else f"{value:.1e}" if abs(value) < 0.01 else f"{value:.2f}"
    if kind == "loss":
        return f"{value:.3f}"
    if kind == "seconds":
        return f"{value:.1f}"
    raise ValueError(f"unknown number format {kind!r}; valid: acc, ratio, length, int, ppl, gap, loss, seconds")


def number_text(value: float | None, digits: int = 2, typographic: bool = True) -> str:
    """``value`` with ``digits`` decimals, never ``-0.00``, with a typographic minus (``−0.12``); ``—`` when
    undefined. ``typographic=False`` (the boards): an ASCII minus, and infinities as ``inf`` and ``-inf``."""
    if value is None or math.isnan(value) or (typographic and math.isinf(value)):
        return "—"
    text = f"{round(float(value), digits) + 0.0:.{digits}f}"  # an infinity as inf or -inf
    return text.replace("-", "−") if typographic else text


def interval_text(point: float, low: float, high: float, digits: int = 2, typographic: bool = True) -> str:
    """``point [low, high]``, each with ``digits`` decimals (:func:`number_text`), e.g. ``0.41 [0.35, 0.47]``."""
    return " ".join([number_text(point, digits, typographic),
                     f"[{number_text(low, digits, typographic)}, {number_text(high, digits, typographic)}]"])


#: a table cell's text that is a number, a mean ± CI, an interval, a fraction or a count ("3 (2 fitted)", "11 (4
#: tasks)")
NUMBER_TEXT = re.compile(r"[-+−–—\d\s.,:;%±×/\[\]()*†~<>=]*\d[-+−–—\d\s.,:;%±×/\[\]()*†~<>=]*")


def is_number_text(text: str) -> bool:
    """Whether a table cell's display text is a number that must not wrap (``0.93 ± 0.02 †``, ``0.37 [0.29, 0.43]``,
    ``3 (2 fitted)``, ``11 (4 tasks)``)."""
    return bool(NUMBER_TEXT.fullmatch(re.sub(r"\b(fitted|inf|seeds?|runs?|tasks?|of)\b", "", text.strip())))


def column_kinds(rows: Sequence[Sequence[Cell]]) -> list[str]:
    """Per column of ``rows``, what its cells hold, blank and undefined (:data:`UNDEFINED`) cells aside:
    ``"numbers"`` (every one :func:`is_number_text`), ``"words"`` (none is), or ``""`` (both, or nothing)."""
    kinds = []
    for column in zip(*rows, strict=True):
        numbers = [is_number_text(cell.text) for cell in column if cell.text not in ("", UNDEFINED)]
        kinds.append("numbers" if numbers and all(numbers) else "words" if numbers and not any(numbers) else "")
    return kinds


def format_mean_ci(mean: float | None, ci: float | None, kind: str = "acc") -> str:
    """``mean ± ci`` in the format ``kind`` (just the mean when the interval is undefined, e.g. one seed)."""
    if mean is None or not math.isfinite(mean):
        return "—"
    if ci is None or not math.isfinite(ci):
        return format_number(mean, kind)
    return f"{format_number(mean, kind)} ± {format_number(ci, kind)}"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "|": r"\textbar{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "−": r"$-$",
    "—": "---", "–": "--",
    "≥": r"$\geq$", "‖": r"$\|$", "≤": r"$\leq$", "×": r"$\times$", "<": r"$<$", ">": r"$>$", "≈": r"$\approx$",
    "∝": r"$\propto$",
    "†": r"\dag{}", "‡": r"\ddag{}", "§": r"\S{}", "·": r"$\cdot$", "é": r"\'e",
}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX source in ASCII: special characters escaped (``sum_mod`` -> ``sum\\_mod``, ``95%`` ->
    ``95\\%``) and the other characters the tables use written as LaTeX (``±`` -> ``$\\pm$``, ``−`` -> ``$-$``)."""
    text = str(text).replace(">=", "≥").replace("<=", "≤")
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


#: characters that open MyST markup inside a line (code, emphasis, roles and substitutions, links, HTML, math,
#: table cells, escapes, entities): :func:`markdown_text` escapes every one
_MARKDOWN_INLINE = frozenset("\\`*{}[]<>$|&~!^")
#: what opens a block where a line begins (a heading, quote, list, rule, fence, target, comment, block break)
_MARKDOWN_BLOCK_START = re.compile(r"(?:[#>+=:%(-]|\d{1,9}[.)](?=\s|$))")


def markdown_text(text: str) -> str:
    """``text`` as MyST Markdown that shows it as it is, in a paragraph or a table cell: every character that could
    open markup (raw HTML, a role, a ``{{ }}`` substitution, which MyST evaluates as Jinja2, code, emphasis, a
    link, math) escaped with a backslash, line breaks as spaces, blanks at either end dropped. Text read from a
    results folder may come from anyone; the site refuses a page that holds what no pebench page writes
    (:mod:`pebench.render.page_check`).

    >>> print(markdown_text("Intel(R) <b>{{ x }}</b>"))
    Intel(R) \\<b\\>\\{\\{ x \\}\\}\\</b\\>
    """
    line = " ".join(str(text).splitlines()).strip()  # leading blanks would make a code block
    out = "".join(f"\\{ch}" if ch in _MARKDOWN_INLINE or (ch == "_" and not _intraword(line, i)) else ch
                  for i, ch in enumerate(line))
    if start := _MARKDOWN_BLOCK_START.match(out):  # a block marker where the text begins: escaped too
        end = start.end() - 1
        out = out[:end] + "\\" + out[end:]
    return out


def markdown_code(text: str) -> str:
    """``text`` as a MyST code span that shows it as it is: fenced by one backtick more than its longest run of
    them, so nothing in it closes the span early, and on one line.

    >>> print(markdown_code("a`b"))
    ``a`b``
    """
    line = " ".join(str(text).splitlines())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def _intraword(line: str, i: int) -> bool:
    """Whether ``line[i]`` lies between two letters or digits (an underscore there never opens emphasis)."""
    return 0 < i < len(line) - 1 and line[i - 1].isalnum() and line[i + 1].isalnum()


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (an escape sequence's ESC,
    other control characters) is shown escaped, as Python writes it (``\\x1b``); line breaks are kept. Text
    read from a results folder may come from anyone."""
    return "".join(ch if ch.isprintable() or ch == "\n" else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))


def version_line(version: str) -> str:
    """What a table says about the results it was made from: ``pebench results: standard v2-3f2a91c0``."""
    return f"pebench results: {version}"


def latex_label(table: Table) -> str:
    """The LaTeX label of ``table``: its own ``label``, else ``tab:pebench-<results version>-<name>``, e.g.
    ``tab:pebench-standard-v2-3f2a91c0-main``, in letters, digits and dashes only. The version makes it unique
    across results folders and their versions, so that tables of a reference and of its rerun, or of two suites,
    sit in one paper without a clash (the version comes from a results folder: nothing else of it reaches the
    label); ``tab:pebench-<name>`` for a table of no results version."""
    if table.label:
        return table.label
    slugs = (re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") for text in (table.version, table.name))
    return "tab:pebench-" + "-".join(slug for slug in slugs if slug)


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Cell:
    """One cell: its display ``text`` (Unicode, unescaped: each renderer escapes it), the ``value`` it shows
    (a number, a ``(point, low, high)`` interval, a name; ``None`` for text only), its ``mark`` (one of
    :data:`MARKS`, or ``None``) and whether its value is only a lower ``bound`` (printed after
    :data:`BOUND_PREFIX`; the table then prints :data:`BOUND_LEGEND`)."""

    text: str
    value: Any = None
    mark: str | None = None
    bound: bool = False

    @property
    def shown(self) -> str:
        """The text as every format prints it: after :data:`BOUND_PREFIX` when the value is a lower bound."""
        return BOUND_PREFIX + self.text if self.bound and self.text else self.text

    def __post_init__(self) -> None:
        if self.mark is not None and self.mark not in MARKS:
            raise ValueError(f"unknown cell mark {self.mark!r}; valid: {', '.join(MARKS)} or None")


@dataclass(frozen=True)
class Column:
    """A column: its ``header``; ``align`` ``"l"``, ``"r"``, ``"c"`` or ``""`` (the format's default, left);
    ``key``: a key column (they come first) is printed only where its value changes within a group."""

    header: str
    align: str = ""
    key: bool = False


    def __post_init__(self) -> None:
        if self.align not in _MARKDOWN_ALIGN:
            raise ValueError(f"column {self.header!r}: unknown alignment {self.align!r}; valid: l, r, c or ''")


@dataclass(frozen=True)
class Style:
    """How a table is typeset.

    Attributes:
        comment: the LaTeX begins with a comment naming the packages it needs.
        font: LaTeX size command inside the float (``\\small``, ``\\footnotesize``), or ``""``.
        title_in_caption: the caption begins with the title (``Title. Caption``).
        caption_gap: blank lines between a Markdown table and its caption.
        environment: the LaTeX float: ``table``, or ``table*`` to span both columns of a two-column paper (a
            table of more than :data:`WIDE_COLUMNS` columns spans both).
    """

    comment: bool = False
    font: str = ""
    title_in_caption: bool = False
    caption_gap: int = 2
    environment: str = "table"


# per-cell tables of results (the report's layouts)
RESULTS_STYLE = Style(comment=True, font=r"\small", title_in_caption=True, caption_gap=1)
#: boards and summaries (leaderboards, pairwise comparisons, the site's tables)
BOARD_STYLE = Style()


@dataclass
class Table:
    """A table of cells with its columns, caption, notes and the results version it was made from.

    Attributes:
        name: file stem (``tables/<name>.md``); also its LaTeX label unless ``label`` says otherwise.
        title: short title (the site's heading).
        caption: what it shows and what to look at (plain text; each renderer escapes it).
        columns: one per column of ``rows``.
        rows: the cells, row by row.
        group_starts: rows that begin a new group (a rule above them; key columns printed again).
        notes: lines printed under the table (a legend), after the caption.
        version: the results version, e.g. ``standard v2-3f2a91c0`` (printed under the table), or ``""``.
        data: the numbers, for the CSV beside the rendered files.
        label: its LaTeX label (default: :func:`latex_label`, naming the results version and the table).
        style: how it is typeset (:class:`Style`).
    """

    name: str
    title: str
    caption: str
    columns: list[Column]
    rows: list[list[Cell]]
    group_starts: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    version: str = ""
    data: pd.DataFrame | None = None
    label: str = ""
    style: Style = BOARD_STYLE

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.name!r}: row {i} has {len(row)} cells for {len(self.columns)} "
                                 "columns")

    @property
    def key_columns(self) -> int:
        """How many leading columns are key columns."""
        return next((i for i, column in enumerate(self.columns) if not column.key), len(self.columns))

    @property
    def headers(self) -> list[str]:
        """The column headers."""
        return [column.header for column in self.columns]

    @property
    def footer(self) -> list[str]:
        """The lines every format prints under the table (after its caption): :data:`BOUND_LEGEND` when a cell is a
        bound, the notes, and the results version."""
        bound = [BOUND_LEGEND] if any(cell.bound for row in self.rows for cell in row) else []
        return [*bound, *self.notes, *([version_line(self.version)] if self.version else [])]

    @property
    def full_caption(self) -> str:
        """The caption as printed: ``Title. Caption`` where the style says so."""
        if self.style.title_in_caption and self.title:
            return f"{self.title}. {self.caption}"
        return self.caption

    def display_rows(self, starts: Iterable[int] = ()) -> list[list[Cell]]:
        """The rows as shown: a key cell equal to the one above (and to every key left of it) is blank, except
        in the first row of a group, or of ``starts`` (where a LaTeX table continues in another float)."""
        shown, previous, firsts = [], None, {*self.group_starts, *starts}
        for i, row in enumerate(self.rows):
            keys = [cell.text for cell in row[: self.key_columns]]
            blank = [previous is not None and i not in firsts and keys[: k + 1] == previous[: k + 1]
                     for k in range(self.key_columns)]
            shown.append([Cell("", cell.value) if b else cell for b, cell in zip(blank, row, strict=False)]
                         + row[self.key_columns:])
            previous = keys
        return shown

    def to_markdown(self) -> str:
        """The table as Markdown (:func:`to_markdown`)."""
        return to_markdown(self)

    def to_latex(self) -> str:
        """The table as LaTeX (:func:`to_latex`)."""
        return to_latex(self)

    def to_text(self, width: int | None = None) -> str:
        """The table as terminal text (:func:`to_text`)."""
        return to_text(self, width)


def text_table(headers: Sequence[Any], rows: Iterable[Iterable[Any]], name: str = "table") -> Table:
    """A table of plain values shown as ``str(value)``, no caption, default alignment (the site's small tables)."""
    return Table(name, "", "", [Column(str(h)) for h in headers],
                 [[Cell(str(v), v) for v in row] for row in rows])


# --------------------------------------------------------------------------- renderers


def _markdown_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _marked_cell(cell: Cell) -> str:
    text = _markdown_cell(cell.shown)
    return f"**{text}**" if cell.mark == "best" and text else f"*{text}*" if cell.mark == "tied" and text else text


def markdown_cells(table: Table, rows: Iterable[Sequence[Cell]] | None = None) -> tuple[list[str], list[list[str]]]:
    """The header and the cells of ``table`` as :func:`to_markdown` writes them: ``|`` escaped, line breaks as
    spaces, best cells in bold and tied ones in italics. ``rows``: the cells to write, by default its
    :meth:`Table.display_rows` (its ``rows``: every key cell shown)."""
    rows = table.display_rows() if rows is None else rows
    return [_markdown_cell(h) for h in table.headers], [[_marked_cell(cell) for cell in row] for row in rows]


def to_markdown(table: Table) -> str:
    """A pipe table (MyST and GitHub) of :func:`markdown_cells`, then the caption, the notes and the results
    version, each a paragraph."""
    header, rows = markdown_cells(table)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(_MARKDOWN_ALIGN[c.align] for c in table.columns) + "|",
             *("| " + " | ".join(row) + " |" for row in rows)]
    out = "\n".join(lines) + "\n"
    caption = table.full_caption
    if caption:
        out += "\n" * table.style.caption_gap + caption + "\n"
    for paragraph in table.footer:
        out += "\n" + paragraph + "\n"
    return out


def _floats(table: Table, blocks: int, paragraphs: set[int]) -> list[range]:
    """The rows of each float: whole groups while :data:`FLOAT_ROWS` allows, a group split only where it alone holds
    more. A row counts a line per block, times the lines of its longest wrapped cell (:data:`PARAGRAPH_LINE`)."""
    lines = [blocks * max([1, *(math.ceil(len(row[k].shown) / PARAGRAPH_LINE) for k in paragraphs)])
             for row in table.rows]
    starts = sorted({0, *(i for i in table.group_starts if 0 < i < len(table.rows))})
    parts: list[range] = []
    for start, stop in zip(starts, [*starts[1:], len(table.rows)], strict=True):
        if parts and sum(lines[parts[-1].start:stop]) <= FLOAT_ROWS:  # the group joins the float before it
            parts[-1] = range(parts[-1].start, stop)
            continue
        parts.append(range(start, min(start + 1, stop)))  # empty only in a table of no rows
        for i in range(start + 1, stop):
            fits = sum(lines[parts[-1].start:i + 1]) <= FLOAT_ROWS
            parts[-1:] = [range(parts[-1].start, i + 1)] if fits else [parts[-1], range(i, i + 1)]
    return parts


def to_latex(table: Table) -> str:
    """A booktabs float that compiles with ``\\usepackage{booktabs,graphicx}``: every text escaped
    (:func:`latex_escape`), a ``\\midrule`` above each group, best cells in bold and tied ones underlined, the notes
    and the results version in a footnote-sized footer inside the float (so they travel with it).

    Its layout is fixed, not measured: each tabular keeps its natural width, scaled down to the line where wider
    (graphicx's ``\\resizebox``); a table of more than :data:`WIDE_COLUMNS` columns spans both columns of a
    two-column paper (``table*``); more than :data:`BLOCK_COLUMNS` columns beside those that name a row are set in
    blocks one under the other, each repeating those; a column of words longer than :data:`PARAGRAPH_CHARS`
    characters wraps in :data:`PARAGRAPH_WIDTH`; more than :data:`FLOAT_ROWS` lines continue in further floats of
    the same number, split between groups where possible, each captioned "(continued)", the notes under the last.
    """
    style, columns = table.style, len(table.columns)
    kinds = column_kinds(table.rows)
    # the leading columns that name a row, repeated in each block: the key columns, or in a table without any, the
    # leading columns of words (an arch, an encoding, a pair of them)
    names = table.key_columns or next((k for k, kind in enumerate(kinds) if kind != "words"), len(kinds))
    blocks = [[*range(names), *range(k, min(k + BLOCK_COLUMNS, columns))]
              for k in range(names, columns, BLOCK_COLUMNS)] or [list(range(columns))]
    paragraphs = {k for k, kind in enumerate(kinds)
                  if kind == "words" and max(len(row[k].shown) for row in table.rows) > PARAGRAPH_CHARS}
    environment = "table*" if columns > WIDE_COLUMNS else style.environment
    parts = _floats(table, len(blocks), paragraphs)
    shown = table.display_rows([part.start for part in parts])  # key cells printed again where a float begins
    lines = ["% generated by pebench report; needs \\usepackage{booktabs,graphicx}"] if style.comment else []
    for p, part in enumerate(parts):
        lines += [f"\\begin{{{environment}}}[tp]", r"\centering", *([style.font] if style.font else [])]
        if p == 0:
            lines += [f"\\caption{{{latex_escape(table.full_caption)}}}",
                      f"\\label{{{latex_label(table)}}}"]
        else:  # the same number as the first float
            lines += [r"\addtocounter{table}{-1}",
                      f"\\caption{{{latex_escape(' '.join(filter(None, [table.title, '(continued)'])))}}}"]
        lines.append(r"\smallskip")  # LaTeX leaves no space below a caption: its last line would touch the top rule
        for n, block in enumerate(blocks):
            if n:
                lines.append(r"\par\medskip")
            lines += _latex_block(table, block, paragraphs, [(i, shown[i]) for i in part], part.start)
        if p == len(parts) - 1:
            lines += [rf"\par\smallskip{{\footnotesize {latex_escape(note)}}}" for note in table.footer]
        lines += [f"\\end{{{environment}}}", ""]
    return "\n".join(lines)


def _latex_block(table: Table, block: Sequence[int], paragraphs: set[int], rows: Sequence[tuple[int, list[Cell]]],
                 first: int) -> list[str]:
    """The tabular of ``block``'s columns and of ``rows`` (by their index in the table), a rule above each group
    that begins after row ``first``, scaled down to the line where wider (graphicx's ``\\resizebox``)."""
    lines = [r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
             f"\\begin{{tabular}}{{{''.join(table.columns[k].align or 'l' for k in block)}}}", r"\toprule",
             " & ".join(latex_escape(table.columns[k].header) for k in block) + r" \\", r"\midrule"]
    for i, row in rows:
        if i in table.group_starts and i > first:
            lines.append(r"\midrule")
        cells = []
        for k in block:
            cell, text = row[k], latex_escape(row[k].shown)
            text = (f"\\textbf{{{text}}}" if cell.mark == "best" else f"\\underline{{{text}}}"
                    if cell.mark == "tied" else text)
            cells.append(f"\\parbox[t]{{{PARAGRAPH_WIDTH}}}{{\\raggedright {text}}}" if k in paragraphs and text
                         else text)
        lines.append(" & ".join(cells) + r" \\")
    return [*lines, r"\bottomrule", r"\end{tabular}}"]  # the box closes on this line: a line break would add a space


def to_text(table: Table, width: int | None = None) -> str:
    """Fixed-width text for a terminal, every text escaped (:func:`terminal_text`): ``*`` after the best, ``~``
    after those not significantly worse, then the notes and the results version.

    Args:
        table: the table.
        width: the widest a line may be; a wider table is printed in blocks of columns, each repeating the key
            columns (as pandas prints a wide frame). ``None``: one block.
    """
    rows = [[terminal_text(c.shown) + TEXT_MARKS[c.mark] if c.text else c.text for c in row]
            for row in table.display_rows()]
    headers = [terminal_text(h) for h in table.headers]
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    keys = list(range(table.key_columns))
    blocks, block = [], []
    for k in range(table.key_columns, len(widths)):
        used = sum(widths[j] + 2 for j in keys + block) + widths[k]
        if block and width is not None and used > width:
            blocks.append(block)
            block = []
        block.append(k)
    blocks.append(block)

    def line(cells: Sequence[str], columns: list[int]) -> str:
        return "  ".join(cells[k].rjust(widths[k]) if table.columns[k].align == "r" else cells[k].ljust(widths[k])
                         for k in columns).rstrip()

    out = [terminal_text(table.title)] if table.title else []
    for n, block in enumerate(blocks):
        columns = keys + block
        if n:
            out.append("")
        out += [line(headers, columns), "  ".join("-" * widths[k] for k in columns)]
        for i, row in enumerate(rows):
            if i in table.group_starts and i > 0:
                out.append("")
            out.append(line(row, columns))
    if any(cell.mark for row in table.rows for cell in row):
        out.append(TEXT_MARK_LEGEND)
    out += [terminal_text(line) for line in table.footer]
    return "\n".join(out)
