"""The leaderboards of an experiment with a primary metric: the MRR leaderboard, the fit table and the declared
pairwise comparisons, and the boards of protocol v3 (extrapolation tiers, capability, harm), written as
artifacts with one finding each."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from pebench import metrics as metric_registry
from pebench import store
from pebench.analysis import budget, leaderboard
from pebench.protocol import MRR_LAST_PROTOCOL
from pebench.render import board_tables
from pebench.render.tables import Table
from pebench.report.artifacts import Artifact, save_table
from pebench.report.layout_findings import named, titled
from pebench.report_spec import ReportSpec
from pebench.store import schema
from pebench.store.report_file import task_ranks_name
from pebench.store.schema import encoding_label


def ranking_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str = "",
                      protocol: int = 2, rows: pd.DataFrame | None = None) -> tuple[list[Artifact], list[str]]:
    """The leaderboard (MRR and mean rank over tasks, bootstrap over seeds) and the declared pairwise
    comparisons of ``experiment`` on its primary metric (:mod:`pebench.analysis.leaderboard`), written as CSV,
    markdown and LaTeX naming the results ``version``; returns the artifacts and one finding per architecture.
    On a grid with gaps (:func:`~pebench.analysis.leaderboard.grid_gaps`: an encoding without runs of a task and
    seed the others have) it writes nothing and says why in one finding: no board on partial data (issue 65).
    From protocol v4 (after :data:`MRR_LAST_PROTOCOL`) the MRR leaderboard is not written.
    Under ``protocol`` 3 the comparisons are scored as the extrapolation board is
    (:func:`pebench.analysis.leaderboard.pairwise` with ``jointly_fitted``), under 2 on the primary metric with an
    unfitted run scoring the worst; under 3, the run ``rows`` (their fit curves) say what the capable encodings'
    unfitted runs reached (:func:`pebench.analysis.leaderboard.capacity_shortfall`)."""
    gaps = leaderboard.grid_gaps(runs)
    if not gaps.empty:
        return [], [f"{named(experiment, spec)}: {leaderboard.gaps_text(gaps)}"]
    return _ranking_artifacts(runs, experiment, spec, directory, version, protocol, rows)


def _ranking_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str,
                       protocol: int, rows: pd.DataFrame | None) -> tuple[list[Artifact], list[str]]:
    """:func:`ranking_artifacts` of a full grid."""
    metric = spec.primary_metric
    label = metric_registry.get(metric).axis_label
    artifacts = _mrr_artifacts(runs, experiment, spec, directory, version, protocol)
    if artifacts is None:
        return [], []
    fits = leaderboard.fit_fractions(runs)
    if not fits.empty:
        where = ("at every training length, on held-out inputs never in the training stream," if protocol >= 3
                 else "at the longest training length")
        fit_caption = (f"Seeds that met the fit criterion (held-out token accuracy {where} reaching the protocol's "
                       "threshold within the step cap), per task; All = the fraction "
                       f"over every task. Look for capable encodings that did not fit: their {label} is not "
                       "judged.")
        artifacts.append(_save_titled(board_tables.fit_table(fits, fit_caption, f"fit_{experiment}"), experiment,
                                      spec, "seeds fitted per task", directory, version))
    v3, findings = board_artifacts(runs, experiment, spec, directory, version)
    findings += _stability(runs, experiment, spec, protocol)
    if protocol >= 3:  # whether the scale reaches protocol v3's goal (rule 6), and what its unfitted runs reached
        shortfall = leaderboard.capacity_shortfall(runs, rows if rows is not None else pd.DataFrame())
        findings += [f"{named(experiment, spec, arch)}: {sentence}"
                     for arch, sentence in leaderboard.capacity_goal(runs, shortfall).items()]
        artifacts += _budget_artifacts(runs, rows, experiment, spec, directory, version, findings)
        if not shortfall.empty:
            short_caption = (
                "The runs of the capable encodings (those that can represent every task) that did not fit, per "
                "task, and what their fit checks reached in distribution: the held-out token accuracy each check "
                "recorded (at the first training length, longest first, below the threshold), its best over the "
                "run as median [lowest, highest] over the unfitted runs; how many were still improving in the last "
                f"quarter of their steps (by {leaderboard.STILL_RISING} or more over every earlier check) and how "
                f"many ended {leaderboard.FELL_BACK} or more below their best check; and how many reached the "
                "threshold at every training length on the evaluation set (all of a length's inputs, most of them "
                "trained on), so that what their checks missed were held-out inputs. No out-of-distribution number "
                "is read. Look at tasks where none was still improving at the cap: there the step cap is not what "
                "they evidently lacked.")
            artifacts.append(_save_titled(
                board_tables.shortfall_table(shortfall, short_caption, f"capacity_{experiment}"), experiment, spec,
                "capable encodings' runs not fitted", directory, version))
    artifacts = v3 + artifacts
    if spec.comparisons:
        if protocol >= 3:  # scored as protocol v3 scores: the board's score on jointly fitted pairs, task by task
            table = leaderboard.pairwise(runs, spec.comparisons, leaderboard.PRIMARY_SCORE, jointly_fitted=True)
            caption = task_level_caption(table)
        else:
            table = leaderboard.pairwise(runs, spec.comparisons, metric)
            caption = (f"The pairwise comparisons declared before the results were made, on {label}: runs paired by "
                       "task and seed (an unfitted run scores 0), mean difference a − b with a 95% bootstrap interval, "
                       "two-sided sign-flip permutation test over the pairs, p-values Holm-corrected over the whole "
                       "family (every comparison and architecture). Look at the verdict column.")
        artifacts.append(_save_titled(board_tables.pairwise_table(table, caption, f"pairwise_{experiment}"),
                                      experiment, spec, "declared pairwise comparisons", directory, version))
        if protocol >= 3:
            artifacts += by_task_artifacts(runs, experiment, spec, directory, version)
        family = int(table["p_value"].notna().sum())  # the Holm family: every tested comparison and arch
        for _, row in table.iterrows():  # a comparison without a single pair stays in the table only
            if isinstance(row.get("verdict"), str) and row["verdict"] and row["n_pairs"] > 0:
                findings.append(f"{named(experiment, spec, row['arch'])}: {encoding_label(row['a'])} vs "
                                f"{encoding_label(row['b'])}: {leaderboard.verdict_text(row)} "
                                f"(mean difference {row['mean_diff']:+.3f} [{row['ci_low']:+.3f}, "
                                f"{row['ci_high']:+.3f}], a 95% interval not adjusted for the {family} comparisons, "
                                f"while the Holm p = {row['p_holm']:.3g} is; {_units(row)}).")
    return artifacts, findings


def _save_titled(table: Table, experiment: str, spec: ReportSpec, what: str, directory: Path, version: str
                 ) -> Artifact:
    """Write ``table`` (:func:`~pebench.report.artifacts.save_table`), titled as ``experiment``'s table showing
    ``what`` (:func:`~pebench.report.layout_findings.titled`)."""
    return save_table(dataclasses.replace(table, title=titled(experiment, spec, what)), directory, version)


def _budget_artifacts(runs: pd.DataFrame, rows: pd.DataFrame | None, experiment: str, spec: ReportSpec,
                      directory: Path, version: str, findings: list[str]) -> list[Artifact]:
    """Whether the step budget bound (:mod:`pebench.analysis.budget`): a finding per arch (appended to
    ``findings``) and the table of the tasks where it ended runs still improving; nothing without fit curves."""
    table = budget.still_improving_runs(runs, rows if rows is not None else pd.DataFrame())
    if table.empty:
        return []
    for _, share in budget.still_improving_share(table).iterrows():
        findings.append(f"{named(experiment, spec, share['arch'])}: "
                        + board_tables.budget_sentence(share, budget.GOAL))
    caption = ("The tasks on which the step budget (the cap, or the ceiling of an extension) ended runs that had not "
               "fitted while their held-out accuracy on the training lengths was still rising: by at least the "
               "extension rule's gain over its window (the run's own rule, else 0.01 over the last 1000 steps). "
               "Runs = the fit-checked runs of the task; Still improving = those, and their share. Look at tasks "
               "with a large share: there more steps, not the encoding, decide the score.")
    return [_save_titled(board_tables.budget_table(table, caption, f"budget_{experiment}"), experiment, spec,
                         "runs the step budget ended still improving", directory, version)]


def _units(row: pd.Series) -> str:
    """What a declared comparison rests on: its tasks (with the smallest p they allow and its minimum detectable
    effect) where the task is the unit, its task-seed pairs where the pair is (protocol v2)."""
    if row["unit"] != "task":
        return f"{int(row['n_pairs'])} pairs"
    mde = row["mde"]
    effect = ("" if not mde == mde else ", no shift detectable on so few tasks" if mde == float("inf")
              else f", minimum detectable effect {mde:.3f}")
    return (f"{int(row['n_tasks'])} tasks ({int(row['n_pairs'])} task-seed pairs), smallest attainable p "
            f"{row['smallest_p']:.2g}{effect}")


def task_level_caption(table: pd.DataFrame) -> str:
    """The caption of the declared comparisons at task level (:func:`pebench.analysis.leaderboard.pairwise` with
    ``unit="task"``): the test, the tasks it rests on, the smallest p they allow, the family and the MDE."""
    label = metric_registry.get(leaderboard.PRIMARY_SCORE).axis_label
    tested = table[table["p_value"].notna()]
    family = len(tested)
    if tested.empty:
        tasks = "no comparison has a task both encodings fitted"
    else:
        low, high = int(tested["n_tasks"].min()), int(tested["n_tasks"].max())
        tasks = f"{high} tasks each" if low == high else f"from {low} to {high} tasks"
        tasks += f"; the smallest p {high} tasks allow: {leaderboard.smallest_p(high):.2g}"
        if high > leaderboard.EXACT_MAX_PAIRS:
            tasks += (f"; beyond {leaderboard.EXACT_MAX_PAIRS} tasks, {leaderboard.N_PERMUTATIONS:,} seeded random "
                      "sign patterns")
    alpha = leaderboard.ALPHA
    return (f"The pairwise comparisons declared before the results were made, on {label}: per architecture, the "
            "order-dependent runs in which both encodings fitted, paired by task and seed, their differences a − b "
            "averaged over the seeds within each task; the task is the unit of inference (the seeds of one task "
            "share it, and are not independent evidence). Mean difference over the tasks with a 95% two-level "
            f"bootstrap interval (tasks, then seeds); exact two-sided sign-flip test over the task means ({tasks}); "
            f"p-values Holm-corrected over the family of {family} (every comparison and architecture). Smallest p: "
            f"the smallest p its tasks allow, 2 / 2^tasks; a comparison that cannot reach p < {alpha:g} after Holm "
            f"is \"cannot resolve\". MDE: the minimum detectable effect, the shift of the mean task difference that "
            f"the test detects with {100 * leaderboard.MDE_POWER:.0f}% power at {alpha:g} / {family}, given the "
            "observed spread of the task differences (none = no shift detectable on so few tasks). Look at the "
            "verdict column, and at the MDE beside a difference not found.")


def by_task_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str = ""
                      ) -> list[Artifact]:
    """The declared comparisons of ``experiment`` split by order-dependent task (protocol v3,
    :func:`pebench.analysis.leaderboard.pairwise_by_task`), as CSV, markdown and LaTeX naming the results ``version``;
    no finding: its p-values are unadjusted, so it shows which tasks carry a verdict and makes none."""
    table = leaderboard.pairwise_by_task(runs, spec.comparisons, leaderboard.PRIMARY_SCORE)
    if table.empty:
        return []
    tests, label = len(table), metric_registry.get(leaderboard.PRIMARY_SCORE).axis_label
    caption = (f"The declared comparisons task by task: on each order-dependent task, the seeds in which both "
               f"encodings fitted, the mean difference a − b of {label}, how many seeds favour a, b or neither, and "
               "the exact two-sided sign-flip p over those seeds with the smallest p they could give. The "
               f"{tests} p-values are not adjusted for the {tests} tests of this table: they show which tasks carry "
               "the declared verdict, which is the task-level test's above (on the task means, Holm-corrected), and "
               "are no verdict themselves. Look at the seed counts: a task where the seeds split is no evidence either "
               "way.")
    return [_save_titled(board_tables.pairwise_by_task_table(table, caption, f"pairwise_tasks_{experiment}"),
                         experiment, spec, "declared comparisons per task", directory, version)]


def _stability(runs: pd.DataFrame, experiment: str, spec: ReportSpec, protocol: int) -> list[str]:
    """From protocol v4 (issue 66), one finding per architecture: does the extrapolation board's order hold on
    halves of its seeds and of its tasks (:func:`pebench.analysis.leaderboard.split_half`)? None before v4."""
    if protocol <= MRR_LAST_PROTOCOL:
        return []
    halves = [leaderboard.split_half(runs, by) for by in ("seed", "task")]
    halves = pd.concat([frame for frame in halves if not frame.empty] or [halves[0]], ignore_index=True)
    return [f"{named(experiment, spec, arch)}: {board_tables.split_half_sentence(halves, arch)}"
            for arch in halves["arch"].unique()]


def _mrr_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str,
                   protocol: int) -> list[Artifact] | None:
    """The MRR leaderboard of ``runs`` under ``protocol`` (none after :data:`MRR_LAST_PROTOCOL`), with its per-task
    ranks beside it, or ``None`` when no run completed: nothing to rank or report."""
    if protocol > MRR_LAST_PROTOCOL:
        return [] if schema.completed(runs).any() else None
    board = leaderboard.leaderboard(runs, spec.primary_metric)
    if board.empty:
        return None
    label = metric_registry.get(spec.primary_metric).axis_label
    caption = (f"Encodings ranked per architecture by {label} on every task of {named(experiment, spec)} (rank 1 = "
               "best mean over seeds; a run that did not fit its training distribution scores 0): mean reciprocal "
               "rank (MRR, Kazemnejad et al. 2023) and mean rank over tasks, each with a 95% percentile "
               "bootstrap interval (seeds resampled within every task and encoding); tasks fitted = tasks on "
               "which every seed met the fit criterion. Look at the MRR intervals: overlapping ones are not "
               "a ranking.")
    leaderboard.task_ranks(runs, spec.primary_metric).to_csv(store.path_in(directory, task_ranks_name(experiment)),
                                                             index=False)
    return [_save_titled(board_tables.leaderboard_table(board, caption, f"leaderboard_{experiment}"), experiment,
                         spec, f"leaderboard ({label})", directory, version)]


def board_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str = ""
                    ) -> tuple[list[Artifact], list[str]]:
    """The boards of protocol v3 for ``experiment`` (:mod:`pebench.analysis.leaderboard`): extrapolation tiers on
    jointly fitted runs, capability (fit rates) and harm on the controls, each as CSV, markdown and LaTeX naming the
    results ``version`` and titled as ``spec`` declares (:func:`~pebench.report.layout_findings.titled`); returns
    the artifacts and one finding per architecture that names a winner only where the tiers separate one."""
    label = metric_registry.get(leaderboard.PRIMARY_SCORE).axis_label
    artifacts, findings = [], []

    def board(kind: str, frame: pd.DataFrame, make: Callable[..., Table], caption: str, what: str) -> None:
        artifacts.append(_save_titled(make(frame, caption, f"{kind}_{experiment}"), experiment, spec, what, directory,
                                      version))

    tiers = leaderboard.extrapolation_board(runs)
    if not tiers.empty:
        n_boot, seed = int(tiers["n_boot"].iloc[0]), int(tiers["boot_seed"].iloc[0])
        board("extrapolation", tiers, board_tables.extrapolation_table,
              f"Extrapolation board: every encoding ranked from pairwise task-level comparisons of {label} ((OOD "
              "accuracy − position-free floor) / (1 − floor)): for two encodings and an order-dependent task, their "
              "mean difference over the seeds in which both fitted, so a task that one encoding cannot fit leaves "
              "only that encoding's pairs. Advantage: the mean of an encoding's pairwise differences over the "
              "encodings it shares a task with (the board's order); win rate: the share of its (opponent, task) "
              "comparisons it wins. Score: the mean over the tasks it fitted of the mean over its fitted seeds. 95% "
              "intervals of a two-level bootstrap (tasks, then the seeds within each). "
              f"{board_tables.tier_rule(n_boot, seed)}. Tasks: those it is judged on (fitted alongside another "
              f"encoding) of the battery ({board_tables.battery_text(tiers)}); few = fewer than "
              f"{100 * leaderboard.BOARD_MIN_FIT:.0f}% of them, flagged and still ranked. Look at the tiers and "
              "P(tier), not the order inside a tier.", "extrapolation tiers")
        for arch in tiers["arch"].unique():
            findings.append(f"{named(experiment, spec, arch)}: {board_tables.tier_sentence(tiers, arch)}")
    capability = leaderboard.capability(runs)
    if not capability.empty:
        board("capability", capability, board_tables.capability_table,
              "Capability board: runs that met the fit criterion within the step cap, on the order-dependent tasks "
              "and on the order-free controls. An encoding that does not fit a task is not judged on it; look for "
              "encodings that cannot fit what they should represent.", "capability (fit rates)")
    harm = leaderboard.harm(runs)
    if not harm.empty:
        board("harm", harm, board_tables.harm_table,
              "Harm on the order-free controls (tasks whose answer the bag of input symbols gives): OOD token "
              "accuracy of every run, fitted or not, and its difference from the position-free baseline on the same "
              "task-seed pairs, counting only the pairs whose baseline run fitted (a baseline that did not learn a "
              "control measures nothing; — where none did), with 95% two-level bootstrap intervals; harms = the "
              "interval of the difference lies "
              "below 0. Look for encodings that cost accuracy where no order is needed.", "harm on the controls")
    return artifacts, findings
