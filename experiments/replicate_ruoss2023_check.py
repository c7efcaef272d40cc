"""Check of the Ruoss et al. 2023 replication (experiments/replicate_ruoss2023.py): do randomized positions fail
to fit because their positions are too sparse, or because the step budget is too small?

Declared after the replication's first 91 runs (stack_manipulation complete, duplicate_string partly) had shown
none of the 31 runs of a randomized encoding fitting (held-out token accuracy >= 0.99 at length 8), while 23 of
25 base runs on stack_manipulation fitted, and before any run of this check was made. On stack_manipulation the
randomized runs ended below the threshold, many still learning: Transformer-XL and RoPE at the 5000-step cap
with 0.97-0.99 and 0.92-0.95, sinusoidal at 0.80-0.91 (two at the cap, three stopped by the plateau rule),
learned at 0.74-0.78 and ALiBi at 0.62-0.68 (stopped by the plateau rule after 1100-1500 steps). Two
differences from the paper could explain it. Positions are drawn from the suite's capacity, L = 4096, for
training inputs of at most 8 symbols, 512 positions per input symbol, where the paper's L = 2048 for inputs of
at most 40 gives 51. And the budget: 5000 steps of 64 examples here, where the official code's example script
alone trains 10,000 steps of 128 (the paper's own step count was not retrieved). The replication itself is not
changed.

Pre-registered (committed before any of its runs was made):

- **Task and protocol**: stack_manipulation, the replication's lengths (train 1..8, evaluate to 40), metric
  (per-token accuracy beyond 8), fit criterion, model, optimiser and seeds 0, 1, 2.
- **Dense positions** (``ruoss2023_dense``): the five randomized encodings with positions drawn from
  L = 410, the paper's ratio of L to its longest training input (2048 / 40) times ours (8), which depends on
  the training lengths only. Budget as the replication; compared with the replication's base runs (which do
  not depend on L) of the same seeds.
- **Four times the budget** (``ruoss2023_budget4x``): the five bases and the five randomized encodings (L =
  4096 as the replication) with the step cap and the plateau patience both four times the replication's
  (20000 and 4000 steps; warmup unchanged, the cosine schedule over the new cap).
- **Reading**: per arm and encoding, seeds fitted, the held-out token accuracy at length 8 when training
  stopped, and the OOD token accuracy, both scored (an unfitted run scores 0, the replication's rule) and raw
  (marked unfitted); and per arm the mean scored gain of randomized over base paired by seed, with a 95%
  bootstrap interval, beside the replication's on the same task and seeds. A cause is supported where an arm
  fits randomized runs that the replication did not; where neither does, the failure is unexplained.
"""

import sys
from pathlib import Path

import pandas as pd

from pebench.analysis import leaderboard, replication
from pebench.plan.experiment import replication_experiment
from pebench.store.schema import fitted

SUITE = "replication"
#: the replication this check belongs to (the Replications page shows it in that section)
REPLICATES = "ruoss2023"
TASK = "stack_manipulation"
SEEDS = [0, 1, 2]
#: L of the dense arm: the paper's L over its longest training input (2048 / 40), times the replication's (8)
DENSE_POSITIONS = 410
#: the budget arm's multiple of the replication's step cap and plateau patience
BUDGET_FACTOR = 4
DENSE = f"{REPLICATES}_dense"
BUDGET = f"{REPLICATES}_budget{BUDGET_FACTOR}x"
#: each arm: (experiment name, what it changes), in the order the page shows them
ARMS = {
    DENSE: f"randomized positions from L = {DENSE_POSITIONS}",
    BUDGET: f"step cap and plateau patience x{BUDGET_FACTOR}",
}


def _replication():
    """The replication's module (loaded before this one: experiment scripts load in name order)."""
    return sys.modules["pebench_experiments.replicate_ruoss2023"]


def _task_grid():
    """The replication's (base, grid) of :data:`TASK`."""
    return next((base, grid) for base, grid in _replication().configs() if base["task"] == TASK)


def dense_configs():
    """The randomized encodings on :data:`TASK`, positions drawn from [0, :data:`DENSE_POSITIONS`)."""
    base, grid = _task_grid()
    randomized = [e for e in grid["encoding"] if e.startswith("randomized:")]
    return [({**base, "encoding_options": {"max_position": DENSE_POSITIONS}},
             {**grid, "encoding": randomized, "seed": SEEDS})]


