"""The protocol's numbers as the code declares them (:mod:`pebench.protocol_tables`), rendered: the experiments'
tables and substitutions, the task batteries, and the suites' measured wall times."""

from __future__ import annotations

from pathlib import Path

from pebench.protocol_tables import battery_tables as battery
from pebench.protocol_tables import experiments_blocks, protocol_values, suite_time_values

from .common import REFERENCE_SUITE, ROOT, markdown_table, render_blocks


def experiments_tables() -> str:
    """The scale of each suite, then per registered experiment its standard-suite settings."""
    return "\n".join(render_blocks(experiments_blocks(REFERENCE_SUITE)))


def protocol_substitutions() -> dict[str, str]:
    """The protocol's constants (:func:`pebench.protocol_tables.protocol_values`)."""
    return protocol_values()


def battery_tables(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment with runs in ``suite``: its task battery, each task linked to its page."""
    return {name: markdown_table(table.headers, [[f"{{doc}}`{row[0].text} </_generated/tasks/{row[0].text}>`",
                                                  *(cell.text for cell in row[1:])] for row in table.rows])
            for name, table in battery(suite).items()}


def suite_times(results: Path = ROOT / "results") -> dict[str, str]:
    """``<suite>_time`` and ``standard_budget`` (:func:`pebench.protocol_tables.suite_time_values`)."""
    return suite_time_values(results / "performance")
