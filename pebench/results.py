"""Load and validate result CSVs; aggregate them per run, across seeds, and compare encodings.

A suite folder holds ``raw/<run_id>.csv`` (one tidy CSV per run, one row per
evaluation length, condition and variant) and ``manifest.json``.
:func:`load` reads every raw CSV, checks the schema and returns one
DataFrame. Everything else is computed from those raw rows:

* :func:`run_metrics` — one row per run and evaluation variant: ``id_*``
  (mean over evaluated lengths <= ``train_max_len``), ``ood_*`` (unweighted
  mean over lengths > ``train_max_len``, Deletang et al. 2023), extrapolation
  ratio, generalization length, order reliance / invariance gap,
  equivariance gaps, perplexities;
* :func:`aggregate` — across seeds: mean, standard deviation, 95% confidence
  interval, best-of-seeds and counts of completed, diverged and failed runs;
* :func:`curves` — the same statistics per evaluation length (for figures);
* :func:`compare_to_best` — which encodings are the best per task, and which
  are not significantly worse than it.

Statistics (see also the protocol page of the docs):

* 95% CI: the half-width ``t(0.975, n - 1) * sd / sqrt(n)`` of a Student-t
  interval over seeds, ``sd`` the sample standard deviation (ddof = 1);
  undefined (NaN) with fewer than two seeds.
* Diverged runs were evaluated, so their numbers count (divergence is a
  property of the encoding); failed runs have no numbers: they are counted
  (``n_failed``) and listed, never averaged as zeros and never hidden.
* Comparison with the best: one-sided Welch t-test (unequal variances;
  suited to the 3-10 seeds of the suites) of ``best > other`` for each other
  encoding of a task, p-values Holm-corrected over those comparisons;
  "not significantly worse" means an adjusted p >= 0.05. With fewer than two
  seeds on a side no test is possible and only the best is marked.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.experiment import BASE_VARIANT

#: columns every row has, whatever its status
IDENTITY_COLUMNS = (
    "suite", "experiment", "task", "task_version", "encoding", "encoding_options", "arch",
    "d_model", "n_layers", "n_heads", "train_max_len", "steps", "lr", "batch_size", "seed",
    "status", "run_id", "pebench_version",
)
#: columns rows of completed (ok or diverged) runs also have
METRIC_COLUMNS = (
    "eval_len", "condition", "variant", "token_acc", "seq_acc", "loss", "n", "chance_token_acc",
    "params", "train_seconds",
)
STATUSES = ("ok", "diverged", "failed")

#: what makes a cell: one configuration whose seeds are aggregated
CELL_COLUMNS = (
    "experiment", "task", "task_version", "arch", "encoding", "encoding_options", "variant", "train_max_len",
)
#: cells compared with each other (encodings, and RoPE-scaling variants) share these
GROUP_COLUMNS = ("experiment", "task", "task_version", "arch", "train_max_len")
#: what distinguishes the contenders inside a group
CONTENDER_COLUMNS = ("encoding", "encoding_options", "variant")

#: a run whose ID sequence accuracy is below this has no generalization length (nothing to stay close to)
GENERALIZATION_MIN_ID_SEQ_ACC = 0.1
#: fraction of the ID sequence accuracy a length must keep to count as generalized
GENERALIZATION_FRACTION = 0.9
#: significance level of :func:`compare_to_best`
ALPHA = 0.05


#: columns that can look numeric but are text (run id "3e69517866536022" would parse as inf)
TEXT_COLUMNS = ("run_id", "pebench_version", "error")


class ResultsError(ValueError):
    """A results file or folder that does not follow the schema."""


# --------------------------------------------------------------------------- loading


def validate_frame(frame: pd.DataFrame, source: str | Path = "<frame>") -> pd.DataFrame:
    """Check that ``frame`` follows the result schema; return it unchanged.

    Raises:
        ResultsError: naming ``source`` and what is wrong (missing columns,
            unknown status, metrics out of range).
    """
    _check_columns(frame, source)
    _check_values(frame, source)
    return frame


def _check_columns(frame: pd.DataFrame, source: str | Path) -> None:
    if frame.empty:
        raise ResultsError(f"{source}: no rows")
    missing = [c for c in IDENTITY_COLUMNS if c not in frame.columns]
    if missing:
        raise ResultsError(f"{source}: not a pebench result file, missing column(s) {', '.join(missing)}")
    bad_status = sorted(set(frame["status"]) - set(STATUSES), key=str)
    if bad_status:
        raise ResultsError(f"{source}: unknown status value(s) {bad_status}; valid: {', '.join(STATUSES)}")
    if (frame["status"] != "failed").any():
        missing = [c for c in METRIC_COLUMNS if c not in frame.columns]
        if missing:
            raise ResultsError(f"{source}: completed run without metric column(s) {', '.join(missing)}")


def _check_values(frame: pd.DataFrame, source: str | Path) -> None:
    completed = frame[frame["status"] != "failed"]
    if completed.empty:
        return
    for column in ("token_acc", "seq_acc"):
        values = pd.to_numeric(completed[column], errors="coerce")
        if values.isna().any() or ((values < 0) | (values > 1)).any():
            raise ResultsError(f"{source}: {column} must be a number in [0, 1]")
    for column in ("eval_len", "train_max_len", "loss"):
        if pd.to_numeric(completed[column], errors="coerce").isna().any():
            raise ResultsError(f"{source}: {column} must be a number in every row of a completed run")


def read_run_csv(path: str | Path) -> pd.DataFrame:
    """Read one run CSV with :data:`TEXT_COLUMNS` as text (not validated; see :func:`validate_frame`)."""
    return pd.read_csv(path, dtype=dict.fromkeys(TEXT_COLUMNS, str))


def load(directory: str | Path, *, include_failed: bool = True) -> pd.DataFrame:
    """Load every run CSV of a suite folder (or of its ``raw/`` folder) into one DataFrame.

    Args:
        directory: a suite folder (containing ``raw/``) or a folder of CSVs.
        include_failed: keep rows of failed runs (they have no metrics).

    Raises:
        ResultsError: the folder has no CSVs, or a file is malformed (the
            message names the file).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"{directory}: no such results folder")
    folder = directory / "raw" if (directory / "raw").is_dir() else directory
    paths = sorted(folder.glob("*.csv"))
    if not paths:
        raise ResultsError(f"{folder}: no result CSVs found; run `pebench run` first")
    frames = []
    for path in paths:
        try:
            frame = read_run_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ResultsError(f"{path}: unreadable CSV ({str(exc).splitlines()[0]})") from None
        _check_columns(frame, path)
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True, sort=False)
    try:
        _check_values(data, folder)  # once for all files; on failure find the file to name
    except ResultsError:
        for path, frame in zip(paths, frames, strict=True):
            _check_values(frame, path)
        raise
    if not include_failed:
        data = data[data["status"] != "failed"].reset_index(drop=True)
    return data