def budget_configs():
    """Every encoding but NoPE on :data:`TASK`, with :data:`BUDGET_FACTOR` times the step cap and patience."""
    base, grid = _task_grid()
    return [({**base, "steps": BUDGET_FACTOR * base["steps"], "fit_patience": BUDGET_FACTOR * base["fit_patience"]},
             {**grid, "encoding": [e for e in grid["encoding"] if e != "none"], "seed": SEEDS})]


def arm_runs(folder: Path) -> dict[str, pd.DataFrame]:
    """The runs of :data:`TASK`, seeds :data:`SEEDS`, per arm in ``folder``: ``"replication"`` (the
    replication's own runs), then each arm of :data:`ARMS` with runs; the dense arm's frame also holds the
    replication's base runs, its comparison. Empty when no arm has a run."""
    own = replication.experiment_runs(folder, REPLICATES)
    own = None if own is None else own[(own["task"] == TASK) & own["seed"].isin(SEEDS)]
    arms = {}
    for name in ARMS:
        runs = replication.experiment_runs(folder, name)
        if runs is None:
            continue
        if name == DENSE and own is not None:
            runs = pd.concat([own[~own["encoding"].str.startswith("randomized:")], runs], ignore_index=True)
        arms[name] = runs
    if not arms:
        return {}
    return {"replication": own, **arms} if own is not None else arms


def check_summary(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The check's reading from the results in ``folder``: ``(cells, gains)``, or None when no arm has a run.

    ``cells``: one row per arm and encoding of its own runs (``arm``, ``encoding``, ``fitted`` seeds, ``n`` seeds,
    ``fit_acc``: mean held-out token accuracy at the longest training length when training stopped,
    ``ood``: mean OOD token accuracy with an unfitted run scoring 0, ``ood_raw``: the same without that rule,
    ``ood_fitted``: the mean over the fitted runs only, NaN if none fitted).
    ``gains``: per arm, the mean scored gain of randomized over base paired by seed (``mean``, ``low``,
    ``high``: its 95% bootstrap interval, ``pairs``).
    """
    arms = arm_runs(folder)
    if not arms:
        return None
    module = _replication()
    cells, gains = [], []
    for arm, runs in arms.items():
        scored = runs.assign(score=leaderboard.run_scores(runs, module.METRIC), fit=fitted(runs))
        mine = scored if arm == "replication" else scored[scored["experiment"] == arm]  # not the borrowed bases
        mine = mine.assign(ood_fitted=mine[module.METRIC].where(mine["fit"]))
        by = mine.groupby("encoding", sort=False).agg(
            fitted=("fit", "sum"), n=("fit", "size"), fit_acc=("fit_token_acc", "mean"), ood=("score", "mean"),
            ood_raw=(module.METRIC, "mean"), ood_fitted=("ood_fitted", "mean"))
        order = [e for e in module.ENCODINGS if e in by.index]
        cells.append(by.loc[order].reset_index().assign(arm=arm))
        mean, low, high, pairs = replication.mean_gain(runs, module.CLAIMS, module.METRIC)
        gains.append({"arm": arm, "mean": mean, "low": low, "high": high, "pairs": pairs})
    columns = ["arm", "encoding", "fitted", "n", "fit_acc", "ood", "ood_raw", "ood_fitted"]
    return pd.concat(cells, ignore_index=True)[columns], pd.DataFrame(gains)


#: each arm's experiment
EXPERIMENTS = {}
for _index, (_name, _change) in enumerate(ARMS.items()):
    EXPERIMENTS[_name] = replication_experiment(
        _name,
        f"Check of the Ruoss et al. 2023 replication: {TASK}, {_change}.",
        dense_configs if _name == DENSE else budget_configs, __file__, suite=SUITE,
        position=221 + _index,  # after the replication (220)
        title=f"Replication check: Ruoss et al. 2023 with {_change}",
        caption=f"Per-token accuracy of encoders on {TASK} trained on lengths up to 8, {_change}: compare with the "
                "replication's runs of the same seeds.",
        primary_metric=_replication().METRIC,
        # the dense arm has no base runs of its own (its comparison is the replication's)
        comparisons=_replication().CLAIMS if _name == BUDGET else (),
    )

CHECK = replication.CHECKS.register(f"{REPLICATES}_check")(replication.ArmCheck(
    name=f"{REPLICATES}_check",
    replicates=REPLICATES,
    task=TASK,
    arms=ARMS,
    experiments=EXPERIMENTS,
    summary=check_summary,
    question=replication.paragraph(__doc__, 0),
    why=replication.paragraph(__doc__, 1),
    script=f"experiments/{Path(__file__).name}",
    declared_in="53d1381",
))
