"""The boards of :mod:`pebench.analysis.leaderboard` as tables (:class:`pebench.render.tables.Table`), which every
format renders:
capability, extrapolation tiers, harm, fit, capacity shortfall, protocol v2's leaderboard and the declared pairwise
comparisons. A cell carries its value and its display text; an architecture is each board's key column."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.analysis import leaderboard
from pebench.analysis.leaderboard import FELL_BACK, verdict_text
from pebench.render.results_text import SPLIT_HALF_LEAD
from pebench.render.tables import Cell, Column, Table, column_kinds, interval_text
from pebench.store.schema import encoding_label, task_label


def _board(name: str, frame: pd.DataFrame, headers: Sequence[str], rows: list[list[Cell]], caption: str,
           label: str | None, keys: int = 1) -> Table:
    """A board as a :class:`pebench.render.tables.Table` (its numbers ``frame``; ``caption`` plain text; ``label``
    default :func:`pebench.render.tables.latex_label`'s): a column of numbers aligned right (an undefined one, ``—``,
    among them), one of words left. Its first ``keys`` columns name the rows (the architecture on every board): a
    name is printed where it changes, not repeated below, and each architecture begins a group (a rule above it)."""
    kinds = column_kinds(rows) if rows else [""] * len(headers)
    columns = [Column(h, "r" if kind == "numbers" else "l", key=i < keys)
               for i, (h, kind) in enumerate(zip(headers, kinds, strict=True))]
    starts = [i for i in range(1, len(rows)) if rows[i][0].text != rows[i - 1][0].text]
    return Table(name, "", caption, columns, rows, starts, data=frame, label=label or "")


def _text(value: object) -> Cell:
    """A cell showing ``value`` as it is (a name, an architecture)."""
    return Cell(str(value), value)


def _encoding(name: str) -> Cell:
    """A cell showing an encoding by its display label; its value is the registered name."""
    return Cell(encoding_label(name), name)


def _share_cell(part: int, whole: int) -> Cell:
    """``part/whole (pct%)``, or ``—`` when ``whole`` is 0; its value is the fraction."""
    return Cell("—" if not whole else f"{part}/{whole} ({100 * part / whole:.0f}%)", part / whole if whole else None)


def _percent(value: float) -> Cell:
    """A fraction as a whole percentage, ``—`` when undefined."""
    return Cell("—" if not np.isfinite(value) else f"{100 * value:.0f}%", value)


def _interval_cell(point: float, low: float, high: float, digits: int = 2) -> Cell:
    """``point [low, high]``; its value is the triple."""
    return Cell(interval_text(point, low, high, digits, typographic=False), (point, low, high))


def _p(value: float) -> str:
    """A p-value: three decimals, ``<0.001`` below."""
    return "—" if not np.isfinite(value) else "<0.001" if value < 0.001 else f"{value:.3f}"


def _caption(frame: pd.DataFrame, what: str) -> str:
    """A default caption naming the metric of ``frame``."""
    metric = frame.attrs.get("metric") or (frame["metric"].iloc[0] if "metric" in frame and len(frame) else "")
    label = metric_registry.get(metric).axis_label if metric else "the metric"
    return f"{what} by {label}."


def capability_table(table: pd.DataFrame, caption: str = "", name: str = "capability",
                     label: str | None = None) -> Table:
    """A :func:`capability` board as a table: fitted runs on the order-dependent tasks, the controls and all."""
    headers = ["Arch", "Encoding", "Order-dependent fitted", "Controls fitted", "All fitted", "Tasks (all seeds)"]
    rows = [[_text(r.arch), _encoding(r.encoding), _share_cell(r.dependent_fitted, r.dependent_runs),
             _share_cell(r.control_fitted, r.control_runs), _share_cell(r.fitted, r.runs),
             Cell(f"{r.tasks_all_fitted}/{r.n_tasks}", (r.tasks_all_fitted, r.n_tasks))] for r in table.itertuples()]
    return _board(name, table, headers, rows, caption, label)


def extrapolation_table(board: pd.DataFrame, caption: str = "", name: str = "extrapolation",
                        label: str | None = None) -> Table:
    """An :func:`extrapolation_board` as a table: placement (tier, between tiers, no extrapolation, not ranked),
    the probability of its tier, score and advantage with their intervals, win rate, fit rate and the tasks it is
    judged on (``few`` where flagged)."""
    headers = ["Arch", "Tier", "Encoding", "P(tier)", "Score [95% CI]", "Advantage [95% CI]", "Win rate",
               "Order-dependent fitted", "Tasks"]
    rows = []
    for r in board.itertuples():
        tier = Cell(str(r.tier) if r.placement.startswith("tier ") else r.placement, r.tier)
        if r.ranked:
            rows.append([_text(r.arch), tier, _encoding(r.encoding),
                         Cell("—") if not np.isfinite(r.tier_probability) else
                         Cell(f"{r.tier_probability:.3f}", r.tier_probability),
                         _interval_cell(r.score, r.low, r.high),
                         _interval_cell(r.advantage, r.advantage_low, r.advantage_high, 3),
                         _percent(r.win_rate), _percent(r.dependent_fit_rate),
                         Cell(f"{r.n_tasks}/{r.battery}" + (" (few)" if r.few_tasks else ""), r.n_tasks)])
        else:
            rows.append([_text(r.arch), tier, _encoding(r.encoding), Cell("—"), Cell("—"), Cell("—"), Cell("—"),
                         _percent(r.dependent_fit_rate), Cell(f"0/{r.battery}", 0)])
    return _board(name, board, headers, rows, caption, label)


def harm_table(table: pd.DataFrame, caption: str = "", name: str = "harm", label: str | None = None) -> Table:
    """A :func:`harm` table as a table: control fit rate, OOD token accuracy and the difference from the
    baseline, with intervals, and whether it harms."""
    baseline = table.attrs.get("baseline")
    versus = f"vs {encoding_label(baseline)} [95% CI]" if baseline else "vs baseline [95% CI]"
    headers = ["Arch", "Encoding", "Controls fitted", "OOD token acc [95% CI]", versus, "Harms"]
    rows = [[_text(r.arch), _encoding(r.encoding), _percent(r.control_fit_rate),
             _interval_cell(r.ood_token_acc, r.low, r.high),
             Cell("—") if not np.isfinite(r.vs_baseline) else _interval_cell(r.vs_baseline, r.diff_low, r.diff_high, 3),
             Cell("yes" if r.harms else "no", bool(r.harms))] for r in table.itertuples()]
    return _board(name, table, headers, rows, caption, label)


def fit_table(table: pd.DataFrame, caption: str = "", name: str = "fit", label: str | None = None) -> Table:
    """A :func:`fit_fractions` table, wide: one row per architecture and encoding, ``k/n`` seeds fitted per
    task and the share over every task."""
    tasks = list(dict.fromkeys(table["task"]))
    rows = []
    for (arch, encoding), part in table.groupby(["arch", "encoding"], sort=False):
        cells = {row.task: Cell(f"{row.fitted}/{row.seeds}", (row.fitted, row.seeds)) for row in part.itertuples()}
        total = part["fitted"].sum() / part["seeds"].sum()
        rows.append([_text(arch), _encoding(encoding), *(cells.get(task, Cell("—")) for task in tasks),
                     Cell(f"{100 * total:.0f}%", total)])
    return _board(name, table, ["Arch", "Encoding", *map(task_label, tasks), "All"], rows, caption, label)


def shortfall_table(table: pd.DataFrame, caption: str = "", name: str = "capacity",
                    label: str | None = None) -> Table:
    """A :func:`capacity_shortfall` table: per arch and task, the runs not fitted, their best fit check (median
    and range), how many were still improving at the cap or fell back, and how many met the threshold on the
    evaluation set ("—" where the rows do not say)."""
    rows = [[_text(row.arch), _text(task_label(row.task)), _share_cell(row.unfitted, row.runs),
             # 4 decimals: at 3, a best check of 0.98968 would show as 0.990, the threshold it missed
             _interval_cell(row.best_median, row.best_low, row.best_high, digits=4)
             if row.best_median == row.best_median else Cell("—"),
             Cell(str(row.rising), row.rising), Cell(str(row.fell_back), row.fell_back),
             Cell(str(int(row.eval_met)), row.eval_met) if row.eval_met == row.eval_met else Cell("—")]
            for row in table.itertuples()]
    headers = ["Arch", "Task", "Not fitted", "Best fit check (median [range])", "Still improving at the cap",
               f"Fell back by ≥ {FELL_BACK}", "Met on the evaluation set"]
    return _board(name, table, headers, rows, caption, label)


def budget_table(table: pd.DataFrame, caption: str = "", name: str = "budget", label: str | None = None) -> Table:
    """A :func:`pebench.analysis.budget.still_improving_runs` table summed per arch and task (the tasks where the
    budget ended a run that was still improving): runs, runs the budget ended unfitted, those still improving (and
    their share of the runs), and the encodings they belong to."""
    rows = []
    for (arch, task), part in table.groupby(["arch", "task"], sort=True):
        improving, runs, ended = (int(part[column].sum()) for column in ("still_improving", "runs", "budget_ended"))
        if not improving:
            continue
        names = ", ".join(encoding_label(e) for e in part.loc[part["still_improving"] > 0, "encoding"])
        rows.append([_text(arch), _text(task_label(task)), Cell(str(runs), runs), Cell(str(ended), ended),
                     _share_cell(improving, runs), Cell(names, names)])
    headers = ["Arch", "Task", "Runs", "Ended unfitted by the budget", "Still improving", "Encodings"]
    return _board(name, table, headers, rows, caption, label)


def budget_sentence(share: pd.Series, goal: float) -> str:
    """One arch's line of :func:`pebench.analysis.budget.still_improving_share`: how many of its runs the budget
    ended unfitted while still improving, against protocol v4's goal ``goal``."""
    runs, improving = int(share["runs"]), int(share["still_improving"])
    text = (f"{improving} of {runs} fit-checked runs ({share['share']:.1%}) ended unfitted at their step budget "
            f"while still improving in distribution ({int(share['budget_ended'])} ended unfitted at it in all); "
            f"protocol v4's goal is under {goal:.0%}: " + ("met." if share["share"] < goal else "**not met**: there "
                                                          "the board partly measures the budget."))
    if share["unread"]:
        text += f" {int(share['unread'])} of those runs' fit curves could not be read."
    return text


