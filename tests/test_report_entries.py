"""report.json's ``entries``: each encoding's and task's rows of the report's tables and the figures that draw it
(:mod:`pebench.report.entries`), which the encoding and task pages show."""

from __future__ import annotations

import dataclasses

import pandas as pd

from pebench.render.entry_lead import figure_places, lead
from pebench.render.tables import Cell, Column, Table
from pebench.report.entries import entries, table_rows


def _board() -> Table:
    """A board as the report writes it: a key column Markdown leaves blank below an equal cell, labels shown."""
    data = pd.DataFrame({"arch": ["decoder", "decoder", "encoder"], "encoding": ["none", "rope", "rope"],
                         "score": [0.1, 0.5, 0.4]})
    return Table("board", "Board", "A board.", [Column("Arch", "l", key=True), Column("Encoding", "l"),
                                                Column("Score", "r")],
                 [[Cell(a, a), Cell(label, e), Cell(f"{s:.2f}", s, mark="best" if s == 0.5 else None)]
                  for a, e, label, s in zip(data["arch"], data["encoding"], ["NoPE", "RoPE", "RoPE"], data["score"],
                                            strict=True)], data=data)


def test_table_rows_pair_the_markdown_cells_with_the_data_and_fill_blank_key_cells():
    header, rows = table_rows(_board(), "encoding")
    assert header == ["Arch", "Encoding", "Score"]
    assert rows == {"none": [["decoder", "NoPE", "0.10"]],
                    "rope": [["decoder", "RoPE", "**0.50**"], ["encoder", "RoPE", "0.40"]]}


def test_a_key_right_of_the_name_s_column_stays_blank_below_an_equal_one_of_the_same_name():
    data = pd.DataFrame({"encoding": ["rope", "rope", "none"], "arch": "decoder", "task": ["copy", "sort", "copy"]})
    table = Table("keys", "Keys", "", [Column("Encoding", key=True), Column("Arch", key=True), Column("Task")],
                  [[Cell(label), Cell(arch), Cell(task)] for label, arch, task in
                   zip(["RoPE", "RoPE", "NoPE"], data["arch"], data["task"], strict=True)], data=data)
    assert table_rows(table, "encoding")[1]["rope"] == [["RoPE", "decoder", "copy"], ["RoPE", "", "sort"]]
    assert table_rows(table, "task")[1]["sort"] == [["RoPE", "decoder", "sort"]]  # every key left of it filled


def test_a_table_that_does_not_show_the_column_row_by_row_gives_no_rows():
    board = _board()
    assert table_rows(board, "task") == ([], {})  # no such column in the data
    assert table_rows(dataclasses.replace(board, data=board.data.iloc[:2]), "encoding") == ([], {})  # do not pair
    shuffled = board.data.iloc[[1, 0, 2]].reset_index(drop=True)
    assert table_rows(dataclasses.replace(board, data=shuffled), "encoding") == ([], {})  # no column shows them


def test_a_figure_belongs_to_the_longest_experiment_its_name_begins_with_and_the_arch_it_names():
    experiments, archs = ["length", "length_extrapolation", "rope_scaling"], ["decoder", "encoder"]
    assert figure_places("length_extrapolation_decoder_token_acc", experiments, archs) == (
        "length_extrapolation", "decoder")
    assert figure_places("length_extrapolation_ood_heatmap", experiments, archs) == ("length_extrapolation", None)
    assert figure_places("rope_scaling", experiments, archs) == ("rope_scaling", None)
    assert figure_places("lengthy", experiments, archs) is None


def test_entries_give_each_encoding_and_task_its_rows_and_the_figures_of_its_experiments(tmp_path):
    (tmp_path / "figures").mkdir()
    for name in ("exp_decoder_acc", "exp_encoder_acc", "exp_heatmap", "other"):
        for ext in ("svg", "pdf"):
            (tmp_path / "figures" / f"{name}.{ext}").write_text("")
    cells = pd.DataFrame({"experiment": ["exp", "exp", "exp"], "task": ["copy", "copy", "copy"],
                          "encoding": ["none", "rope", "rope"], "arch": ["decoder", "decoder", "encoder"]})
    found = entries(tmp_path, cells, [_board()])
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


def test_an_encoding_that_is_one_model_with_another_carries_the_note_on_its_entry(tmp_path):
    """``irope`` below its NoPE interval is ``rope``: both pages say so (a note), an encoding without one has none,
    and a note never goes to a task or to a name the cells do not hold."""
    cells = pd.DataFrame({"experiment": "exp", "task": "copy", "encoding": ["rope", "irope", "alibi"],
                          "arch": "decoder"})
    said = "Identical models: iRoPE gave the same rows as RoPE in every one of the 2 runs they share."
    found = entries(tmp_path, cells, [], notes={"rope": [said], "irope": [said], "fire": [said], "copy": [said]})
    assert found["encoding"]["rope"]["notes"] == found["encoding"]["irope"]["notes"] == [said]
    assert "notes" not in found["encoding"]["alibi"] and "fire" not in found["encoding"]
    assert "notes" not in found["task"]["copy"]
    assert entries(tmp_path, cells, []) == entries(tmp_path, cells, [], notes={})  # no notes: no key



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
    found = entries(tmp_path, cells, [])
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
