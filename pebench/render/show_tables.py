"""What ``pebench show`` prints of a results folder: the main table its report wrote, then the results tables
narrowed to the tasks, encodings and metrics asked for (:func:`narrowed`).

The folder is read as data from anyone: the main table's name must be a plain file stem, its file is read
through the store's rules (no link followed), and its text is escaped for the terminal.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from pebench import encodings, store
from pebench.render.tables import terminal_text
from pebench.store.report_file import artifact_bytes

#: what ``pebench show`` leads with before a report records its main table (report.json's ``main_table``): the
#: extrapolation board, ``tables/extrapolation_<experiment>.md``
BOARD_PREFIX = "extrapolation_"


def main_table_text(folder: Path) -> str | None:
    """The main table of the results ``folder`` as ``pebench report`` wrote it, titled and with its file
    (``tables/<name>.md`` of report.json's ``main_table``; before a report recorded one, the extrapolation
    board); ``None`` when the folder has no report. The folder is read as untrusted data: the name must be a
    plain file stem, the text is escaped for the terminal."""
    try:
        index = store.read_json(folder / "report.json", "report")  # never through a link
    except (OSError, ValueError):  # ValueError: a ResultsError too
        return None
    entries = index.get("tables") if isinstance(index, dict) else None
    names = [t["name"] for t in entries or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
    name = index.get("main_table") or next((n for n in names if n.startswith(BOARD_PREFIX)), "")
    if not isinstance(name, str) or not re.fullmatch(r"[\w-]+", name):
        return None
    path = folder / "tables" / f"{name}.md"
    try:
        text = artifact_bytes(folder, f"tables/{name}.md").decode("utf-8", errors="replace")  # never through a link
    except (OSError, ValueError):  # missing, or a link or a folder (a ResultsError)
        return None
    title = next((t.get("title") for t in entries if isinstance(t, dict) and t.get("name") == name), "") or name
    return terminal_text(f"{title} (the table to cite: {path})\n\n{text.strip()}")


def wrapped(text: str, width: int | None) -> str:
    """``text`` with every line that is not a table row (``|``) wrapped at ``width`` (``None``: as it is)."""
    if width is None:
        return text
    return "\n".join(line if line.startswith("|") else "\n".join(textwrap.wrap(line, width, break_long_words=False,
                                                                                break_on_hyphens=False) or [""])
                     for line in text.splitlines())


def column_values(table: object, column: str) -> list[object]:
    """The ``column`` (``task``, ``encoding``) of each row of ``table``: its data's, where the data has one row per
    table row (the per-cell tables); empty otherwise."""
    data = getattr(table, "data", None)
    if data is None or column not in data or len(data) != len(table.rows):
        return []
    return list(data[column])


def metric_columns(table: object) -> dict[str, int]:
    """The run metrics a per-cell table shows and the index of each one's column: its data holds ``<metric>_mean``
    per metric column, in column order, between the key columns and the seed count."""
    data = getattr(table, "data", None)
    if data is None:
        return {}
    names = [c.removesuffix("_mean") for c in data.columns if c.endswith("_mean")]
    first = table.key_columns
    if len(names) != len(table.columns) - first - 1:
        return {}
    return {name: first + i for i, name in enumerate(names)}


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


def narrowed(table: object, wanted: Mapping[str, Sequence[str]], metrics: Sequence[str]) -> object | None:
    """``table`` with the rows of the wanted tasks and encodings (``wanted``: column -> names; an empty list keeps
    every row) and the columns of ``metrics`` (empty: every column), its marks as computed over all rows;
    ``None`` when nothing of it is wanted (a table without a task column under ``--task``)."""
    keep = list(range(len(table.rows)))
    for column, names in wanted.items():
        if names:
            values = column_values(table, column)
            keep = [i for i in keep if values and str(values[i]) in names]
    if not keep:
        return None
    columns = list(range(len(table.columns)))
    if metrics:
        shown = metric_columns(table)
        if not set(metrics) & set(shown):
            return None
        columns = [*range(table.key_columns), *(shown[m] for m in metrics if m in shown), len(table.columns) - 1]
    group = [sum(1 for start in table.group_starts if start <= i) for i in range(len(table.rows))]
    starts = [n for n, i in enumerate(keep) if n == 0 or group[i] != group[keep[n - 1]]]
    data = table.data.iloc[keep].reset_index(drop=True) if table.data is not None and len(table.data) == len(
        table.rows) else table.data
    return dataclasses.replace(table, columns=[table.columns[c] for c in columns], group_starts=starts, data=data,
                               rows=[[table.rows[i][c] for c in columns] for i in keep])
