"""Scale check of the Kazemnejad et al. 2023 replication (experiments/replicate_kazemnejad2023.py): does the
model's size move the ranking of the paper's five encodings on copy?

Declared after the first 24 runs of the replication had shown NoPE, the paper's best encoding, not fitting
copy or reverse at pebench's standard size (d_model 64, 2 layers: held-out token accuracy 0.20 at length 20
when the plateau rule stopped it), and before the replication's aggregate agreement was computed. The issue
that asked for the replication (#15) names this check: "one task at two or three model sizes (d64 / d128 /
d256, 2 / 4 layers) to show whether scale moves the ranking".

Pre-registered (committed before any of its runs was made):

- **Task**: copy, the paper's first and simplest task, with the replication's lengths (train up to 20, test at
  22..40), metric (greedy exact match beyond 20), step cap (5000), fit criterion and plateau rule, seeds
  (0, 1, 2) and the paper's five encodings.
- **Sizes**: d_model in {64, 128, 256} x {2, 4} layers, 4 heads, the MLP 4 x d_model; everything else as the
  replication (AdamW at 3e-3, batches of 64). d_model 64 with 2 layers is the replication itself: its copy
  runs are this check's first size and are not run again.
- **Reading**: per size, each encoding's fitted seeds, mean greedy exact match in and beyond the training
  lengths (an unfitted run scores 0 beyond), and Kendall's tau between the five encodings' order on copy and
  Figure 1's aggregate order, with a 95% bootstrap interval over seeds. A size's tau is different from the
  standard size's only where the two intervals do not overlap; otherwise the difference is unresolved.
"""

import sys
from pathlib import Path

import pandas as pd

from pebench.analysis import leaderboard, replication
from pebench.plan.experiment import replication_experiment, suite_runs
from pebench.store.schema import fitted

SUITE = "replication"
#: the replication this check belongs to (the Replications page shows it in that section)
REPLICATES = "kazemnejad2023"
TASK = "copy"
#: (d_model, n_layers) of each size; the first is the replication's own
SIZES = [(64, 2), (64, 4), (128, 2), (128, 4), (256, 2), (256, 4)]


def _replication():
    """The replication's module (loaded before this one: experiment scripts load in name order)."""
    return sys.modules["pebench_experiments.replicate_kazemnejad2023"]


def experiment_name(d_model: int, n_layers: int) -> str:
    """The experiment of one size (the replication itself for its own size)."""
    return REPLICATES if (d_model, n_layers) == SIZES[0] else f"{REPLICATES}_d{d_model}_l{n_layers}"


def configs(d_model: int, n_layers: int):
    """The replication's copy grid restricted to the paper's five encodings, at one size."""
    def grids():
        module = _replication()
        base, grid = next((b, g) for b, g in module.configs() if b["task"] == TASK)
        return [({**base, "d_model": d_model, "n_layers": n_layers},
                 {**grid, "encoding": list(module.PAPER_ENCODINGS)})]
    return grids


def expected_runs(name: str) -> int:
    """How many runs one size has: the experiment's copy runs of the paper's five encodings."""
    module = _replication()
    return sum(spec.task == TASK and spec.encoding in module.PAPER_ENCODINGS for spec in suite_runs(SUITE, [name]))


def size_runs(folder: Path) -> pd.DataFrame | None:
    """Run-level rows of every size in ``folder`` (copy, the paper's five encodings), with a ``size`` column
    (``"d64, 2 layers"``), or None when no size beyond the replication's own has a run."""
    module = _replication()
    frames = []
    for d_model, n_layers in SIZES:
        runs = replication.experiment_runs(folder, experiment_name(d_model, n_layers))
        if runs is None:
            continue
        runs = runs[(runs["task"] == TASK) & runs["encoding"].isin(module.PAPER_ENCODINGS)]
        frames.append(runs.assign(size=replication.ScaleCheck.size_label(d_model, n_layers)))
    if len(frames) < 2:
        return None
    return pd.concat(frames, ignore_index=True)


def scale_summary(folder: Path):
    """The scale check's reading from the results in ``folder``: ``(cells, taus, missing)``, or None when no
    size beyond the replication's own has a run.

    ``cells``: one row per size and encoding (``size``, ``encoding``, ``fitted`` seeds, ``n`` seeds,
    ``id_seq``: mean greedy exact match in the training lengths, ``ood``: mean beyond them, an unfitted run
    scoring 0); ``taus``: size -> :class:`pebench.analysis.replication.RankingAgreement` of the five on copy against
    Figure 1, for the sizes with every run in; ``missing``: the experiments of sizes with no run, and of
    those with some, ``"name (k of n runs)"``.
    """
    module = _replication()
    runs = size_runs(folder)
    if runs is None:
        return None
    held = runs.groupby("experiment").size()
    cells, taus = [], {}
    for size, at in runs.groupby("size", sort=False):
        scored = at.assign(score=leaderboard.run_scores(at, module.METRIC), fit=fitted(at))
        by = scored.groupby("encoding", sort=False).agg(fitted=("fit", "sum"), n=("fit", "size"),
                                                        id_seq=("id_seq_acc", "mean"), ood=("score", "mean"))
        order = [e for e in module.PAPER_ENCODINGS if e in by.index]
        cells.append(by.loc[order].reset_index().assign(size=size))
        name = at["experiment"].iloc[0]
        if held[name] == expected_runs(name):
            taus[size] = replication.ranking_agreement(at, module.METRIC, module.published_aggregate())
    missing = []
    for name in (experiment_name(*size) for size in SIZES):
        expected = expected_runs(name)
        if name not in held:
            missing.append(name)
        elif held[name] < expected:
            missing.append(f"{name} ({held[name]} of {expected} runs)")
    columns = ["size", "encoding", "fitted", "n", "id_seq", "ood"]
    return pd.concat(cells, ignore_index=True)[columns], taus, missing


#: each size's experiment, the replication's own first
EXPERIMENTS = {REPLICATES: _replication().EXPERIMENT}
for _index, (_d_model, _n_layers) in enumerate(SIZES[1:]):
    EXPERIMENTS[experiment_name(_d_model, _n_layers)] = replication_experiment(
        experiment_name(_d_model, _n_layers),
        f"Scale check of the Kazemnejad et al. 2023 replication: copy, the paper's five encodings, d_model "
        f"{_d_model}, {_n_layers} layers.",
        configs(_d_model, _n_layers), __file__, suite=SUITE,
        position=201 + _index,  # after the replication (200), before Press (210)
        title=f"Replication scale check: Kazemnejad et al. 2023 at width {_d_model}, {_n_layers} layers",
        caption=f"Greedy exact match on copy of decoders of d_model {_d_model} with {_n_layers} layers trained "
                "on lengths up to 20: compare with the replication's d_model 64, 2 layers.",
        primary_metric="ood_seq_acc",
    )

CHECK = replication.CHECKS.register(f"{REPLICATES}_scale")(replication.ScaleCheck(
    name=f"{REPLICATES}_scale",
    replicates=REPLICATES,
    task=TASK,
    sizes=tuple(SIZES),
    experiment_name=experiment_name,
    experiments=EXPERIMENTS,
    summary=scale_summary,
    reading=replication.paragraph(__doc__, 1),
    script=f"experiments/{Path(__file__).name}",
    declared_in="13e5f70",
))
