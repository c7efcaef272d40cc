"""The main table of a suite, the one to cite: protocol v3's scores and tiers of its lead experiment on one
paper-sized table (``tables/main.tex`` and ``.md``), its per-task tables staying as appendix tables.

Per architecture and encoding it shows the extrapolation board
(:func:`pebench.analysis.leaderboard.extrapolation_board`: placement (tier, between tiers, no extrapolation) with the
probability of its tier, floor-normalised OOD score with its 95% interval, share of order-dependent runs fitted)
beside the harm
on the order-free controls (:func:`pebench.analysis.leaderboard.harm`: the difference from the baseline with its
interval, and whether it harms). The LaTeX is a ``table*`` that fits ``\\textwidth`` of a two-column paper
(tests/test_latex.py compiles it in one); abbreviations are explained in its caption, which names the results
version.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench import encodings
from pebench import metrics as metric_registry
from pebench.analysis import leaderboard
from pebench.render import board_tables
from pebench.render.tables import Cell, Column, Style, Table, interval_text
from pebench.report_spec import ReportSpec
from pebench.store.schema import encoding_label

#: the file stem of a suite's main table (``tables/main.tex``)
MAIN_TABLE = "main"
# a float spanning both columns of a two-column paper, in ``\small``
MAIN_STYLE = Style(comment=True, font=r"\small", title_in_caption=True, caption_gap=1, environment="table*")


def lead_experiment(experiments: Sequence[tuple[str, object, ReportSpec]]) -> str | None:
    """The experiment a suite is cited by: the first (in report order) that declares a primary metric, or
    ``None``."""
    return next((name for name, _, spec in experiments if spec.primary_metric), None)


def _placement(r) -> Cell:
    """An encoding's place on the extrapolation board (a row of it): ``k (P(tier))``, in bold for the top tier,
    ``between tiers (P(tier))``, ``no extrapolation`` or ``—`` (not ranked); its value is the tier (0: none)."""
    if not r.ranked:
        return Cell("—")
    if r.placement == "no extrapolation":
        return Cell(r.placement, r.tier)
    tier = str(r.tier) if r.placement.startswith("tier ") else r.placement
    return Cell(f"{tier} ({r.tier_probability:.3f})", r.tier, "best" if r.placement == "tier 1" else None)


def _interval(point: float, low: float, high: float, digits: int = 2) -> Cell:
    """``point [low, high]`` with ``digits`` decimals; its value is the triple."""
    return Cell(interval_text(point, low, high, digits), (point, low, high))


def main_table(runs: pd.DataFrame, experiment: str, title: str, version: str) -> Table | None:
    """The main table of ``experiment`` (its per-run frame ``runs``), or ``None`` when it has no extrapolation
    board (no fit criterion or no order-dependent task).

    Args:
        runs: the per-run frame of :func:`pebench.analysis.results.run_metrics` for the experiment.
        experiment: its name (in the caption and the data).
        title: the table's title (``Length extrapolation: main results``, see
            :func:`~pebench.report.layout_findings.titled`).
        version: the results version it names, e.g. ``standard v3-0123abcd``.
    """
    board = leaderboard.extrapolation_board(runs)
    if board.empty:
        return None
    harm = leaderboard.harm(runs).set_index(["arch", "encoding"])
    baseline = encodings.baseline_name()
    base_label = encoding_label(baseline) if baseline else "the baseline"
    rows, starts, records = [], [], []
    for i, r in enumerate(board.itertuples()):
        if i == 0 or r.arch != board["arch"].iloc[i - 1]:
            starts.append(len(rows))
        row = [Cell(str(r.arch), r.arch), Cell(encoding_label(r.encoding), r.encoding), _placement(r),
               _interval(r.score, r.low, r.high) if r.ranked else Cell("—"),
               Cell(f"{100 * r.dependent_fit_rate:.0f}%", r.dependent_fit_rate)]
        record = {"experiment": experiment, "arch": r.arch, "encoding": r.encoding, "ranked": r.ranked,
                  "tier": r.tier if r.ranked else np.nan, "placement": r.placement,
                  "tier_probability": r.tier_probability, "score": r.score, "score_low": r.low, "score_high": r.high,
                  "dependent_fit_rate": r.dependent_fit_rate, "n_pairs": r.n_pairs, "n_tasks": r.n_tasks,
                  "battery": r.battery}
        control = harm.loc[(r.arch, r.encoding)] if (r.arch, r.encoding) in harm.index else None
        if control is None:
            row += [Cell("—"), Cell("—")]
        elif r.encoding == baseline:
            row += [Cell("baseline"), Cell("—")]
        else:
            # three decimals, as the harm board: an interval ending just below 0 must not read as 0.00
            row += [_interval(control["vs_baseline"], control["diff_low"], control["diff_high"], 3),
                    Cell("yes" if control["harms"] else "no", bool(control["harms"]))]
        if control is not None:
            record.update(control_vs_baseline=control["vs_baseline"], control_low=control["diff_low"],
                          control_high=control["diff_high"], harms=bool(control["harms"]))
        rows.append(row)
        records.append(record)
    columns = [Column("Arch", "l", key=True), Column("Encoding", "l"), Column("Tier (P)", "c"),
               Column("Score [95% CI]", "r"), Column("Fit", "r"), Column(f"Controls vs {base_label}", "r"),
               Column("Harms", "c")]
    score = metric_registry.get(leaderboard.PRIMARY_SCORE).axis_label
    n_boot, seed = int(board["n_boot"].iloc[0]), int(board["boot_seed"].iloc[0])
    caption = (
        "The placements and scores of the extrapolation board, per architecture: encodings ranked by their "
        "advantage, the mean of their pairwise differences from the others, task by task on the runs both "
        f"encodings of a pair fitted. {board_tables.tier_rule(n_boot, seed)}. In bold: tier 1; in brackets: "
        "P(tier) (between tiers: for the tier of its point estimate); — = not ranked, no order-dependent task "
        f"fitted alongside another encoding. Score: {score}, (OOD accuracy − floor) / (1 − floor), 0 = what a model "
        "without position information reaches, 1 = perfect; mean over the order-dependent tasks it fitted of the "
        f"mean over its fitted seeds (battery: {board_tables.battery_text(board)}), with a 95% two-level bootstrap "
        "interval (tasks, then seeds). Fit: share of its "
        f"order-dependent runs that met the fit criterion. Controls vs {base_label}: OOD token accuracy on the "
        f"order-free controls minus {base_label}'s, on the same task-seed pairs, with a 95% interval; Harms: "
        f"that interval lies below 0. Per-task results: the appendix tables. Results: {version}.")
    return Table(MAIN_TABLE, title, caption, columns, rows, starts,
                 data=pd.DataFrame.from_records(records), version=version, style=MAIN_STYLE)
