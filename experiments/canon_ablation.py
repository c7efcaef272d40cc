"""Canon layers beside partial RoPE (Allen-Zhu, Physics of Language Models 4.1): the ablation its paper reports.

Canon-A (a residual depthwise causal convolution before attention) with a quarter of the RoPE pairs rotated
(partial RoPE), and partial RoPE alone, on the core battery in both architectures at the extended suite's scale.
Canon without a positional encoding, full RoPE and NoPE are the length-extrapolation experiment's own runs of the
same suite, so the four corners of the ablation are all in the suite. Declared before any of its runs was made
(issue 64).
"""

from __future__ import annotations

from pebench.plan.experiment import Experiment, per_task_grids, register_experiment
from pebench.protocol import CORE_TASKS
from pebench.report_spec import ReportSpec

#: the rotated share of RoPE's pairs in the partial variants (the Canon paper's partial RoPE keeps a quarter)
PARTIAL = 0.25
#: the compared variants: (encoding, its options)
VARIANTS = (("canon", {"rotary_fraction": PARTIAL}), ("rope", {"rotary_fraction": PARTIAL}))


#: the length-extrapolation experiment's lengths: 4 in distribution, 8 beyond it up to 4x the training length
LENGTHS = [2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32]


def configs():
    """Per (arch, task) grid of the extended suite (its scale, caps and seeds), one per variant."""
    base = {"train_max_len": 8, "eval_lengths": LENGTHS, "eval_conditions": ["original", "shuffled"],
            "eval_equivariance": True}
    return [({**grid_base, "encoding_options": options}, {**grid, "encoding": [encoding]})
            for grid_base, grid in per_task_grids("extended", base, CORE_TASKS, ["decoder", "encoder"])
            for encoding, options in VARIANTS]


EXPERIMENT = register_experiment(Experiment(
    name="canon_ablation",
    description="Canon layers with partial RoPE, and partial RoPE alone, trained on lengths 1..8 to "
                "the fit criterion and evaluated up to 4x: local order from a convolution against rotary positions.",
    configs={"extended": configs},
    script=__file__,
    report=ReportSpec(layout="extrapolation", position=45, title="Canon layers and partial RoPE"),
))