def leaderboard_table(board: pd.DataFrame, caption: str | None = None, name: str = "leaderboard",
                      label: str | None = None) -> Table:
    """A :func:`leaderboard` as a table: ``MRR [low, high]``, mean rank likewise, tasks fitted ``k/n``, runs
    fitted (default caption: the metric it ranks by)."""
    headers = ["Arch", "Encoding", "MRR [95% CI]", "Mean rank [95% CI]", "Tasks fitted", "Runs fitted"]
    rows = [[_text(r.arch), _encoding(r.encoding), _interval_cell(r.mrr, r.mrr_low, r.mrr_high),
             _interval_cell(r.mean_rank, r.rank_low, r.rank_high),
             Cell(f"{r.tasks_fitted}/{r.n_tasks}", (r.tasks_fitted, r.n_tasks)), _percent(r.runs_fitted)]
            for r in board.itertuples()]
    return _board(name, board, headers, rows, _caption(board, "Mean reciprocal rank over tasks")
                  if caption is None else caption, label)


def pairwise_table(table: pd.DataFrame, caption: str | None = None, name: str = "pairwise",
                   label: str | None = None) -> Table:
    """A :func:`pairwise` table as a table: the pair, its tasks and task-seed pairs, the mean difference with its
    interval, p, Holm p, the smallest p its units (tasks, or pairs at protocol v2's unit) allow, the minimum
    detectable effect (``—`` where not computed, ``none`` where no shift is detectable) and the verdict (default
    caption: the metric compared)."""
    headers = ["Arch", "A", "B", "Tasks", "Pairs", "Mean A − B [95% CI]", "p", "p (Holm)", "Smallest p", "MDE",
               "Verdict"]
    rows = [[_text(r.arch), _encoding(r.a), _encoding(r.b), Cell(str(r.n_tasks), r.n_tasks),
             Cell(str(r.n_pairs), r.n_pairs), _interval_cell(r.mean_diff, r.ci_low, r.ci_high),
             Cell(_p(r.p_value), r.p_value), Cell(_p(r.p_holm), r.p_holm), Cell(_p(r.smallest_p), r.smallest_p),
             _effect_cell(r.mde), Cell(verdict_text(r) + (f" ({r.note})" if r.note else ""), r.verdict)]
            for r in table.itertuples()]
    return _board(name, table, headers, rows, _caption(table, "Paired comparisons") if caption is None else caption,
                  label)


