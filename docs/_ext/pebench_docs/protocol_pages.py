"""The protocol, pilots and replications pages' pieces, rendered: the protocol as the code declares it
(:mod:`pebench.protocol_tables`), the pilots' readings (:mod:`pebench.pilot_readings`) and the replications of the
replication suite's ``report.json``."""

from __future__ import annotations

import json
from pathlib import Path

from pebench import store
from pebench.pilot_readings import depth_pilot_blocks
from pebench.protocol_tables import battery_tables as battery
from pebench.results_text import not_in_results

from .common import REFERENCE_SUITE, ROOT, markdown_table, render_blocks, report_index, shown


def battery_tables(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment with runs in ``suite``: its task battery, each task linked to its page."""
    return {name: markdown_table(table.headers, [[f"{{doc}}`{row[0].text} </_generated/tasks/{row[0].text}>`",
                                                  *(cell.text for cell in row[1:])] for row in table.rows])
            for name, table in battery(suite).items()}


def pilot_reading(path: Path, what: str, script: str) -> str:
    """A pilot's reading as its script's ``read`` command wrote it (blocks, :mod:`pebench.blocks`),
    rendered; or the line that says how to write it."""
    if not path.exists():
        return not_in_results(what, f"`{shown(path)}` is missing; run `python {script} read`")
    return "\n".join(render_blocks(json.loads(store.read_plain_file(path, "pilot reading"))["blocks"]))


def depth_pilot_include(pilots: Path) -> str:
    """The depth pilot's fit table and the outcome of its rule (:func:`pebench.pilot_readings.depth_pilot_blocks`),
    rendered."""
    blocks = depth_pilot_blocks(pilots, shown(pilots))
    if blocks is None:
        return not_in_results("The depth pilot", f"`{shown(pilots)}` holds no `depth_pilot.csv` and "
                              "`depth_pilot.json` yet (`python pilots/depth_pilot.py read` writes them)")
    return "\n".join(render_blocks(blocks))


#: what ``pebench changes results/history/standard-v2-aaa7cfcc results/standard --blocks FILE`` wrote, for the
#: protocol page's "What changed from v2"
CHANGES_FILE = Path("history") / f"{REFERENCE_SUITE}-changes.json"


def changes_include(results: Path = ROOT / "results") -> str:
    """The verdicts that moved from the snapshot of the reference's previous protocol to the reference
    (:meth:`pebench.report.changes.Changes.blocks`, as ``pebench changes ... --blocks`` wrote them to
    :data:`CHANGES_FILE`), rendered; the line that says there is nothing to compare yet where the file is absent.
    The build stops with one line where the list compares other results than the reference's current ones."""
    path = results / CHANGES_FILE
    if not path.exists():
        return ("Until the v3 reference is reported and its changes are listed (`pebench changes ... --blocks "
                f"{shown(path)}`), there is nothing to compare.")
    written = json.loads(store.read_plain_file(path, "changes list"))
    current = report_index(results / REFERENCE_SUITE).get("results_version")
    if written.get("after") != current:
        raise RuntimeError(f"pebench_docs: {shown(path)} lists the changes to {written.get('after')}, not to "
                           f"{shown(results / REFERENCE_SUITE)} as it is now ({current}): run pebench changes "
                           f"results/history/<snapshot> {shown(results / REFERENCE_SUITE)} --blocks {shown(path)}")
    return "\n".join(render_blocks(written["blocks"]))


REPLICATION_SUITE = "replication"


def replications_include(results: Path = ROOT / "results") -> str:
    """The Replications page's body: the replication sections of the replication suite's ``report.json``
    (written by ``pebench report``; checked to be current, :func:`.common.report_index`), rendered as they are."""
    path = results / REPLICATION_SUITE / "report.json"
    if not path.exists():
        return not_in_results("Replications", f"no `{shown(path)}`; `pebench report --results "
                                              f"{shown(path.parent)}` writes it")
    sections = report_index(path.parent).get("replications", [])
    lines = [line for section in sections for line in render_blocks(section["blocks"])]
    return "\n".join(lines) if lines else not_in_results("Replications", "no replication experiment is declared")
