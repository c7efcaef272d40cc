"""Whether the step budget bound: the runs that ended unfitted while still improving in distribution.

A run that stops at its step cap (or, under protocol v4, at its ceiling) without fitting, while its held-out
accuracy on the training lengths was still rising, was stopped by the budget, not by what its encoding can
learn; a board whose runs often end so measures the budget (issue 66, item 5). The question asked of each run is
the extension rule's own (:func:`pebench.config.still_improving`): did its fit curve rise by at least
``extend_min_gain`` over its last ``extend_window`` steps? A run that records no extension asks it with the rule's
defaults (1000 steps, 0.01), so that a reference made without the rule is read the same way. Only fit checks are
read, never an out-of-distribution number.
"""

from __future__ import annotations

import pandas as pd

from pebench.analysis.leaderboard import fit_curve, trained_runs
from pebench.config import TrainConfig, still_improving
from pebench.store.schema import fitted

#: how a run ended when the step budget ended it (``stop_reason``): at its cap, or at the ceiling of an extension
BUDGET_ENDS = ("cap", "ceiling")
#: the share of board runs still improving at their end that protocol v4 aims under
GOAL = 0.05
_DEFAULTS = TrainConfig()


def _rule(row: pd.Series) -> tuple[int, float]:
    """The window and gain a run's own extension rule used, else the rule's defaults."""
    window, gain = row.get("extend_window"), row.get("extend_min_gain")
    if window == window and window is not None and gain == gain and gain is not None:
        return int(window), float(gain)
    return _DEFAULTS.extend_window, _DEFAULTS.extend_min_gain


def still_improving_runs(runs: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Per arch, task and encoding: the trained runs whose fit criterion was checked (``runs``), those the budget
    ended unfitted (``budget_ended``: ``stop_reason`` in :data:`BUDGET_ENDS`), and of those the ones still
    improving when it did (``still_improving``, from their ``fit_curve`` in the run ``rows``; ``unread``: curves
    missing or malformed). Empty when no run was checked or the rows record no curves."""
    columns = ["arch", "task", "encoding", "runs", "budget_ended", "still_improving", "unread"]
    runs = trained_runs(runs)
    if "fitted" not in runs or "fit_curve" not in rows or "stop_reason" not in runs:
        return pd.DataFrame(columns=columns)
    checked = runs[runs["fitted"].notna()]
    ended = checked[~fitted(checked) & checked["stop_reason"].isin(BUDGET_ENDS)]
    first = rows.drop_duplicates("run_id").set_index("run_id")
    improving, unread = {}, set()
    for run_id in ended["run_id"]:
        row = first.loc[run_id] if run_id in first.index else None
        curve = fit_curve(row["fit_curve"]) if row is not None else None
        if not curve:
            unread.add(run_id)
            continue
        improving[run_id] = still_improving(curve, *_rule(row))
    frame = checked.assign(
        budget_ended=checked["run_id"].isin(set(ended["run_id"])),
        still_improving=checked["run_id"].map(improving).fillna(False).astype(bool),
        unread=checked["run_id"].isin(unread))
    table = frame.groupby(["arch", "task", "encoding"], sort=True).agg(
        runs=("run_id", "size"), budget_ended=("budget_ended", "sum"), still_improving=("still_improving", "sum"),
        unread=("unread", "sum")).reset_index()
    return table[columns]


def still_improving_share(table: pd.DataFrame, tasks: set[str] | None = None) -> pd.DataFrame:
    """Per arch, of the runs of :func:`still_improving_runs` (on ``tasks`` only, when given: a board's battery),
    how many the budget ended, how many of those were still improving, and their share of all the runs."""
    part = table if tasks is None else table[table["task"].isin(tasks)]
    summary = part.groupby("arch", sort=True)[["runs", "budget_ended", "still_improving", "unread"]].sum()
    summary["share"] = summary["still_improving"] / summary["runs"].where(summary["runs"] > 0)
    return summary.reset_index()