def _effect_cell(value: float) -> Cell:
    """A minimum detectable effect: three decimals, ``none`` where infinite (no shift is detectable), ``—`` where
    undefined."""
    if value == np.inf:
        return Cell("none", value)
    return Cell("—" if not np.isfinite(value) else f"{value:.3f}", value)


def pairwise_by_task_table(table: pd.DataFrame, caption: str, name: str = "pairwise_tasks",
                           label: str | None = None) -> Table:
    """A :func:`pairwise_by_task` table as a table: the pair, the task, seeds paired, mean difference, the seeds
    favouring each side, the unadjusted p and the smallest p those seeds could give."""
    headers = ["Arch", "A", "B", "Task", "Seeds", "Mean A − B", "A / B / tie", "p (unadjusted)", "Smallest p"]
    rows = [[_text(r.arch), _encoding(r.a), _encoding(r.b), Cell(task_label(r.task), r.task),
             Cell(str(r.n_pairs), r.n_pairs), Cell(f"{r.mean_diff:+.3f}", r.mean_diff),
             Cell(f"{r.a_better} / {r.b_better} / {r.ties}", (r.a_better, r.b_better, r.ties)),
             Cell(_p(r.p_value), r.p_value), Cell(_p(r.smallest_p), r.smallest_p)] for r in table.itertuples()]
    return _board(name, table, headers, rows, caption, label, keys=3)  # a pair's tasks under its name


