"""Rank encodings across tasks, with bootstrap intervals, and test declared pairwise comparisons.

Pure functions on the per-run frame of :func:`pebench.results.run_metrics`
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
  seed, with a sign-flip permutation test Holm-corrected over the family;
* :func:`to_markdown`, :func:`to_latex`, :func:`pairwise_markdown`,
  :func:`pairwise_latex` — the two tables as text.

A "task" here is one group of :data:`pebench.results.GROUP_COLUMNS` (an
experiment's task at one training length, per arch); only the trained models
(:data:`pebench.experiment.BASE_VARIANT`) are ranked, and a task with fewer
than two encodings is left out (nothing to rank). Failed runs have no numbers:
they are counted (``runs_failed``), never scored. Metric directions come from
:mod:`pebench.metrics`; a metric without a direction cannot be ranked.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.experiment import BASE_VARIANT
from pebench.results import GROUP_COLUMNS, encoding_label, encoding_rank, holm

#: significance level of the pairwise verdicts (after Holm correction)
ALPHA = 0.05
#: the pairwise test enumerates all 2^n sign flips up to this many pairs, else samples :data:`N_PERMUTATIONS`
EXACT_MAX_PAIRS = 16
N_PERMUTATIONS = 20_000
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
    fitted = fitted_runs(runs)
    worst = 0.0 if higher_is_better(metric) else np.inf
    scores = values.where(fitted | values.isna(), worst)
    if "status" in runs:
        scores = scores.where(runs["status"] != "failed")
    return scores.rename("score")


def fitted_runs(runs: pd.DataFrame) -> pd.Series:
    """The ``fitted`` column as booleans; absent or NaN (a run without a fit criterion) counts as fitted."""
    if "fitted" not in runs:
        return pd.Series(True, index=runs.index)
    return runs["fitted"].astype(float).fillna(1.0) > 0


def trained_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the trained models (the base variant), without their evaluation variants."""
    return runs[runs["variant"].fillna(BASE_VARIANT) == BASE_VARIANT] if "variant" in runs else runs


def _scored(runs: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, list[str]]:
    """Scored base-variant runs (``score``, ``fitted``) of tasks with >= 2 encodings, and the task columns."""
    runs = trained_runs(runs)
    task = [c for c in GROUP_COLUMNS if c in runs]
    frame = runs.assign(score=run_scores(runs, metric), fitted=fitted_runs(runs))
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
    failed = trained[trained["status"] == "failed"] if "status" in trained else trained.iloc[:0]
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


# --------------------------------------------------------------------------- pairwise comparisons


def sign_flip_p(differences: np.ndarray, *, seed: int = 0) -> float:
    """Two-sided paired sign-flip permutation p-value of mean(differences) = 0.

    Every sign pattern is enumerated for up to :data:`EXACT_MAX_PAIRS` pairs
    (p = share of patterns whose ``|mean|`` reaches the observed one, the observed
    pattern included); beyond, :data:`N_PERMUTATIONS` random patterns drawn
    with ``seed`` give ``(1 + hits) / (1 + N_PERMUTATIONS)``. NaN without pairs.
    """
    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        return float("nan")
    observed = abs(d.mean()) - 1e-12 * max(1.0, np.abs(d).max())  # float noise must not break ties
    if len(d) <= EXACT_MAX_PAIRS:
        bits = (np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1  # (2^n, n)
        return float((np.abs((1 - 2 * bits) @ d) / len(d) >= observed).mean())
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(N_PERMUTATIONS, len(d)))
    return float((1 + (np.abs(signs @ d) / len(d) >= observed).sum()) / (1 + N_PERMUTATIONS))


