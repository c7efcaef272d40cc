"""Rank encodings across tasks, with bootstrap intervals, and test declared pairwise comparisons.

Pure functions on the per-run frame of :func:`pebench.analysis.results.run_metrics`
(one row per run; columns ``arch``, ``task``, ``encoding``, ``seed``, the
metrics, and ``fitted`` when known):

* :func:`run_scores` — the score a run is ranked by: its metric if it fitted
  the task, else the worst score (an encoding that did not fit a task fails
  it; its out-of-distribution numbers are never read as extrapolation);
* :func:`task_ranks` — per arch and task, every encoding's mean score over
  seeds and its rank (1 = best, ties share the average rank);
* :func:`leaderboard` — per arch and encoding, the mean reciprocal rank over
  tasks (MRR, the aggregate of Kazemnejad et al. 2023) and the mean rank,
  each with a 95% percentile bootstrap interval over seeds;
* :func:`pairwise` — comparisons declared in advance, paired by task and
  seed; at protocol v3's unit, the task (seeds averaged within it), an exact
  sign-flip test over tasks Holm-corrected over the family, with its minimum
  detectable effect (:func:`minimum_detectable_effect`);
* :func:`extrapolation_board` — protocol v3's board: every encoding ranked
  from pairwise task-level comparisons on the runs both encodings fitted,
  tiers from the pairwise tests of a seeded 10,000-replicate bootstrap, each
  with the probability of its tier, "no extrapolation" at or below the floor;
  :func:`capability` and :func:`harm` beside it;
* :func:`split_half` — how well the board's order holds on halves of its
  seeds or tasks (Kendall's tau between the halves' orders);
* :func:`capacity_goal`, :func:`capacity_shortfall` — whether the capable
  encodings fit the battery (protocol v3's goal for its scale), and what their
  unfitted runs reached in distribution, from their fit curves;
* each board as a :class:`pebench.render.tables.Table`: :mod:`pebench.render.board_tables`.

A "task" here is one group of :data:`pebench.store.schema.GROUP_COLUMNS` (an
experiment's task at one training length, per arch); only the trained models
(:data:`pebench.store.schema.BASE_VARIANT`) are ranked, and a task with fewer
than two encodings is left out (nothing to rank). Failed runs have no numbers:
they are counted (``runs_failed``), never scored. Metric directions come from
:mod:`pebench.metrics`; a metric without a direction cannot be ranked.
"""

from __future__ import annotations

import functools
import itertools
import json
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench import encodings
from pebench import metrics as metric_registry
from pebench.analysis.results import holm
from pebench.protocol import CAPABLE_ENCODINGS, CAPABLE_FIT_GOAL
from pebench.store.schema import (
    BASE_VARIANT,
    GROUP_COLUMNS,
    completed,
    encoding_label,
    encoding_rank,
    fitted,
    task_label,
)

#: significance level of the pairwise verdicts (after Holm correction)
ALPHA = 0.05
#: the pairwise test enumerates all 2^n sign flips up to this many pairs, else samples :data:`N_PERMUTATIONS`
EXACT_MAX_PAIRS = 16
N_PERMUTATIONS = 20_000
#: the power at which :func:`minimum_detectable_effect` is computed, and its simulations (seeded)
MDE_POWER = 0.8
MDE_SIMULATIONS = 1000
#: bootstrap replicates drawn at once (bounds memory)
_CHUNK = 250


def higher_is_better(metric: str) -> bool:
    """The direction of ``metric`` from :mod:`pebench.metrics` (raises for a metric without one)."""
    higher = metric_registry.get(metric).higher_is_better
    if higher is None:
        raise ValueError(f"metric {metric!r} has no direction (higher_is_better=None) and cannot be ranked")
    return higher


def run_scores(runs: pd.DataFrame, metric: str) -> pd.Series:
    """The score each run is ranked by: ``metric`` if the run fitted, else the worst possible score.

    The worst score is 0.0 for a higher-is-better metric (accuracies, ratios
    and lengths are >= 0) and +inf for a lower-is-better one: an encoding that
    did not fit a task fails it, whatever its out-of-distribution numbers say.
    A run without a ``fitted`` value (NaN: no fit criterion, e.g. the
    language model; or no such column) counts as fitted. Failed runs (and
    runs whose metric is undefined) score NaN and are left out of the means.
    """
    values = runs[metric].astype(float)
    worst = 0.0 if higher_is_better(metric) else np.inf
    scores = values.where(fitted(runs) | values.isna(), worst)
    return scores.where(completed(runs)).rename("score")


def trained_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the trained models (the base variant), without their evaluation variants."""
    return runs[runs["variant"].fillna(BASE_VARIANT) == BASE_VARIANT] if "variant" in runs else runs


def _scored(runs: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """Scored base-variant runs (``score``, ``fitted``) of tasks with >= 2 encodings, and the task columns."""
    runs = trained_runs(runs)
    task = [c for c in GROUP_COLUMNS if c in runs]
    frame = runs.assign(score=run_scores(runs, metric), fitted=fitted(runs))
    frame = frame[frame["score"].notna()]
    n_encodings = frame.groupby(task, sort=False, dropna=False)["encoding"].transform("nunique")
    frame = frame[n_encodings >= 2]
    return frame.sort_values([*task, "encoding", "seed"]).reset_index(drop=True), task


def task_ranks(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per task (arch included) and encoding: mean score over seeds, rank and seeds fitted.

    Returns:
        One row per task and encoding: the task columns, ``encoding``,
        ``score`` (mean of :func:`run_scores` over seeds), ``rank`` (1 = best,
        ties share the average rank), ``n_seeds`` and ``seeds_fitted``.
    """
    frame, task = _scored(runs, metric)
    cells = frame.groupby([*task, "encoding"], sort=False, dropna=False).agg(
        score=("score", "mean"), n_seeds=("score", "size"), seeds_fitted=("fitted", "sum")).reset_index()
    cells["rank"] = cells.groupby(task, sort=False, dropna=False)["score"].rank(
        ascending=not higher_is_better(metric), method="average")
    return cells[[*task, "encoding", "score", "rank", "n_seeds", "seeds_fitted"]]


def average_ranks(means: np.ndarray, higher: bool) -> np.ndarray:
    """Average ranks (1 = best) along the last axis; NaN entries are absent and get NaN."""
    better = means[..., None, :] > means[..., :, None] if higher else means[..., None, :] < means[..., :, None]
    ties = means[..., None, :] == means[..., :, None]  # includes self
    ranks = 1.0 + better.sum(-1) + 0.5 * (ties.sum(-1) - 1)
    return np.where(np.isnan(means), np.nan, ranks)


