"""Order sensitivity: does the model use order where the task needs it, and only there?

Encoders and decoders are trained on order-dependent tasks (the answer changes
when the input is permuted) and on order-invariant controls (it does not), and
evaluated on original inputs and on shuffled inputs scored against the
original targets. The drop original -> shuffled is the order reliance (high
is good on order-dependent tasks) or the invariance gap (should be ~0 on
controls). The permutation-equivariance gap of the final hidden states is
recorded at initialisation and after training: exactly 0 for a NoPE encoder.
"""

from pebench.plan.experiment import Experiment, per_task_grids, register_experiment
from pebench.report_spec import ReportSpec

ORDER_DEPENDENT = ["copy", "reverse"]
CONTROLS = ["majority"]


def configs(suite: str, train_max_len: int, lengths: list[int], task_list: list[str], archs: list[str]):
    def make():
        base = {
            "train_max_len": train_max_len,
            "eval_lengths": lengths,
            "eval_conditions": ["original", "shuffled"],
            "eval_equivariance": True,
        }
        return per_task_grids(suite, base, task_list, archs)

    return make


EXPERIMENT = register_experiment(Experiment(
    name="order_sensitivity",
    description="Accuracy on original vs shuffled inputs and the equivariance gap, encoder and decoder.",
    configs={
        "smoke": configs("smoke", 8, [8], ["reverse", "majority"], ["encoder", "decoder"]),
        # The standard and extended suites take their order-sensitivity tables from length_extrapolation,
        # whose runs (encoder and decoder, every task of the battery) record the shuffled condition too.
        "paper": configs("paper", 40, [10, 20, 40], ORDER_DEPENDENT + ["odds_first"] + CONTROLS + ["parity"],
                         ["encoder", "decoder"]),
    },
    script=__file__,
    report=ReportSpec(layout="order", position=20),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
