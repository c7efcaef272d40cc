"""How well a pebench replication agrees with the paper it replicates: the pre-registered agreement scores.

Two scores, both computed from run-level results (one row per run, as :mod:`pebench.analysis.leaderboard` ranks them):

- :func:`ranking_agreement`: Kendall's tau between pebench's aggregate ranking of the paper's encodings
  (mean reciprocal rank over tasks, the encodings ranked among themselves) and the paper's published
  aggregate, with a 95% bootstrap interval over seeds (resampled within every task and encoding).
- :func:`claim_agreement`: for each ordered pair the paper claims (``a`` better than ``b``), pebench's
  paired test of the two (:func:`pebench.analysis.leaderboard.pairwise`, Holm-corrected over the claims) read as
  ``agrees``, ``contradicts`` or ``unresolved`` (no significant difference, or not tested).

Every replication is a record in :data:`REPLICATIONS` (:class:`Replication`: its paper, metric, setup, published
aggregate, claims and score), registered by its experiment script through :func:`declare`; a check declared for it
(a scale check or a check in arms) is a record in :data:`CHECKS`. ``pebench report`` reads them
(:mod:`pebench.report.replications`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from pebench.analysis import leaderboard
from pebench.analysis.results import holm, t_interval
from pebench.registry import Registry
from pebench.store.schema import GROUP_COLUMNS, encoding_label, fitted

#: how a claim is read from pebench's verdict on it
AGREES, CONTRADICTS, UNRESOLVED = "agrees", "contradicts", "unresolved"
#: a claim whose runs do not reach the regime the paper tested, or too few of them to resolve it (rule 7)
NOT_TESTABLE = "not testable at this budget"


@dataclass(frozen=True)
class RankingAgreement:
    """Kendall's tau (tau-b) between two rankings of the same encodings, with a bootstrap interval.

    ``ours`` and ``theirs``: the aggregate score of each shared encoding (higher is better), ``ours`` being
    pebench's MRR; ``n_tasks``: the tasks pebench's MRR is taken over; ``n_boot``: bootstrap replicates.
    """

    tau: float
    low: float
    high: float
    ours: pd.Series
    theirs: pd.Series
    n_tasks: int
    n_boot: int


def mrr(runs: pd.DataFrame, metric: str) -> pd.Series:
    """Mean reciprocal rank over tasks of every encoding in ``runs``, ranked among themselves
    (:func:`pebench.analysis.leaderboard.task_ranks`: an unfitted run scores the worst score)."""
    ranks = leaderboard.task_ranks(runs, metric)
    return (1.0 / ranks["rank"]).groupby(ranks["encoding"]).mean()


def kendall_tau(ours: pd.Series, theirs: pd.Series) -> float:
    """Kendall's tau-b between two scores of the same encodings (their shared index); NaN if fewer than 2."""
    shared = ours.index.intersection(theirs.index)
    if len(shared) < 2:
        return float("nan")
    from scipy import stats  # here: replication scripts are loaded by every command that lists runs

    return float(stats.kendalltau(ours[shared].to_numpy(float), theirs[shared].to_numpy(float)).statistic)


def ranking_agreement(
    runs: pd.DataFrame, metric: str, published: pd.Series, *, n_boot: int = 1000, seed: int = 0,
) -> RankingAgreement:
    """Kendall's tau between pebench's MRR of the ``published`` encodings (ranked among themselves, over the
    tasks of ``runs``) and ``published`` (encoding -> the paper's aggregate score, higher is better).

    The interval is the 2.5 and 97.5 percentiles of tau over ``n_boot`` replicates, each resampling the
    seeds with replacement within every task and encoding (deterministic for ``seed``).

    Raises:
        ValueError: fewer than two of the published encodings have runs.
    """
    runs = runs[runs["encoding"].isin(published.index)]
    if runs["encoding"].nunique() < 2:
        raise ValueError(f"need runs of at least two of {', '.join(published.index)} to compare rankings")
    ours = mrr(runs, metric)
    tau = kendall_tau(ours, published)
    taus = _bootstrap_taus(runs.reset_index(drop=True), metric, published, n_boot, seed)
    low, high = np.nanpercentile(taus, [2.5, 97.5]) if len(taus) else (np.nan, np.nan)
    n_tasks = runs["task"].nunique()
    return RankingAgreement(tau, float(low), float(high), ours.sort_values(ascending=False),
                            published[ours.index].sort_values(ascending=False), n_tasks, n_boot)