def leaderboard(runs: pd.DataFrame, metric: str, *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per arch and encoding: MRR and mean rank over tasks with 95% bootstrap intervals, and fit counts.

    The ranks are those of :func:`task_ranks`. Each bootstrap replicate
    resamples the seeds with replacement independently within every (arch,
    task, encoding) cell, recomputes the cell means, the ranks, the MRR and
    the mean rank; the intervals are the 2.5 and 97.5 percentiles of
    ``n_boot`` replicates (deterministic for ``seed``). The point estimates
    are those of the observed seeds.

    Returns:
        One row per arch and encoding, sorted by arch then MRR (best first):
        ``mrr``, ``mrr_low``, ``mrr_high``, ``mean_rank``, ``rank_low``,
        ``rank_high``, ``n_tasks``, ``tasks_fitted`` (tasks where every seed
        fitted), ``runs_fitted`` (fraction of runs fitted), ``runs_failed``.
    """
    higher = higher_is_better(metric)
    frame, task = _scored(runs, metric)
    cell_keys = [*task, "encoding"]
    cells = frame.groupby(cell_keys, sort=False, dropna=False)
    cell = cells.ngroup().to_numpy()  # (runs,) cell index; frame is sorted, so cells are too
    first = cells.head(1).index.to_numpy()  # (cells,) first run of every cell
    block = frame.groupby(task, sort=False, dropna=False).ngroup().to_numpy()
    block_of_cell = block[first]
    encodings = sorted(frame["encoding"].unique(), key=encoding_rank)
    enc_of_cell = pd.Index(encodings).get_indexer(frame["encoding"].to_numpy()[first])
    n = np.bincount(cell)  # (cells,) seeds per cell
    position = cells.cumcount().to_numpy()
    padded = np.zeros((len(n), max(n.max(initial=0), 1)))  # (cells, max seeds)
    padded[cell, position] = frame["score"].to_numpy(float)
    grid = np.full((block_of_cell.max(initial=-1) + 1, len(encodings)), np.nan)  # (tasks, encodings)

    def ranks_of(cell_means: np.ndarray) -> np.ndarray:  # (..., cells) -> (..., tasks, encodings)
        means = np.broadcast_to(grid, (*cell_means.shape[:-1], *grid.shape)).copy()
        means[..., block_of_cell, enc_of_cell] = cell_means
        return average_ranks(means, higher)

    observed = ranks_of(padded.sum(1) / n)
    rng = np.random.default_rng(seed)
    boot = []
    for size in np.diff(np.r_[0:n_boot:_CHUNK, n_boot]):
        draw = (rng.random((size, len(n), padded.shape[1])) * n[:, None]).astype(int)  # (B, cells, max seeds)
        take = np.take_along_axis(np.broadcast_to(padded, draw.shape), draw, axis=-1)
        valid = np.arange(padded.shape[1]) < n[:, None]
        boot.append(ranks_of(np.where(valid, take, 0.0).sum(-1) / n))
    boot = np.concatenate(boot) if boot else np.empty((0, *grid.shape))  # (B, tasks, encodings)

    def summary(ranks: np.ndarray, transform) -> np.ndarray:  # mean over tasks -> (..., encodings)
        with warnings.catch_warnings():  # an encoding absent from every task of an arch: NaN, skipped below
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(transform(ranks), axis=-2)

    arch_of_block = frame["arch"].to_numpy()[first][np.unique(block_of_cell, return_index=True)[1]]
    fit = frame.groupby(["arch", "encoding"]).agg(runs=("fitted", "size"), fitted=("fitted", "mean"))
    all_fitted = cells["fitted"].all().groupby(["arch", "encoding"]).sum()
    trained = trained_runs(runs)
    failed = trained[~completed(trained)]
    n_failed = failed.groupby(["arch", "encoding"]).size() if not failed.empty else pd.Series(dtype=int)
    records = []
    for arch in sorted(set(arch_of_block)):
        rows = arch_of_block == arch
        stats = {}
        for name, transform in (("mrr", np.reciprocal), ("mean_rank", lambda r: r)):
            point = summary(observed[rows], transform)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                low, high = np.nanpercentile(summary(boot[:, rows], transform), [2.5, 97.5], axis=0)
            stats[name] = (point, low, high)
        present = ~np.isnan(observed[rows])
        for j, encoding in enumerate(encodings):
            if not present[:, j].any():
                continue
            (mrr, mrr_low, mrr_high), (rank, rank_low, rank_high) = stats["mrr"], stats["mean_rank"]
            records.append(dict(
                arch=arch, encoding=encoding, mrr=mrr[j], mrr_low=mrr_low[j], mrr_high=mrr_high[j],
                mean_rank=rank[j], rank_low=rank_low[j], rank_high=rank_high[j],
                n_tasks=int(present[:, j].sum()), tasks_fitted=int(all_fitted.get((arch, encoding), 0)),
                runs_fitted=float(fit.loc[(arch, encoding), "fitted"]),
                runs_failed=int(n_failed.get((arch, encoding), 0))))
    board = pd.DataFrame.from_records(records, columns=_BOARD_COLUMNS)
    board = board.sort_values(["arch", "mrr", "encoding"], ascending=[True, False, True],
                              key=lambda c: c.map(encoding_rank) if c.name == "encoding" else c)
    board.attrs["metric"] = metric
    return board.reset_index(drop=True)


_BOARD_COLUMNS = ["arch", "encoding", "mrr", "mrr_low", "mrr_high", "mean_rank", "rank_low", "rank_high",
                  "n_tasks", "tasks_fitted", "runs_fitted", "runs_failed"]


# --------------------------------------------------------------------------- protocol v3 boards

#: the primary score of protocol v3: floor-normalised OOD token accuracy (:mod:`pebench.metrics`)
PRIMARY_SCORE = "ood_normalised_acc"
#: an encoding judged on fewer than this share of its architecture's order-dependent tasks (those it fitted
#: alongside another encoding) is flagged ``few_tasks`` on the extrapolation board: judged on those tasks only
BOARD_MIN_FIT = 0.5
#: replicates of the two-level bootstrap (tasks, then seeds within each task) of the harm table
N_BOOT = 2000
#: replicates and seed of the extrapolation board's bootstrap, recorded in its rows (``n_boot``, ``boot_seed``)
TIER_BOOT = 10_000
TIER_SEED = 0
#: an encoding that keeps its tier in fewer than this share of the bootstrap replicates is shown between tiers
TIER_CONFIDENCE = 0.9


def grid_gaps(runs: pd.DataFrame) -> pd.DataFrame:
    """The cells a board's grid lacks: per arch, every encoding present must have a run (completed or failed) of
    every task of that arch at every seed any encoding ran it with; one row per (arch, encoding, task) short of it,
    with ``missing`` (how many seeds) and ``seeds`` (the seeds the task has). A board is computed only on a full
    grid (issue 65: no ranking on partial data, where a few runs of one encoding would rank it on a task or two)."""
    columns = ["arch", "encoding", "task", "missing", "seeds"]
    runs = trained_runs(runs)
    if runs.empty:
        return pd.DataFrame(columns=columns)
    have = runs.groupby(["arch", "encoding", "task"])["seed"].agg(set)
    records = []
    for arch, part in runs.groupby("arch", sort=True):
        seeds = part.groupby("task")["seed"].agg(set)
        for encoding in sorted(part["encoding"].unique(), key=encoding_rank):
            for task, wanted in seeds.items():
                missing = wanted - have.get((arch, encoding, task), set())
                if missing:
                    records.append(dict(arch=arch, encoding=encoding, task=task, missing=len(missing),
                                        seeds=len(wanted)))
    return pd.DataFrame.from_records(records, columns=columns)


def gaps_text(gaps: pd.DataFrame, named: int = 3) -> str:
    """Why no board is written, in a sentence: how many runs the grid lacks, and the first cells that lack them."""
    cells = "; ".join(f"{row.encoding} on {row.task} ({row.arch}): {row.missing} of {row.seeds} seeds"
                      for row in gaps.head(named).itertuples())
    more = f"; and {len(gaps) - named} more cells" if len(gaps) > named else ""
    return (f"no board: {int(gaps['missing'].sum())} runs of its grid are not in the folder ({cells}{more}); a board "
            "ranks only a full grid, every encoding on every task and seed")


def capability(runs: pd.DataFrame) -> pd.DataFrame:
    """The capability board: per arch and encoding, how many runs met the fit criterion, on the
    order-dependent tasks and on the order-free controls (runs with a fit criterion, trained models only).

    Returns one row per (arch, encoding), encodings in their canonical order: ``runs``, ``fitted``,
    ``fit_rate``, and the same for ``dependent_*`` (order-dependent tasks) and ``control_*`` (controls);
    ``tasks_all_fitted``: tasks on which every seed fitted, of ``n_tasks``.
    """
    columns = ["arch", "encoding", "runs", "fitted", "fit_rate", "dependent_runs", "dependent_fitted",
               "dependent_fit_rate", "control_runs", "control_fitted", "control_fit_rate", "tasks_all_fitted",
               "n_tasks"]
    runs = _fit_checked(runs)
    if runs.empty:
        return pd.DataFrame(columns=columns)
    runs = runs.assign(dependent=lambda r: r["order_dependent"] == True)  # noqa: E712
    records = []
    for (arch, encoding), part in runs.groupby(["arch", "encoding"], sort=False):
        dependent, control = part[part["dependent"]], part[~part["dependent"]]
        per_task = part.groupby("task")["fit"].all()
        records.append(dict(
            arch=arch, encoding=encoding, runs=len(part), fitted=int(part["fit"].sum()),
            fit_rate=float(part["fit"].mean()), dependent_runs=len(dependent),
            dependent_fitted=int(dependent["fit"].sum()),
            dependent_fit_rate=float(dependent["fit"].mean()) if len(dependent) else np.nan,
            control_runs=len(control), control_fitted=int(control["fit"].sum()),
            control_fit_rate=float(control["fit"].mean()) if len(control) else np.nan,
            tasks_all_fitted=int(per_task.sum()), n_tasks=len(per_task)))
    table = pd.DataFrame.from_records(records, columns=columns)
    return (table.assign(_e=table["encoding"].map(encoding_rank)).sort_values(["arch", "_e"], kind="stable")
            .drop(columns="_e").reset_index(drop=True))


def _fit_checked(runs: pd.DataFrame) -> pd.DataFrame:
    """The trained runs whose fit criterion was checked, with their verdict as a boolean column ``fit`` (no rows
    where no run has a fit criterion)."""
    runs = trained_runs(runs)
    if "fitted" not in runs:
        return runs.iloc[:0].assign(fit=pd.Series(dtype=bool))
    return runs[runs["fitted"].notna()].assign(fit=fitted)


def capacity_goal(runs: pd.DataFrame, shortfall: pd.DataFrame | None = None) -> dict[str, str]:
    """Whether ``runs`` reach protocol v3's goal for its scale (:data:`pebench.protocol.CAPABLE_ENCODINGS`), a
    sentence per architecture (by name): the share of the capable encodings' runs that fitted against
    :data:`~pebench.protocol.CAPABLE_FIT_GOAL`, with the tasks they missed most and, given their
    :func:`capacity_shortfall` table, what their unfitted runs reached (:func:`shortfall_text`), and for the decoder
    how many seeds of a NoPE model fitted copy, of all. Empty where the runs hold no fit criterion or not every
    capable encoding."""
    runs = _fit_checked(runs)
    if not set(CAPABLE_ENCODINGS) <= set(runs["encoding"]):  # none, too, where no run has a fit criterion
        return {}
    names = ", ".join(encoding_label(name) for name in CAPABLE_ENCODINGS[:-1])
    capable_words = f"{names} and {encoding_label(CAPABLE_ENCODINGS[-1])}"
    sentences = {}
    for arch in sorted(runs["arch"].unique()):
        here = runs[runs["arch"] == arch]
        capable = here[here["encoding"].isin(CAPABLE_ENCODINGS)]
        share = capable["fit"].mean()
        met = share >= CAPABLE_FIT_GOAL
        sentence = (f"the capable encodings ({capable_words}) fitted "
                    f"{int(capable['fit'].sum())} of {len(capable)} runs ({100 * share:.0f}%; protocol v3's goal: "
                    f"{100 * CAPABLE_FIT_GOAL:.0f}%): {'met' if met else 'not met'}")
        missed = capable[~capable["fit"]].groupby("task", sort=False).size().sort_values(ascending=False, kind="stable")
        if len(missed):
            per_task = capable.groupby("task", sort=False).size()
            sentence += "; runs not fitted: " + ", ".join(
                f"{task_label(task)} {count} of {per_task[task]}" for task, count in missed.head(3).items())
            if len(missed) > 3:
                sentence += f" and {len(missed) - 3} more task{'s' if len(missed) > 4 else ''}"
            if shortfall is not None and (clause := shortfall_text(shortfall, arch)):
                sentence += f"; {clause}"
        nope = here[(here["encoding"] == encodings.baseline_name()) & (here["task"] == "copy")]
        if arch == "decoder" and len(nope):
            every = bool(nope["fit"].all())
            sentence += (f". A NoPE decoder fitted copy on {int(nope['fit'].sum())} of {len(nope)} seeds (goal: "
                         f"every seed): {'met' if every else 'not met'}")
        sentences[arch] = sentence + "."
    return sentences


#: a run still improving at its cap: its best fit check in the last quarter of its steps beat every earlier one
#: by at least this much (5 of 512 held-out examples at one length: more than a check's rounding)
STILL_RISING = 0.01
#: a run that fell back: its last fit check this far below its best one (training lost what it had learnt)
FELL_BACK = 0.05


def fit_curve(value: object) -> list[tuple[int, float]] | None:
    """A row's ``fit_curve`` JSON (``[[steps, accuracy], ...]``, :func:`pebench.plan.execute.fit_curve_json`) as
    ``[(steps, accuracy)]``; ``None`` for a missing or malformed one (the rows may come from anyone)."""
    try:
        return [(int(step), float(accuracy)) for step, accuracy in json.loads(str(value))]
    except (ValueError, TypeError):
        return None


def _curve_reading(curve: object, steps: float) -> tuple[float, float, float]:
    """What one run's ``fit_curve`` JSON (:func:`fit_curve`) says: its best check, the gain of the best check in the
    last quarter of its ``steps`` over the best before (NaN without checks on both sides) and its last check; NaNs
    for a missing or malformed curve."""
    nan = float("nan")
    points = fit_curve(curve)
    if not points or not steps == steps:
        return nan, nan, nan
    late = [accuracy for step, accuracy in points if step > 0.75 * steps]
    early = [accuracy for step, accuracy in points if step <= 0.75 * steps]
    gain = max(late) - max(early) if late and early else nan
    return max(accuracy for _, accuracy in points), gain, points[-1][1]


def capacity_shortfall(runs: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """What the capable encodings' (:data:`pebench.protocol.CAPABLE_ENCODINGS`) runs that did not fit reached in
    distribution, per arch and task, read from their fit curves (the held-out accuracy of every fit check, in the
    run ``rows``' ``fit_curve``; no out-of-distribution number is read): whether more steps look like what they
    lacked (still improving at the cap, :data:`STILL_RISING`) or not (:data:`FELL_BACK`).

    Returns one row per (arch, task) with an unfitted capable run, in the runs' order: ``unfitted``, ``runs``
    (the capable encodings' runs of the task), ``best_median`` / ``best_low`` / ``best_high`` (their best fit
    check), ``rising`` (unfitted runs whose best check in the last quarter of their steps beat every earlier one by
    :data:`STILL_RISING`), ``fell_back`` (whose last check was :data:`FELL_BACK` or more below their best) and
    ``eval_met`` (whose evaluation rows reach their fit threshold at every training length,
    :func:`_met_in_distribution`: what their checks missed were held-out inputs; NaN where the rows do not say).
    Empty where no capable run went unfitted, or the rows record no fit curve.
    """
    columns = ["arch", "task", "unfitted", "runs", "best_median", "best_low", "best_high", "rising", "fell_back",
               "eval_met"]
    runs = _fit_checked(runs)
    capable = runs[runs["encoding"].isin(CAPABLE_ENCODINGS)]
    missed = capable[~capable["fit"]]
    if missed.empty or "fit_curve" not in rows:
        return pd.DataFrame(columns=columns)
    curves = rows.drop_duplicates("run_id").set_index("run_id")
    steps = missed["steps_done"] if "steps_done" in missed else pd.Series(float("nan"), index=missed.index)
    readings = pd.DataFrame([_curve_reading(curves["fit_curve"].get(run_id), float(done))
                             for run_id, done in zip(missed["run_id"], steps, strict=True)],
                            columns=["best", "gain", "last"], index=missed.index)
    missed = missed.join(readings)
    met = _met_in_distribution(rows, set(missed["run_id"]))
    table = []
    for (arch, task), part in missed.groupby(["arch", "task"], sort=False):
        best = part["best"].dropna()
        table.append({"arch": arch, "task": task, "unfitted": len(part),
                      "runs": int(((capable["arch"] == arch) & (capable["task"] == task)).sum()),
                      "best_median": best.median(), "best_low": best.min(), "best_high": best.max(),
                      "rising": int((part["gain"] >= STILL_RISING).sum()),
                      "fell_back": int((part["best"] - part["last"] >= FELL_BACK).sum()),
                      "eval_met": _count_met(part["run_id"], met)})
    return pd.DataFrame(table, columns=columns)


def _met_in_distribution(rows: pd.DataFrame, run_ids: set[str]) -> pd.Series | None:
    """Per run of ``run_ids`` (by id), whether its evaluation rows as trained (condition original) reach its fit
    threshold at every training length (``train_min_len`` to ``train_max_len``). The evaluation draws from all of
    a length's inputs, most of which the run trained on, so a run that meets it but not its fit check missed on
    held-out inputs. Only in-distribution rows are read; NaN for a run with a row that records no threshold, ``None``
    where the rows lack the columns to tell."""
    needed = {"run_id", "eval_len", "condition", "token_acc", "train_max_len", "fit_threshold"}
    if not needed <= set(rows.columns):
        return None
    part = rows[rows["run_id"].isin(run_ids) & (rows["condition"] == "original")]
    if "variant" in part:
        part = part[part["variant"].fillna(BASE_VARIANT) == BASE_VARIANT]
    length = pd.to_numeric(part["eval_len"], errors="coerce")
    shortest = pd.to_numeric(part["train_min_len"], errors="coerce").fillna(1) if "train_min_len" in part else 1
    part = part[(length <= pd.to_numeric(part["train_max_len"], errors="coerce")) & (length >= shortest)]
    threshold = pd.to_numeric(part["fit_threshold"], errors="coerce")
    reached = pd.to_numeric(part["token_acc"], errors="coerce") >= threshold
    known = threshold.notna().groupby(part["run_id"]).all()  # a row without a threshold cannot tell
    return reached.groupby(part["run_id"]).all().where(known)


def _count_met(run_ids: pd.Series, met: pd.Series | None) -> float:
    """How many of ``run_ids`` met the threshold on the evaluation set (:func:`_met_in_distribution`'s ``met``);
    NaN where that is unknown for one of them (no such rows, or none that records its threshold)."""
    known = run_ids.map(met) if met is not None else pd.Series(float("nan"), index=run_ids.index)
    return float("nan") if known.isna().any() else int(known.astype(bool).sum())


def shortfall_text(table: pd.DataFrame, arch: str) -> str:
    """A clause on ``arch``'s rows of a :func:`capacity_shortfall` table: how many of the capable encodings' unfitted
    runs were still improving at their cap and how many fell back; ``""`` without such runs."""
    part = table[table["arch"] == arch]
    if part.empty:
        return ""
    unfitted, rising, fell = (int(part[c].sum()) for c in ("unfitted", "rising", "fell_back"))
    text = (f"of their {unfitted} runs not fitted, {rising} {'was' if rising == 1 else 'were'} still improving in "
            "the last quarter of their steps "
            f"(by {STILL_RISING} or more: a larger step cap might fit them) and {fell} ended {FELL_BACK} or more "
            "below their best fit check (training lost accuracy it had reached)")
    if "eval_met" in part and part["eval_met"].notna().all():
        met = int(part["eval_met"].sum())
        text += (f"; {met} reached the threshold at every training length on the evaluation set, whose inputs the "
                 "runs mostly trained on: what their fit checks missed were held-out inputs")
    return text


def two_level_bootstrap(scores: list[np.ndarray], n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """Bootstrap replicates of the mean over tasks of the mean over seeds, for several contenders at once.

    Args:
        scores: one array per task, (seeds of that task, contenders): the paired scores of every contender.
        n_boot: replicates; each resamples the tasks with replacement, then the seeds within every drawn task.
        seed: seed of the draws (the replicates are deterministic for it).

    Returns:
        (n_boot, contenders) replicated means; every task weighs the same whatever its number of seeds.
    """
    rng = np.random.default_rng(seed)
    n_tasks = len(scores)
    task_means = np.empty((n_boot, n_tasks, scores[0].shape[1]))  # (B, tasks, contenders)
    for t, table in enumerate(scores):
        draw = rng.integers(0, len(table), size=(n_boot, len(table)))  # (B, seeds)
        task_means[:, t] = table[draw].mean(axis=1)
    tasks = rng.integers(0, n_tasks, size=(n_boot, n_tasks))  # (B, tasks)
    return np.take_along_axis(task_means, tasks[..., None], axis=1).mean(axis=1)


def tiers(points: np.ndarray, better: np.ndarray) -> np.ndarray:
    """Tier of every contender (1 = top) from the pairwise tests: in order of ``points`` (best first), a contender
    joins the current tier unless one of its members is significantly better than it (``better[member,
    contender]``), and then opens the next tier.

    So no member of a tier is separated from another by its paired test, and each tier after the first begins
    with a contender that a member of the tier above beats. Tiers come from the pairwise tests rather than from
    overlapping marginal intervals because the board ranks from paired task-level comparisons: a pair is compared
    on the tasks both fitted, where the task's difficulty cancels, while two encodings' marginal intervals are over
    different tasks and wide with the spread of task difficulty (overlapping intervals do not say the paired
    difference is unresolved, nor apart ones that it is resolved on the same tasks).
    """
    order = np.argsort(-np.asarray(points, dtype=float), kind="stable")
    result = np.zeros(len(points), dtype=int)
    tier, members = 0, []
    for index in order:
        if not members or any(better[member, index] for member in members):
            tier, members = tier + 1, []
        members.append(index)
        result[index] = tier
    return result


def extrapolation_board(runs: pd.DataFrame, metric: str = PRIMARY_SCORE, *, n_boot: int = TIER_BOOT,
                        seed: int = TIER_SEED, floor: float | None = 0.0) -> pd.DataFrame:
    """The extrapolation board: per arch, every encoding ranked from pairwise task-level comparisons on the
    order-dependent runs both encodings of a pair fitted, in tiers of a large seeded bootstrap.

    For encodings ``i`` and ``j`` and a task, the task difference is the mean of ``metric`` of ``i`` minus ``j``
    over the seeds in which both fitted; their pairwise difference is its mean over the tasks that have one. A task
    that an encoding cannot fit leaves only the pairs involving that encoding: nobody else's battery shrinks. Per
    encoding:

    * ``advantage``: the mean of its pairwise differences over the encodings it shares a task with (what it gains
      over the field, task by task, in the metric's units and better direction); the board is ordered by it;
      ``win_rate``: the share of its (opponent, task) comparisons it wins (a tie counts a half);
    * ``score``: the mean over the tasks it fitted of its mean over fitted seeds (the absolute level, comparable
      with the floor);
    * intervals (``low``/``high`` of the score, ``advantage_low``/``advantage_high``): 2.5 and 97.5 percentiles of
      ``n_boot`` replicates of a two-level bootstrap (tasks with replacement, then seeds within each drawn task,
      the same seeds for every encoding, so pairs stay paired), drawn with ``seed``, vectorized;
    * ``tier`` (:func:`tiers`): ``i`` is significantly better than ``j`` when their pairwise difference is above 0
      in at least 97.5% of the replicates (a replicate where they share no task counts against) and they share
      enough tasks for an exact sign-flip test to reach :data:`ALPHA` (:func:`separable`: 6); not corrected for the
      number of pairs: tiers describe the board, the declared comparisons (:func:`pairwise`) are its tests;
    * ``tier_probability``: the share of replicates in which the encoding's place in the order of the replicate's
      advantages lies within its tier's places (for a tier of one, its exact place); ``placement`` is ``"tier k"``,
      or ``"between tiers"`` where that share is under :data:`TIER_CONFIDENCE`;
    * ``extrapolates``: False where the score or its interval's upper end is at or below ``floor`` (0: the
      position-free floor of the floor-normalised primary score; ``None`` for a metric without one): such an
      encoding gets ``placement`` ``"no extrapolation"`` and ``tier`` 0, never a tier, and tiers are formed among
      the others;
    * ``p_first``: the share of replicates in which it has the best advantage (ties share);
    * ``n_tasks``: the tasks it is judged on (fitted alongside another encoding) of ``battery`` (the arch's
      order-dependent tasks), ``n_pairs`` its fitted runs on them, ``few_tasks``: judged on fewer than
      :data:`BOARD_MIN_FIT` of the battery (flagged, still ranked);
    * ``n_boot`` and ``boot_seed``: the bootstrap's replicates and seed.

    An encoding with no task fitted alongside another is ``ranked`` False (``placement`` ``"not ranked"``). Rows
    sorted by arch, then the tiered encodings by tier and advantage, those with no extrapolation, the unranked.
    """
    dependent = _board_runs(runs, metric)
    if dependent is None:
        return pd.DataFrame(columns=_EXTRAPOLATION_COLUMNS)
    sign = 1.0 if higher_is_better(metric) else -1.0
    records = []
    for arch, part in dependent.groupby("arch", sort=True):
        rates = part.groupby("encoding")["fit"].mean()
        names = sorted(rates.index, key=encoding_rank)
        battery = sorted(part["task"].unique())
        columns = _arch_board(*_board_arrays(part, names, battery, metric, sign), n_boot, seed, sign, floor)
        for j, encoding in enumerate(names):
            records.append(dict(arch=arch, encoding=encoding, dependent_fit_rate=rates[encoding],
                                battery=len(battery), n_boot=n_boot, boot_seed=seed,
                                **{key: values[j] for key, values in columns.items()}))
    board = pd.DataFrame.from_records(records, columns=_EXTRAPOLATION_COLUMNS)
    if board.empty:
        return board
    group = np.select([board["tier"] > 0, board["ranked"]], [0, 1], 2)
    board = board.assign(_group=group, _order=-board["advantage"].fillna(-np.inf),
                         _e=board["encoding"].map(encoding_rank))
    board = board.sort_values(["arch", "_group", "tier", "_order", "_e"], kind="stable")
    board = board.drop(columns=["_group", "_order", "_e"]).reset_index(drop=True)
    board.attrs.update(metric=metric, n_boot=n_boot, seed=seed)
    return board


def _board_runs(runs: pd.DataFrame, metric: str) -> pd.DataFrame | None:
    """The runs the extrapolation board reads: trained, completed, order-dependent and fit-checked, with ``fit``
    (:func:`~pebench.store.schema.fitted`); ``None`` where ``runs`` lack the fit flag or ``metric``."""
    runs = trained_runs(runs)
    if "fitted" not in runs or metric not in runs:
        return None
    dependent = runs[(runs["order_dependent"] == True) & runs["fitted"].notna()]  # noqa: E712
    return dependent[completed(dependent)].assign(fit=fitted)


_EXTRAPOLATION_COLUMNS = ["arch", "encoding", "ranked", "placement", "tier", "tier_probability", "extrapolates",
                          "dependent_fit_rate", "score", "low", "high", "advantage", "advantage_low",
                          "advantage_high", "win_rate", "p_first", "n_tasks", "battery", "few_tasks", "n_pairs",
                          "n_boot", "boot_seed"]
#: bootstrap replicates of the extrapolation board computed at once (bounds memory: (chunk, tasks, E, E) arrays)
_BOARD_CHUNK = 200


def _board_arrays(part: pd.DataFrame, names: list[str], battery: list[str], metric: str, sign: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One arch's order-dependent runs as arrays over (encodings ``names``, tasks ``battery``, seed slots): the
    score times ``sign`` (0 where there is none), whether the run fitted with a finite score, and the seed slots of
    each task (its distinct seeds, every encoding's seed ``s`` in the same slot, so that pairs are paired)."""
    seeds = {task: sorted(group["seed"].unique()) for task, group in part.groupby("task")}
    n_seeds = np.array([len(seeds[task]) for task in battery])  # (tasks,)
    scores = np.zeros((len(names), len(battery), n_seeds.max()))  # (E, T, S)
    valid = np.zeros(scores.shape, dtype=bool)
    values = part[metric].to_numpy(float)
    use = part["fit"].to_numpy(bool) & np.isfinite(values)
    e = pd.Index(names).get_indexer(part["encoding"])
    t = pd.Index(battery).get_indexer(part["task"])
    slot = np.array([seeds[task].index(seed) for task, seed in zip(part["task"], part["seed"], strict=True)])
    scores[e[use], t[use], slot[use]] = sign * values[use]
    valid[e[use], t[use], slot[use]] = True
    return scores, valid, n_seeds


def _replicate(scores: np.ndarray, valid: np.ndarray, tasks: np.ndarray, weights: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One batch of bootstrap replicates (or the observed data: every task once, every seed once) of the board.

    Args:
        scores, valid: (E, T, S) from :func:`_board_arrays`.
        tasks: (B, K) the task of each of a replicate's K draws.
        weights: (B, K, S) how many times each seed slot of the drawn task was drawn.

    Returns:
        score (B, E): mean over drawn tasks of the (weighted) mean over fitted seeds; pair (B, E, E): mean over
        drawn tasks of the mean over jointly fitted seeds of score i - score j (NaN without a shared task);
        difference (B, K, E, E) and shared (B, K, E, E): the per-draw task differences and whether they exist.
    """
    v = valid.transpose(1, 0, 2)[tasks] * weights[:, :, None, :]  # (B, K, E, S) weighted fitted runs
    x = scores.transpose(1, 0, 2)[tasks] * v  # (B, K, E, S)
    fitted_runs = v.sum(-1)  # (B, K, E)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an encoding with no fitted run drawn: NaN
        task_mean = np.where(fitted_runs > 0, x.sum(-1) / fitted_runs, np.nan)  # (B, K, E)
        score = np.nanmean(np.where(fitted_runs > 0, task_mean, np.nan), axis=1) if task_mean.size else task_mean
        indicator = valid.transpose(1, 0, 2)[tasks].astype(float)  # (B, K, E, S)
        joint = v @ indicator.swapaxes(-1, -2)  # (B, K, E, E): sum_s w v_i v_j
        cross = x @ indicator.swapaxes(-1, -2)  # (B, K, E, E): sum_s w v_i v_j score_i
        shared = joint > 0
        difference = np.where(shared, (cross - cross.swapaxes(-1, -2)) / joint, 0.0)  # (B, K, E, E)
        pair = difference.sum(1) / shared.sum(1)  # (B, E, E), NaN where no shared task
    return score, pair, difference, shared


def _advantage(pair: np.ndarray) -> np.ndarray:
    """(..., E, E) pairwise differences -> (..., E): mean over the other encodings that share a task."""
    off = pair.copy()
    diagonal = np.arange(pair.shape[-1])
    off[..., diagonal, diagonal] = np.nan
    with warnings.catch_warnings():  # an encoding that shares no task: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(off, axis=-1)


def _arch_board(scores: np.ndarray, valid: np.ndarray, n_seeds: np.ndarray, n_boot: int, seed: int, sign: float,
                floor: float | None) -> dict[str, np.ndarray]:
    """The columns of one arch's :func:`extrapolation_board` rows (one value per encoding), from its arrays
    (:func:`_board_arrays`) and a two-level bootstrap of ``n_boot`` replicates drawn with ``seed``."""
    n_encodings, n_tasks, n_slots = scores.shape
    all_slots = np.arange(n_slots) < n_seeds[:, None]  # (T, S)
    score, pair, difference, shared = _replicate(scores, valid, np.arange(n_tasks)[None], all_slots[None] * 1.0)
    score, pair, difference, shared = score[0], pair[0], difference[0], shared[0]  # (E,), (E, E), (T, E, E) x2
    off_diagonal = ~np.eye(n_encodings, dtype=bool)
    shared_tasks = (shared & off_diagonal).sum(0)  # (E, E) tasks each pair shares
    judged = (shared & off_diagonal).any(-1)  # (T, E) tasks each encoding is compared on
    ranked = judged.any(0)
    contests = (shared & off_diagonal).sum((0, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        wins = ((difference > 0) + 0.5 * (difference == 0)) * (shared & off_diagonal)
        win_rate = np.where(contests > 0, wins.sum((0, 2)) / np.maximum(contests, 1), np.nan)
    advantage = _advantage(pair)
    rng = np.random.default_rng(seed)
    boot_score = np.empty((n_boot, n_encodings))
    boot_advantage = np.empty((n_boot, n_encodings))
    ahead = np.zeros((n_encodings, n_encodings))  # replicates in which i's pairwise difference over j is above 0
    for start in range(0, n_boot, _BOARD_CHUNK):
        size = min(_BOARD_CHUNK, n_boot - start)
        tasks = rng.integers(0, n_tasks, size=(size, n_tasks))  # (B, K)
        draws = (rng.random((size, n_tasks, n_slots)) * n_seeds[tasks][..., None]).astype(int)  # (B, K, S)
        counted = all_slots[tasks]  # (B, K, S): a task of n seeds draws n of them
        weights = ((draws[..., None] == np.arange(n_slots)) & counted[..., None]).sum(-2).astype(float)
        replicate_score, replicate_pair, _, _ = _replicate(scores, valid, tasks, weights)
        boot_score[start:start + size] = replicate_score
        boot_advantage[start:start + size] = _advantage(replicate_pair)
        ahead += (replicate_pair > 0).sum(0)
    with warnings.catch_warnings():  # an encoding never fitted: NaN intervals
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(boot_score, [2.5, 97.5], axis=0) if n_boot else (score, score)
        advantage_low, advantage_high = (np.nanpercentile(boot_advantage, [2.5, 97.5], axis=0) if n_boot
                                         else (advantage, advantage))
    point, low, high = (sign * score, sign * low, sign * high) if sign > 0 else (sign * score, sign * high, sign * low)
    extrapolates = ranked & (np.ones(n_encodings, bool) if floor is None else (point > floor) & (high > floor))
    separated = shared_tasks >= min_separable_pairs()  # (E, E): enough shared tasks for a paired test (separable)
    better = (ahead >= 0.975 * n_boot) & (n_boot > 0) & separated & (pair > 0) & off_diagonal  # i above j
    tier = np.zeros(n_encodings, dtype=int)
    probability = np.full(n_encodings, np.nan)
    eligible = np.flatnonzero(extrapolates)
    if len(eligible):
        tier[eligible] = tiers(advantage[eligible], better[np.ix_(eligible, eligible)])
        order = np.lexsort((eligible, -advantage[eligible]))  # places in the point order, ties by canonical order
        place = np.empty(len(eligible), dtype=int)
        place[order] = np.arange(len(eligible))
        first = np.array([place[tier[eligible] == t].min() for t in tier[eligible]])
        last = np.array([place[tier[eligible] == t].max() for t in tier[eligible]])
        replicate = np.where(np.isnan(boot_advantage[:, eligible]), -np.inf, boot_advantage[:, eligible])
        replicate_place = np.argsort(np.argsort(-replicate, axis=1, kind="stable"), axis=1)  # (B, eligible)
        if n_boot:  # without replicates (split_half's point orders) no probability
            probability[eligible] = ((replicate_place >= first) & (replicate_place <= last)).mean(0)
    p_first = np.full(n_encodings, np.nan)
    if ranked.any() and n_boot:
        boot_ranked = np.where(np.isnan(boot_advantage[:, ranked]), -np.inf, boot_advantage[:, ranked])
        best = boot_ranked == boot_ranked.max(axis=1, keepdims=True)
        p_first[ranked] = (best / best.sum(axis=1, keepdims=True)).mean(0)
    placement = np.where(~ranked, "not ranked", np.where(~extrapolates, "no extrapolation", np.where(
        probability < TIER_CONFIDENCE, "between tiers", np.char.add("tier ", tier.astype(str)))))
    fitted_runs = valid.sum(-1)  # (E, T)
    return dict(ranked=ranked, placement=placement, tier=tier, tier_probability=probability,
                extrapolates=extrapolates, score=np.where(ranked, point, np.nan), low=np.where(ranked, low, np.nan),
                high=np.where(ranked, high, np.nan), advantage=advantage, advantage_low=advantage_low,
                advantage_high=advantage_high, win_rate=win_rate, p_first=p_first, n_tasks=judged.sum(0),
                few_tasks=ranked & (judged.sum(0) < BOARD_MIN_FIT * n_tasks),
                n_pairs=(fitted_runs * judged.T).sum(1))


#: the most splits :func:`split_half` reads per arch (all of them below it; 10 tasks give 126)
MAX_SPLITS = 256


def split_half(runs: pd.DataFrame, by: str, metric: str = PRIMARY_SCORE) -> pd.DataFrame:
    """How well the extrapolation board's order holds on halves of its evidence: per arch, the order-dependent
    runs split into two disjoint halves of ``by`` (``"seed"`` or ``"task"``) of equal size (with an odd count, the
    lowest unit outside the first half is left out), the board's point advantages (:func:`extrapolation_board`'s,
    from the same arrays, without a bootstrap) on each half, and Kendall's tau-b between the two orders over the
    encodings ranked on both halves, for every split (up to :data:`MAX_SPLITS`, the first in
    :func:`itertools.combinations` order; each split once, never with its mirror). Columns: ``arch``, ``by``,
    ``n_units`` (the seeds or tasks split), ``n_splits``, ``tau_mean``, ``tau_min``, ``tau_max``, ``n_encodings``
    (the fewest ranked on both halves of a split). Empty where an arch has fewer than two units."""
    if by not in ("seed", "task"):
        raise ValueError(f"split_half splits by seed or task, not {by!r}")
    from scipy.stats import kendalltau  # here: only a report of a protocol-4 folder reads it

    dependent = _board_runs(runs, metric)
    if dependent is None:
        return pd.DataFrame(columns=_SPLIT_COLUMNS)
    sign = 1.0 if higher_is_better(metric) else -1.0
    records = []
    for arch, part in dependent.groupby("arch", sort=True):
        names = sorted(part["encoding"].unique(), key=encoding_rank)
        battery = sorted(part["task"].unique())
        scores, valid, n_seeds = _board_arrays(part, names, battery, metric, sign)
        slot_seeds = [sorted(part.loc[part["task"] == task, "seed"].unique()) for task in battery]
        units = sorted(part[by].unique())
        half = len(units) // 2
        splits = [first for first in itertools.combinations(units, half)
                  if half and (len(units) % 2 or units[0] in first)][:MAX_SPLITS]
        taus, shared = [], []
        for first in splits:
            sides = [_half_advantage(scores, valid, battery, slot_seeds, by, side)
                     for side in (set(first), set([unit for unit in units if unit not in first][-half:]))]
            common = np.isfinite(sides[0]) & np.isfinite(sides[1])
            shared.append(int(common.sum()))
            taus.append(kendalltau(sides[0][common], sides[1][common]).statistic if common.sum() > 1 else np.nan)
        taus = np.array(taus, dtype=float)
        if np.isfinite(taus).any():
            records.append(dict(arch=arch, by=by, n_units=len(units), n_splits=len(splits),
                                tau_mean=np.nanmean(taus), tau_min=np.nanmin(taus), tau_max=np.nanmax(taus),
                                n_encodings=min(shared)))
    return pd.DataFrame.from_records(records, columns=_SPLIT_COLUMNS)


def _half_advantage(scores: np.ndarray, valid: np.ndarray, battery: list, slot_seeds: list[list], by: str,
                    side: set) -> np.ndarray:
    """The board's point advantage of every encoding (NaN where it shares no task) on the runs of one half ``side``
    of the tasks or seeds (``by``), from one arch's arrays (:func:`_board_arrays`; ``slot_seeds``: each task's seed
    of each slot)."""
    n_slots = scores.shape[2]
    weights = np.array([[slot < len(seeds) and (by == "task" or seeds[slot] in side) for slot in range(n_slots)]
                        for seeds in slot_seeds], dtype=float)  # (T, S)
    tasks = np.array([t for t, task in enumerate(battery) if by == "seed" or task in side])
    _, pair, _, _ = _replicate(scores, valid, tasks[None], weights[tasks][None])
    return _advantage(pair[0])


_SPLIT_COLUMNS = ["arch", "by", "n_units", "n_splits", "tau_mean", "tau_min", "tau_max", "n_encodings"]


def harm(runs: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """The harm table: on the order-free controls, does an encoding do worse than the baseline (the encoding
    whose registry metadata says ``baseline``, NoPE), which needs no position to answer them?

    Per arch and encoding: ``control_fit_rate``; ``ood_token_acc`` (mean over tasks of the mean over seeds,
    every control run, fitted or not: harm is what the encoding costs) with a 95% interval of the two-level
    bootstrap; ``vs_baseline``: the mean difference from the baseline on the same (task, seed) pairs, with
    its interval (``diff_low``, ``diff_high``); ``harms``: True where that interval lies below 0. Only the pairs
    whose baseline run fitted: a baseline that did not learn a control is no measure of what it takes without
    positions (issue 66: encoder bucket_sort, which NoPE does not fit).
    """
    columns = ["arch", "encoding", "control_runs", "control_fit_rate", "ood_token_acc", "low", "high",
               "vs_baseline", "diff_low", "diff_high", "harms"]
    runs = trained_runs(runs)
    if "order_dependent" not in runs:
        return pd.DataFrame(columns=columns)
    controls = runs[(runs["order_dependent"] == False) & runs["ood_token_acc"].notna()]  # noqa: E712
    baseline = encodings.baseline_name()
    records = []
    for arch, part in controls.groupby("arch", sort=True):
        wide = part.pivot_table(index=["task", "seed"], columns="encoding", values="ood_token_acc", aggfunc="first")
        judged = _baseline_fitted(part, wide, baseline)
        fit = part.assign(fit=fitted).groupby("encoding")["fit"].mean() if "fitted" in part else None
        for encoding in sorted(wide.columns, key=encoding_rank):
            own = wide[encoding].dropna()
            tables = [group.to_numpy(float)[:, None] for _, group in own.groupby(level="task", sort=True)]
            boot = two_level_bootstrap(tables, n_boot, seed)[:, 0]
            point = float(np.mean([t.mean() for t in tables]))
            low, high = np.percentile(boot, [2.5, 97.5])
            diff = diff_low = diff_high = np.nan
            if baseline in wide and encoding != baseline:
                paired = wide[[encoding, baseline]].where(judged, np.nan).dropna()
                differences = paired[encoding] - paired[baseline]
                tables = [g.to_numpy(float)[:, None] for _, g in differences.groupby(level="task", sort=True)]
                if tables:
                    diff = float(np.mean([t.mean() for t in tables]))
                    diff_low, diff_high = np.percentile(two_level_bootstrap(tables, n_boot, seed)[:, 0], [2.5, 97.5])
            records.append(dict(arch=arch, encoding=encoding, control_runs=len(own),
                                control_fit_rate=float(fit[encoding]) if fit is not None else np.nan,
                                ood_token_acc=point, low=low, high=high, vs_baseline=diff, diff_low=diff_low,
                                diff_high=diff_high, harms=bool(diff_high < 0)))
    table = pd.DataFrame.from_records(records, columns=columns)
    table.attrs["baseline"] = baseline
    return table


def _baseline_fitted(part: pd.DataFrame, wide: pd.DataFrame, baseline: str | None) -> pd.DataFrame:
    """Per (task, seed) row of ``wide`` (:func:`harm`'s), whether the baseline's run there fitted (True for every
    row where there is no fit criterion), as a frame of ``wide``'s shape."""
    if baseline is None or "fitted" not in part:
        return pd.DataFrame(True, index=wide.index, columns=wide.columns)
    own = part[part["encoding"] == baseline].assign(fit=fitted).set_index(["task", "seed"])["fit"]
    rows = own.reindex(wide.index).fillna(False).astype(bool)
    return pd.DataFrame({column: rows for column in wide.columns}, index=wide.index)


def separable(n_pairs: int) -> bool:
    """Whether ``n_pairs`` paired units (tasks, the unit of the boards and the declared comparisons) can tell two
    encodings apart: only when an exact paired test on that many could reach :data:`ALPHA` (:func:`smallest_p`: at
    least 6). On fewer, a bootstrap interval is as narrow as the few values it resamples (a single task gives a
    point), so the extrapolation board never separates a pair sharing fewer tasks, as a declared comparison on so
    few is "cannot resolve"."""
    return bool(smallest_p(n_pairs) < ALPHA)


def min_separable_pairs() -> int:
    """The fewest paired units (tasks) on which two encodings can be told apart (:func:`separable`): 6."""
    return next(n for n in itertools.count(1) if separable(n))


# --------------------------------------------------------------------------- pairwise comparisons


def sign_flip_p(differences: np.ndarray, *, seed: int = 0) -> float:
    """Two-sided paired sign-flip permutation p-value of mean(differences) = 0, by scipy's maintained
    implementation (``scipy.stats.permutation_test`` on the one sample of differences, ``permutation_type=
    "samples"``: the null distribution flips the sign of each difference independently).

    Up to :data:`EXACT_MAX_PAIRS` differences every one of the ``2**n`` sign patterns is enumerated (the exact
    distribution: p = share of patterns whose mean is at least as extreme, the observed one included); beyond,
    :data:`N_PERMUTATIONS` random patterns drawn with ``seed`` give a Monte-Carlo p. NaN without differences.
    """
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        return float("nan")
    if len(d) == 1:  # scipy wants two; both patterns, +d and -d, are as extreme as the observed one
        return 1.0
    exact = len(d) <= EXACT_MAX_PAIRS
    result = stats.permutation_test(
        (d,), _mean_statistic, permutation_type="samples", vectorized=True, alternative="two-sided",
        n_resamples=2 ** len(d) if exact else N_PERMUTATIONS, rng=np.random.default_rng(seed))
    return float(result.pvalue)


def _mean_statistic(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean along ``axis``: the statistic of :func:`sign_flip_p` (vectorized, as scipy calls it)."""
    return np.mean(sample, axis=axis)


def smallest_p(n_pairs: int) -> float:
    """The smallest p-value :func:`sign_flip_p` can give with ``n_pairs`` differences (pairs, or tasks when the
    task is the unit; every difference of one sign): ``2 / 2**n`` when enumerated, ``1 / (1 + N_PERMUTATIONS)``
    when sampled; NaN without any. A comparison whose smallest p (Holm-multiplied where a family asks it) is not
    below the level cannot be resolved by these runs, whatever they hold."""
    if n_pairs < 1:
        return float("nan")
    if n_pairs <= EXACT_MAX_PAIRS:
        return min(1.0, 2.0 / 2**n_pairs)
    return 1.0 / (1 + N_PERMUTATIONS)


def minimum_detectable_effect(differences: np.ndarray, alpha: float, *, power: float = MDE_POWER,
                              n_sim: int = MDE_SIMULATIONS, seed: int = 0) -> float:
    """The minimum detectable effect of a task-level comparison: the smallest shift ``delta >= 0`` of the mean task
    difference that the exact two-sided sign-flip test (:func:`sign_flip_p`) at level ``alpha`` detects with
    probability ``power``, given the observed spread of the task differences.

    Precisely: were the ``n`` task differences drawn independently from Normal(``delta``, ``s**2``), ``s`` the
    sample standard deviation (ddof = 1) of the observed ``differences``, the test would give p <= ``alpha`` with
    probability >= ``power``. The test's p does not change when every difference is multiplied by the same
    positive number, so the effect is ``s`` times a constant of ``n``, ``alpha`` and ``power`` alone, found by
    bisection on the power of ``n_sim`` simulated batteries (standard normal, drawn with ``seed``; the same draws
    at every ``delta``).

    Returns the effect in the differences' units; ``inf`` where no shift is detectable (``n`` differences cannot
    reach ``alpha``: :func:`smallest_p`), 0 where the observed differences do not vary and some shift is
    detectable, NaN with fewer than two differences (no spread to read).
    """
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return float("nan")
    if not smallest_p(len(d)) <= alpha:
        return float("inf")
    spread = float(d.std(ddof=1))
    return 0.0 if spread == 0 else spread * _standard_effect(len(d), float(alpha), float(power), n_sim, seed)


@functools.lru_cache(maxsize=64)
def _standard_effect(n: int, alpha: float, power: float, n_sim: int, seed: int) -> float:
    """The shift (in standard deviations of the task differences) that the exact sign-flip test on ``n`` tasks
    detects at ``alpha`` with probability ``power`` (:func:`minimum_detectable_effect`); ``inf`` beyond 64."""
    noise = np.random.default_rng(seed).standard_normal((n_sim, n))  # (simulations, tasks)

    def detected(shift: float) -> float:
        return float((exact_sign_flip_p(shift + noise) <= alpha * (1 + 1e-9)).mean())

    low, high = 0.0, 1.0
    while detected(high) < power:
        low, high = high, 2 * high
        if high > 64:
            return float("inf")
    while high - low > 5e-3 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if detected(middle) < power else (low, middle)
    return high


def exact_sign_flip_p(differences: np.ndarray) -> np.ndarray:
    """The exact two-sided sign-flip p of every row of ``differences`` (rows, n) at once, ``n`` at most
    :data:`EXACT_MAX_PAIRS`: the p of :func:`sign_flip_p` (scipy's enumeration) for differences without exact ties
    between distinct sign patterns, vectorized over rows for the power simulations of
    :func:`minimum_detectable_effect` (single precision: simulated normal differences tie with probability 0)."""
    d = np.asarray(differences, dtype=np.float32)
    n = d.shape[1]
    if n > EXACT_MAX_PAIRS:
        raise ValueError(f"{n} differences: exact enumeration is for at most {EXACT_MAX_PAIRS}")
    # patterns with the first sign +, the observed one first: each stands for itself and its negation
    patterns = (1 - 2 * ((np.arange(2 ** (n - 1))[:, None] >> np.arange(n)) & 1)).astype(np.float32)  # (2^(n-1), n)
    counts = np.empty(len(d))
    step = max(1, 2**22 // len(patterns))  # rows per block: bounds the (rows, patterns) matrix
    for start in range(0, len(d), step):
        sums = np.abs(d[start:start + step] @ patterns.T)  # (rows, 2^(n-1)); column 0 is the observed sum
        counts[start:start + step] = (sums >= sums[:, :1]).sum(axis=1)
    return counts / len(patterns)


#: the units a declared comparison can test: paired task means (the task as the unit) or paired runs
UNITS = ("task", "run")


def pairwise(
    runs: pd.DataFrame,
    comparisons: Sequence[tuple[str, str]],
    metric: str,
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    alpha: float = ALPHA,
    jointly_fitted: bool = False,
    unit: str | None = None,
) -> pd.DataFrame:
    """Test comparisons of two encodings declared in advance, per arch, on paired runs.

    For every ``(a, b)`` and arch, the runs of ``a`` and ``b`` are paired by task and seed (pairs where both have a
    score, :func:`run_scores`), and their differences ``a - b`` are tested at one of two units:

    * ``unit="task"`` (the declared comparisons of protocol v3 on): the differences are averaged over the seeds
      within each task first, and the task means are the data: their mean (every task weighs the same) with a
      95% interval of the two-level bootstrap (:func:`two_level_bootstrap`: tasks, then seeds within them), the
      exact two-sided sign-flip p over the tasks (:func:`sign_flip_p`), the smallest p that many tasks allow
      (``smallest_p``: 2 / 2**n) and the minimum detectable effect (``mde``,
      :func:`minimum_detectable_effect` at ``alpha`` divided by the family's size, the strictest step of Holm's
      procedure: the shift every verdict of the family could detect with 80% power). Seeds of one task share it
      and are not independent evidence; the tasks are (DESIGN, "the task is the unit of inference").
    * ``unit="run"`` (protocol v2's comparisons and the replication claims): every task-seed pair is a datum:
      their mean with a 95% percentile bootstrap interval (pairs resampled) and the sign-flip p over the pairs;
      ``mde`` is not computed (NaN).

    ``unit=None`` is ``"task"`` with ``jointly_fitted`` and ``"run"`` without. The p-values are Holm-corrected
    (:func:`pebench.analysis.results.holm`) over the family: every declared comparison x every arch tested. The
    verdict, at ``alpha`` after correction and in the metric's direction, is ``"a better"``, ``"b better"`` or
    ``"no significant difference"``; a comparison whose encoding is absent from an arch, or without pairs, is
    ``"not tested"`` with the reason in ``note``; one with too few units to ever reach ``alpha`` (its
    ``smallest_p``, or the family's smallest times the family's size, the first Holm step, is not below it) is
    ``"cannot resolve"``, with the bound in ``note``. Deterministic for ``seed``.

    ``jointly_fitted`` (protocol v3, as the extrapolation board): only the order-dependent tasks, and only the
    task-seed pairs in which both encodings fitted, so that no unfitted run's score enters a difference.

    Returns one row per arch and comparison: ``arch``, ``a``, ``b``, ``metric``, ``unit``, ``n_tasks``,
    ``n_pairs`` (task-seed pairs), ``mean_diff``, ``ci_low``, ``ci_high``, ``p_value``, ``p_holm``,
    ``smallest_p`` (at the unit), ``mde``, ``verdict`` and ``note``.
    """
    unit = unit or ("task" if jointly_fitted else "run")
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r}: expected one of {', '.join(UNITS)}")
    higher = higher_is_better(metric)
    scored, task = _scored(runs, metric)
    frame = _fitted_order_dependent(scored) if jointly_fitted else scored
    task_keys = [c for c in task if c != "arch"]
    rng = np.random.default_rng(seed)
    records, task_differences = [], {}
    for arch in sorted(frame["arch"].unique()):
        here = frame[frame["arch"] == arch]
        for a, b in comparisons:
            record = dict(arch=arch, a=a, b=b, metric=metric, unit=unit, n_tasks=0, n_pairs=0, mean_diff=np.nan,
                          ci_low=np.nan, ci_high=np.nan, p_value=np.nan, note="")
            missing = [name for name in (a, b) if name not in set(here["encoding"])]
            if missing:
                present = set(scored.loc[scored["arch"] == arch, "encoding"])
                record["note"] = "; ".join(
                    f"no {name} runs for {arch}" if name not in present else
                    f"no fitted {name} run of an order-dependent task for {arch}" for name in missing)
                records.append(record)
                continue
            both = _pairs(here, a, b, [*task_keys, "seed"])
            d = np.where(both["a"] == both["b"], 0.0, both["a"] - both["b"])  # two unfitted (inf) runs tie
            by_task = [part.to_numpy(float)[:, None] for _, part in
                       pd.Series(d, index=both.index).groupby(level=task_keys, sort=True)] if len(d) else []
            record.update(n_pairs=len(d), n_tasks=len(by_task))
            if len(d) == 0:
                record["note"] = "no runs paired by task and seed"
                records.append(record)
                continue
            with warnings.catch_warnings():  # infinite differences (unfitted, lower-is-better metric)
                warnings.simplefilter("ignore", RuntimeWarning)
                if unit == "task":
                    means = np.array([table.mean() for table in by_task])  # (tasks,)
                    boot = two_level_bootstrap(by_task, n_boot, seed)[:, 0]
                    task_differences[len(records)] = means
                    record.update(mean_diff=means.mean(), p_value=sign_flip_p(means, seed=seed))
                else:
                    boot = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(1)
                    record.update(mean_diff=d.mean(), p_value=sign_flip_p(d, seed=seed))
                record.update(ci_low=np.percentile(boot, 2.5), ci_high=np.percentile(boot, 97.5))
            records.append(record)
    table = pd.DataFrame.from_records(records, columns=_PAIR_COLUMNS[:-4] + ["note"])
    table.insert(len(table.columns) - 1, "p_holm", holm(table["p_value"]))
    tested = table["p_value"].notna()
    units = table["n_tasks"] if unit == "task" else table["n_pairs"]
    table.insert(len(table.columns) - 1, "smallest_p", units.map(smallest_p))
    family = int(tested.sum())
    table.insert(len(table.columns) - 1, "mde", [
        minimum_detectable_effect(task_differences[i], alpha / family, seed=seed) if i in task_differences
        else np.nan for i in table.index])
    table.insert(len(table.columns) - 1, "verdict", [_verdict(r, higher, alpha) for r in table.itertuples()])
    first_step = table.loc[tested, "smallest_p"].min() * family if family else np.nan
    for index in table.index[tested]:
        bound = max(table.loc[index, "smallest_p"], first_step)
        if not bound < alpha:
            count = int(units[index])
            table.loc[index, "verdict"] = "cannot resolve"
            table.loc[index, "note"] = (f"{count} {'tasks' if unit == 'task' else 'pairs'}: the smallest "
                                        f"attainable p is {table.loc[index, 'smallest_p']:.3g}, {bound:.3g} after "
                                        f"Holm over {family}")
    return table


def _fitted_order_dependent(frame: pd.DataFrame) -> pd.DataFrame:
    """The fitted runs of order-dependent tasks of a :func:`_scored` frame (protocol v3's declared comparisons)."""
    return frame[frame["fitted"] & (frame["order_dependent"] == True)]  # noqa: E712


def _pairs(frame: pd.DataFrame, a: str, b: str, keys: list[str]) -> pd.DataFrame:
    """The scores of encodings ``a`` and ``b`` (columns ``a`` and ``b``) paired on ``keys``: where both have one."""
    left, right = (frame[frame["encoding"] == name].set_index(keys)["score"] for name in (a, b))
    return left.to_frame("a").join(right.rename("b"), how="inner")


_PAIR_COLUMNS = ["arch", "a", "b", "metric", "unit", "n_tasks", "n_pairs", "mean_diff", "ci_low", "ci_high", "p_value",
                 "p_holm", "smallest_p", "mde", "verdict"]


def pairwise_by_task(runs: pd.DataFrame, comparisons: Sequence[tuple[str, str]], metric: str) -> pd.DataFrame:
    """The declared comparisons of :func:`pairwise` with ``jointly_fitted`` (protocol v3), split by task: per arch,
    comparison and order-dependent task, the seeds in which both encodings fitted, their mean difference
    ``a - b``, how many favour ``a``, ``b`` or neither (in the metric's direction) and the exact two-sided
    sign-flip p over those seeds (:func:`sign_flip_p`), with the smallest p they could give
    (:func:`smallest_p`: six seeds can reach 0.031).

    These p-values are not adjusted for the number of rows: they show which tasks carry a verdict, and are no
    verdict of their own (the declared verdict is :func:`pairwise`'s, on the task means, Holm-corrected)."""
    higher = higher_is_better(metric)
    frame, task = _scored(runs, metric)
    frame = _fitted_order_dependent(frame)
    task_keys = [c for c in task if c != "arch"]
    records = []
    for arch in sorted(frame["arch"].unique()):
        here = frame[frame["arch"] == arch]
        for a, b in comparisons:
            both = _pairs(here, a, b, [*task_keys, "seed"]).reset_index()
            for _, part in both.groupby(task_keys, sort=False):
                d = (part["a"] - part["b"]).to_numpy(dtype=float)
                better = np.sign(d) if higher else -np.sign(d)
                records.append(dict(arch=arch, a=a, b=b, task=part["task"].iloc[0],
                                    metric=metric, n_pairs=len(d), mean_diff=d.mean(), a_better=int((better > 0).sum()),
                                    b_better=int((better < 0).sum()), ties=int((better == 0).sum()),
                                    p_value=sign_flip_p(d), smallest_p=smallest_p(len(d))))
    columns = ["arch", "a", "b", "task", "metric", "n_pairs", "mean_diff", "a_better", "b_better", "ties", "p_value",
               "smallest_p"]
    return pd.DataFrame.from_records(records, columns=columns)


def _verdict(row, higher: bool, alpha: float) -> str:
    """The verdict of one pairwise row."""
    if not np.isfinite(row.p_holm):
        return "not tested"
    if row.p_holm >= alpha or row.mean_diff == 0:
        return "no significant difference"
    return "a better" if (row.mean_diff > 0) == higher else "b better"


def verdict_text(row) -> str:
    """A pairwise row's verdict for a reader: ``"a better"`` / ``"b better"`` name the encoding (its display label)."""
    side = {"a better": row.a, "b better": row.b}  # a table row (itertuples) or a Series (iterrows)
    return f"{encoding_label(side[row.verdict])} better" if row.verdict in side else row.verdict


# --------------------------------------------------------------------------- writers


def fit_fractions(runs: pd.DataFrame) -> pd.DataFrame:
    """How many seeds met the fit criterion, per architecture, encoding and task (runs with a fit criterion).

    Returns one row per (arch, encoding, task): ``fitted`` (seeds that fitted), ``seeds``, ``fraction``;
    encodings in their canonical order, tasks in the order of the runs. Empty without a ``fitted`` column.
    """
    if "fitted" not in runs:
        return pd.DataFrame(columns=["arch", "encoding", "task", "fitted", "seeds", "fraction"])
    runs = trained_runs(runs)
    runs = runs[runs["fitted"].notna()].assign(fit=fitted)
    table = (runs.groupby(["arch", "encoding", "task"], sort=False)["fit"].agg(fitted="sum", seeds="size")
             .reset_index())
    table["fitted"] = table["fitted"].astype(int)
    table["fraction"] = table["fitted"] / table["seeds"]
    order = {name: i for i, name in enumerate(dict.fromkeys(runs["task"]))}
    return (table.assign(_e=table["encoding"].map(encoding_rank), _t=table["task"].map(order))
            .sort_values(["arch", "_e", "_t"], kind="stable").drop(columns=["_e", "_t"]).reset_index(drop=True))


