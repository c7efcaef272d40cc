"""One encoding against a suite's committed reference: the verdict of ``pebench evaluate`` (issue 65).

The encoding's own runs are joined to the reference's runs of every other encoding (none is rerun), and read
with the functions the reference's own report uses (:mod:`pebench.analysis.leaderboard`), so that a verdict
and a board of the reference plus the encoding can never disagree:

* per task, its fit and its score (the extrapolation board's, floor-normalised out-of-distribution accuracy;
  out-of-distribution perplexity for a language model) with a 95% t-interval over its fitted seeds, beside
  every baseline's on the same seeds (:func:`per_task`);
* its place on each board computed with the reference's runs plus its own, with its tier probability, and the
  declared baselines' task-level comparisons (:data:`pebench.protocol.VERDICT_BASELINES`, one Holm family);
* its harm on the order-free controls and the parameters it adds to the model.

On partial data it never ranks: :func:`verdict` then gives the per-task numbers it has and the cells that are
missing, and no board (``complete`` False).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pebench.analysis import leaderboard, results
from pebench.protocol import PARAMETER_FLAG, VERDICT_BASELINES
from pebench.store import ResultsError
from pebench.store.schema import completed, encoding_label, encoding_rank, fitted

#: the configuration columns a run of the encoding must share with the reference's runs of its task (the protocol
#: its numbers were made under), besides the encoding itself
PROTOCOL_COLUMNS = ("protocol", "task_version", "d_model", "n_layers", "n_heads", "steps", "batch_size", "lr",
                    "train_min_len", "train_max_len", "eval_lengths", "eval_n_examples", "fit_threshold")
#: the cells of a run (the per-task table's rows)
TASK_KEYS = ["experiment", "arch", "task"]
#: the score of a task: the extrapolation board's on order-dependent tasks, out-of-distribution token accuracy on
#: the order-free controls (the harm table's), out-of-distribution perplexity for a language model
SCORES = {True: (leaderboard.PRIMARY_SCORE, "ood_perplexity"), False: ("ood_token_acc",)}


class VerdictError(ResultsError):
    """The encoding's runs cannot be judged against this reference (another protocol, an encoding it already
    holds under another configuration); the message says which cells and columns differ."""


@dataclass
class Verdict:
    """What :func:`verdict` found. Frames are empty where there is nothing to say (no board on partial data).

    Attributes:
        encoding: the encoding judged.
        complete: every run the suite gives it is in (then, and only then, the boards are computed).
        missing: the cells with runs still to make: ``experiment``, ``arch``, ``task``, ``runs`` (how many).
        failed: the runs that ended in an error (``run_id``, ``task``, ``arch``, ``seed``, ``error``).
        per_task: :func:`per_task`.
        board: the extrapolation board of the reference plus the encoding (every encoding's row).
        capability: the capability board's rows of the encoding.
        harm: the harm table's rows of the encoding (against the position-free baseline).
        comparisons: the declared comparisons, the encoding as ``a``, each baseline as ``b``.
        parameters: per arch, the model's parameters with the encoding, those it adds, their share of the model
            without them, and ``flagged`` where that share exceeds :data:`pebench.protocol.PARAMETER_FLAG`.
        reference_version: the results version of the reference's runs (:func:`results_version`).
        own_version: the results version of the encoding's runs.
        identical: the reference's encodings that gave the same rows as it in every run they share, with how many
            runs that is (:func:`pebench.analysis.results.identical_encodings`): at this scale it is that model.
    """

    encoding: str
    complete: bool
    missing: pd.DataFrame
    failed: pd.DataFrame
    per_task: pd.DataFrame
    board: pd.DataFrame = field(default_factory=pd.DataFrame)
    capability: pd.DataFrame = field(default_factory=pd.DataFrame)
    harm: pd.DataFrame = field(default_factory=pd.DataFrame)
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)
    parameters: pd.DataFrame = field(default_factory=pd.DataFrame)
    reference_version: str = ""
    own_version: str = ""
    identical: list[tuple[str, int]] = field(default_factory=list)


def score_metric(runs: pd.DataFrame) -> str | None:
    """The score of a task's runs: the first of :data:`SCORES` for an order-dependent task (or one that does not
    say) or a control that they hold a value of (None: none)."""
    dependent = not ("order_dependent" in runs and (runs["order_dependent"] == False).all())  # noqa: E712
    return next((m for m in SCORES[dependent] if m in runs and runs[m].notna().any()), None)


def protocol_problems(own: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """Where the encoding's runs were made under another configuration than the reference's runs of the same
    experiment, arch and task (:data:`PROTOCOL_COLUMNS`): one phrase per such cell and column; cells the reference
    lacks are a problem too (the encoding would be judged on tasks no baseline ran)."""
    problems = []
    theirs = {key: part for key, part in reference.groupby(TASK_KEYS, sort=False)}
    for key, part in own.groupby(TASK_KEYS, sort=True):
        if key not in theirs:
            problems.append(f"{'/'.join(map(str, key))}: not in the reference")
            continue
        problems += [f"{'/'.join(map(str, key))}: {column} {', '.join(a)} (reference {', '.join(b)})"
                     for column, a, b in results.differing_values(part, theirs[key], PROTOCOL_COLUMNS)]
    return problems


def per_task(runs: pd.DataFrame, encoding: str) -> pd.DataFrame:
    """Per experiment, arch and task, the encoding's score beside every other encoding's on the same seeds.

    ``runs``: :func:`pebench.analysis.results.run_metrics` rows of the reference and the encoding (trained
    models). One row per cell and encoding (the judged one first, then the others in their canonical order):
    ``metric`` (:func:`score_metric` of the task), ``seeds`` (of the encoding's seeds, those this encoding
    ran), ``fitted`` (how many of them it fitted), ``score`` (the mean over them of the metric, as the
    extrapolation board reads it: fitted seeds only), ``low``/``high`` (95% t-interval; NaN under two seeds) and
    ``own`` (the judged encoding's row)."""
    runs = leaderboard.trained_runs(runs)
    runs = runs[completed(runs)]
    records = []
    for (experiment, arch, task), part in runs.groupby(TASK_KEYS, sort=True):
        metric = score_metric(part)
        seeds = set(part.loc[part["encoding"] == encoding, "seed"])
        if metric is None or not seeds:
            continue
        for name, own in part[part["seed"].isin(seeds)].groupby("encoding", sort=False):
            good = own[fitted(own)]
            values = good[metric].astype(float).dropna().to_numpy()
            mean = float(values.mean()) if len(values) else np.nan
            half = results.t_interval(values)
            records.append(dict(experiment=experiment, arch=arch, task=task, encoding=name, metric=metric,
                                seeds=len(own), fitted=int(fitted(own).sum()), score=mean, low=mean - half,
                                high=mean + half, own=name == encoding))
    columns = [*TASK_KEYS, "encoding", "metric", "seeds", "fitted", "score", "low", "high", "own"]
    table = pd.DataFrame.from_records(records, columns=columns)
    if table.empty:
        return table
    order = table.assign(_o=~table["own"], _e=table["encoding"].map(encoding_rank))
    return order.sort_values([*TASK_KEYS, "_o", "_e"]).drop(columns=["_o", "_e"]).reset_index(drop=True)


def missing_cells(own: pd.DataFrame, expected: pd.DataFrame) -> pd.DataFrame:
    """The cells of ``expected`` (one row per run the suite gives the encoding: ``run_id``, ``experiment``,
    ``arch``, ``task``) whose runs ``own`` (its rows) lacks, with how many: ``experiment``, ``arch``, ``task``,
    ``runs``."""
    have = set(own["run_id"]) if "run_id" in own else set()
    todo = expected[~expected["run_id"].isin(have)]
    return todo.groupby(TASK_KEYS, sort=True).size().rename("runs").reset_index()


def parameters(runs: pd.DataFrame, encoding: str) -> pd.DataFrame:
    """Per arch: the model's parameters with ``encoding`` (``params``), the encoding's own
    (``encoding_params``), their share of the model without them (``share``) and whether that exceeds
    :data:`~pebench.protocol.PARAMETER_FLAG` (``flagged``), over the encoding's trained runs (the largest, where
    tasks differ in vocabulary)."""
    own = leaderboard.trained_runs(runs)
    own = own[(own["encoding"] == encoding) & own["params"].notna()]
    records = []
    for arch, part in own.groupby("arch", sort=True):
        row = part.loc[part["params"].astype(float).idxmax()]
        total = float(row["params"])
        extra = float(row.get("encoding_params", 0.0) or 0.0)
        share = extra / (total - extra) if total > extra else np.nan
        records.append(dict(arch=arch, params=int(total), encoding_params=int(extra), share=share,
                            flagged=bool(share > PARAMETER_FLAG)))
    return pd.DataFrame.from_records(records, columns=["arch", "params", "encoding_params", "share", "flagged"])


def verdict(own: pd.DataFrame, reference: pd.DataFrame, encoding: str, expected: pd.DataFrame,
            baselines: Sequence[str] = VERDICT_BASELINES) -> Verdict:
    """The verdict on ``encoding`` from its run rows ``own`` (:func:`pebench.store.load` of its folder) against
    the ``reference``'s rows, given the runs the suite gives it (``expected``: ``run_id``, ``experiment``,
    ``arch``, ``task``, one row per run).

    The reference's own runs of ``encoding`` (a built-in encoding evaluated again) are set aside: the verdict is
    on the runs just made. Boards only when every expected run is in (a failed run is in, named in ``failed``);
    with no run in, every cell is missing.

    Raises:
        VerdictError: ``own`` holds runs of another encoding, or was made under another
            configuration than the reference (:func:`protocol_problems`).
    """
    names = set(own["encoding"]) if len(own) else set()
    if names - {encoding}:
        raise VerdictError(f"the runs to judge must all be of {encoding!r}; the folder holds "
                           f"{', '.join(sorted(map(str, names)))}")
    if not names:
        return Verdict(encoding, False, missing_cells(own, expected), pd.DataFrame(), pd.DataFrame(),
                       reference_version=results.results_version(reference))
    reference = reference[reference["encoding"] != encoding]
    problems = protocol_problems(own, reference)
    if problems:
        raise VerdictError(f"{len(problems)} cell(s) of {encoding!r} differ from the reference's protocol: "
                           f"{'; '.join(problems[:4])}{' ...' if len(problems) > 4 else ''}")
    own_runs = results.run_metrics(own)
    runs = pd.concat([results.run_metrics(reference), own_runs], ignore_index=True, sort=False)
    missing = missing_cells(own, expected)
    failed_columns = ["run_id", "experiment", "arch", "task", "seed", "error"]
    failed = own_runs.loc[~completed(own_runs), [c for c in failed_columns if c in own_runs]]
    found = Verdict(encoding, missing.empty, missing, failed.reset_index(drop=True), per_task(runs, encoding),
                    reference_version=results.results_version(reference), own_version=results.results_version(own),
                    identical=identical_to(own, reference, encoding))
    if not found.complete:
        return found
    board_runs = runs[runs["experiment"].isin(set(own_runs.loc[own_runs[leaderboard.PRIMARY_SCORE].notna(),
                                                                "experiment"]))] \
        if leaderboard.PRIMARY_SCORE in own_runs else runs.iloc[:0]
    found.board = leaderboard.extrapolation_board(board_runs)
    capability = leaderboard.capability(board_runs)
    found.capability = capability[capability["encoding"] == encoding].reset_index(drop=True)
    harm = leaderboard.harm(board_runs)
    found.harm = harm[harm["encoding"] == encoding].reset_index(drop=True)
    declared = [(encoding, b) for b in baselines if b != encoding]
    found.comparisons = leaderboard.pairwise(board_runs, declared, leaderboard.PRIMARY_SCORE, jointly_fitted=True,
                                             unit="task") if len(board_runs) else pd.DataFrame()
    found.parameters = parameters(own_runs, encoding)
    return found


def identical_to(own: pd.DataFrame, reference: pd.DataFrame, encoding: str) -> list[tuple[str, int]]:
    """The encodings of ``reference`` whose runs gave the same rows as ``encoding``'s runs ``own`` in every run they
    share, each with the number of shared runs (:func:`pebench.analysis.results.identical_encodings`): a new
    encoding that, at this scale, computes an existing one (as ``irope`` below its NoPE interval is ``rope``)."""
    pairs = results.identical_encodings(pd.concat([reference, own], ignore_index=True, sort=False))
    return [(b[0] if a[0] == encoding else a[0], n) for a, b, n in pairs if encoding in (a[0], b[0])]


def identical_sentences(found: Verdict) -> list[str]:
    """One sentence per encoding of the reference that the judged one is, at this scale (:attr:`Verdict.identical`):
    its placement and comparisons are that encoding's, not a result of its own."""
    return [f"identical to {encoding_label(other)}: the same rows in every one of the {n} runs they share (every "
            f"length, condition and metric, number for number), so at this scale it is that model: its placement "
            f"is {encoding_label(other)}'s, not a result of its own" for other, n in found.identical]


def placement(found: Verdict) -> pd.DataFrame:
    """The encoding's rows of its :attr:`Verdict.board` (one per arch): where it stands, with its tier probability,
    advantage, win rate and tasks judged."""
    board = found.board
    return board[board["encoding"] == found.encoding].reset_index(drop=True) if len(board) else board


def summary(found: Verdict) -> list[str]:
    """The verdict in sentences (what ``pebench evaluate`` prints and its Markdown leads with): on partial data,
    what is missing and that nothing is ranked; else its placement per arch, the declared comparisons that
    resolved, its harm and its parameters."""
    if not found.complete:
        runs = int(found.missing["runs"].sum())
        cells = len(found.missing)
        return [f"{found.encoding}: {runs} run(s) of {cells} cell(s) still to make; no board, no tier and no "
                "comparison until every run the suite gives it is in (per-task numbers below are partial)",
                *identical_sentences(found)]
    lines = identical_sentences(found)
    for row in placement(found).itertuples():
        if not row.ranked:
            lines.append(f"{row.arch}: not ranked: no order-dependent task fitted beside another encoding "
                         f"(battery {row.battery} tasks)")
            continue
        where = row.placement if row.tier == 0 or row.placement != f"tier {row.tier}" else f"tier {row.tier}"
        held = f" (P(tier) {row.tier_probability:.3f})" if np.isfinite(row.tier_probability) else ""  # none below floor
        lines.append(f"{row.arch}: {where}{held}, score {row.score:.2f} "
                     f"[{row.low:.2f}, {row.high:.2f}], advantage {row.advantage:+.3f}, wins {row.win_rate:.0%} of "
                     f"its task comparisons, judged on {row.n_tasks} of {row.battery} tasks"
                     + (" (few tasks)" if row.few_tasks else ""))
    comparisons = found.comparisons
    for row in comparisons.itertuples() if len(comparisons) else ():
        text = leaderboard.verdict_text(row)
        numbers = row.note
        if np.isfinite(row.p_value):
            numbers = (f"{row.mean_diff:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}] over {row.n_tasks} tasks, Holm "
                       f"p {row.p_holm:.3g}" + (f"; {row.note}" if row.note else ""))
        lines.append(f"{row.arch} vs {row.b}: {text} ({numbers})")
    if not len(comparisons):
        lines.append("declared comparisons: none tested (no order-dependent task on which the encoding and a "
                     "declared baseline both fitted a seed)")
    for row in found.harm.itertuples():
        lines.append(f"{row.arch} controls: {'harms' if row.harms else 'no harm detected'} against the "
                     f"position-free baseline ({row.vs_baseline:+.3f} [{row.diff_low:+.3f}, {row.diff_high:+.3f}])")
    for row in found.parameters.itertuples():
        lines.append(f"{row.arch}: adds {row.encoding_params:,} parameter(s) ({row.share:.1%} of the model)"
                     + (f", over the {PARAMETER_FLAG:.0%} the protocol flags" if row.flagged else ""))
    return lines

