"""Replication of Ruoss et al. (ACL 2023), "Randomized Positional Encodings Boost Length Generalization of
Transformers", at laptop scale: encoders trained on short inputs of the Chomsky-hierarchy tasks and tested
at five times the training length, every base encoding with and without randomized positions.

Pre-registered (committed before any of its runs was made, and never changed after its agreement was seen):

- **Tasks**: the paper's 15 (Delétang et al.'s battery, :data:`TASKS`), all of which pebench has, rendered for
  a non-causal encoder that predicts the answer at blank positions (the paper's setting).
- **Lengths**: trained on input lengths from the task's shortest to :data:`TRAIN_MAX_LEN` = 8 (the paper's N
  is 40); evaluated at 2, 4, 6, 8 and at 9 lengths beyond, 10..40, five times the training length (the
  paper tests 41..500, 12.5 times). Randomized positions are drawn from the suite's position capacity
  (4096; the paper's L is 2048 for M = 500).
- **Metric**: per-token accuracy beyond the training lengths (``ood_token_acc``), the paper's; the table gives
  the mean over seeds *and* the maximum (the paper reports the maximum; that this is its statistic could not be
  confirmed from its text, see pebench/data/published/README.md).
- **Encodings**: no positions, and each base encoding the paper randomizes (:data:`BASES`: sinusoidal,
  relative (Transformer-XL), RoPE, ALiBi, learned) with and without ``randomized:``; :data:`N_SEEDS` = 5
  seeds each. pebench's standard model and optimiser (d_model 64, 2 layers, 4 heads, AdamW at 3e-3) and the
  step caps of the extended suite, trained to the fit criterion (an unfitted run scores 0).
- **Agreement scores** (pebench.analysis.replication): the paper's tables could not be retrieved, so no ranking is
  scored. Scored instead: the mean gain in OOD token accuracy of ``randomized:<base>`` over ``<base>``,
  paired by task and seed over every base, with a 95% bootstrap interval, against the paper's "+12.0% on
  average" (abstract); and, per base, the claim that randomizing it helps (:data:`CLAIMS`), each tested on
  task x seed pairs with a Holm correction over the 5, as agreeing, contradicting or unresolved.

Amended by protocol v3 (rule 7, after the audit of the committed runs; the runs are unchanged): a claim is
read as agreeing or contradicting only on the task x seed pairs in which both encodings fitted, the regime the
paper tested, and is "not testable at this budget" where those pairs are too few for the test to reach
p < 0.05; the pre-registered gain is shown beside the raw gain and the gain on jointly fitted pairs.
"""

from pathlib import Path

import pandas as pd

from pebench import tasks
from pebench.analysis import published, replication
from pebench.plan.experiment import replication_experiment
from pebench.protocol import SCALES, task_steps

SUITE = "replication"
NAME = "ruoss2023"
METRIC = "ood_token_acc"
#: the paper's 15 tasks (Deletang et al. 2023), in pebench's names
TASKS = [
    "even_pairs", "modular_arithmetic", "parity_check", "cycle_navigation",  # regular
    "stack_manipulation", "reverse_string", "modular_arithmetic_brackets", "solve_equation",  # context-free
    "duplicate_string", "missing_duplicate", "odds_first", "binary_addition", "binary_multiplication",
    "compute_sqrt", "bucket_sort",  # context-sensitive
]
#: the base encodings the paper randomizes (its sin/cos, relative, RoPE, ALiBi and learned)
BASES = ("sinusoidal", "transformer_xl", "rope", "alibi", "learned")
ENCODINGS = ("none", *BASES, *(f"randomized:{base}" for base in BASES))
TRAIN_MAX_LEN = 8
EVAL_LENGTHS = [2, 4, 6, 8, 10, 12, 16, 20, 24, 28, 32, 36, 40]
N_SEEDS = 5
#: "randomizing <base> improves its length generalization", one claim per base
CLAIMS = tuple((f"randomized:{base}", base) for base in BASES)
PAPER_SETUP = {
    "model": "encoder (non-causal), 5 layers, 8 heads, d_model 64 in the official code's defaults (the paper's "
             "own statement was not retrieved)",
    "training lengths": "uniform in 1..N, N = 40 (from a secondary source)",
    "test lengths": "41..500 (from a secondary source); randomized positions drawn from L = 2048",
    "tasks": "15: the Chomsky-hierarchy battery of Deletang et al. 2023",
    "encodings": "none, sin/cos, relative, RoPE, ALiBi, learned, each base also randomized",
    "metric": "per-token accuracy beyond the training lengths; the main table reports the maximum over seeds "
              "(not confirmed from the text)",
    "seeds": "6000 models over 15 tasks (abstract); seeds per cell not retrieved",
}


