"""report.json's ``entries``: each encoding's and task's rows of the report's tables and the figures that draw it
(:mod:`pebench.report.entries`), which the encoding and task pages show."""

from __future__ import annotations

import pandas as pd

from pebench.render.entry_lead import figure_places, lead
from pebench.render.tables import Cell, Column, Table, to_markdown
from pebench.report.entries import entries, markdown_rows, table_rows


def _board() -> tuple[str, pd.DataFrame]:
    """A board as the report writes it: a key column Markdown leaves blank below an equal cell, labels shown."""
    data = pd.DataFrame({"arch": ["decoder", "decoder", "encoder"], "encoding": ["none", "rope", "rope"],
                         "score": [0.1, 0.5, 0.4]})
    table = Table("board", "Board", "A board.", [Column("Arch", "l", key=True), Column("Encoding", "l"),
                                                 Column("Score", "r")],
                  [[Cell(a, a), Cell(label, e), Cell(f"{s:.2f}", s, mark="best" if s == 0.5 else None)]
                   for a, e, label, s in zip(data["arch"], data["encoding"], ["NoPE", "RoPE", "RoPE"], data["score"],
                                             strict=True)])
    return to_markdown(table), data


def test_markdown_rows_read_a_pipe_table_with_an_escaped_pipe():
    header, rows = markdown_rows("| a | b |\n|:--|--:|\n| x \\| y | 1 |\n\nCaption.\n")
    assert header == ["a", "b"] and rows == [["x \\| y", "1"]]


def test_table_rows_pair_markdown_rows_with_the_csv_and_fill_blank_key_cells():
    markdown, data = _board()
    header, rows = table_rows(markdown, data, "encoding")
    assert header == ["Arch", "Encoding", "Score"]
    assert rows == {"none": [["decoder", "NoPE", "0.10"]],
                    "rope": [["decoder", "RoPE", "**0.50**"], ["encoder", "RoPE", "0.40"]]}


def test_a_table_that_does_not_show_the_column_row_by_row_gives_no_rows():
    markdown, data = _board()
    assert table_rows(markdown, data, "task") == ([], {})  # no such column in the CSV
    assert table_rows(markdown, data.iloc[:2], "encoding") == ([], {})  # CSV and Markdown do not pair
    shuffled = data.iloc[[1, 0, 2]].reset_index(drop=True)
    assert table_rows(markdown, shuffled, "encoding") == ([], {})  # no column shows the CSV's values in its order


def test_a_figure_belongs_to_the_longest_experiment_its_name_begins_with_and_the_arch_it_names():
    experiments, archs = ["length", "length_extrapolation", "rope_scaling"], ["decoder", "encoder"]
    assert figure_places("length_extrapolation_decoder_token_acc", experiments, archs) == (
        "length_extrapolation", "decoder")
    assert figure_places("length_extrapolation_ood_heatmap", experiments, archs) == ("length_extrapolation", None)
    assert figure_places("rope_scaling", experiments, archs) == ("rope_scaling", None)
    assert figure_places("lengthy", experiments, archs) is None


def test_entries_give_each_encoding_and_task_its_rows_and_the_figures_of_its_experiments(tmp_path):
    markdown, data = _board()
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "board.md").write_text(markdown)
    data.to_csv(tmp_path / "tables" / "board.csv", index=False)
    (tmp_path / "figures").mkdir()
    for name in ("exp_decoder_acc", "exp_encoder_acc", "exp_heatmap", "other"):
        for ext in ("svg", "pdf"):
            (tmp_path / "figures" / f"{name}.{ext}").write_text("")
    cells = pd.DataFrame({"experiment": ["exp", "exp", "exp"], "task": ["copy", "copy", "copy"],
                          "encoding": ["none", "rope", "rope"], "arch": ["decoder", "decoder", "encoder"]})
    found = entries(tmp_path, cells)
    assert set(found["encoding"]) == {"none", "rope"} and set(found["task"]) == {"copy"}
    none = found["encoding"]["none"]
    assert none["tables"] == {"board": {"header": ["Arch", "Encoding", "Score"], "rows": [["decoder", "NoPE", "0.10"]]}}
    assert list(none["figures"]) == ["exp_decoder_acc", "exp_heatmap"]  # no encoder run: not its encoder figure
    assert none["figures"]["exp_decoder_acc"] == ("Look for NoPE in Exp, decoder: its colour in the legend, its row "
                                                  "or its bars.")
    assert list(found["encoding"]["rope"]["figures"]) == ["exp_decoder_acc", "exp_encoder_acc", "exp_heatmap"]
    copy = found["task"]["copy"]
    assert copy["tables"] == {}  # the board has no task column
    assert copy["figures"]["exp_heatmap"] == "Look for copy in Exp: its panel, row or column."



def test_a_task_page_lists_only_the_part_of_a_battery_s_figures_that_draws_its_panel(tmp_path):
    """A battery of more tasks than one figure holds is drawn in parts (``<name>_part<k>``,
    :func:`pebench.report.plots.split_tasks`): each task's entry names its own part, every encoding's names all."""
    from pebench import tasks
    from pebench.report import plots

    battery = tasks.names()[:12]
    (tmp_path / "figures").mkdir()
    for name in ("exp_decoder_acc_part1", "exp_decoder_acc_part2", "exp_heatmap"):
        (tmp_path / "figures" / f"{name}.svg").write_text("")
    cells = pd.DataFrame({"experiment": "exp", "task": battery, "encoding": "rope", "arch": "decoder"})
    found = entries(tmp_path, cells)
    first, second = plots.split_tasks(battery)
    assert len(first) == len(second) == 6
    assert list(found["task"][first[0]]["figures"]) == ["exp_decoder_acc_part1", "exp_heatmap"]
    assert list(found["task"][second[0]]["figures"]) == ["exp_decoder_acc_part2", "exp_heatmap"]
    assert list(found["encoding"]["rope"]["figures"]) == ["exp_decoder_acc_part1", "exp_decoder_acc_part2",
                                                          "exp_heatmap"]


def test_a_page_leads_with_the_main_table_its_boards_and_one_figure_per_architecture():
    """An entry as report.json holds it: the lead keeps the main table and the v3 boards of its experiment (in the
    report's order), not the per-task tables, and the first figure of each architecture, at most two."""
    entry = {"tables": {t: {} for t in ("parameters", "le_decoder", "harm_le", "main", "capability_le")},
             "figures": {f: "" for f in ("le_decoder_acc_part1", "le_decoder_acc_part2", "le_encoder_acc_part1",
                                          "le_heatmap")}}
    order = ["main", "le_decoder", "capability_le", "harm_le", "extrapolation_le", "parameters"]
    figures = ["le_decoder_acc_part1", "le_decoder_acc_part2", "le_encoder_acc_part1", "le_heatmap", "other"]
    pairs = [["le", "decoder"], ["le", "encoder"]]
    assert lead(entry, order, "main", figures, pairs) == (
        ["main", "capability_le", "harm_le"], ["le_decoder_acc_part1", "le_encoder_acc_part1"])
    assert lead(entry, order, None, figures, [["le", "decoder"]], most=1) == (
        ["capability_le", "harm_le"], ["le_decoder_acc_part1"])
    assert lead({"tables": {}, "figures": {}}, order, "main", figures, pairs) == ([], [])
