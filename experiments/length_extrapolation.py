"""Length extrapolation: train on inputs of length 1..N, evaluate up to 4N.

The protocol of Deletang et al. (2023) and Ruoss et al. (2023): every encoding
is trained on the same stream of short examples and evaluated on fresh
examples at in-distribution lengths (<= N) and out-of-distribution lengths
(> N). Decoders are evaluated with teacher forcing (each output token given
the correct previous ones), so the numbers measure per-position accuracy,
not error compounding.
"""

from pebench.experiment import Experiment, ReportSpec, per_task_grids, register_experiment

TASKS = ["copy", "reverse", "majority"]


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
    description="Train on lengths 1..N, evaluate up to 4N: in-distribution fit and extrapolation per encoding.",
    configs={
        "smoke": configs("smoke", 8, [4, 8, 16, 32], ["copy", "majority"], ["decoder"]),
        "standard": configs("standard", 8, [2, 4, 6, 8, 12, 16, 24, 32], TASKS, ["decoder"]),
        "paper": configs("paper", 40, [10, 20, 40, 60, 80, 120, 160, 240, 320], TASKS, ["decoder", "encoder"]),
    },
    script=__file__,
    report=ReportSpec(layout="extrapolation", position=10),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
