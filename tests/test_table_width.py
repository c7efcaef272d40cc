"""How wide a LaTeX table is set and how it is fitted to a page (pebench.render.table_width), without TeX; the widths
as pdfTeX sets them are checked in tests/test_latex.py."""

from __future__ import annotations

import pytest

from pebench.render.table_width import (
    BOLD,
    COLUMN_SEP,
    COLUMN_WIDTH,
    FONT_SCALE,
    PARAGRAPH_MIN,
    TEXT_HEIGHT,
    TEXT_WIDTH,
    TIGHT_SEP,
    broken,
    fit,
    pages,
    text_width,
)
from pebench.render.tables import Cell, Column, Style, Table, to_latex


def test_text_width_sums_computer_modern_glyphs():
    """cmr10's widths (Knuth, Computer Modern Typefaces): digits 5 pt, '.' 2.78, space 3.33, 'm' 8.33; the 0.01
    tolerance is the rounding of the table to hundredths of a point."""
    assert text_width("0.41") == pytest.approx(3 * 5.0 + 2.78, abs=0.01)
    assert text_width("m m") == pytest.approx(2 * 8.33 + 3.33, abs=0.01)
    assert text_width("±") == text_width("−") == pytest.approx(7.78, abs=0.01)  # set as $\pm$ and $-$
    assert text_width("0.41", r"\footnotesize") == pytest.approx(text_width("0.41") * FONT_SCALE[r"\footnotesize"])
    assert text_width("0.41", bold=True) == pytest.approx(text_width("0.41") * BOLD)
    assert text_width("ű") == 10.0  # a character the table has no width for counts as a wide one


def test_a_header_breaks_at_spaces_into_lines_no_wider_than_its_room():
    assert broken("cycle navigation", text_width("navigation")) == ["cycle", "navigation"]
    assert broken("OOD token acc [95% CI]", text_width("OOD token acc")) == ["OOD token acc", "[95% CI]"]
    assert broken("a b c", 1000.0) == ["a b c"]
    assert broken("supercalifragilistic", 1.0) == ["supercalifragilistic"]  # one word too wide keeps its line


def cells(*widths: int) -> list[tuple[str, bool]]:
    """A row of cells of ``widths`` digits each."""
    return [("9" * n, False) for n in widths]


def test_a_narrow_table_stays_one_column_as_declared():
    chosen = fit(["Task", "Acc"], [cells(5, 5)], keys=1, font=r"\small")  # 25 pt cells, wider than the headers
    assert (chosen.environment, chosen.font, chosen.blocks, chosen.column_sep) == ("table", r"\small", [[0, 1]],
                                                                                  COLUMN_SEP)
    assert chosen.width == pytest.approx(2 * (25.0 * FONT_SCALE[r"\small"] + 2 * COLUMN_SEP))
    assert chosen.width <= COLUMN_WIDTH


def test_a_wider_table_spans_both_columns_at_its_font_then_breaks_headers_then_shrinks():
    """Each step is taken only where the one before does not fit: digits are 5 pt, so a cell of n digits is
    5n pt wide before its font's scale."""
    wide = fit(["a", "b"], [cells(20, 20)], keys=1)  # 2 x (100 + 12) = 224 pt: over one column, within the page
    assert (wide.environment, wide.font, wide.headers) == ("table*", "", [["a"], ["b"]])
    long_headers = [f"header number {i} of a long table" for i in range(4)]
    headed = fit(long_headers, [cells(8, 8, 8, 8)], keys=0)  # its headers (~150 pt each) make it too wide
    assert (headed.environment, headed.font, len(headed.blocks)) == ("table", "", 1)  # 4 x (40 + 12) = 208 pt
    assert all(len(lines) > 1 for lines in headed.headers)
    spanning = fit(long_headers, [cells(9, 9, 9, 9)], keys=0)  # 4 x (45 + 12) = 228 pt: over one column
    assert (spanning.environment, spanning.font, len(spanning.blocks)) == ("table*", "", 1)
    smaller = fit(["x"] * 4, [cells(19, 19, 19, 19)], keys=0)  # 4 x 107 = 428 pt; at \small 4 x 100 = 400 pt
    assert smaller.font == r"\footnotesize" and smaller.column_sep == COLUMN_SEP and smaller.width <= TEXT_WIDTH
    tight = fit(["x"] * 5, [cells(17, 17, 17, 17, 17)], keys=0)  # 5 x (72.3 + 12) = 421 pt, 5 x (72.3 + 8) = 401
    assert (tight.font, len(tight.blocks)) == (r"\footnotesize", 2)
    tightened = fit(["x"] * 5, [cells(16, 16, 16, 16, 16)], keys=0)  # 5 x (68 + 12) = 400 pt, 5 x (68 + 8) = 380
    assert (tightened.column_sep, len(tightened.blocks), tightened.width) == (TIGHT_SEP, 1, pytest.approx(380.0))