def pairwise(
    runs: pd.DataFrame,
    comparisons: Sequence[tuple[str, str]],
    metric: str,
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Test comparisons of two encodings declared in advance, per arch, on paired runs.

    For every ``(a, b)`` and arch, the runs of ``a`` and ``b`` are paired by
    task and seed (pairs where both have a score, :func:`run_scores`), and the
    differences ``a - b`` give: their mean with a 95% percentile bootstrap
    interval (pairs resampled, ``n_boot`` replicates), a two-sided sign-flip
    permutation p-value (:func:`sign_flip_p`) and its Holm-adjusted value. The
    Holm family is every declared comparison x every arch that was tested.
    The verdict, at ``alpha`` after correction and in the metric's direction,
    is ``"a better"``, ``"b better"`` or ``"no significant difference"``; a
    comparison whose encoding is absent from an arch, or without pairs, is
    ``"not tested"`` with the reason in ``note``. Deterministic for ``seed``.
    """
    higher = higher_is_better(metric)
    frame, task = _scored(runs, metric)
    pair_keys = [c for c in task if c != "arch"] + ["seed"]
    rng = np.random.default_rng(seed)
    records = []
    for arch in sorted(frame["arch"].unique()):
        here = frame[frame["arch"] == arch]
        for a, b in comparisons:
            record = dict(arch=arch, a=a, b=b, metric=metric, n_pairs=0, mean_diff=np.nan, ci_low=np.nan,
                          ci_high=np.nan, p_value=np.nan, note="")
            missing = [name for name in (a, b) if name not in set(here["encoding"])]
            if missing:
                record["note"] = f"no {' or '.join(missing)} runs for {arch}"
                records.append(record)
                continue
            left, right = (here[here["encoding"] == name].set_index(pair_keys)["score"] for name in (a, b))
            both = left.to_frame("a").join(right.rename("b"), how="inner")
            d = np.where(both["a"] == both["b"], 0.0, both["a"] - both["b"])  # two unfitted (inf) runs tie
            record["n_pairs"] = len(d)
            if len(d) == 0:
                record["note"] = "no runs paired by task and seed"
                records.append(record)
                continue
            boot = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(1)
            with warnings.catch_warnings():  # infinite differences (unfitted, lower-is-better metric)
                warnings.simplefilter("ignore", RuntimeWarning)
                record.update(mean_diff=d.mean(), ci_low=np.percentile(boot, 2.5),
                              ci_high=np.percentile(boot, 97.5), p_value=sign_flip_p(d, seed=seed))
            records.append(record)
    table = pd.DataFrame.from_records(records, columns=_PAIR_COLUMNS[:-2] + ["note"])
    table.insert(len(table.columns) - 1, "p_holm", holm(table["p_value"]))
    table.insert(len(table.columns) - 1, "verdict", [_verdict(r, higher, alpha) for r in table.itertuples()])
    return table


_PAIR_COLUMNS = ["arch", "a", "b", "metric", "n_pairs", "mean_diff", "ci_low", "ci_high", "p_value", "p_holm",
                 "verdict"]


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


def _number(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, never ``-0.00``; ``—`` when undefined."""
    if value is None or not np.isfinite(value):
        return "inf" if value == np.inf else "-inf" if value == -np.inf else "—"
    return f"{round(float(value), digits) + 0.0:.{digits}f}"


def _interval(point: float, low: float, high: float, digits: int = 2) -> str:
    """``point [low, high]``."""
    return f"{_number(point, digits)} [{_number(low, digits)}, {_number(high, digits)}]"


def _p(value: float) -> str:
    """A p-value: three decimals, ``<0.001`` below."""
    return "—" if not np.isfinite(value) else "<0.001" if value < 0.001 else f"{value:.3f}"


def fit_fractions(runs: pd.DataFrame) -> pd.DataFrame:
    """How many seeds met the fit criterion, per architecture, encoding and task (runs with a fit criterion).

    Returns one row per (arch, encoding, task): ``fitted`` (seeds that fitted), ``seeds``, ``fraction``;
    encodings in their canonical order, tasks in the order of the runs. Empty without a ``fitted`` column.
    """
    if "fitted" not in runs:
        return pd.DataFrame(columns=["arch", "encoding", "task", "fitted", "seeds", "fraction"])
    runs = trained_runs(runs)
    runs = runs[runs["fitted"].notna()].assign(fit=fitted_runs)
    table = (runs.groupby(["arch", "encoding", "task"], sort=False)["fit"].agg(fitted="sum", seeds="size")
             .reset_index())
    table["fitted"] = table["fitted"].astype(int)
    table["fraction"] = table["fitted"] / table["seeds"]
    order = {name: i for i, name in enumerate(dict.fromkeys(runs["task"]))}
    return (table.assign(_e=table["encoding"].map(encoding_rank), _t=table["task"].map(order))
            .sort_values(["arch", "_e", "_t"], kind="stable").drop(columns=["_e", "_t"]).reset_index(drop=True))


def fit_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The headers and cells of a :func:`fit_fractions` table, wide: one row per architecture and encoding,
    ``k/n`` seeds fitted per task and the fraction over every task."""
    tasks = list(dict.fromkeys(table["task"]))
    headers = ["Arch", "Encoding", *tasks, "All"]
    rows = []
    for (arch, encoding), part in table.groupby(["arch", "encoding"], sort=False):
        cells = {row.task: f"{row.fitted}/{row.seeds}" for row in part.itertuples()}
        total = part["fitted"].sum() / part["seeds"].sum()
        rows.append([arch, encoding_label(encoding), *(cells.get(task, "—") for task in tasks), f"{100 * total:.0f}%"])
    return headers, rows


def board_rows(board: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The headers and formatted cells of a :func:`leaderboard` table."""
    headers = ["Arch", "Encoding", "MRR [95% CI]", "Mean rank [95% CI]", "Tasks fitted", "Runs fitted"]
    rows = [[r.arch, encoding_label(r.encoding), _interval(r.mrr, r.mrr_low, r.mrr_high),
             _interval(r.mean_rank, r.rank_low, r.rank_high), f"{r.tasks_fitted}/{r.n_tasks}",
             f"{100 * r.runs_fitted:.0f}%"] for r in board.itertuples()]
    return headers, rows


def pairwise_rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The headers and formatted cells of a :func:`pairwise` table."""
    headers = ["Arch", "A", "B", "Pairs", "Mean A − B [95% CI]", "p", "p (Holm)", "Verdict"]
    rows = [[r.arch, encoding_label(r.a), encoding_label(r.b), str(r.n_pairs),
             _interval(r.mean_diff, r.ci_low, r.ci_high), _p(r.p_value),
             _p(r.p_holm), verdict_text(r) + (f" ({r.note})" if r.note else "")] for r in table.itertuples()]
    return headers, rows


def _markdown(headers: list[str], rows: list[list[str]]) -> str:
    """A pipe table (MyST and GitHub markdown), text cells left-aligned."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] * len(headers)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _latex(headers: list[str], rows: list[list[str]], caption: str, label: str) -> str:
    """A booktabs ``table`` environment; cells are escaped, ``caption`` is LaTeX source."""
    from pebench.report import latex_escape  # report imports the plotting stack: only when writing LaTeX

    body = [" & ".join(latex_escape(cell) for cell in row) + r" \\" for row in rows]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{'l' * len(headers)}}}", r"\toprule",
        " & ".join(latex_escape(h) for h in headers) + r" \\", r"\midrule", *body, r"\bottomrule",
        r"\end{tabular}", r"\end{table}", ""])


