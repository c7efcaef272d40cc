"""The protocol, pilots and replications pages' pieces, rendered: the protocol as the code declares it
(:mod:`pebench.render.protocol_tables`), the pilots' readings (:mod:`pebench.render.pilot_readings`) and the
replications of the replication suite's ``report.json``."""

from __future__ import annotations

from pathlib import Path

from pebench import store
from pebench.render.blocks import markdown_lines
from pebench.render.pilot_readings import depth_pilot_blocks
from pebench.render.protocol_tables import battery_tables as battery
from pebench.render.results_text import changes_list, not_in_results

from .common import REFERENCE_SUITE, ROOT, markdown_table, report_index, shown


def battery_tables(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment with runs in ``suite``: its task battery, each task linked to its page."""
    return {name: markdown_table(table.headers, [[f"{{doc}}`{row[0].text} </_generated/tasks/{row[0].text}>`",
                                                  *(cell.text for cell in row[1:])] for row in table.rows])
            for name, table in battery(suite).items()}


def pilot_reading(path: Path, what: str, script: str) -> str:
    """A pilot's reading as its script's ``read`` command wrote it (blocks, :mod:`pebench.render.blocks`),
    rendered; or the line that says how to write it."""
    if not path.exists():
        return not_in_results(what, f"`{shown(path)}` is missing; run `python {script} read`")
    return "\n".join(markdown_lines(store.read_json(path, "pilot reading")["blocks"]))


def depth_pilot_include(pilots: Path) -> str:
    """The depth pilot's fit table and its rule's outcome (:func:`pebench.render.pilot_readings.depth_pilot_blocks`),
    rendered."""
    blocks = depth_pilot_blocks(pilots, shown(pilots))
    if blocks is None:
        return not_in_results("The depth pilot", f"`{shown(pilots)}` holds no `depth_pilot.csv` and "
                              "`depth_pilot.json` yet (`python pilots/depth_pilot.py read` writes them)")
    return "\n".join(markdown_lines(blocks))


def changes_include(results: Path = ROOT / "results") -> str:
    """The protocol page's list of the verdicts that moved since the previous reference
    (:func:`pebench.render.results_text.changes_list`), rendered."""
    return "\n".join(markdown_lines(changes_list(results, REFERENCE_SUITE)))


REPLICATION_SUITE = "replication"


def replications_include(results: Path = ROOT / "results") -> str:
    """The Replications page's body: the replication sections of the replication suite's ``report.json``
    (written by ``pebench report``; checked to be current, :func:`.common.report_index`), rendered as they are."""
    path = results / REPLICATION_SUITE / "report.json"
    if not path.exists():
        return not_in_results("Replications", f"no `{shown(path)}`; `pebench report --results "
                                              f"{shown(path.parent)}` writes it")
    sections = report_index(path.parent).get("replications", [])
    lines = [line for section in sections for line in markdown_lines(section["blocks"])]
    return "\n".join(lines) if lines else not_in_results("Replications", "no replication experiment is declared")