def _bootstrap_taus(runs: pd.DataFrame, metric: str, published: pd.Series, n_boot: int, seed: int) -> np.ndarray:
    """Kendall's tau of :func:`mrr` on ``n_boot`` seed-resampled copies of ``runs`` (index ``0..n-1``).

    Each replicate draws, for every (task, encoding) group of ``runs`` in sorted order, as many rows with
    replacement as the group has, and ranks the copy exactly as :func:`mrr` ranks a frame: base-variant runs
    only, failed runs left out, cells of :data:`pebench.store.schema.GROUP_COLUMNS` and encoding, tasks with
    fewer than two encodings dropped. The copy's ranks are computed on integer cell codes instead of a
    new frame (a pandas ``groupby`` per replicate took minutes per site build).
    """
    rng = np.random.default_rng(seed)
    groups = [group.index.to_numpy() for _, group in runs.groupby(["task", "encoding"], sort=True)]
    scores = leaderboard.run_scores(runs, metric).to_numpy(float)
    kept = ~np.isnan(scores) & runs.index.isin(leaderboard.trained_runs(runs).index)  # what mrr would score
    task_columns = [c for c in GROUP_COLUMNS if c in runs]
    task_code = runs.groupby(task_columns, sort=True, dropna=False).ngroup().to_numpy()
    encoding_code, encodings = pd.factorize(runs["encoding"], sort=True)
    n_tasks, n_encodings = task_code.max() + 1, len(encodings)
    cell = task_code * n_encodings + encoding_code
    higher = leaderboard.higher_is_better(metric)
    taus = np.empty(n_boot)
    for b in range(n_boot):
        rows = np.concatenate([group[rng.integers(0, len(group), size=len(group))] for group in groups])
        rows = rows[kept[rows]]
        sums = np.bincount(cell[rows], weights=scores[rows], minlength=n_tasks * n_encodings)
        counts = np.bincount(cell[rows], minlength=n_tasks * n_encodings)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / counts, np.nan).reshape(n_tasks, n_encodings)  # (task, encoding)
        means[(~np.isnan(means)).sum(1) < 2] = np.nan  # a task with one encoding ranks nothing
        reciprocal = 1.0 / leaderboard.average_ranks(means, higher)  # (task, encoding), NaN where absent
        present = ~np.isnan(reciprocal).all(0)  # so that no column nanmean reads is empty
        ours = pd.Series(np.nanmean(reciprocal[:, present], axis=0), index=encodings[present])
        taus[b] = kendall_tau(ours, published)
    return taus


def claim_agreement(
    runs: pd.DataFrame, claims: Sequence[tuple[str, str]], metric: str, *, n_boot: int = 10_000, seed: int = 0,
) -> pd.DataFrame:
    """pebench's verdict on each claim ``(a, b)`` ("a is better than b"), one row per claim and arch: the
    columns of :func:`pebench.analysis.leaderboard.pairwise` plus ``reading`` (:data:`AGREES` if pebench finds ``a``
    significantly better, :data:`CONTRADICTS` if ``b``, else :data:`UNRESOLVED`)."""
    table = leaderboard.pairwise(runs, list(claims), metric, n_boot=n_boot, seed=seed)
    readings = {"a better": AGREES, "b better": CONTRADICTS}
    table["reading"] = [readings.get(verdict, UNRESOLVED) for verdict in table["verdict"]]
    return table


