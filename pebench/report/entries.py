"""Where each encoding and each task appears in a report: its rows of the report's tables and the figures
that draw it, for the encoding and task pages of the site (``report.json``'s ``entries``).

A row is taken from the table model the report wrote, as its Markdown writes it (the display text, with the key
cells that Markdown leaves blank below an equal one filled in), paired with the table's data row by position; a
table whose rows and data do not pair row by row, or whose data has no such column, is left out. A figure belongs
to the experiment its name begins with (the longest such name) and, when its name names an architecture, to that
architecture only; a part ``<name>_part<k>`` of a battery's figures to the tasks it draws. A figure that
emphasises one encoding against the others (``report.json``'s :data:`ENCODING_FIGURES`) belongs to that encoding
only, and replaces, on its entry, the figures of its experiment and architecture in which the reader would look
for its colour in a legend of every encoding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pebench.render.entry_lead import figure_places
from pebench.render.tables import Table, markdown_cells
from pebench.report import plots
from pebench.report.findings import people_words
from pebench.store.schema import shown_name

#: the columns whose values get an entry; a table shows each value as :func:`pebench.store.schema.shown_name` says (the
#: CSVs keep the name)
COLUMNS = ("encoding", "task")
#: where a reader finds an encoding or a task in a figure
LOOK_FOR = {"encoding": "its colour in the legend, its row or its bars", "task": "its panel, row or column"}
#: the field of ``report.json`` naming the figures that emphasise one encoding: figure name -> encoding
ENCODING_FIGURES = "encoding_figures"


def table_rows(table: Table, column: str) -> tuple[list[str], dict[str, list[list[str]]]]:
    """The header of ``table`` and, per value of its ``data[column]``, the rows that show it, as its Markdown writes
    them (:func:`pebench.render.tables.markdown_cells`) with the key cells up to that column filled in; ``([], {})``
    when no column of the table shows ``column`` row by row (as :func:`pebench.store.schema.shown_name` shows a
    value)."""
    data = table.data
    if data is None or column not in data.columns or len(data) != len(table.rows):
        return [], {}
    names = [str(value) for value in data[column]]
    shown = [shown_name(column, name) for name in names]
    header, displayed = markdown_cells(table)
    _, keyed = markdown_cells(table, table.rows)
    for j in range(len(header)):
        if [row[j].shown for row in table.rows] == shown:
            found: dict[str, list[list[str]]] = {}
            for name, full, row in zip(names, keyed, displayed, strict=True):
                found.setdefault(name, []).append(full[: j + 1] + row[j + 1:])
            return header, found
    return [], {}


def look_sentence(column: str, name: str, experiment: str, arch: str | None) -> str:
    """What a reader of ``name``'s page looks at in a figure of ``experiment`` (``arch``: the architecture the
    figure shows, or None for every one)."""
    return f"Look for {shown_name(column, name)} in {people_words(experiment, arch)}: {LOOK_FOR[column]}."


def emphasis_sentence(name: str, experiment: str, arch: str | None) -> str:
    """What a reader of ``name``'s page looks at in the figure of ``experiment`` that emphasises it."""
    return (f"{shown_name('encoding', name)} in {people_words(experiment, arch)}: the coloured line with its band; "
            "the thin grey lines are every other encoding. Right of the grey area (the training lengths), a line "
            "above the grey ones extrapolates better than most encodings on that task.")


