"""The pilot readings the protocol and pilots pages show: those their scripts' ``read`` commands write as blocks
(:data:`PILOT_READINGS`), and the depth pilot's, which its script writes as data: its fit table per depth,
architecture and encoding, the outcome of its rule per depth, the chosen depth and its step caps, from what
``pilots/depth_pilot.py read`` wrote (``depth_pilot.csv``, ``depth_pilot.json``), as blocks
(:mod:`pebench.render.blocks`;
the site renders them)."""

from __future__ import annotations

from pathlib import Path

from pebench import store
from pebench.render.blocks import PagePiece, bullet_list, heading, table, text
from pebench.store.schema import encoding_label, encoding_rank, task_label

#: each pilot reading written as blocks (:func:`pebench.render.blocks.write_blocks`) that the protocol and pilots pages
#: show, by the name of its include: its file under ``results/pilots``, what it is, and the script whose ``read``
#: writes it
PILOT_READINGS = {
    "t5_bucket_pilot": ("t5_buckets.json", "T5 bucket pilot", "pilots/t5_bucket_pilot.py"),
    "cap_pilot": ("cap_pilot.json", "Step-cap pilot", "pilots/cap_pilot.py"),
    "t5_duplicate_pilot": ("t5_duplicate.json", "T5 duplicate pilot", "pilots/t5_duplicate_pilot.py"),
    "stop_rule_replay": ("stop_rules.json", "Plateau-stop replay", "pilots/stop_rule_replay.py"),
    "plateau_pilot": ("plateau_pilot.json", "Plateau pilot", "pilots/plateau_pilot.py"),
    "width_pilot": ("width_pilot.json", "Width pilot", "pilots/width_pilot.py"),
    "lm_step_pilot": ("lm_step_pilot.json", "LM step pilot", "pilots/lm_step_pilot.py"),
    "v4_power_analysis": ("power_v4.json", "Power analysis of protocol v4", "pilots/power_analysis.py"),
    "v4_battery_pilot": ("battery_fit.json", "Battery pilot of protocol v4", "pilots/battery_pilot.py"),
    "probe_encoder_pilot": ("probe_encoder_fit.json", "Probe pilot, encoder", "pilots/probe_pilot.py"),
    "v4_budget": ("v4_budget.json", "Budget of protocol v4", "pilots/v4_budget.py"),
}


def chosen_depth_text(chosen: int | None, depths: dict, condition: str = "") -> str:
    """What a reading of the depth rule chose (``depths``: per depth, whether it ``meets`` the rule;
    ``condition``: words after "met the rule", e.g. the plateau pilot's "without the plateau stop either"): the
    depth that met it, or, when none did, the depth pilot's fallback, said to be one (the width pilot then
    decided protocol v3's scale)."""
    if not chosen:
        return "**No depth chosen yet**: the rule decides once the depths it needs are complete."
    if any(state["meets"] for state in depths.values()):
        return f"**Chosen depth: {chosen}.**"
    return (f"**No depth met the rule{condition}; the depth pilot's fallback is depth {chosen}** (the depth with "
            "the most capable fits). It is not protocol v3's scale: the width pilot, declared for this case, decided "
            "that.")


def depth_pilot_blocks(pilots: Path, shown: str = "") -> list[PagePiece] | None:
    """The depth pilot's reading from the folder ``pilots`` (``shown``: that folder as the reader sees it, for the
    lead), or None when the pilot has not been read there."""
    table_path, outcome_path = Path(pilots) / "depth_pilot.csv", Path(pilots) / "depth_pilot.json"
    if not table_path.exists() or not outcome_path.exists():
        return None
    rows = store.read_plain_csv(table_path, "pilot table")
    outcome = store.read_json(outcome_path, "pilot outcome")  # neither read through a link
    pivot: dict[tuple[int, str], dict[str, str]] = {}
    for row in rows:
        cell = f"{int(float(row['fitted']))}/{int(float(row['runs']))}"
        pivot.setdefault((int(float(row["n_layers"])), row["arch"]), {})[row["encoding"]] = cell
    seen = sorted({e for cells in pivot.values() for e in cells}, key=encoding_rank)
    verdicts = []
    for depth, state in outcome["depths"].items():
        verdict = "meets the rule" if state["meets"] else "fails the rule" if state["decided"] else "undecided"
        verdicts.append(f"depth {depth}: {verdict} ({state['why']})")
    chosen = outcome["chosen_depth"]
    blocks = [text(f"From `{shown or pilots}/depth_pilot.csv` ({outcome['runs']} runs so far), read by `python "
                   "pilots/depth_pilot.py read`: runs fitted of runs made, per depth, architecture and encoding "
                   "(in-distribution only)."),
              table(["depth", "arch", *(encoding_label(e) for e in seen)],
                    [[str(depth), arch, *(cells.get(e, "—") for e in seen)]
                     for (depth, arch), cells in sorted(pivot.items())]),
              bullet_list(verdicts),
              text(chosen_depth_text(chosen, outcome["depths"]))]
    if outcome["caps"]:
        blocks.append(table(["arch", "task", "step cap"], [[c["arch"], task_label(c["task"]), str(c["cap"])]
                                                           for c in outcome["caps"]]))
    return blocks


#: the pilots whose rows say how a task fitted in distribution, on each task's page: file under ``results/pilots``
#: and the script that made it
TASK_PILOTS = {"task_fit.csv": "pilots/task_pilots.py", "battery_fit.csv": "pilots/battery_pilot.py",
               "probe_encoder_fit.csv": "pilots/probe_pilot.py"}


def task_pilot_blocks(task: str, pilots: Path) -> list[PagePiece]:
    """The in-distribution pilot runs of ``task`` in the folder ``pilots`` (:data:`TASK_PILOTS`) for its page, under a
    heading: one table per pilot file that has any, per architecture, encoding and seed, its step cap, whether it
    fitted and in how many steps, its held-out accuracy at the fit check and the position-free floor; nothing when
    no pilot ran the task."""
    blocks = []
    for name, script in TASK_PILOTS.items():
        path = Path(pilots) / name
        rows = [row for row in store.read_plain_csv(path, "pilot table") if row["task"] == task] \
            if path.exists() else []
        if not rows:
            continue
        commits = ", ".join(sorted({row["git_sha"][:7] for row in rows}))
        blocks += [text(f"`{script}` (`results/pilots/{name}`, made at commit {commits}):"),
                   table(["arch", "encoding", "seed", "step cap", "fitted", "steps to fit", "held-out acc",
                          "floor"],
                         [[row["arch"], encoding_label(row["encoding"]), row["seed"], row["step_cap"],
                           "yes" if row["fitted"] == "True" else "no",
                           f"{float(row['steps_to_fit']):.0f}" if row["steps_to_fit"] else "—",
                           f"{float(row['fit_token_acc']):.3f}", f"{float(row['floor_token_acc']):.3f}"]
                          for row in sorted(rows, key=lambda r: (r["arch"], encoding_rank(r["encoding"]),
                                                                 int(r["seed"])))])]
    lead = [heading(2, "In-distribution pilots"),
            text("Runs that only checked whether the encodings fit this task in distribution (evaluation never went "
                 "beyond the training lengths), made before the task was admitted to a suite or refused:")]
    return lead + blocks if blocks else []