# --------------------------------------------------------------------------- per run


def order_dependent(task: str) -> bool | None:
    """Whether ``task`` is order-dependent (``None`` for a task not registered in this install)."""
    from pebench import tasks

    try:
        return bool(tasks.TASKS.meta(task)["order_dependent"])
    except KeyError:
        return None


def generalization_length(
    lengths: Sequence[int], seq_acc: Sequence[float], id_seq_acc: float,
    fraction: float = GENERALIZATION_FRACTION, min_id: float = GENERALIZATION_MIN_ID_SEQ_ACC,
) -> float:
    """Largest evaluated length L such that every evaluated length <= L keeps ``seq_acc >= fraction * id_seq_acc``.

    ``0`` when already the shortest evaluated length falls below the bar;
    NaN when ``id_seq_acc < min_id`` (a run that does not fit its training
    lengths has no generalization to measure).
    """
    if not np.isfinite(id_seq_acc) or id_seq_acc < min_id:
        return float("nan")
    bar = fraction * id_seq_acc
    reached = 0
    for length, acc in sorted(zip(lengths, seq_acc, strict=True)):
        if acc < bar:
            break
        reached = length
    return float(reached)


def _variant_labels(eval_variants: object) -> list[str]:
    """Evaluation variants of a run from its ``eval_variants`` JSON (failed runs have no ``variant`` rows)."""
    labels = [BASE_VARIANT]
    if isinstance(eval_variants, str) and eval_variants.strip():
        try:
            labels += [label for label, _options in json.loads(eval_variants)]
        except (ValueError, TypeError):
            pass
    return labels