def entries(out_dir: Path, cells: pd.DataFrame, tables: Sequence[Table], emphasis: Mapping[str, str] | None = None,
            notes: Mapping[str, Sequence[str]] | None = None) -> dict[str, dict[str, Any]]:
    """Per column of :data:`COLUMNS` and name in ``cells`` (``summary/cells.csv``): ``{"appearances": [[experiment,
    arch], ...], "tables": {table: {"header", "rows"}}, "figures": {figure: sentence}}``, its experiments and
    architectures in the order of the cells, the rows of each of ``tables`` (those the report wrote, by name; of a
    name written twice, the last) that show it and the figures in ``out_dir/figures`` drawn from its experiments and
    architectures, each with :func:`look_sentence` (a page orders both as ``report.json`` lists its tables and
    figures). ``emphasis``: figure name -> the encoding it emphasises (:data:`ENCODING_FIGURES`), which gets it with
    :func:`emphasis_sentence` instead of the other figures of its experiment and architecture; no other name gets
    it. ``notes``: encoding -> sentences its page says above its rows (``"notes"``, only where it has any)."""
    emphasis = emphasis or {}
    figures = sorted({path.stem for path in Path(out_dir, "figures").glob("*.*")})
    by_name = {table.name: table for table in tables}
    experiments = sorted(set(cells["experiment"]))
    archs = sorted(set(cells["arch"]))
    found: dict[str, dict[str, Any]] = {}
    for column in COLUMNS:
        places = _places(cells, column)
        per_name: dict[str, Any] = {name: {"appearances": [list(pair) for pair in pairs], "tables": {}, "figures": {}}
                                    for name, pairs in places.items()}
        for table in sorted(by_name):
            header, rows = table_rows(by_name[table], column)
            for name, shown in rows.items():
                if name in per_name:
                    per_name[name]["tables"][table] = {"header": header, "rows": shown}
        _add_figures(per_name, column, figures, cells, places, emphasis, experiments, archs)
        if column == "encoding":
            per_name.update({name: {**per_name[name], "notes": list(said)}
                             for name, said in (notes or {}).items() if name in per_name and said})
        found[column] = per_name
    return found


def _add_figures(per_name: dict[str, Any], column: str, figures: Sequence[str], cells: pd.DataFrame,
                 places: Mapping[str, Any], emphasis: Mapping[str, str], experiments: list[str], archs: list[str]
                 ) -> None:
    """Put in ``per_name`` (one :func:`entries` column's) each figure a name's page shows, with its sentence: a
    figure emphasising an encoding on that encoding's page only, in place of its experiment's other figures there;
    every other figure on the pages of the names drawn in it."""
    replaced = {(emphasis[figure], figure_places(figure, experiments, archs)) for figure in emphasis}
    for figure in figures:
        owner = figure_places(figure, experiments, archs)
        if figure in emphasis:
            if column == "encoding" and emphasis[figure] in per_name and owner:
                per_name[emphasis[figure]]["figures"][figure] = emphasis_sentence(emphasis[figure], *owner)
            continue
        shown = part_tasks(figure, cells, owner) if owner and column == "task" else None
        for name, entry in per_name.items():
            if (shown is not None and name not in shown) or (column == "encoding" and (name, owner) in replaced):
                continue
            if owner and any(owner[0] == e and owner[1] in (None, a) for e, a in places.get(name, ())):
                entry["figures"][figure] = look_sentence(column, name, *owner)


def part_tasks(figure: str, cells: pd.DataFrame, owner: tuple[str, str | None]) -> list[str] | None:
    """The tasks that ``figure``, a part ``<name>_part<k>`` of the figures of ``owner`` (experiment, architecture
    or None), shows: the ``k``-th of :func:`pebench.report.plots.split_tasks` of its cells' tasks; None for a figure
    that is not a part."""
    match = re.search(r"_part(\d+)$", figure)
    if match is None:
        return None
    experiment, arch = owner
    rows = cells[(cells["experiment"] == experiment) & ((cells["arch"] == arch) if arch else True)]
    parts = plots.split_tasks(rows["task"].astype(str))
    number = int(match.group(1))
    return parts[number - 1] if number <= len(parts) else []


def _places(cells: pd.DataFrame, column: str) -> Mapping[str, dict[tuple[str, str], None]]:
    """Per name of ``cells[column]``, its ``(experiment, arch)`` pairs in the order of the cells."""
    places: dict[str, dict[tuple[str, str], None]] = {}
    for name, experiment, arch in zip(cells[column], cells["experiment"], cells["arch"], strict=True):
        places.setdefault(str(name), {})[(experiment, arch)] = None
    return places
