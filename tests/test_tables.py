"""The table model and its renderers (pebench.render.tables), and every metric format reaching tables and compare."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_results import write_synthetic_results

from pebench import metrics as metric_registry
from pebench.render.tables import (
    BOARD_STYLE,
    RESULTS_STYLE,
    Cell,
    Column,
    Table,
    format_mean_ci,
    format_number,
    interval_text,
    is_number_text,
    latex_escape,
    latex_label,
    markdown_cells,
    number_text,
    text_table,
    to_latex,
    to_markdown,
    to_text,
)


def grid(version: str = "standard v3-0123abcd") -> Table:
    """Two groups of a task, a marked best and tied cell, and text every format must escape."""
    columns = [Column("Task", "l", key=True), Column("Encoding", "l", key=True), Column("Acc", "r")]
    rows = [[Cell("sum_mod", "sum_mod"), Cell("a|b", "a|b"), Cell("0.97 ± 0.01", 0.97, "best")],
            [Cell("sum_mod", "sum_mod"), Cell("50% & #1", "c"), Cell("0.95", 0.95, "tied")],
            [Cell("copy", "copy"), Cell("x\x1b[31m", "x"), Cell("−0.10", -0.10)]]
    return Table("t_one", "Title", "Caption with ~ ^ \\ { } $ and −.", columns, rows, [0, 2], version=version,
                 style=RESULTS_STYLE)


def test_markdown_marks_escapes_and_ends_with_caption_and_version():
    text = to_markdown(grid())
    assert text.splitlines()[:2] == ["| Task | Encoding | Acc |", "|:--|:--|--:|"]
    assert "| sum_mod | a\\|b | **0.97 ± 0.01** |" in text
    assert "|  | 50% & #1 | *0.95* |" in text  # the repeated key is blank within its group
    assert "| copy |" in text  # a new group prints its key again
    assert text.endswith("\n\nTitle. Caption with ~ ^ \\ { } $ and −.\n\npebench results: standard v3-0123abcd\n")


def test_markdown_cells_are_the_cells_the_markdown_writes():
    table = grid()
    header, rows = markdown_cells(table)
    assert header == ["Task", "Encoding", "Acc"]
    assert rows[:2] == [["sum_mod", "a\\|b", "**0.97 ± 0.01**"], ["", "50% & #1", "*0.95*"]]
    assert all("| " + " | ".join(row) + " |\n" in to_markdown(table) for row in rows)
    assert markdown_cells(table, table.rows)[1][1][0] == "sum_mod"  # the rows as given: every key cell shown


def test_latex_escapes_every_special_character_and_names_the_version_in_its_footer():
    tex = to_latex(grid())
    for raw, escaped in (("%", r"50\%"), ("&", r"\&"), ("#", r"\#1"), ("_", r"sum\_mod"), ("~", r"\textasciitilde{}"),
                         ("^", r"\textasciicircum{}"), ("\\", r"\textbackslash{}"), ("{", r"\{"), ("}", r"\}"),
                         ("$", r"\$"), ("−", r"$-$0.10")):
        assert escaped in tex, raw
    assert tex.isascii() and r"\textbf{0.97 $\pm$ 0.01}" in tex and r"\underline{0.95}" in tex
    assert tex.count(r"\midrule") == 2  # under the header and above the second group
    assert r"\par\smallskip{\footnotesize pebench results: standard v3-0123abcd}" + "\n" + r"\end{table}" in tex
    assert latex_escape("a − b, 95% of sum_mod") == r"a $-$ b, 95\% of sum\_mod"


def test_terminal_text_escapes_control_characters_and_wraps_to_a_width():
    text = to_text(grid())
    assert "\x1b" not in text and "x\\x1b[31m" in text
    assert "0.97 ± 0.01 *" in text and "0.95 ~" in text and text.splitlines()[-1].endswith("v3-0123abcd")
    wide = Table("w", "W", "", [Column("Key", "l", key=True), *(Column(f"metric {i}", "r") for i in range(8))],
                 [[Cell("k"), *(Cell(f"{i}.000000") for i in range(8))]])
    narrow = to_text(wide, width=40)
    assert max(len(line) for line in narrow.splitlines()) <= 40
    assert sum(line.startswith("Key") for line in narrow.splitlines()) > 1  # each block repeats the key column
    assert "best mean" not in narrow  # no marked cell: no legend


def test_board_style_and_text_tables():
    board = Table("board_x", "", "Plain caption.", [Column("Arch"), Column("Score")],
                  [[Cell("decoder"), Cell("0.50 [0.40, 0.60]", (0.5, 0.4, 0.6))]], label="tab:board_x",
                  style=BOARD_STYLE)
    assert to_markdown(board) == ("| Arch | Score |\n|---|---|\n| decoder | 0.50 [0.40, 0.60] |\n\n\n"
                                  "Plain caption.\n")
    tex = to_latex(board)
    assert r"\label{tab:board_x}" in tex and "\n\\small\n" not in tex and r"\begin{tabular}{ll}" in tex
    assert to_markdown(text_table(["a", 1], [["x|y", 2]])) == "| a | 1 |\n|---|---|\n| x\\|y | 2 |\n"


def test_a_row_of_the_wrong_length_or_an_unknown_mark_is_refused():
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        Table("bad", "", "", [Column("a"), Column("b")], [[Cell("x")]])
    with pytest.raises(ValueError, match="unknown cell mark"):
        Cell("x", mark="winner")


def test_every_registered_format_prints_and_a_mean_with_its_interval():
    for kind in metric_registry.FORMATS:
        assert format_number(1.0, kind) and format_number(float("nan"), kind) == "—"
    assert format_mean_ci(0.5, 0.01) == "0.50 ± 0.01" and format_mean_ci(0.5, float("nan")) == "0.50"
    with pytest.raises(ValueError, match="valid: acc"):
        format_number(1.0, "percent")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_synthetic_results(tmp_path_factory.mktemp("reference"))


@pytest.mark.parametrize("metric", ["generalization_length", "params", "equivariance_gap_trained"])
def test_compare_checks_a_key_metric_of_every_comparable_format(synthetic, monkeypatch, metric):
    """A key metric whose format is length, int or gap is compared (it raised KeyError: compare knew margins for
    accuracies, ratios, losses and perplexities only); a folder against itself reproduces."""
    from pebench.analysis import compare as compare_module

    monkeypatch.setattr(compare_module, "key_metrics",
                        lambda experiments, *args, **kwargs: {e: ["id_token_acc", metric] for e in experiments})
    comparison = compare_module.compare(synthetic, synthetic)
    rows = comparison.metrics[comparison.metrics["metric"] == metric]
    assert comparison.all_reproduce and len(rows) > 0 and (rows["difference"].fillna(0) == 0).all()


def test_compare_refuses_a_machine_dependent_key_metric_by_name(synthetic, monkeypatch):
    from pebench.analysis import compare as compare_module
    from pebench.store import ResultsError

    monkeypatch.setattr(compare_module, "key_metrics",
                        lambda experiments, *args, **kwargs: {e: ["train_seconds"] for e in experiments})
    with pytest.raises(ResultsError, match="train_seconds.*machine"):
        compare_module.compare(synthetic, synthetic)


def test_a_registered_metric_reaches_the_layouts_tables(tmp_path):
    """A metric registered with tables=("extrapolation",) is a column of every extrapolation table, with its label,
    format, interval and marks from the registry (in a new interpreter: the registry is global)."""
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_results import write_synthetic_results
from pebench.metrics import register_metric
from pebench.report import write_report

@register_metric("ood_minus_id", label="OOD - ID", higher_is_better=True, format="ratio", tables=("extrapolation",))
def ood_minus_id(runs):
    return runs["ood_token_acc"] - runs["id_token_acc"]

from pathlib import Path
write_report(write_synthetic_results(Path(sys.argv[1])), out_dir=Path(sys.argv[2]))
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "results"), str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "report" / "tables" / "length_extrapolation.md").read_text()
    header = table.splitlines()[0]
    assert header.endswith("| Gen. length | OOD - ID | Seeds |") and " ± " in table.splitlines()[2].split("|")[-3]
    assert "OOD - ID" not in (tmp_path / "report" / "tables" / "length_extrapolation_decoder_order.md").read_text()


def test_a_lower_bound_is_marked_in_every_format_with_its_legend():
    """Issue 36, 3: a value that is only a lower bound (a position-free floor by permutation) is printed after ≥,
    and the table says what ≥ means, in Markdown, LaTeX and terminal text; a table without one says nothing."""
    from pebench.render.tables import BOUND_LEGEND

    columns = [Column("Task", "l", key=True), Column("Floor", "r")]
    rows = [[Cell("reverse", "reverse"), Cell("0.35", 0.35, bound=True)], [Cell("copy", "copy"), Cell("0.10", 0.10)]]
    table = Table("floors", "Floors", "Caption.", columns, rows)
    markdown, tex, text = to_markdown(table), to_latex(table), to_text(table)
    assert "| reverse | ≥0.35 |" in markdown and "| copy | 0.10 |" in markdown and f"\n{BOUND_LEGEND}\n" in markdown
    assert r"reverse & $\geq$0.35 \\" in tex and latex_escape(BOUND_LEGEND) in tex and tex.isascii()
    assert "≥0.35" in text and BOUND_LEGEND in text.splitlines()
    plain = Table("floors", "Floors", "Caption.", columns, [[Cell("copy", "copy"), Cell("0.10", 0.10)]])
    assert not any("≥" in render(plain) for render in (to_markdown, to_latex, to_text))


def test_the_floor_column_marks_a_floor_computed_by_permutation_as_a_bound(tmp_path):
    """The per-task tables print a floor whose method is only a lower bound (pebench.tasks.floors) after ≥."""
    import pandas as pd

    from pebench.analysis import results
    from pebench.report.layout_tables import extrapolation_tables, floor_bounds
    from pebench.report_spec import ReportSpec
    from pebench.store import load

    data = load(write_synthetic_results(tmp_path / "results"))
    first = data["task"].iloc[0]
    data["floor_token_acc"], data["floor_seq_acc"], data["floor_method"] = 0.35, 0.05, "exact"
    data.loc[data["task"] == first, "floor_method"] = "permutation"
    runs = results.run_metrics(data)
    cells = floor_bounds(results.aggregate(runs), data)
    tables = extrapolation_tables(runs, cells, "length_extrapolation", "protocol", ReportSpec())
    floor = [c.header for c in tables[0].columns].index("Floor")
    bounded = {row[0].value: row[floor].text for row in tables[0].rows if row[floor].bound}
    assert set(bounded) == {first} and all(text[0].isdigit() for text in bounded.values())
    assert "≥" in to_markdown(tables[0]) and isinstance(cells, pd.DataFrame)


def test_one_interval_text_for_the_main_table_the_boards_and_the_changes():
    assert interval_text(0.4123, 0.35, -0.0001) == "0.41 [0.35, 0.00]"  # never -0.00
    assert interval_text(-0.123, -0.2, 0.0, 3) == "−0.123 [−0.200, 0.000]"  # a typographic minus in the tables
    assert interval_text(-0.123, float("-inf"), float("nan"), typographic=False) == "-0.12 [-inf, —]"  # the boards
    assert number_text(None) == number_text(float("inf")) == "—"


def test_a_number_cell_is_told_from_a_word_cell():
    assert all(is_number_text(text) for text in ("0.93 ± 0.02 †", "0.37 [0.29, 0.43]", "3 (2 fitted)", "−0.12",
                                                 "11 (4 tasks)"))
    assert not any(is_number_text(text) for text in ("rope", "yes", "— (not fitted)", ""))


def test_a_tables_latex_label_names_its_results_version_in_letters_digits_and_dashes():
    """The version and name come from a results folder: nothing but letters, digits and dashes of them reaches the
    label, which stays unique per version."""
    def label(version: str, name: str = "leaderboard_length_extrapolation", **kwargs) -> str:
        return latex_label(Table(name, "", "", [Column("a")], [], version=version, **kwargs))

    assert label("standard v2-3f2a91c0") == "tab:pebench-standard-v2-3f2a91c0-leaderboard-length-extrapolation"
    assert label("standard v2-685bb308") != label("standard v2-3f2a91c0")
    assert label("") == "tab:pebench-leaderboard-length-extrapolation"
    assert label("my}suite\\x v2-1 %$") == "tab:pebench-my-suite-x-v2-1-leaderboard-length-extrapolation"
    assert label("standard v2-3f2a91c0", label="tab:mine") == "tab:mine"  # one given is kept
    versioned = Table("t", "", "", [Column("a")], [[Cell("x")]], version="standard v2-3f2a91c0")
    assert r"\label{tab:pebench-standard-v2-3f2a91c0-t}" in to_latex(versioned)