def regime_agreement(
    runs: pd.DataFrame, claims: Sequence[tuple[str, str]], metric: str, *, alpha: float = 0.05,
    n_boot: int = 10_000, seed: int = 0,
) -> pd.DataFrame:
    """pebench's verdict on each claim ``(a, b)`` ("a extrapolates better than b") only in the regime the paper
    tested: models that learnt the task. The claim is tested on the (task, seed) pairs in which both ``a`` and
    ``b`` fitted (:func:`pebench.analysis.leaderboard.pairwise` on those runs, Holm-corrected over the claims); where
    those pairs are too few for the test to ever reach ``alpha`` (none, or a smallest attainable p at or above
    it), the reading is :data:`NOT_TESTABLE`, never agrees or contradicts.

    Returns the columns of :func:`pebench.analysis.leaderboard.pairwise` on the jointly fitted pairs (``n_pairs``,
    ``mean_diff``, ...) plus ``raw_gain`` / ``raw_pairs``: the mean difference of the raw metric over every
    pair, fitted or not (what an ungated reading would report, shown beside the gated one), and ``reading``.
    """
    fit = fitted(runs)
    keys = ["arch", "task", "seed"]
    gated, raw = [], {}
    for a, b in claims:
        left, right = (runs[runs["encoding"] == name].assign(fit=fit).set_index(keys) for name in (a, b))
        both = left[[metric, "fit"]].add_suffix("_a").join(right[[metric, "fit"]].add_suffix("_b"), how="inner")
        both = both.dropna(subset=[f"{metric}_a", f"{metric}_b"])
        difference = both[f"{metric}_a"] - both[f"{metric}_b"]
        for arch, part in difference.groupby(level="arch"):
            raw[(arch, a, b)] = (part.mean(), len(part))
        joint = both[both["fit_a"] & both["fit_b"]].index
        in_joint = runs.set_index(keys).index.isin(joint)
        gated.append(runs[runs["encoding"].isin([a, b]).to_numpy() & in_joint])
    jointly = pd.concat(gated, ignore_index=True).drop_duplicates("run_id") if gated else runs.iloc[:0]
    table = leaderboard.pairwise(jointly.assign(fitted=True), list(claims), metric, n_boot=n_boot, seed=seed,
                                 alpha=alpha)
    tested = set(zip(table["arch"], table["a"], table["b"], strict=True))
    missing = [dict(arch=arch, a=a, b=b, metric=metric, n_pairs=0, verdict="not tested", note="")
               for arch in sorted(runs["arch"].unique()) for a, b in claims if (arch, a, b) not in tested]
    if missing:  # no jointly fitted run of the arch at all: pairwise saw none
        table = pd.concat([table, pd.DataFrame(missing)], ignore_index=True)
    table["raw_gain"] = [raw.get((r.arch, r.a, r.b), (np.nan, 0))[0] for r in table.itertuples()]
    table["raw_pairs"] = [raw.get((r.arch, r.a, r.b), (np.nan, 0))[1] for r in table.itertuples()]
    readings = {"a better": AGREES, "b better": CONTRADICTS, "no significant difference": UNRESOLVED}
    table["reading"] = [readings.get(verdict, NOT_TESTABLE) for verdict in table["verdict"]]
    unpaired = table["n_pairs"] == 0
    table.loc[unpaired, "note"] = [f"no task-seed pair in which both fitted, of {n} pairs run"
                                   for n in table.loc[unpaired, "raw_pairs"]]
    return table


def pooled_gain(table: pd.DataFrame, gain: str = "mean_diff", pairs: str = "n_pairs") -> tuple[float, int]:
    """The mean of a :func:`regime_agreement` table's ``gain`` column pooled over its claims, each weighted by its
    ``pairs``, and the number of pairs: the gain over the jointly fitted pairs by default (``mean_diff``,
    ``n_pairs``), or over every pair run, fitted or not (``raw_gain``, ``raw_pairs``). NaN without pairs."""
    n = int(table[pairs].sum())
    return (float((table[gain].fillna(0) * table[pairs]).sum() / n) if n else float("nan")), n


def growth(rows: pd.DataFrame) -> pd.DataFrame:
    """Perplexity growth of every language-model run: its perplexity at the longest evaluated context over
    its perplexity at the training context (``exp`` of the losses; 1 = no degradation).

    ``rows``: length-level rows (:func:`pebench.store.load`) with ``run_id``, ``encoding``, ``seed``,
    ``eval_len``, ``train_max_len`` and ``loss``. Returns one row per run: ``encoding``, ``seed``, ``growth``.
    """
    rows = rows[rows["status"] == "ok"] if "status" in rows else rows
    records = []
    for run_id, run in rows.groupby("run_id", sort=True):
        at = run.set_index("eval_len")["loss"]
        trained = int(run["train_max_len"].iloc[0])
        records.append(dict(run_id=run_id, encoding=run["encoding"].iloc[0], seed=int(run["seed"].iloc[0]),
                            growth=float(np.exp(at[at.index.max()] - at[trained]))))
    return pd.DataFrame.from_records(records, columns=["run_id", "encoding", "seed", "growth"])