def run_metrics(data: pd.DataFrame) -> pd.DataFrame:
    """One row per run and evaluation variant with every run metric of :mod:`pebench.metrics`.

    ID/OOD means use the ``original`` condition. ``order_reliance`` (ID token
    accuracy on original minus shuffled inputs, at the lengths evaluated
    shuffled) is set on order-dependent tasks, ``invariance_gap`` (the same
    difference) on order-invariant ones. Perplexity is ``exp`` of the mean
    loss per output token (nats); ``train_perplexity`` is at the longest
    evaluated length <= ``train_max_len`` and ``perplexity_ratio`` is
    ``ood_perplexity / train_perplexity``. Failed runs appear once per variant
    they would have had, with ``status="failed"`` and NaN metrics. Derived
    metrics (registered with a function) are computed in registration order.
    """
    if data.empty:
        raise ResultsError("no result rows to aggregate")
    keys = ["run_id", "variant"]
    completed = data[data["status"] != "failed"].copy()
    completed["variant"] = completed["variant"].fillna(BASE_VARIANT) if "variant" in completed else BASE_VARIANT
    if "condition" not in completed.columns:
        completed["condition"] = "original"
    completed["is_id"] = completed["eval_len"] <= completed["train_max_len"]
    info_columns = [c for c in (*CELL_COLUMNS, "seed", "status", "params", "encoding_params", "train_seconds",
                                "final_train_loss", "equivariance_gap_init", "equivariance_gap_trained", "steps",
                                "train_min_len") if c in completed.columns and c not in keys]
    runs = completed.groupby(keys, sort=False)[info_columns].first()
    original = completed[completed["condition"] == "original"].sort_values("eval_len")
    measured = ["token_acc", "seq_acc", "loss", "chance_token_acc"]
    for prefix, part in (("id", original[original["is_id"]]), ("ood", original[~original["is_id"]])):
        means = part.groupby(keys)[measured].mean()
        runs = runs.join(means.rename(columns=lambda c, p=prefix: f"{p}_{c}"))
    runs["generalization_length"] = _generalization_lengths(original, runs["id_seq_acc"], keys)
    at_train = original[original["is_id"]].groupby(keys)["loss"].last()
    runs["train_perplexity"] = np.exp(at_train)
    for metric in metric_registry.derived():
        runs[metric.name] = metric.compute(runs)
    shuffled = completed[(completed["condition"] == "shuffled") & completed["is_id"]]
    paired = original.merge(shuffled[[*keys, "eval_len"]], on=[*keys, "eval_len"])
    runs["shuffled_token_acc"] = shuffled.groupby(keys)["token_acc"].mean()
    effect = paired.groupby(keys)["token_acc"].mean().reindex(runs.index) - runs["shuffled_token_acc"]
    runs = runs.reset_index()
    failed = _failed_runs(data)
    runs = pd.concat([runs, failed], ignore_index=True) if not failed.empty else runs
    for column in metric_registry.directions("run"):
        if column not in runs.columns:
            runs[column] = float("nan")
    effect = runs.set_index(keys).index.map(effect.to_dict()).to_numpy(dtype=float, na_value=np.nan)
    dependent = runs["task"].map(order_dependent)
    runs["order_dependent"] = dependent
    runs["order_reliance"] = np.where(dependent == True, effect, np.nan)  # noqa: E712 (None -> NaN)
    runs["invariance_gap"] = np.where(dependent == False, effect, np.nan)  # noqa: E712
    return runs.sort_values([*CELL_COLUMNS, "seed"], key=sort_key).reset_index(drop=True)


def _generalization_lengths(original: pd.DataFrame, id_seq_acc: pd.Series, keys: list[str]) -> pd.Series:
    """:func:`generalization_length` of every run (``original`` sorted by ``eval_len``)."""
    lengths = original["eval_len"].to_numpy()
    accuracy = original["seq_acc"].to_numpy(dtype=float)
    values = {
        key: generalization_length(lengths[index], accuracy[index], id_seq_acc.get(key, float("nan")))
        for key, index in original.groupby(keys).indices.items()
    }
    return pd.Series(values, dtype=float).reindex(id_seq_acc.index)


def _failed_runs(data: pd.DataFrame) -> pd.DataFrame:
    """One metric-less row per failed run and variant it would have had."""
    records = []
    for run_id, rows in data[data["status"] == "failed"].groupby("run_id", sort=False):
        first = rows.iloc[0]
        for variant in _variant_labels(first.get("eval_variants")):
            record = {c: first[c] for c in CELL_COLUMNS if c != "variant"}
            record.update(run_id=run_id, variant=variant, seed=first["seed"], status="failed",
                          error=first.get("error"), steps=first["steps"],
                          train_min_len=first.get("train_min_len", float("nan")))
            records.append(record)
    return pd.DataFrame.from_records(records)


def sort_key(column: pd.Series) -> pd.Series:
    """Sort encodings in their canonical order (:func:`encoding_rank`), order-dependent tasks before the
    controls, the trained model before its evaluation variants (which keep the order their experiment
    declares them in, i.e. the order of first appearance in ``column``), everything else naturally."""
    if column.name == "encoding":
        return column.map(encoding_rank)
    if column.name == "task":  # order-dependent tasks first, then the controls
        return column.map(lambda task: (order_dependent(task) is False, task))
    if column.name == "variant":
        order = {v: i for i, v in enumerate(dict.fromkeys([BASE_VARIANT, *column]))}
        return column.map(order)
    return column