def tier_rule(n_boot: int, seed: int) -> str:
    """How the extrapolation board forms its tiers (:func:`pebench.analysis.leaderboard.tiers`) from ``n_boot``
    bootstrap replicates drawn with ``seed``, and what its placements mean, in the words of a caption."""
    return (f"Tier: in order of advantage, an encoding joins the current tier unless one of its members is "
            f"significantly better than it (their pairwise difference above 0 in at least 97.5% of {n_boot:,} "
            f"bootstrap replicates over tasks and seeds, seed {seed}, on at least "
            f"{leaderboard.min_separable_pairs()} shared tasks, the fewest on which a paired test can reach p < "
            f"{leaderboard.ALPHA:g}; not corrected for the number of pairs), and otherwise opens the next tier "
            "(1 = top). P(tier): the share of the replicates in which its place in the order lies within its tier's. "
            f"Between tiers: P(tier) under {leaderboard.TIER_CONFIDENCE:g}. No extrapolation: its score, or the upper "
            "end of its 95% interval, at or below the position-free floor (0): no tier, whatever its order")


def battery_text(board: pd.DataFrame) -> str:
    """The order-dependent tasks of each architecture of an :func:`extrapolation_board` (``decoder 7
    order-dependent tasks, encoder 5``) and the encodings judged on few of them, with their counts."""
    archs = board.drop_duplicates("arch")
    text = ", ".join(f"{r.arch} {r.battery}" + (" order-dependent tasks" if i == 0 else "")
                     for i, r in enumerate(archs.itertuples()))
    few = board[board["ranked"] & board["few_tasks"]]
    if not few.empty:
        text += (f"; judged on fewer than {100 * leaderboard.BOARD_MIN_FIT:.0f}% of them (flagged, still ranked): "
                 + ", ".join(f"{encoding_label(r.encoding)}, {r.arch} ({r.n_tasks} of {r.battery})"
                             for r in few.itertuples()))
    return text


def tier_sentence(board: pd.DataFrame, arch: str) -> str:
    """What an :func:`extrapolation_board` says about ``arch``, claiming only what its tiers separate: the encoding
    first where it holds the top tier alone (in at least :data:`~pebench.analysis.leaderboard.TIER_CONFIDENCE` of
    the bootstrap replicates), else the tiers with their members and the probability of each one's tier; the
    encodings between tiers; those at or below the position-free floor as "no extrapolation", never in a tier; those
    judged on few tasks, with their count; the unranked; and the bootstrap (replicates, seed) it rests on."""
    here = board[board["arch"] == arch]
    ranked = here[here["ranked"]]
    if ranked.empty:
        return "no encoding fitted an order-dependent task alongside another, so nothing is ranked."
    battery = int(here["battery"].iloc[0])
    n_boot, seed = int(here["n_boot"].iloc[0]), int(here["boot_seed"].iloc[0])
    parts = _tier_parts(ranked) + _flagged_parts(here, ranked, battery)
    return "; ".join(parts) + (f" (ranked from pairwise task-level comparisons on jointly fitted runs of {battery} "
                               f"order-dependent tasks; tiers from {n_boot:,} bootstrap replicates, seed {seed}).")


