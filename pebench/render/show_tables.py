"""What ``pebench show`` prints of a results folder: the main table its report wrote, then the results tables
narrowed to the tasks, encodings and metrics asked for (:func:`narrowed`).

``pebench report`` writes those tables into ``report.json`` (:data:`SHOW_KEY`, :func:`shown_record`), so that
``show`` prints a folder with a current report in about a second instead of loading and aggregating its run files
(:func:`report_tables`). The folder is read as data from anyone: the main table's name must be a plain file stem,
its file is read through the store's rules (no link followed), a recorded table must have the shape
:func:`shown_from_record` checks, and every text is escaped for the terminal.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebench import encodings, store
from pebench.render.tables import MARKS, Cell, Column, Table, terminal_text
from pebench.store.report_file import artifact_bytes

#: what ``pebench show`` leads with before a report records its main table (report.json's ``main_table``): the
#: extrapolation board, ``tables/extrapolation_<experiment>.md``
BOARD_PREFIX = "extrapolation_"


def main_table_text(folder: Path, index: Mapping[str, Any]) -> str | None:
    """The main table of the results ``folder`` as ``pebench report`` wrote it, titled and with its file
    (``tables/<name>.md`` of report.json's ``main_table``; before a report recorded one, the extrapolation
    board); ``None`` when the report names none. ``index`` is the folder's report as
    :func:`~pebench.store.report_file.current_report` gave it (checked to be of the shape pebench writes). The
    folder is read as untrusted data: the name must be a plain file stem, the table's file is not read through a
    link, the text is escaped for the terminal."""
    titles = {table["name"]: table["title"] for table in index.get("tables", [])}
    name = index.get("main_table") or next((n for n in titles if n.startswith(BOARD_PREFIX)), "")
    if not re.fullmatch(r"[\w-]+", name):
        return None
    path = folder / "tables" / f"{name}.md"
    try:
        text = artifact_bytes(folder, f"tables/{name}.md").decode("utf-8", errors="replace")  # never through a link
    except (OSError, ValueError):  # missing, or a link or a folder (a ResultsError)
        return None
    return terminal_text(f"{titles.get(name) or name} (the table to cite: {path})\n\n{text.strip()}")


def wrapped(text: str, width: int | None) -> str:
    """``text`` with every line that is not a table row (``|``) wrapped at ``width`` (``None``: as it is); a Markdown
    table with a row wider than ``width`` is printed without the blanks around its cells (still Markdown)."""
    if width is None:
        return text
    lines = text.splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("|")]
    if any(len(lines[i]) > width for i in rows):
        for i in rows:
            lines[i] = "|".join(cell.strip() for cell in re.split(r"(?<!\\)\|", lines[i]))
    return "\n".join(line if line.startswith("|") else "\n".join(textwrap.wrap(line, width, break_long_words=False,
                                                                                break_on_hyphens=False) or [""])
                     for line in lines)


#: the field of ``report.json`` that holds the tables ``pebench show`` prints: ``{"experiments": [...], "tables":
#: [...]}``, the experiments of the folder's runs and a :func:`shown_record` per table, in report order
SHOW_KEY = "show"
#: the row keys a shown table records per row, and ``--task`` and ``--encoding`` narrow it by
ROW_KEYS = ("task", "encoding")


@dataclass(frozen=True)
class ShownTable:
    """A table as ``pebench show`` prints and narrows it: the ``table`` (no data), the task and encoding of each of
    its rows (``rows``; none for a table whose rows are not one cell each) and the column of each run metric it
    shows (``metrics``, by the metric's name)."""

    table: Table
    rows: Mapping[str, list[str]] = field(default_factory=dict)
    metrics: Mapping[str, int] = field(default_factory=dict)


def column_values(table: Table, column: str) -> list[object]:
    """The ``column`` (``task``, ``encoding``) of each row of ``table``: its data's, where the data has one row per
    table row (the per-cell tables); empty otherwise."""
    data = table.data
    if data is None or column not in data or len(data) != len(table.rows):
        return []
    return list(data[column])


def metric_columns(table: Table) -> dict[str, int]:
    """The run metrics a per-cell table shows and the index of each one's column: its data holds ``<metric>_mean``
    per metric column, in column order, between the key columns and the seed count."""
    if table.data is None:
        return {}
    names = [c.removesuffix("_mean") for c in table.data.columns if c.endswith("_mean")]
    first = table.key_columns
    if len(names) != len(table.columns) - first - 1:
        return {}
    return {name: first + i for i, name in enumerate(names)}


def shown(table: Table) -> ShownTable:
    """``table`` (with its data, as a layout makes it) as ``pebench show`` narrows it."""
    rows = {column: [str(value) for value in column_values(table, column)] for column in ROW_KEYS}
    return ShownTable(dataclasses.replace(table, data=None), {k: v for k, v in rows.items() if v},
                      metric_columns(table))


def _cell_record(cell: Cell) -> str | list:
    """A cell as ``report.json`` holds it: its text, or ``[text, mark, bound]`` (``bound`` a plain bool: a table
    computed by numpy may hold a numpy one, which JSON cannot write)."""
    return cell.text if cell.mark is None and not cell.bound else [cell.text, cell.mark, bool(cell.bound)]


def shown_record(item: ShownTable, experiment: str) -> dict[str, Any]:
    """``item`` of ``experiment`` as ``report.json`` holds it (:data:`SHOW_KEY`): what :func:`~pebench.render.tables.
    to_text` prints of the table (a cell as its text, or ``[text, mark, bound]``), its row keys and metric columns."""
    table = item.table
    return {"experiment": experiment, "name": table.name, "title": table.title,
            "columns": [[column.header, column.align, column.key] for column in table.columns],
            "rows": [[_cell_record(cell) for cell in row] for row in table.rows],
            "group_starts": list(table.group_starts), "notes": list(table.notes), "version": table.version,
            **{column: list(values) for column, values in item.rows.items()}, "metrics": dict(item.metrics)}


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _cell(value: object) -> Cell:
    if isinstance(value, str):
        return Cell(value)
    if (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and value[1] in (*MARKS, None)
            and isinstance(value[2], bool)):
        return Cell(value[0], None, value[1], value[2])
    raise ValueError(f"a cell {str(value)[:40]!r} is neither a text nor [text, mark, bound]")


def shown_from_record(record: object) -> ShownTable:
    """The table a :func:`shown_record` holds, checked (a folder may come from anyone).

    Raises:
        ValueError: on one line, what in ``record`` is not of the shape :func:`shown_record` writes.
    """
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("name", "title", "version")):
        raise ValueError("a table is not an object with a text name, title and version")
    name, columns, rows = record["name"], record.get("columns"), record.get("rows")
    if not (isinstance(columns, list) and all(isinstance(c, list) and len(c) == 3 and isinstance(c[0], str)
                                              and isinstance(c[1], str) and isinstance(c[2], bool) for c in columns)):
        raise ValueError(f"table {name[:40]!r}: its columns are not [header, align, key] each")
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ValueError(f"table {name[:40]!r}: its rows are not lists of cells")
    starts, notes, metrics = record.get("group_starts"), record.get("notes"), record.get("metrics", {})
    if not (isinstance(starts, list) and all(isinstance(i, int) for i in starts) and _texts(notes)):
        raise ValueError(f"table {name[:40]!r}: its group starts are not numbers or its notes not texts")
    keys = {column: record[column] for column in ROW_KEYS if column in record}
    if any(not _texts(values) or len(values) != len(rows) for values in keys.values()):
        raise ValueError(f"table {name[:40]!r}: a row key is not a text per row")
    if not (isinstance(metrics, dict) and all(isinstance(i, int) and 0 <= i < len(columns) and not isinstance(i, bool)
                                              for i in metrics.values())):
        raise ValueError(f"table {name[:40]!r}: its metrics are not column numbers")
    table = Table(name, record["title"], "", [Column(*column) for column in columns],
                  [[_cell(cell) for cell in row] for row in rows], group_starts=starts, notes=notes,
                  version=record["version"])  # a row of another length than the columns: a ValueError
    return ShownTable(table, keys, metrics)