def encoding_rank(name: str) -> tuple[int, str]:
    """Sort key putting the compared encodings in their canonical order, then any others by name."""
    from pebench.experiment import COMPARED_ENCODINGS

    order = list(COMPARED_ENCODINGS)
    return (order.index(name), "") if name in order else (len(order), str(name))


# --------------------------------------------------------------------------- across seeds


def t_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean (NaN with fewer than 2 values)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return float("nan")
    sd = values.std(ddof=1)
    return float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * sd / math.sqrt(len(values)))


def seed_statistics(values: Sequence[float] | np.ndarray, higher_is_better: bool | None = None) -> dict[str, float]:
    """``mean``, ``std`` (ddof=1), ``ci95`` (t half-width), ``best`` (best of seeds) and ``n`` of finite values."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = len(values)
    if n == 0:
        return {"mean": float("nan"), "std": float("nan"), "ci95": float("nan"), "best": float("nan"), "n": 0}
    best = float("nan") if higher_is_better is None else float(values.max() if higher_is_better else values.min())
    return {
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if n > 1 else float("nan"),
        "ci95": t_interval(values),
        "best": best,
        "n": n,
    }


def grouped_statistics(
    frame: pd.DataFrame, keys: Sequence[str], metrics: dict[str, bool | None]
) -> pd.DataFrame:
    """:func:`seed_statistics` of every metric per group of ``keys`` (vectorized; NaNs ignored).

    ``metrics`` maps each column to higher-is-better (``None``: no best-of-seeds).
    """
    from scipy import stats

    grouped = frame.groupby(list(keys), sort=False, dropna=False)[list(metrics)]
    values = grouped.agg(["mean", "std", "count", "max", "min"])
    out = {}
    for metric, higher in metrics.items():
        n = values[(metric, "count")]
        std = values[(metric, "std")].where(n > 1)
        t = pd.Series(stats.t.ppf(0.975, np.maximum(n - 1, 1)), index=n.index)
        out[f"{metric}_mean"] = values[(metric, "mean")]
        out[f"{metric}_std"] = std
        out[f"{metric}_ci95"] = t * std / np.sqrt(n)
        best = values[(metric, "max" if higher else "min")] if higher is not None else np.nan
        out[f"{metric}_best"] = best
        out[f"{metric}_n"] = n
    return pd.DataFrame(out, index=values.index)


def aggregate(runs: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Across seeds: one row per cell (:data:`CELL_COLUMNS`) from :func:`run_metrics` output.

    Columns ``<metric>_mean``, ``_std``, ``_ci95``, ``_best`` (best of seeds,
    only for metrics with a direction, else NaN) and ``_n``, plus ``n_runs``,
    ``n_seeds`` (completed runs, ok or diverged), ``n_diverged``, ``n_failed``,
    ``failed_seeds``, ``order_dependent`` and ``steps``.
    """
    keys = list(CELL_COLUMNS)
    directions = metric_registry.directions("run")
    metrics = {m: directions.get(m) for m in (metrics or directions)}
    flags = runs.assign(
        n_runs=1,
        n_seeds=runs["status"] != "failed",
        n_diverged=runs["status"] == "diverged",
        n_failed=runs["status"] == "failed",
    )
    grouped = flags.groupby(keys, sort=False, dropna=False)
    status = grouped[["n_runs", "n_seeds", "n_diverged", "n_failed"]].sum().astype(int)
    status = status.join(grouped[["order_dependent", "steps"]].first())
    failed = runs[runs["status"] == "failed"].sort_values("seed")
    status["failed_seeds"] = failed.groupby(keys, sort=False, dropna=False)["seed"].agg(
        lambda s: ",".join(str(v) for v in s))
    status["failed_seeds"] = [v if isinstance(v, str) else "" for v in status["failed_seeds"]]
    completed = runs[runs["status"] != "failed"]
    statistics = grouped_statistics(completed, keys, metrics)
    cells = status.join(statistics).reset_index()
    for metric in metrics:  # cells whose every run failed have no statistics: n = 0
        cells[f"{metric}_n"] = cells[f"{metric}_n"].fillna(0).astype(int)
    return cells