def split_half_sentence(halves: pd.DataFrame, arch: str) -> str:
    """What :func:`~pebench.analysis.leaderboard.split_half` (both splits, seeds and tasks) says about ``arch``: per
    split, Kendall's tau between the board's orders on the two halves, with its range over the splits."""
    parts = []
    for row in halves[halves["arch"] == arch].itertuples():
        units = "seeds" if row.by == "seed" else "order-dependent tasks"
        size = row.n_units // 2
        over = (f"over the {row.n_splits} splits of its {row.n_units} {units} into two halves of {size}"
                if row.n_splits > 1 else f"between its {row.n_units} {units}" if size == 1
                else f"between two halves of {size} of its {row.n_units} {units}")
        spread = f" (from {row.tau_min:.2f} to {row.tau_max:.2f})" if row.tau_min != row.tau_max else ""
        parts.append(f"{'mean ' if row.n_splits > 1 else ''}{row.tau_mean:.2f}{spread} {over}")
    return (f"{SPLIT_HALF_LEAD}, Kendall's tau between the halves' orders of the "
            f"encodings ranked on both: {'; '.join(parts)} (1: the same order, 0: unrelated).")


def _described(rows: pd.DataFrame, probability: bool = True, tier: bool = False) -> str:
    """The encodings of ``rows`` with their score intervals (and the probability of their tier, naming the tier of
    its point estimate where ``tier``: an encoding between tiers)."""
    return ", ".join(f"{encoding_label(r.encoding)} {interval_text(r.score, r.low, r.high, typographic=False)}"
                     + (f" (P(tier{f' {r.tier}' if tier else ''}) {r.tier_probability:.3f})" if probability else "")
                     for r in rows.itertuples())


def _leading_part(ranked: pd.DataFrame, tiered: pd.DataFrame) -> tuple[list[str], list[int]]:
    """The clause :func:`tier_sentence` opens with (none where the tiers are listed one by one) and the tiers it
    lists after it."""
    if tiered.empty:
        return ["no encoding extrapolates: every ranked one scores at or below the position-free floor ("
                + _described(ranked, probability=False) + ")"], []
    if len(tiered) == 1:
        return [f"only {_described(tiered, probability=False)} extrapolates beyond the position-free floor"], []
    top = tiered[tiered["tier"] == 1]
    if len(top) == 1 and top["placement"].iloc[0] == "tier 1":
        return [f"{_described(top)} is first, alone in the top tier"], sorted(set(tiered["tier"]) - {1})
    if len(top) < len(tiered):
        return [], sorted(set(tiered["tier"]))
    # every pair shares at most the second-largest task count of its members
    shared = sorted(tiered["n_tasks"], reverse=True)[1]
    few = "" if leaderboard.separable(shared) else (
        f" (no two of them share the {leaderboard.min_separable_pairs()} order-dependent tasks a paired test "
        f"needs to reach p < {leaderboard.ALPHA:g})")
    return [f"{len(top)} encodings share the top tier, no paired test separating them{few}: " + _described(top)], []


def _tier_parts(ranked: pd.DataFrame) -> list[str]:
    """The clauses of :func:`tier_sentence` on the ranked encodings' tiers: the lead, the tiers listed, those between
    tiers and those with no extrapolation."""
    tiered = ranked[ranked["tier"] > 0]
    confident = tiered[tiered["placement"].str.startswith("tier ")]
    parts, listed = _leading_part(ranked, tiered)
    for tier in listed:
        members = confident[confident["tier"] == tier]
        parts.append(f"tier {tier}: " + (_described(members) if len(members) else
                                         f"none holds it in {leaderboard.TIER_CONFIDENCE:.0%} of the replicates (its "
                                         "encodings are between tiers)"))
    between = ranked[ranked["placement"] == "between tiers"]
    if not between.empty:
        parts.append(f"between tiers (their tier holds in under {leaderboard.TIER_CONFIDENCE:.0%} of the replicates): "
                     + _described(between, tier=True))
    below = ranked[~ranked["extrapolates"]]
    if len(tiered) and not below.empty:
        parts.append("no extrapolation (score at or below the position-free floor): "
                     + _described(below, probability=False))
    return parts


def _flagged_parts(here: pd.DataFrame, ranked: pd.DataFrame, battery: int) -> list[str]:
    """The clauses of :func:`tier_sentence` on the encodings judged on few tasks and on those not ranked."""
    parts = []
    few = ranked[ranked["few_tasks"]]
    if not few.empty:
        parts.append("judged only on the tasks they fitted alongside another encoding: " + ", ".join(
            f"{encoding_label(r.encoding)} ({r.n_tasks} of {battery} tasks)" for r in few.itertuples()))
    unranked = here[~here["ranked"]]
    if not unranked.empty:
        parts.append("not ranked (no order-dependent task fitted alongside another encoding): "
                     + ", ".join(encoding_label(e) for e in unranked["encoding"]))
    return parts