def test_a_table_too_wide_for_the_page_is_set_in_balanced_blocks_repeating_its_keys():
    """Keys of 35 and 50 pt and columns of 40 pt, in \\footnotesize: 96 pt of keys and 46 pt a column with the
    usual space (6 fit beside the keys), 88 and 42 pt with the tight one (7 fit)."""
    chosen = fit(["Arch", "Encoding", *(f"t{i}" for i in range(15))], [cells(7, 10, *[8] * 15)], keys=2)
    assert chosen.font == r"\footnotesize" and chosen.width <= TEXT_WIDTH
    assert all(block[:2] == [0, 1] for block in chosen.blocks)
    assert [k for block in chosen.blocks for k in block[2:]] == list(range(2, 17))  # every column once, in order
    sizes = [len(block) - 2 for block in chosen.blocks]
    assert sizes == [5, 5, 5] and chosen.column_sep == COLUMN_SEP  # not 6, 6 and 3; tight saves no block
    tightened = fit(["Arch", "Encoding", *(f"t{i}" for i in range(13))], [cells(7, 10, *[8] * 13)], keys=2)
    assert len(tightened.blocks) == 2 and tightened.column_sep == TIGHT_SEP  # 3 blocks with the usual space


def test_the_latex_of_a_wide_table_repeats_its_keys_in_each_block_and_stacks_long_headers():
    columns = [Column("Task", "l", key=True), *(Column(f"OOD token acc [95% CI] {i}", "r") for i in range(8))]
    rows = [[Cell("copy", "copy"), *(Cell("0.41 [0.35, 0.47]", 0.41, mark="best" if i == 0 else None)
                                     for i in range(8))]]
    tex = to_latex(Table("wide", "Wide", "A caption.", columns, rows, style=Style(font=r"\small")))
    assert tex.count(r"\begin{tabular}{") == tex.count(r"\par\medskip") + 1 >= 2
    assert tex.count("\ncopy & ") == tex.count(r"\par\medskip") + 1  # the key column in every block
    assert r"\begin{tabular}[b]{@{}r@{}}OOD token acc \\ {}[95\% CI] 0\end{tabular}" in tex
    assert r"\begin{table*}[tp]" in tex and "\n\\footnotesize\n" in tex and r"\textbf{0.41 [0.35, 0.47]}" in tex


def test_a_table_without_key_columns_repeats_its_leading_word_columns_in_each_block():
    """The fit table names its rows by an arch and an encoding in plain columns: each block repeats them."""
    columns = [Column("Arch"), Column("Encoding"), *(Column(f"task number {i}") for i in range(16))]
    rows = [[Cell("decoder"), Cell(name), *(Cell("3/3") for _ in range(16))] for name in ("NoPE", "Randomized RoPE")]
    tex = to_latex(Table("fit", "Fit", "Seeds that fitted.", columns, rows))
    blocks = tex.count(r"\begin{tabular}{")
    assert blocks >= 2 and tex.count("decoder & Randomized RoPE & ") == blocks


VERDICT = "cannot resolve (3 pairs: the smallest attainable p is 0.25, 1.25 after Holm over 5)"