def curves(data: pd.DataFrame) -> pd.DataFrame:
    """Per cell, evaluation length and condition: seed statistics of token/seq accuracy, loss and perplexity.

    ``perplexity_ratio`` is each run's perplexity at that length divided by
    its perplexity at the longest evaluated length <= ``train_max_len``.
    Columns as in :func:`aggregate`, plus ``chance_token_acc``.
    """
    completed = data[data["status"] != "failed"].copy()
    if completed.empty:
        return pd.DataFrame(columns=[*CELL_COLUMNS, "eval_len", "condition"])
    completed["variant"] = completed["variant"].fillna(BASE_VARIANT)
    completed["perplexity"] = np.exp(completed["loss"].astype(float))
    at_train = (
        completed[completed["eval_len"] <= completed["train_max_len"]]
        .sort_values("eval_len")
        .groupby(["run_id", "variant", "condition"])["perplexity"]
        .last()
        .rename("train_perplexity")
    )
    completed = completed.join(at_train, on=["run_id", "variant", "condition"])
    completed["perplexity_ratio"] = completed["perplexity"] / completed["train_perplexity"]
    keys = [*CELL_COLUMNS, "eval_len", "condition"]
    frame = grouped_statistics(completed, keys, metric_registry.directions("length"))
    frame["chance_token_acc"] = completed.groupby(keys, sort=False, dropna=False)["chance_token_acc"].mean()
    frame = frame.reset_index()
    return frame.sort_values([*CELL_COLUMNS, "condition", "eval_len"], key=sort_key).reset_index(drop=True)


# --------------------------------------------------------------------------- comparisons


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN entries are left out of the family and stay NaN)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def welch_greater(best: np.ndarray, other: np.ndarray) -> float:
    """One-sided Welch t-test p-value of ``mean(best) > mean(other)`` (NaN with < 2 values on a side)."""
    from scipy import stats

    best, other = np.asarray(best, float), np.asarray(other, float)
    best, other = best[np.isfinite(best)], other[np.isfinite(other)]
    if len(best) < 2 or len(other) < 2:
        return float("nan")
    if best.var(ddof=1) == 0 and other.var(ddof=1) == 0:  # t undefined: the difference is exact
        return 1.0 if best.mean() <= other.mean() else 0.0
    with warnings.catch_warnings():  # nearly identical seeds: scipy warns about precision, the p-value is fine
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(best, other, equal_var=False, alternative="greater").pvalue)


def compare_to_best(
    runs: pd.DataFrame,
    metric: str,
    higher_is_better: bool = True,
    *,
    group: Sequence[str] = GROUP_COLUMNS,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Per group (e.g. a task), compare every contender's ``metric`` with the best contender's.

    The best is the contender with the best mean over completed seeds (ties
    all count as best). Every other contender is tested with
    :func:`welch_greater` (direction flipped for lower-is-better metrics) and
    the p-values of a group are Holm-corrected.

    Returns:
        One row per cell: the cell columns, ``metric``, ``mean``, ``n``,
        ``is_best``, ``p_value``, ``p_holm`` and ``not_worse`` (best, or
        adjusted p >= ``alpha``; False when untestable).
    """
    group = list(group)
    contenders = [c for c in CELL_COLUMNS if c not in group]
    completed = runs[(runs["status"] != "failed") & np.isfinite(runs[metric].astype(float))]
    sign = 1.0 if higher_is_better else -1.0
    records = []
    for _, rows in completed.groupby(group, sort=False, dropna=False):
        samples = {key: sign * cell[metric].to_numpy(float)
                   for key, cell in rows.groupby(contenders, sort=False, dropna=False)}
        means = {key: values.mean() for key, values in samples.items()}
        top = max(means.values())
        best_keys = [key for key, m in means.items() if m >= top - 1e-12]
        best = samples[best_keys[0]]
        others = [key for key in samples if key not in best_keys]
        adjusted = holm([welch_greater(best, samples[key]) for key in others])
        p_raw = dict(zip(others, [welch_greater(best, samples[key]) for key in others], strict=True))
        p_adj = dict(zip(others, adjusted, strict=True))
        first = rows.iloc[0]
        for key, values in samples.items():
            record = {c: first[c] for c in group}
            record.update(dict(zip(contenders, key, strict=True)))
            is_best = key in best_keys
            p = p_adj.get(key, float("nan"))
            record.update(
                metric=metric, mean=sign * means[key], n=len(values), is_best=is_best,
                p_value=p_raw.get(key, float("nan")), p_holm=p,
                not_worse=bool(is_best or (np.isfinite(p) and p >= alpha)),
            )
            records.append(record)
    columns = [*CELL_COLUMNS, "metric", "mean", "n", "is_best", "p_value", "p_holm", "not_worse"]
    return pd.DataFrame.from_records(records, columns=columns)
