"""The protocol, pilots and replications pages' pieces, rendered: the protocol's numbers as the code declares them
(:mod:`pebench.protocol_tables`: the experiments' tables and substitutions, the task batteries, the fit criterion
and the suites' measured wall times), the pilots' readings (:mod:`pebench.pilot_readings`, and what the pilot
scripts' ``read`` commands wrote) and the replications of the replication suite's ``report.json``."""

from __future__ import annotations

import json
from pathlib import Path

from pebench.pilot_readings import depth_pilot_blocks
from pebench.protocol_tables import battery_tables as battery
from pebench.protocol_tables import experiments_blocks, fit_criterion, protocol_values, suite_time_values

from .common import REFERENCE_SUITE, ROOT, markdown_table, not_in_results, render_blocks, shown


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


def pilot_reading(path: Path, what: str, script: str) -> str:
    """A pilot's reading as its script's ``read`` command wrote it (blocks, :mod:`pebench.blocks`),
    rendered; or the line that says how to write it."""
    if not path.exists():
        return not_in_results(what, f"`{shown(path)}` is missing; run `python {script} read`")
    return "\n".join(render_blocks(json.loads(path.read_text())["blocks"]))


def v3_fit_include() -> str:
    """Protocol v3's fit criterion as the code declares it, with the training lengths of the core battery that
    are too small to split (:func:`pebench.protocol_tables.fit_criterion`), rendered."""
    return "\n".join(render_blocks(fit_criterion()))


def depth_pilot_include(pilots: Path) -> str:
    """The depth pilot's fit table and the outcome of its rule (:func:`pebench.pilot_readings.depth_pilot_blocks`),
    rendered."""
    blocks = depth_pilot_blocks(pilots, shown(pilots))
    if blocks is None:
        return not_in_results("The depth pilot", f"`{shown(pilots)}` holds no `depth_pilot.csv` and "
                              "`depth_pilot.json` yet (`python pilots/depth_pilot.py read` writes them)")
    return "\n".join(render_blocks(blocks))


REPLICATION_SUITE = "replication"


def replications_include(results: Path = ROOT / "results") -> str:
    """The Replications page's body: the replication sections of the replication suite's ``report.json``
    (written by ``pebench report``), rendered as they are."""
    path = results / REPLICATION_SUITE / "report.json"
    if not path.exists():
        return not_in_results("Replications", f"no `{shown(path)}`; `pebench report --results "
                                              f"{shown(path.parent)}` writes it")
    sections = json.loads(path.read_text()).get("replications", [])
    lines = [line for section in sections for line in render_blocks(section["blocks"])]
    return "\n".join(lines) if lines else not_in_results("Replications", "no replication experiment is declared")