def report_tables(index: Mapping[str, Any], experiments: Sequence[str] = (), folder: str | Path = ""
                  ) -> list[ShownTable]:
    """The tables ``pebench show`` prints, as the report ``index`` (a current ``report.json`` of ``folder``) holds them
    (:data:`SHOW_KEY`), only those of ``experiments`` where given.

    Raises:
        ValueError: the report holds no tables for ``show`` (written by an older pebench) or one not of their shape
            (:func:`shown_from_record`), on one line.
        ResultsError: an experiment asked for has no runs in the folder, naming those it has.
    """
    section = index.get(SHOW_KEY)
    if not isinstance(section, dict) or not _texts(section.get("experiments")) or not isinstance(
            section.get("tables"), list):
        raise ValueError(f"the report of {folder} holds no tables for pebench show (an older pebench wrote it)")
    present = section["experiments"]
    if missing := [e for e in experiments if e not in present]:
        raise store.ResultsError(f"{folder}: no runs of experiment(s) {', '.join(missing)}; present: "
                                 f"{', '.join(sorted(present))}")
    return [shown_from_record(record) for record in section["tables"]
            if not experiments or (isinstance(record, dict) and record.get("experiment") in experiments)]


def registered_names(asked: Sequence[str], shown: Sequence[str]) -> list[str]:
    """``asked`` encodings by their registered names: a display label (``NoPE``) as the name it labels."""
    by_label = {":".join(encodings.label(p) if encodings.known(p) else p for p in name.split(":")): name
                for name in shown}
    return [name if name in shown else by_label.get(name, name) for name in asked]


