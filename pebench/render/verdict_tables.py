"""The tables of a verdict (``pebench evaluate``, :mod:`pebench.analysis.verdict`): the encoding per task beside
the declared baselines, its place on the boards, and its declared comparisons; each a :class:`Table` that the
report writes as Markdown, LaTeX (spanning both columns of a two-column paper) and CSV."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pebench.render.tables import Cell, Column, Style, Table, interval_text, number_text
from pebench.store.schema import encoding_label, task_label

# how a verdict's tables are typeset: the caption led by the title, spanning both columns of a two-column paper
VERDICT_STYLE = Style(comment=True, font=r"\small", title_in_caption=True, caption_gap=1, environment="table*")
#: the mark after a task's name in the per-task table saying which score its row shows (none: the floor-normalised
#: out-of-distribution token accuracy of an order-dependent task), and the note explaining it
SCORE_MARKS = {"ood_normalised_acc": "", "ood_token_acc": "†", "ood_perplexity": "§"}
SCORE_NOTE = ("Scores: floor-normalised out-of-distribution token accuracy (0: the position-free floor, 1: perfect); "
              "† an order-free control: out-of-distribution token accuracy; § a language model: out-of-distribution "
              "perplexity (lower is better).")
#: a cell of a baseline without a fitted seed on the encoding's seeds
NOT_FITTED = "n.f."


def _score(row: pd.Series | None, interval: bool) -> Cell:
    """The score cell of one encoding's row of :func:`pebench.analysis.verdict.per_task` (``n.f.`` where it fitted
    no seed, ``—`` where it has no row)."""
    if row is None:
        return Cell("—")
    if not np.isfinite(row["score"]):
        return Cell(NOT_FITTED)
    if interval and np.isfinite(row["low"]):
        return Cell(interval_text(row["score"], row["low"], row["high"]), (row["score"], row["low"], row["high"]))
    return Cell(number_text(row["score"]), row["score"])


def per_task_table(per_task: pd.DataFrame, encoding: str, baselines: Sequence[str], arch: str, version: str
                   ) -> Table:
    """The encoding per task in ``arch`` (its fitted seeds of those it ran, its score with a 95% t-interval over
    them) beside each of ``baselines`` (their mean on the same seeds, over those they fitted); one table per arch,
    so that it fits the text width of a two-column paper."""
    per_task = per_task[per_task["arch"] == arch]
    shown = [b for b in baselines if b != encoding and b in set(per_task["encoding"])]
    columns = [Column("Task", "l"), Column("Fit", "r"), Column(encoding_label(encoding), "r"),
               *(Column(encoding_label(b), "r") for b in shown)]
    rows = []
    for (_, _, task), cell in per_task.groupby(["experiment", "arch", "task"], sort=False):
        by_name = {row["encoding"]: row for _, row in cell.iterrows()}
        own = by_name.get(encoding)
        if own is None:
            continue
        rows.append([Cell(task_label(task) + SCORE_MARKS.get(own["metric"], "?"), task),
                     Cell(f"{own['fitted']}/{own['seeds']}", own["fitted"] / own["seeds"]), _score(own, True),
                     *(_score(by_name.get(b), False) for b in shown)])
    caption = ("Beside the declared baselines, on the same seeds: its "  # after the title, which names it
               "fitted seeds of those it ran (Fit) and its score with a 95% t-interval over the fitted ones; each "
               "baseline's mean over the seeds it fitted of the same ones (n.f.: none fitted). Look at the tasks "
               "where its interval lies above every baseline's mean.")
    return Table(f"verdict_per_task_{arch}", f"{encoding_label(encoding)} per task, {arch}", caption, columns, rows,
                 notes=[SCORE_NOTE], version=version, data=per_task, style=VERDICT_STYLE)


def placement_table(board: pd.DataFrame, encoding: str, version: str) -> Table:
    """Where the encoding stands on the extrapolation board of the reference plus its runs: each arch's board,
    its row marked, with placement, tier probability, score and advantage (intervals: the board's bootstrap)."""
    columns = [Column("Arch", "l", key=True), Column("Encoding", "l"), Column("Placement", "l"), Column("P", "r"),
               Column("Score", "r"), Column("Advantage", "r"), Column("Tasks", "r")]
    rows, starts = [], []
    for arch, part in board.groupby("arch", sort=True):
        starts.append(len(rows))
        for _, row in part.iterrows():
            mark = "best" if row["encoding"] == encoding else None
            rows.append([
                Cell(arch, arch), Cell(encoding_label(row["encoding"]), row["encoding"], mark=mark),
                Cell(str(row["placement"])), Cell(number_text(row["tier_probability"]), row["tier_probability"]),
                Cell(interval_text(row["score"], row["low"], row["high"]), (row["score"], row["low"], row["high"])),
                Cell(number_text(row["advantage"], 3), row["advantage"]),
                Cell(f"{row['n_tasks']}/{row['battery']}", row["n_tasks"])])
    caption = (f"The extrapolation board of the reference with {encoding_label(encoding)} (in bold) added: every "
               "encoding's placement (tiers from pairwise bootstrap tests over tasks; under P 0.9 'between tiers'; "
               "'no extrapolation' at or below the position-free floor), the probability of its tier (P), its score "
               "with its 95% bootstrap interval, its advantage over the field (mean pairwise task-level difference; "
               "its interval is in verdict.json) and the tasks it is judged on. Look at the encoding's tier and at "
               "whose intervals overlap its own.")
    return Table("verdict_board", f"{encoding_label(encoding)} on the extrapolation board", caption, columns, rows,
                 starts[1:], version=version, data=board, style=VERDICT_STYLE)


def comparisons_table(comparisons: pd.DataFrame, encoding: str, version: str) -> Table:
    """The declared comparisons of the encoding with each baseline: the task-level mean difference with its 95%
    interval, tasks, Holm-corrected p, the minimum detectable effect and the verdict."""
    columns = [Column("Arch", "l", key=True), Column("Baseline", "l"), Column("Difference", "r"),
               Column("Tasks", "r"), Column("Holm p", "r"), Column("Detectable", "r"), Column("Verdict", "l")]
    rows, starts = [], []
    for arch, part in comparisons.groupby("arch", sort=True):
        starts.append(len(rows))
        for _, row in part.iterrows():
            tested = np.isfinite(row["p_value"])
            rows.append([
                Cell(arch, arch), Cell(encoding_label(row["b"]), row["b"]),
                Cell(interval_text(row["mean_diff"], row["ci_low"], row["ci_high"], 3)
                     if tested else "—", row["mean_diff"]),
                Cell(str(int(row["n_tasks"])), int(row["n_tasks"])),
                Cell(number_text(row["p_holm"], 3) if tested else "—", row["p_holm"]),
                Cell(number_text(row["mde"]), row["mde"]),  # none detectable (infinite): —
                Cell(_verdict_words(row, encoding))])
    caption = (f"{encoding_label(encoding)} against each declared baseline (pebench.protocol.VERDICT_BASELINES), "
               "the task as the unit: per task the mean difference over the seeds both fitted, then the exact "
               "sign-flip test over tasks, Holm-corrected over the family; Detectable: the difference the test "
               "detects with 80% power at the corrected level (—: none that many tasks allow). 'cannot resolve': "
               "too few tasks for any p under 0.05 after correction. Look at the verdicts, not at the signs of "
               "unresolved differences.")
    return Table("verdict_comparisons", f"{encoding_label(encoding)} against the declared baselines", caption,
                 columns, rows, starts[1:], version=version, data=comparisons, style=VERDICT_STYLE)


def _verdict_words(row: pd.Series, encoding: str) -> str:
    """A comparison's verdict naming the better encoding."""
    side = {"a better": encoding, "b better": row["b"]}
    return f"{encoding_label(side[row['verdict']])} better" if row["verdict"] in side else str(row["verdict"])