def growth_table(rows: pd.DataFrame, published: pd.Series) -> pd.DataFrame:
    """Every encoding's language-model runs in one table, least growth first: ``seeds``, the perplexity at the
    training context (``ppl_train``, mean over seeds, and ``ppl_train_ci``, the 95% t half-width), the
    perplexity growth of :func:`growth` (``growth``, ``growth_ci``) and the paper's growth where ``published``
    (encoding -> growth) has one (``paper``, else NaN). ``rows``: length-level rows as for :func:`growth`."""
    rows = rows[rows["status"] == "ok"] if "status" in rows else rows
    runs = growth(rows)
    at_train = rows[rows["eval_len"] == rows["train_max_len"]].drop_duplicates("run_id").set_index("run_id")
    runs = runs.assign(ppl_train=np.exp(at_train.loc[runs["run_id"], "loss"].to_numpy()))
    table = runs.groupby("encoding").agg(
        seeds=("seed", "size"), ppl_train=("ppl_train", "mean"), ppl_train_ci=("ppl_train", t_interval),
        growth=("growth", "mean"), growth_ci=("growth", t_interval))
    table["paper"] = published.reindex(table.index)
    return table.sort_values("growth")


def growth_agreement(
    runs: pd.DataFrame, published: pd.Series, *, n_boot: int = 1000, seed: int = 0,
) -> RankingAgreement:
    """Kendall's tau between pebench's mean perplexity growth (:func:`growth`, over seeds) of the ``published``
    encodings and ``published`` (encoding -> the paper's growth), with a 95% bootstrap interval over seeds
    (resampled within every encoding). ``runs``: the frame :func:`growth` returns.

    Raises:
        ValueError: fewer than two of the published encodings have runs.
    """
    runs = runs[runs["encoding"].isin(published.index)]
    if runs["encoding"].nunique() < 2:
        raise ValueError(f"need runs of at least two of {', '.join(published.index)} to compare rankings")
    ours = runs.groupby("encoding")["growth"].mean()
    tau = kendall_tau(ours, published)
    rng = np.random.default_rng(seed)
    groups = [group["growth"].to_numpy() for _, group in runs.groupby("encoding", sort=True)]
    names = sorted(runs["encoding"].unique())
    taus = [kendall_tau(pd.Series([rng.choice(g, size=len(g)).mean() for g in groups], index=names), published)
            for _ in range(n_boot)]
    low, high = np.nanpercentile(taus, [2.5, 97.5]) if taus else (np.nan, np.nan)
    return RankingAgreement(tau, float(low), float(high), ours.sort_values(), published[ours.index].sort_values(),
                            1, n_boot)


def growth_claims(runs: pd.DataFrame, claims: Sequence[tuple[str, str]], *, seed: int = 0,
                  alpha: float = leaderboard.ALPHA) -> pd.DataFrame:
    """pebench's verdict on each claim ``(a, b)`` ("a's perplexity grows less than b's"): the growth of ``b``
    minus that of ``a``, paired by seed (the seeds share their data streams), tested by the sign-flip
    permutation test (:func:`pebench.analysis.leaderboard.sign_flip_p`) with a Holm correction over the claims; the
    ``reading`` is :data:`AGREES`, :data:`CONTRADICTS` or :data:`UNRESOLVED` as in :func:`claim_agreement`.
    ``runs``: the frame :func:`growth` returns."""
    by_seed = runs.pivot_table(index="seed", columns="encoding", values="growth")
    records = []
    for a, b in claims:
        if a not in by_seed or b not in by_seed:
            records.append(dict(a=a, b=b, n_pairs=0, mean_diff=np.nan, p_value=np.nan))
            continue
        d = (by_seed[b] - by_seed[a]).dropna().to_numpy()
        records.append(dict(a=a, b=b, n_pairs=len(d), mean_diff=d.mean() if len(d) else np.nan,
                            p_value=leaderboard.sign_flip_p(d, seed=seed) if len(d) else np.nan))
    table = pd.DataFrame.from_records(records, columns=["a", "b", "n_pairs", "mean_diff", "p_value"])
    table["p_holm"] = holm(table["p_value"])
    table["reading"] = [UNRESOLVED if not (p < alpha) or d == 0 else AGREES if d > 0 else CONTRADICTS
                        for p, d in zip(table["p_holm"], table["mean_diff"], strict=True)]
    return table