def _caption(frame: pd.DataFrame, what: str) -> str:
    """A default caption naming the metric of ``frame``."""
    from pebench.report import latex_escape

    metric = frame.attrs.get("metric") or (frame["metric"].iloc[0] if "metric" in frame and len(frame) else "")
    label = metric_registry.get(metric).axis_label if metric else "the metric"
    return latex_escape(f"{what} by {label}.")


def to_markdown(board: pd.DataFrame) -> str:
    """A :func:`leaderboard` as a markdown pipe table: ``MRR [low, high]``, mean rank likewise, tasks fitted ``k/n``."""
    return _markdown(*board_rows(board))


def to_latex(board: pd.DataFrame, caption: str | None = None, label: str = "tab:leaderboard") -> str:
    """A :func:`leaderboard` as a booktabs LaTeX table (``caption`` is LaTeX source; default names the metric)."""
    return _latex(*board_rows(board), caption or _caption(board, "Mean reciprocal rank over tasks"), label)


def fit_markdown(table: pd.DataFrame) -> str:
    """A :func:`fit_fractions` table as a markdown pipe table (:func:`fit_rows`)."""
    return _markdown(*fit_rows(table))


def fit_latex(table: pd.DataFrame, caption: str, label: str = "tab:fit") -> str:
    """A :func:`fit_fractions` table as a booktabs LaTeX table (``caption`` is LaTeX source)."""
    return _latex(*fit_rows(table), caption, label)


def pairwise_markdown(table: pd.DataFrame) -> str:
    """A :func:`pairwise` table as a markdown pipe table."""
    return _markdown(*pairwise_rows(table))


def pairwise_latex(table: pd.DataFrame, caption: str | None = None, label: str = "tab:pairwise") -> str:
    """A :func:`pairwise` table as a booktabs LaTeX table (``caption`` is LaTeX source)."""
    return _latex(*pairwise_rows(table), caption or _caption(table, "Paired comparisons"), label)