def test_a_long_column_of_words_wraps_as_a_paragraph_before_the_columns_split():
    """Four number columns beside a verdict of ~330 pt: the verdict wraps to what the page leaves it, and only a
    column of words does."""
    headers = ["Arch", "a", "b", "c", "d", "Verdict"]
    row = [("decoder", False), *cells(10, 10, 10, 10), (VERDICT, False)]
    chosen = fit(headers, [row], keys=1, words=[True, False, False, False, False, True])
    assert len(chosen.blocks) == 1 and list(chosen.paragraphs) == [5] and chosen.width <= TEXT_WIDTH
    assert PARAGRAPH_MIN <= chosen.paragraphs[5] < text_width(VERDICT, r"\footnotesize")
    assert len(fit(headers, [row], keys=1).blocks) == 2 == len(fit(headers, [row], keys=1, words=[True] * 5).blocks)
    columns = [Column("Arch", "l", key=True), *(Column(h, "r") for h in "abcd"), Column("Verdict", "l")]
    tex = to_latex(Table("pairs", "Pairs", "Verdicts.", columns, [[Cell(text) for text, _ in row]]))
    assert f"\\parbox[t]{{{chosen.paragraphs[5]:g}pt}}{{\\raggedright {VERDICT}}}" in tex


def test_a_column_of_words_too_wide_for_any_block_wraps_in_its_own():
    """Long names as key columns leave a block too little room for the verdict beside them: it wraps there."""
    names = [("Randomized Transformer-XL", False), ("Transformer-XL", False)]
    row = [("encoder", False), *names, *cells(3, 12, 5, 5, 5), (VERDICT, False)]
    chosen = fit(["Arch", "A", "B", "Pairs", "Mean", "p", "p (Holm)", "x", "Verdict"], [row], keys=3,
                 words=[True, True, True, False, False, False, False, False, True])
    assert len(chosen.blocks) > 1 and list(chosen.paragraphs) == [8] and chosen.blocks[-1] == [0, 1, 2, 8]
    assert chosen.width <= TEXT_WIDTH


def tall(groups: int, per_group: int) -> Table:
    """``groups`` tasks of ``per_group`` encodings each, one accuracy per row, with a note."""
    columns = [Column("Task", "l", key=True), Column("Encoding", "l", key=True), Column("Acc", "r")]
    rows = [[Cell(f"task {g}"), Cell(f"encoding {e}"), Cell("0.97 ± 0.01")] for g in range(groups)
            for e in range(per_group)]
    return Table("tall", "Tall", "Many rows.", columns, rows, list(range(0, groups * per_group, per_group)),
                 notes=["A note under the table."], style=Style(font=r"\small"))


def test_a_table_taller_than_a_page_is_split_between_its_groups():
    """60 groups of 11 rows of 12 pt: about 60 rows fit a page of 650 pt, so five groups per float."""
    table = tall(60, 11)
    fitted = fit(table.headers, [[(c.text, False) for c in row] for row in table.rows], 2, font="")
    parts = pages(fitted, [[c.text for c in row] for row in table.rows], table.group_starts, table.full_caption,
                  table.notes)
    assert len(parts) > 10 and [i for part in parts for i in part] == list(range(660))
    assert all(part.start in table.group_starts for part in parts)  # never within a group
    assert len(pages(fitted, [[c.text for c in row] for row in table.rows[:44]], table.group_starts[:4],
                     table.full_caption, table.notes)) == 1
    one_group = pages(fitted, [[c.text for c in row] for row in table.rows], [0], "", [])  # one group of 660 rows
    assert len(one_group) > 10 and max(len(part) for part in one_group) * 12 < TEXT_HEIGHT


def test_the_latex_of_a_tall_table_continues_in_floats_of_the_same_number():
    tex = to_latex(tall(60, 11))
    floats = tex.count(r"\begin{table}[tp]")
    assert floats > 3 and tex.count(r"\addtocounter{table}{-1}") == floats - 1
    assert tex.count(r"\caption{Tall (continued)}") == floats - 1 and tex.count(r"\label{") == 1
    assert tex.count("A note under the table.") == 1 and tex.rindex("A note") > tex.rindex(r"\begin{table}")
    assert all(tex.count(f"\ntask {g} & encoding 0 & ") == 1 for g in range(60))  # each group once, whole
    one_group = tall(1, 660)
    tex = to_latex(Table(one_group.name, one_group.title, one_group.caption, one_group.columns, one_group.rows, [0]))
    assert tex.count(r"\begin{table}[tp]") == tex.count("\ntask 0 & ") > 3  # its key printed again atop each float