def mean_gain(runs: pd.DataFrame, pairs: Sequence[tuple[str, str]], metric: str, *, n_boot: int = 10_000,
              seed: int = 0) -> tuple[float, float, float, int]:
    """Mean of ``metric`` of ``a`` minus ``b`` over every pair ``(a, b)``, paired by task and seed, in the
    leaderboard's scores (:func:`pebench.analysis.leaderboard.run_scores`: an unfitted run scores the worst), with a 95%
    percentile bootstrap interval over the paired differences. Returns ``(mean, low, high, n_pairs)``."""
    scored = runs.assign(score=leaderboard.run_scores(runs, metric))
    differences = []
    for a, b in pairs:
        left, right = (scored[scored["encoding"] == name].set_index(["task", "seed"])["score"] for name in (a, b))
        both = left.to_frame("a").join(right.rename("b"), how="inner").dropna()
        differences.append((both["a"] - both["b"]).to_numpy())
    d = np.concatenate(differences) if differences else np.empty(0)
    if len(d) == 0:
        return float("nan"), float("nan"), float("nan"), 0
    boot = d[np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))].mean(1)
    return float(d.mean()), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5)), len(d)


def task_table(runs: pd.DataFrame, metric: str, statistic: str = "mean") -> pd.DataFrame:
    """Per encoding (rows, in order of first appearance) and task (columns, likewise): ``statistic``
    (``"mean"`` or ``"max"``) over seeds of the leaderboard's score of ``metric`` (an unfitted run scores
    the worst, :func:`pebench.analysis.leaderboard.run_scores`), and a column ``fitted`` with the seeds fitted over
    the seeds run, summed over tasks (``"k/n"``)."""
    if statistic not in ("mean", "max"):
        raise ValueError(f"statistic must be 'mean' or 'max', not {statistic!r}")
    scored = runs.assign(score=leaderboard.run_scores(runs, metric), fitted_=fitted(runs))
    table = scored.pivot_table(index="encoding", columns="task", values="score", aggfunc=statistic, sort=False)
    fit = scored.groupby("encoding", sort=False)["fitted_"].agg(["sum", "size"])
    table["fitted"] = [f"{int(k)}/{n}" for k, n in zip(fit["sum"], fit["size"], strict=True)]
    return table


def experiment_runs(folder: Path, experiment: str) -> pd.DataFrame | None:
    """The run-level rows of ``experiment`` in a reported results folder (``summary/runs.csv``, written by
    ``pebench report``), or None when the folder holds none."""
    path = Path(folder) / "summary" / "runs.csv"
    if not path.exists():
        return None
    runs = pd.read_csv(path, dtype={"run_id": str})  # an id of digits and one "e" is no number
    runs = runs[runs["experiment"] == experiment]
    return None if runs.empty else runs


def fit_counts(runs: pd.DataFrame, encodings: Sequence[str]) -> str:
    """Runs fitted over runs made, per encoding of ``encodings`` that has runs, as ``NoPE 3/18, ALiBi 6/18``."""
    fit = runs.assign(fit=fitted(runs)).groupby("encoding")["fit"].agg(["sum", "size"])
    return ", ".join(f"{encoding_label(e)} {int(fit.loc[e, 'sum'])}/{int(fit.loc[e, 'size'])}"
                     for e in encodings if e in fit.index)


class Declared(Protocol):
    """What a replication reads of an experiment's declaration (a :class:`pebench.plan.experiment.Experiment`, which the
    experiment script registers and hands to the record): its name, description, script, report declaration, the
    suites it belongs to, and its run specs in a suite."""

    name: str
    description: str
    script: str
    report: Any
    configs: Mapping[str, Any]

    def runs(self, suite: str) -> list: ...


def interval_verdict(agreement: RankingAgreement, base: RankingAgreement) -> str:
    """The declared reading of one tau against another: ``"higher"`` or ``"lower"`` where the two 95% intervals
    do not overlap, ``"unresolved"`` where they do (intervals that meet at an end overlap)."""
    if agreement.low > base.high:
        return "higher"
    if agreement.high < base.low:
        return "lower"
    return "unresolved"


