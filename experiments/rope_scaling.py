"""RoPE scaling at evaluation: linear interpolation, NTK-aware and YaRN, no retraining.

Models are trained with plain RoPE on lengths 1..N; the trained weights are
then evaluated past N with the rotary frequencies rescaled by factor
s = 4 (linear: Chen et al. 2023; NTK-aware: bloc97 2023; YaRN: Peng et al.
2023), beside the unscaled model. RoPE has no trainable parameters, so the
same state dict loads into every variant.
"""

import json

from pebench import tasks
from pebench.plan.experiment import Experiment, register_experiment, rendered_length
from pebench.protocol import PROTOCOL, SCALES, SEEDS, task_steps
from pebench.report_spec import ReportSpec

FACTOR = 4.0  # the longest evaluated input is 4x the longest training input


def variants(task: str, train_max_len: int, protocol: int = PROTOCOL) -> list[list[str]]:
    """The scaled variants; YaRN needs the trained context: the rendered decoder training sequence under
    protocol 3, input + SEP + whole output (one position more) under protocol 2, whose runs keep it."""
    if protocol == 2:
        trained_context = train_max_len + 1 + tasks.get(task).output_length(train_max_len)
    else:
        trained_context = rendered_length(tasks.get(task), train_max_len, "decoder")
    return [
        ["linear", json.dumps({"scaling": "linear", "scaling_factor": FACTOR})],
        ["ntk", json.dumps({"scaling": "ntk", "scaling_factor": FACTOR})],
        ["yarn", json.dumps({"scaling": "yarn", "scaling_factor": FACTOR, "original_max_len": trained_context})],
    ]


def configs(suite: str, train_max_len: int, lengths: list[int], task_list: list[str]):
    def make():
        pairs = []
        for task in task_list:
            base = {
                **SCALES[suite],
                "steps": task_steps(suite, "decoder", task),
                "task": task,
                "train_max_len": train_max_len,
                "eval_lengths": lengths,
                "eval_variants": variants(task, train_max_len, SCALES[suite].get("protocol", PROTOCOL)),
            }
            pairs.append((base, {"arch": ["decoder"], "encoding": ["rope"], "seed": SEEDS[suite]}))
        return pairs

    return make


EXPERIMENT = register_experiment(Experiment(
    name="rope_scaling",
    description="Plain-RoPE models evaluated past their training length with linear, NTK and YaRN scaling.",
    configs={
        "smoke": configs("smoke", 8, [8, 16, 32], ["copy"]),
        # copy only in the standard suite (wall time); reverse joins in the paper suite
        "standard": configs("standard", 8, [4, 8, 12, 16, 24, 32], ["copy"]),
        "paper": configs("paper", 40, [20, 40, 80, 120, 160], ["copy", "reverse", "odds_first", "majority"]),
    },
    script=__file__,
    report=ReportSpec(
        layout="variants",
        position=30,
        title="RoPE scaling at evaluation",
        caption="The same trained RoPE weights evaluated unscaled (trained) and with linear, NTK-aware and YaRN "
                "frequency scaling: look for OOD gains without an ID loss.",
        figure_caption="Token accuracy vs evaluation length of plain-RoPE models evaluated unscaled and with linear, "
                       "NTK and YaRN scaling by a fixed factor s = 4 at every evaluated length, inside the training "
                       "range too (the papers' fixed-factor setting; no per-length dynamic scaling): a scaled "
                       "variant below the unscaled model inside the grey area ({shade}) pays there for compressing "
                       "the positions; look at the lengths right of it.",
    ),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
