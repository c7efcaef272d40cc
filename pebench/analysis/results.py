"""Aggregate run rows per run, across seeds, and compare encodings: statistics over :func:`pebench.store.load`.

The rows come from a results folder through :mod:`pebench.store` (which reads and verifies every run file)
and follow the row contract of :mod:`pebench.store.schema`. Everything here is computed from those raw rows:

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

import hashlib
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.store import ResultsError
from pebench.store.schema import (
    BASE_VARIANT,
    CELL_COLUMNS,
    CHECKSUM_COLUMN,
    GROUP_COLUMNS,
    completed,
    encoding_rank,
    fit_flag,
    fit_flags,
    fitted,
    order_dependent,
    sort_key,
    variant_labels,
)

#: a run whose ID sequence accuracy is below this has no generalization length (nothing to stay close to)
GENERALIZATION_MIN_ID_SEQ_ACC = 0.1
#: fraction of the ID sequence accuracy a length must keep to count as generalized
GENERALIZATION_FRACTION = 0.9
#: significance level of :func:`compare_to_best`
ALPHA = 0.05


# --------------------------------------------------------------------------- per run


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
    evaluated = data[completed(data)].copy()
    evaluated["variant"] = evaluated["variant"].fillna(BASE_VARIANT) if "variant" in evaluated else BASE_VARIANT
    if "condition" not in evaluated.columns:
        evaluated["condition"] = "original"
    evaluated["is_id"] = evaluated["eval_len"] <= evaluated["train_max_len"]
    info_columns = [c for c in (*CELL_COLUMNS, "seed", "status", "params", "encoding_params", "train_seconds",
                                "final_train_loss", "equivariance_gap_init", "equivariance_gap_trained", "steps",
                                "train_min_len", "steps_to_fit", "steps_done", "fit_token_acc", "stop_reason",
                                "machine")
                    if c in evaluated.columns and c not in keys]
    runs = evaluated.groupby(keys, sort=False)[info_columns].first()
    original = evaluated[evaluated["condition"] == "original"].sort_values("eval_len")
    measured = [c for c in ("token_acc", "seq_acc", "loss", "chance_token_acc", "floor_token_acc", "floor_seq_acc")
                if c in original.columns]
    for prefix, part in (("id", original[original["is_id"]]), ("ood", original[~original["is_id"]])):
        means = part.groupby(keys)[measured].mean()
        runs = runs.join(means.rename(columns=lambda c, p=prefix: f"{p}_{c}"))
    runs["fitted"] = evaluated.groupby(keys, sort=False)["fitted"].first().map(fit_flag) if "fitted" in evaluated \
        else float("nan")
    runs["generalization_length"] = _generalization_lengths(original, runs["id_seq_acc"], keys)
    at_train = original[original["is_id"]].groupby(keys)["loss"].last()
    runs["train_perplexity"] = np.exp(at_train)
    for metric in metric_registry.derived():
        runs[metric.name] = metric.compute(runs)
    shuffled = evaluated[(evaluated["condition"] == "shuffled") & evaluated["is_id"]]
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
    for run_id, rows in data[~completed(data)].groupby("run_id", sort=False):
        first = rows.iloc[0]
        for variant in variant_labels(first.get("eval_variants")):
            record = {c: first[c] for c in CELL_COLUMNS if c != "variant"}
            record.update(run_id=run_id, variant=variant, seed=first["seed"], status="failed",
                          error=first.get("error"), steps=first["steps"],
                          train_min_len=first.get("train_min_len", float("nan")))
            records.append(record)
    return pd.DataFrame.from_records(records)


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
    """Across seeds: one row per cell (:data:`pebench.store.schema.CELL_COLUMNS`) from :func:`run_metrics` output.

    Columns ``<metric>_mean``, ``_std``, ``_ci95``, ``_best`` (best of seeds,
    only for metrics with a direction, else NaN) and ``_n``, plus ``n_runs``,
    ``n_seeds`` (completed runs, ok or diverged), ``n_diverged``, ``n_failed``,
    ``failed_seeds``, ``order_dependent`` and ``steps``. Metrics that judge a trained model
    (``needs_fit`` in :mod:`pebench.metrics`: OOD accuracy, order reliance, ...) are computed over the
    seeds that fitted (``fitted_mean`` is the fraction); ``judged`` is False for a cell with no fitted
    seed, whose numbers are then those of all its seeds and must be shown as not fitted.
    """
    keys = list(CELL_COLUMNS)
    directions = metric_registry.directions("run")
    metrics = {m: directions.get(m) for m in (metrics or directions)}
    flags = runs.assign(
        n_runs=1,
        n_seeds=completed(runs),
        n_diverged=runs["status"] == "diverged",
        n_failed=~completed(runs),
    )
    grouped = flags.groupby(keys, sort=False, dropna=False)
    status = grouped[["n_runs", "n_seeds", "n_diverged", "n_failed"]].sum().astype(int)
    status = status.join(grouped[["order_dependent", "steps"]].first())
    failed = runs[~completed(runs)].sort_values("seed")
    status["failed_seeds"] = failed.groupby(keys, sort=False, dropna=False)["seed"].agg(
        lambda s: ",".join(str(v) for v in s))
    status["failed_seeds"] = [v if isinstance(v, str) else "" for v in status["failed_seeds"]]
    evaluated = runs[completed(runs)]
    statistics = grouped_statistics(evaluated, keys, metrics)
    judged = [m for m in metric_registry.judged() if m in metrics]
    if judged and "fitted" in evaluated:
        # rule 1: a metric that judges a trained model counts fitted seeds only (or runs with no fit
        # criterion); a cell with none keeps every seed's numbers and is marked judged=False
        fit = evaluated[fitted(evaluated)]
        on_fitted = grouped_statistics(fit, keys, {m: metrics[m] for m in judged}) if not fit.empty else None
        has_fit = fit.groupby(keys, sort=False, dropna=False).size().reindex(statistics.index).fillna(0) > 0
        if on_fitted is not None:  # assigned, not DataFrame.update: a NaN (one fitted seed: no CI) must replace
            replaced = on_fitted.reindex(statistics.index)
            for column in replaced.columns:
                statistics[column] = replaced[column].where(has_fit, statistics[column])
        statistics["judged"] = has_fit
    cells = status.join(statistics).reset_index()
    if "judged" not in cells:
        cells["judged"] = True
    cells["judged"] = cells["judged"].fillna(False).astype(bool)
    for metric in metrics:  # cells whose every run failed have no statistics: n = 0
        cells[f"{metric}_n"] = cells[f"{metric}_n"].fillna(0).astype(int)
    return cells


def curves(data: pd.DataFrame) -> pd.DataFrame:
    """Per cell, evaluation length and condition: seed statistics of token/seq accuracy, loss and perplexity.

    ``perplexity_ratio`` is each run's perplexity at that length divided by
    its perplexity at the longest evaluated length <= ``train_max_len``.
    Columns as in :func:`aggregate`, plus the reference levels ``chance_token_acc``, ``floor_token_acc``
    and ``floor_seq_acc`` (the best accuracy without position information; NaN where the task has
    none) and, per cell, ``n_seeds``, ``n_fitted`` (seeds that met the fit criterion), ``fitted_fraction``
    (NaN: no criterion) and ``judged``. As in :func:`aggregate`, a line describes the trained models, so
    a cell with a fitted seed (or runs without a fit criterion) is drawn from those seeds only; a cell
    with none keeps every seed and has ``judged=False``: it must be drawn as not fitted.
    """
    evaluated = data[completed(data)].copy()
    if evaluated.empty:
        return pd.DataFrame(columns=[*CELL_COLUMNS, "eval_len", "condition"])
    evaluated["variant"] = evaluated["variant"].fillna(BASE_VARIANT)
    evaluated["perplexity"] = np.exp(evaluated["loss"].astype(float))
    at_train = (
        evaluated[evaluated["eval_len"] <= evaluated["train_max_len"]]
        .sort_values("eval_len")
        .groupby(["run_id", "variant", "condition"])["perplexity"]
        .last()
        .rename("train_perplexity")
    )
    evaluated = evaluated.join(at_train, on=["run_id", "variant", "condition"])
    evaluated["perplexity_ratio"] = evaluated["perplexity"] / evaluated["train_perplexity"]
    cell = list(CELL_COLUMNS)
    keys = [*cell, "eval_len", "condition"]
    fit = fitted(evaluated)
    per_run = evaluated.assign(flag=fit_flags(evaluated), fit=fit).groupby(
        [*cell, "run_id"], sort=False, dropna=False)[["flag", "fit"]].first()
    by_cell = per_run.groupby(level=cell, sort=False, dropna=False)
    counts = pd.DataFrame({
        "n_seeds": by_cell.size(),
        "n_fitted": by_cell["flag"].agg(lambda flag: int((flag == 1).sum())),
        "fitted_fraction": by_cell["flag"].mean(),
        "judged": by_cell["fit"].agg(lambda fit: bool(fit.any())),
    })
    judged = evaluated.join(counts["judged"], on=cell)["judged"]
    drawn = evaluated[fit | ~judged]
    frame = grouped_statistics(drawn, keys, metric_registry.directions("length"))
    references = [c for c in ("chance_token_acc", "floor_token_acc", "floor_seq_acc") if c in evaluated]
    frame = frame.join(evaluated.groupby(keys, sort=False, dropna=False)[references].mean())
    frame = frame.reset_index().join(counts, on=cell)
    for column in ("floor_token_acc", "floor_seq_acc"):
        if column not in frame:
            frame[column] = float("nan")
    return frame.sort_values([*CELL_COLUMNS, "condition", "eval_len"], key=sort_key).reset_index(drop=True)


# --------------------------------------------------------------------------- comparisons


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): sorted ascending, the ``i``-th smallest of ``m`` times
    ``m - i``, each at least the one before, at most 1. NaN entries are left out of the family and stay NaN.

    The same operations as statsmodels' ``multipletests(method="holm")`` (tests/test_results.py checks they agree
    bit for bit), without its ``gc.collect()`` on every call, which took a quarter of a report's time."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite])]
    adjusted[order] = np.minimum(np.maximum.accumulate(p[order] * np.arange(len(order), 0, -1)), 1.0)
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
    evaluated = runs[completed(runs) & np.isfinite(runs[metric].astype(float))]
    sign = 1.0 if higher_is_better else -1.0
    records = []
    for _, rows in evaluated.groupby(group, sort=False, dropna=False):
        samples = {key: sign * cell[metric].to_numpy(float)
                   for key, cell in rows.groupby(contenders, sort=False, dropna=False)}
        means = {key: values.mean() for key, values in samples.items()}
        top = max(means.values())
        best_keys = [key for key, m in means.items() if m >= top - 1e-12]
        best = samples[best_keys[0]]
        others = [key for key in samples if key not in best_keys]
        raw = [welch_greater(best, samples[key]) for key in others]
        p_raw = dict(zip(others, raw, strict=True))
        p_adj = dict(zip(others, holm(raw), strict=True))
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


def differing_values(a: pd.DataFrame, b: pd.DataFrame, columns: Sequence[str]
                     ) -> list[tuple[str, list[str], list[str]]]:
    """Per column of ``columns`` that both frames have, in that order: the column and the distinct values of each
    side (as text, sorted, missing values left out), where the two differ. What :func:`pebench.analysis.compare`
    and :mod:`pebench.analysis.verdict` call a protocol difference between two sets of runs."""
    found = []
    for column in columns:
        if column in a.columns and column in b.columns:
            values = [sorted(map(str, frame[column].dropna().unique())) for frame in (a, b)]
            if values[0] != values[1]:
                found.append((column, *values))
    return found


#: what two runs must share, number for number, to be the same model (:func:`identical_encodings`)
IDENTITY_COLUMNS = ("token_acc", "seq_acc", "loss")


def identical_encodings(data: pd.DataFrame) -> list[tuple[tuple[str, str], tuple[str, str], int]]:
    """Pairs of encodings that are one model in these results: every run one shares with the other (the same
    experiment, task, architecture, training length, variant and seed) has the same rows number for number
    (:data:`IDENTITY_COLUMNS` at every evaluation length and condition), over at least one shared run. A
    per-layer encoding configured so that no layer departs from another encoding (``irope`` with fewer blocks
    than its NoPE interval is ``rope``) is the case this finds. Each pair once, as ``(a, b, shared runs)`` with
    ``a`` and ``b`` ``(encoding, encoding_options)``, in the folder's encoding order."""
    rows = data[completed(data)]
    measured = [c for c in IDENTITY_COLUMNS if c in rows]
    if rows.empty or not measured:
        return []
    rows = rows.assign(variant=rows["variant"].fillna(BASE_VARIANT) if "variant" in rows else BASE_VARIANT,
                       condition=rows["condition"] if "condition" in rows else "original",
                       encoding_options=rows["encoding_options"].fillna("").astype(str)
                       if "encoding_options" in rows else "")
    cell = [c for c in ("experiment", "task", "task_version", "arch", "train_max_len", "variant", "seed")
            if c in rows]
    rows = rows.sort_values(["eval_len", "condition"], kind="stable")
    rows = rows.assign(row_hash=pd.util.hash_pandas_object(rows[["eval_len", "condition", *measured]], index=False))
    runs = rows.groupby(["encoding", "encoding_options", *cell], sort=False, dropna=False)["row_hash"].agg(tuple)
    table = runs.rename("rows").reset_index().pivot(index=cell, columns=["encoding", "encoding_options"],
                                                    values="rows")
    models = sorted(table.columns, key=lambda model: (encoding_rank(model[0]), model))
    pairs = []
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            both = table[[a, b]].dropna()
            if len(both) and (both[a] == both[b]).all():
                pairs.append((a, b, len(both)))
    return pairs


def results_version(data: pd.DataFrame) -> str:
    """The version of a set of results, for citing it: ``v<protocol>-<8 hex digits>``, the hex digits a hash of
    every run's id and row checksum (``rows_sha256``) in run-id order. The same runs always give the same
    version, on any machine; adding, removing or remaking any run changes it. ``<protocol>``: the runs' protocol
    version (2 for runs that predate the ``protocol`` column)."""
    runs = data.drop_duplicates("run_id").sort_values("run_id")
    checksums = runs[CHECKSUM_COLUMN].astype(str) if CHECKSUM_COLUMN in runs else pd.Series("", index=runs.index)
    digest = hashlib.sha256("\n".join(f"{r} {c}" for r, c in zip(runs["run_id"], checksums, strict=True)).encode())
    protocols = pd.to_numeric(runs["protocol"], errors="coerce").dropna() if "protocol" in runs else pd.Series([])
    protocol = int(protocols.max()) if len(protocols) else 2
    return f"v{protocol}-{digest.hexdigest()[:8]}"