def remake_reading(agreement: RankingAgreement, base: RankingAgreement | None, base_name: str) -> str:
    """The sentence that reads a re-made replication's tau against the original's (``base``, of the experiment
    ``base_name``) by the declared rule of :func:`interval_verdict`; says the comparison is not made where the
    original's runs are not in the folder (``base`` None) or either tau is undefined."""
    rule = "a difference is read only where the two 95% intervals do not overlap"
    if base is None:
        return (f"Against the original replication (`{base_name}`): its runs are not in this folder, so the declared "
                f"comparison ({rule}) is not made.")
    if any(value != value for value in (agreement.low, agreement.high, base.low, base.high)):
        return (f"Against the original replication (`{base_name}`): a tau or its interval is undefined, so the "
                f"declared comparison ({rule}) is not made.")
    ours, theirs = (f"**{a.tau:.2f}** [{a.low:.2f}, {a.high:.2f}]" for a in (agreement, base))
    verdict = interval_verdict(agreement, base)
    if verdict == "unresolved":
        low, high = max(agreement.low, base.low), min(agreement.high, base.high)
        shared = f"meet at {low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"overlap on [{low:.2f}, {high:.2f}]"
        return (f"Against the original replication (`{base_name}`), tau {theirs}: this one's {ours} is **not "
                f"resolved** from it by the declared rule ({rule}; these two {shared}).")
    return (f"Against the original replication (`{base_name}`), tau {theirs}: this one's {ours} is **{verdict}**, "
            f"by the declared rule ({rule}; these two do not).")


def remake_comparison(record: Replication, folder: Path, agreement: RankingAgreement | None) -> str:
    """The sentence that reads ``record``'s tau (``agreement``) against that of the replication it re-makes
    (:attr:`Replication.remakes`, its runs read from the same reported ``folder`` and scored as ``record`` is:
    its metric, its published aggregate), by :func:`remake_reading`; empty for an original replication or where
    ``record`` has no tau."""
    if not record.remakes or agreement is None:
        return ""
    runs = experiment_runs(folder, record.remakes)
    base = None if runs is None else ranking_agreement(runs, record.metric, record.published())
    return remake_reading(agreement, base, record.remakes)


#: what a replication's score gives: the ranking agreement (None where no ranking is published), the claims table
#: (:func:`claim_agreement`, :func:`regime_agreement` or :func:`growth_claims`) and a sentence read beside them
Score = tuple[RankingAgreement | None, pd.DataFrame, str]


@dataclass(frozen=True)
class Replication:
    """A replication of a published experiment, as its experiment script declares it before any of its runs.

    Attributes:
        experiment: the experiment that makes its runs (in the ``replication`` suite), as its script declared it.
        paper: the BibTeX key of the paper replicated (``docs/references.bib``).
        metric: the metric its encodings are compared by (:mod:`pebench.metrics`; a language model's growth is
            computed from the ``loss`` column, which it names).
        aggregate_label: what the published aggregate is, in words (a column header).
        scores: the pre-registered scores, in a sentence.
        setup: the paper's setup as it states it, by aspect (model, training, ...).
        published: the paper's aggregate, encoding (or quantity) -> number.
        claims: the orders the paper claims, ``(a, b)`` for "a is better than b".
        score: the pre-registered scores from a reported folder (its ``summary/runs.csv``) and, for a language
            model, the folder's length-level rows (given, or None to load them from the folder's run files);
            None when the folder holds no run of the experiment.
        script: the script that declares it, relative to the repository.
        declared_in: the commit that added the script (before any of its runs was made).
        encodings, tasks: the declared order of the per-task tables (others follow in the order found).
        task_tables: the statistics over seeds of the per-task tables (``"mean"``, ``"max"``).
        per_task_note: why no per-task agreement is scored, where none is.
        remakes: the experiment of the replication this one re-makes (at another scale, scored alike), whose tau
            its section reads its own against by :func:`remake_reading`; empty for an original replication.
    """

    experiment: Declared
    paper: str
    metric: str
    aggregate_label: str
    scores: str
    setup: Mapping[str, str]
    published: Callable[[], pd.Series]
    claims: tuple[tuple[str, str], ...]
    score: Callable[[Path, pd.DataFrame | None], Score | None]
    script: str
    declared_in: str
    encodings: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    task_tables: tuple[str, ...] = ()
    per_task_note: str = ""
    remakes: str = ""

    @property
    def checks(self) -> list[ScaleCheck | ArmCheck]:
        """The checks declared for this replication (:data:`CHECKS` whose ``replicates`` is its experiment)."""
        return [CHECKS.get(name) for name in CHECKS.names() if CHECKS.get(name).replicates == self.name]

    @property
    def name(self) -> str:
        """The name of its experiment (and of the record)."""
        return self.experiment.name