def shown_problem(what: str, asked: Sequence[str], shown: Sequence[str], folder: Path) -> str | None:
    """The one line that refuses a ``--task``/``--encoding``/``--metric`` of ``asked`` that no table of ``folder``
    shows (``shown``), with the close names; ``None`` when each is shown."""
    for name in asked:
        if name not in shown:
            close = difflib.get_close_matches(name, shown, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            return f"no table of {folder} shows {what} {name!r}.{hint} Shown: {', '.join(shown) or 'none'}"
    return None


def narrowed(item: ShownTable, wanted: Mapping[str, Sequence[str]], metrics: Sequence[str]) -> Table | None:
    """The table of ``item`` with the rows of the wanted tasks and encodings (``wanted``: column -> names; an empty
    list keeps every row) and the columns of ``metrics`` (empty: every column), its marks as computed over all rows;
    ``None`` when nothing of it is wanted (a table without a task column under ``--task``)."""
    table = item.table
    keep = list(range(len(table.rows)))
    for column, names in wanted.items():
        if names:
            values = item.rows.get(column, [])
            keep = [i for i in keep if values and values[i] in names]
    if not keep:
        return None
    columns = list(range(len(table.columns)))
    if metrics:
        if not set(metrics) & set(item.metrics):
            return None
        columns = [*range(table.key_columns), *(item.metrics[m] for m in metrics if m in item.metrics),
                   len(table.columns) - 1]
    group = [sum(1 for start in table.group_starts if start <= i) for i in range(len(table.rows))]
    starts = [n for n, i in enumerate(keep) if n == 0 or group[i] != group[keep[n - 1]]]
    return dataclasses.replace(table, columns=[table.columns[c] for c in columns], group_starts=starts, data=None,
                               rows=[[table.rows[i][c] for c in columns] for i in keep])