def configs():
    """One grid per task: every encoding of :data:`ENCODINGS`, encoder, :data:`N_SEEDS` seeds."""
    pairs = []
    for task in TASKS:
        base = {
            **SCALES[SUITE],
            "steps": task_steps("extended", "encoder", task),
            "task": task,
            "train_min_len": max(1, tasks.get(task).min_length),
            "train_max_len": TRAIN_MAX_LEN,
            "eval_lengths": [n for n in EVAL_LENGTHS if n >= tasks.get(task).min_length],
        }
        pairs.append((base, {"arch": ["encoder"], "encoding": list(ENCODINGS), "seed": list(range(N_SEEDS))}))
    return pairs


def published_aggregate() -> pd.Series:
    """The one number the paper's retrieved text gives: the mean accuracy gain of randomizing (abstract)."""
    values = published.values(NAME)
    gain = values[values["metric"] == "test_accuracy_increase"]["number"]
    return pd.Series({"randomized vs base": float(gain.iloc[0])}, name="gain")


def score(folder: Path, data: pd.DataFrame | None = None) -> replication.Score | None:
    """The pre-registered scores from the results in ``folder`` (``summary/runs.csv``; ``data`` is not needed):
    ``(None, claims table, summary sentence)`` (no ranking is published to compare with), or None when it holds no
    run of this experiment. A claim is read as agreeing or contradicting only in the regime the paper tested, on
    the task x seed pairs in which both encodings fitted (:func:`pebench.analysis.replication.regime_agreement`, rule 7
    of the protocol); elsewhere it is "not testable at this budget"."""
    runs = replication.experiment_runs(folder, NAME)
    if runs is None:
        return None
    mean, low, high, n = replication.mean_gain(runs, CLAIMS, METRIC)
    claims = replication.regime_agreement(runs, CLAIMS, METRIC)
    gated, n_gated = replication.pooled_gain(claims)
    raw, n_raw = replication.pooled_gain(claims, "raw_gain", "raw_pairs")
    paper = published_aggregate().iloc[0]
    sentence = (f"Mean gain in OOD token accuracy of randomized over base encodings, as pre-registered (an unfitted "
                f"run scores 0): **{100 * mean:+.1f}** points [{100 * low:+.1f}, {100 * high:+.1f}] over {n} task x "
                f"seed pairs (the paper: {paper:+.1f}%). Side by side: the raw gain, every pair with its own "
                f"numbers whether fitted or not, {100 * raw:+.1f} points over {n_raw} pairs; and the gain where "
                f"both encodings fitted, the regime the paper tested, {100 * gated:+.1f} points over {n_gated} "
                f"pairs. Runs fitted (held-out token accuracy >= 0.99 at length {TRAIN_MAX_LEN}), per encoding: "
                f"{replication.fit_counts(runs, ENCODINGS)}. Where the randomized runs did not fit, the "
                "pre-registered gain measures that they did not learn the task within the step cap, not how they "
                "extrapolate, so each claim is judged only on jointly fitted pairs, and called not testable at this "
                "budget where those are too few to resolve it; the check at the end of this section asks whether "
                "the step budget or the density of the positions is why.")
    return None, claims, sentence


EXPERIMENT = replication_experiment(
    NAME,
    "Replication of Ruoss et al. 2023: encoders on the 15 Chomsky-hierarchy tasks, trained to length 8 and tested "
    "to 40, each base encoding with and without randomized positions.",
    configs, __file__, suite=SUITE,
    position=220,
    title="Replication: Ruoss et al. 2023",
    caption="Per-token accuracy of encoders trained on lengths up to 8 and tested to 40 (Ruoss et al. 2023 at laptop "
            "scale): compare each randomized encoding with its base beyond length 8.",
    primary_metric=METRIC,
    comparisons=CLAIMS,
)

REPLICATION = replication.declare(
    EXPERIMENT,
    paper="ruoss2023randomized",
    metric=METRIC,
    aggregate_label="mean OOD accuracy gain of randomized over base (abstract; percentage points)",
    scores="the mean OOD token-accuracy gain of each randomized encoding over its base, paired by task and seed, "
           "against the abstract's +12.0%, and pebench's verdict on the claim that randomizing helps, per base (the "
           "paper's tables could not be retrieved, so no ranking is scored).",
    setup=PAPER_SETUP,
    published=published_aggregate,
    claims=CLAIMS,
    score=score,
    declared_in="7f4107c",
    encodings=ENCODINGS,
    tasks=tuple(TASKS),
    # the mean over seeds, and the maximum (the paper's statistic)
    task_tables=("mean", "max"),
)


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", SUITE, "--experiment", EXPERIMENT.name]))