@dataclass(frozen=True)
class ScaleCheck:
    """A replication's scale check: one task at several model sizes, each size an experiment.

    ``sizes``: ``(d_model, n_layers)``, the first the replication's own; ``experiment_name`` names a size's
    experiment and ``experiments`` holds each size's declaration (the replication's own for the first);
    ``summary`` reads a folder as ``(cells, taus, missing)`` (one row per size and encoding with ``size``,
    ``encoding``, ``fitted``, ``n``, ``id_seq``, ``ood``; size -> :class:`RankingAgreement` for the sizes with
    every run in; the experiments not complete), or None; ``reading``: what it asks and how it reads, in words.
    """

    name: str
    replicates: str
    task: str
    sizes: tuple[tuple[int, int], ...]
    experiment_name: Callable[[int, int], str]
    experiments: Mapping[str, Declared]
    summary: Callable[[Path], tuple[pd.DataFrame, dict, list[str]] | None]
    reading: str
    script: str
    declared_in: str

    @staticmethod
    def size_label(d_model: int, n_layers: int) -> str:
        """How a size is named in the check's tables (``"d64, 2 layers"``)."""
        return f"d{d_model}, {n_layers} layers"

    def size_verdicts(self, taus: Mapping[str, RankingAgreement]) -> list[tuple[str, str]]:
        """The declared reading of each size's tau against the standard size's: ``(size, verdict)`` for every size
        with a tau beyond the first, the verdict ``"higher"`` or ``"lower"`` where the two 95% intervals do not
        overlap and ``"unresolved"`` where they do; empty while the standard size has no tau."""
        standard = self.size_label(*self.sizes[0])
        if standard not in taus:
            return []
        return [(size, interval_verdict(agreement, taus[standard])) for size, agreement in taus.items()
                if size != standard]


@dataclass(frozen=True)
class ArmCheck:
    """A replication's check in arms: one task, each arm an experiment that changes one thing.

    ``arms``: experiment -> what it changes, in the order shown; ``experiments``: each arm's declaration;
    ``summary`` reads a folder as ``(cells, gains)`` (one row per arm and encoding with ``arm``, ``encoding``,
    ``fitted``, ``n``, ``fit_acc``, ``ood``, ``ood_raw``, ``ood_fitted``; per arm the mean gain ``mean``, ``low``,
    ``high``, ``pairs``), or None; ``question`` and ``why``: what it asks and why it was declared, in words.
    """

    name: str
    replicates: str
    task: str
    arms: Mapping[str, str]
    experiments: Mapping[str, Declared]
    summary: Callable[[Path], tuple[pd.DataFrame, pd.DataFrame] | None]
    question: str
    why: str
    script: str
    declared_in: str


#: every declared replication, by its experiment's name
REPLICATIONS: Registry[Replication] = Registry("replication", base=Replication)
#: every check declared for a replication, by name
CHECKS: Registry[ScaleCheck | ArmCheck] = Registry("replication check")


def declare(experiment: Declared, original: Replication | None = None, **fields: Any) -> Replication:
    """Register the replication whose runs ``experiment`` makes (as its script registered it), under its name: the
    record of ``fields``, or for a re-make the ``original`` replication's record with ``fields`` changed and read
    against the original (``remakes``). Its ``script`` is the experiment's, relative to the repository."""
    script = f"experiments/{Path(experiment.script).name}"
    if original is None:
        record = Replication(experiment=experiment, script=script, **fields)
    else:
        record = replace(original, experiment=experiment, script=script, remakes=original.name, **fields)
    return REPLICATIONS.register(experiment.name)(record)


def paragraph(text: str, index: int) -> str:
    """Paragraph ``index`` (blank-line separated) of ``text`` (a script's docstring), on one line."""
    return " ".join(text.split("\n\n")[index].split())
