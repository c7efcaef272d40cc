"""Language-model extrapolation: perplexity vs evaluation length (Press et al. 2022 at laptop scale).

A character-level causal LM is trained with a fixed context of N characters
on the Python language reference (a corpus pinned by SHA-256, see
:mod:`pebench.tasks.charlm`) and evaluated with contexts of N, 2N, 4N, 8N
and 16N characters. Evaluation follows the ALiBi paper's non-overlapping
protocol: at every context length L the same held-out text, the first
:data:`~pebench.tasks.charlm.EVAL_SPAN` characters of the validation split,
is cut into consecutive windows of L, every character of it is predicted
exactly once, and the loss is averaged over every predicted position
(:meth:`pebench.tasks.charlm.CharLM.eval_batches`). The paper's
sliding-window evaluation is not used. Every encoding that is defined for
causal models is compared.

Scaled down from the paper: a 466k-character corpus instead of WikiText-103
(103M words), a 45k-character evaluation span instead of the validation set's
~250k words, and (standard suite) a context of 32 characters, the suite's model scale (protocol v3:
3 layers of width 64) and batches of 32 windows (the algorithmic tasks' batch of 64 would double the
experiment's time for no gain in the comparison). The standard step count,
:data:`pebench.protocol.LM_STEPS`, was declared by the LM step pilot (``pilots/lm_step_pilot.py``) from the
in-distribution spread of perplexities across encodings.
"""

from pebench.plan.experiment import Experiment, register_experiment
from pebench.protocol import LM_STEPS, SCALES, SEEDS, SUITE_ENCODINGS
from pebench.report_spec import ReportSpec
from pebench.tasks.charlm import EVAL_SPAN

#: tokens per evaluation forward pass at the longest length (bounds attention memory)
EVAL_TOKENS_PER_BATCH = 16_384


def configs(suite: str, context: int, lengths: list[int], batch_size: int | None = None):
    def make():
        scale = {key: value for key, value in SCALES[suite].items() if not key.startswith("fit_")}
        if suite in LM_STEPS:  # read when expanded, so that protocol.as_declared gives v2's 800 steps
            scale["steps"] = LM_STEPS[suite]
        if batch_size is not None:
            scale["batch_size"] = batch_size
        base = {
            **scale,
            "task": "charlm",
            "arch": "decoder",
            "train_min_len": context,
            "train_max_len": context,
            "eval_lengths": lengths,
            "eval_conditions": ["original"],
            # a language model has no fit criterion (no target accuracy to reach): a fixed budget
            "fit_every": 0,
            "stop_at_fit": False,
            "fit_patience": 0,
            # charlm scores its whole evaluation span at every length (EVAL_SPAN // L windows, the
            # rows' n) whatever this says; it records the number of windows at the training context
            "eval_n_examples": EVAL_SPAN // context,
            "eval_batch_size": min(32, EVAL_TOKENS_PER_BATCH // max(lengths)),
        }
        return [(base, {"encoding": list(SUITE_ENCODINGS[suite]), "seed": SEEDS[suite]})]

    return make


EXPERIMENT = register_experiment(Experiment(
    name="lm_extrapolation",
    description="Character-level LM trained at one context length; perplexity at longer contexts.",
    configs={
        "smoke": configs("smoke", 16, [16, 32, 64, 128]),
        "standard": configs("standard", 32, [32, 64, 128, 256, 512], batch_size=32),
        "paper": configs("paper", 128, [128, 256, 512, 1024, 2048]),
    },
    script=__file__,
    report=ReportSpec(layout="perplexity", position=40),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
