"""Length extrapolation and order use: train on inputs of length 1..N, evaluate up to 4N, on original and
shuffled inputs.

Every encoding is trained on the same stream of short examples until it fits the training distribution
(the fit criterion: held-out token accuracy >= 0.99 at length N, checked every 100 steps, with a step cap
that is the same for every encoding of a task) and evaluated on fresh examples at in-distribution lengths
(<= N) and at 8 out-of-distribution lengths (> N, up to 4N), on the original inputs and on shuffled
inputs scored against the original targets. Encoders predict the output non-autoregressively at blank
positions (Deletang et al. 2023; Ruoss et al. 2023); decoders are scored with teacher forcing (each
output token given the correct previous ones). The primary metric is OOD token accuracy; exact match
(sequence accuracy) is reported beside it. What differs from the published protocols (shorter lengths,
smaller models, a fit criterion instead of a fixed budget) is on the protocol page.

The standard suite runs the core battery (:data:`CORE`, 12 tasks: every Chomsky class, order-dependent
tasks and controls) in both architectures; the ``extended`` suite runs every other algorithmic task and
the newer encodings.
"""


from pebench import tasks
from pebench.plan.experiment import Experiment, per_task_grids, register_experiment
from pebench.protocol import CORE_TASKS
from pebench.report_spec import ReportSpec

#: the standard suite's core battery, declared before its results were made
CORE = list(CORE_TASKS)
#: pairwise comparisons declared in advance (docs: protocol): NoPE vs each absolute encoding, T5 vs ALiBi,
#: the randomized encoding vs its base
COMPARISONS = (("none", "sinusoidal"), ("none", "learned"), ("t5", "alibi"), ("randomized:rope", "rope"))
#: standard lengths: 4 in distribution, 8 beyond it up to 4x the training length
STANDARD_LENGTHS = [2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32]


def extended_tasks() -> list[str]:
    """Every registered algorithmic task not in the core battery (language modelling has its own experiment)."""
    return [t for t in tasks.names() if t not in CORE and not getattr(tasks.get(t), "decoder_only", False)]


def configs(suite: str, train_max_len: int, lengths: list[int], task_list: list[str], archs: list[str]):
    def make():
        # The shuffled condition and the equivariance gap make these decoder runs
        # the decoder half of the order-sensitivity analysis as well.
        base = {"train_max_len": train_max_len, "eval_lengths": lengths,
                "eval_conditions": ["original", "shuffled"], "eval_equivariance": True}
        return per_task_grids(suite, base, task_list, archs)

    return make


EXPERIMENT = register_experiment(Experiment(
    name="length_extrapolation",
    description="Train on lengths 1..N to a fit criterion, evaluate up to 4N on original and shuffled inputs: "
                "extrapolation and order use per encoding, encoder and decoder.",
    configs={
        "smoke": configs("smoke", 8, [4, 8, 16, 32], ["copy", "majority"], ["decoder"]),
        "standard": configs("standard", 8, STANDARD_LENGTHS, CORE, ["decoder", "encoder"]),
        "extended": lambda: configs("extended", 8, STANDARD_LENGTHS, extended_tasks(), ["decoder", "encoder"])(),
        "paper": configs("paper", 40, [10, 20, 40, 60, 80, 120, 160, 240, 320], CORE, ["decoder", "encoder"]),
    },
    script=__file__,
    report=ReportSpec(layout="extrapolation", position=10, also=("order",), primary_metric="ood_token_acc",
                      comparisons=COMPARISONS),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
