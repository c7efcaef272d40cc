"""The Replications page and the pilots' readings, rendered from what ``pebench report`` and the pilot
scripts' ``read`` commands wrote."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from pebench.schema import encoding_label

from .common import ROOT, markdown_table, not_in_results, render_blocks, shown

#: each pilot reading the protocol and pilots pages show: the JSON its script's ``read`` writes, what it is,
#: and the script
PILOT_READINGS = {
    "t5_bucket_pilot": ("t5_buckets.json", "T5 bucket pilot", "pilots/t5_bucket_pilot.py"),
    "cap_pilot": ("cap_pilot.json", "Step-cap pilot", "pilots/cap_pilot.py"),
    "t5_duplicate_pilot": ("t5_duplicate.json", "T5 duplicate pilot", "pilots/t5_duplicate_pilot.py"),
    "stop_rule_replay": ("stop_rules.json", "Plateau-stop replay", "pilots/stop_rule_replay.py"),
}


def pilot_reading(path: Path, what: str, script: str) -> str:
    """A pilot's reading as its script's ``read`` command wrote it (blocks, :mod:`pebench.report.blocks`),
    rendered; or the line that says how to write it."""
    if not path.exists():
        return not_in_results(what, f"`{shown(path)}` is missing; run `python {script} read`")
    return "\n".join(render_blocks(json.loads(path.read_text())["blocks"]))


def v3_fit_include() -> str:
    """Protocol v3's fit criterion as the code declares it, with the training lengths of the core battery that
    are too small to split (:func:`pebench.report.fit_criterion.fit_criterion_blocks`), rendered."""

    from pebench.experiment import load_experiments
    from pebench.report.fit_criterion import fit_criterion_blocks

    load_experiments()
    core = sys.modules["pebench_experiments.length_extrapolation"].CORE  # the standard suite's battery
    return "\n".join(render_blocks(fit_criterion_blocks(core)))


def depth_pilot_include(pilots: Path) -> str:
    """The depth pilot's fit table and the outcome of its rule, as ``pilots/depth_pilot.py read`` wrote them
    (``depth_pilot.csv``, ``depth_pilot.json``), rendered."""

    table_path, outcome_path = pilots / "depth_pilot.csv", pilots / "depth_pilot.json"
    if not table_path.exists() or not outcome_path.exists():
        return not_in_results("The depth pilot", f"`{shown(pilots)}` holds no `depth_pilot.csv` and "
                              "`depth_pilot.json` yet (`python pilots/depth_pilot.py read` writes them)")
    with table_path.open(newline="") as file:
        table = list(csv.DictReader(file))
    outcome = json.loads(outcome_path.read_text())
    pivot = {}
    for row in table:
        cell = f"{int(float(row['fitted']))}/{int(float(row['runs']))}"
        pivot.setdefault((int(float(row["n_layers"])), row["arch"]), {})[row["encoding"]] = cell
    from pebench.schema import encoding_rank

    encodings_seen = sorted({e for cells in pivot.values() for e in cells}, key=encoding_rank)
    rows = [[str(depth), arch, *(cells.get(e, "—") for e in encodings_seen)]
            for (depth, arch), cells in sorted(pivot.items())]
    lines = [f"From `{shown(table_path)}` ({outcome['runs']} runs so far), read by `python pilots/depth_pilot.py "
             "read`: runs fitted of runs made, per depth, architecture and encoding (in-distribution only).", "",
             markdown_table(["depth", "arch", *(encoding_label(e) for e in encodings_seen)], rows), ""]
    for depth, state in outcome["depths"].items():
        verdict = "meets the rule" if state["meets"] else "fails the rule" if state["decided"] else "undecided"
        lines.append(f"- depth {depth}: {verdict} ({state['why']})")
    chosen = outcome["chosen_depth"]
    lines += ["", f"**Chosen depth: {chosen}.**" if chosen else
              "**No depth chosen yet**: the rule decides once the depths it needs are complete.", ""]
    if outcome["caps"]:
        lines += [markdown_table(["arch", "task", "step cap"],
                                 [[c["arch"], f"`{c['task']}`", str(c["cap"])] for c in outcome["caps"]]), ""]
    return "\n".join(lines)


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
