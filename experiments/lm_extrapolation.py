"""Language-model extrapolation: perplexity vs evaluation length (Press et al. 2022 at laptop scale).

A character-level causal LM is trained with a fixed context of N characters
on the Python language reference (a corpus pinned by SHA-256, see
:mod:`pebench.tasks.charlm`) and evaluated on held-out text with contexts of
N/2 .. 8N characters; the loss is averaged over every position of each
window, as in the ALiBi paper's non-overlapping evaluation. Every encoding
that is defined for causal models is compared.
"""

from pebench.experiment import COMPARED_ENCODINGS, SCALES, SEEDS, Experiment, ReportSpec, register_experiment


def configs(suite: str, context: int, lengths: list[int], steps: int | None = None):
    def make():
        scale = dict(SCALES[suite])
        if steps is not None:
            scale["steps"] = steps
        base = {
            **scale,
            "task": "charlm",
            "arch": "decoder",
            "train_min_len": context,
            "train_max_len": context,
            "eval_lengths": lengths,
            "eval_conditions": ["original"],
            "eval_n_examples": max(16, scale["eval_n_examples"] // 4),
            "eval_batch_size": 32,
        }
        return [(base, {"encoding": list(COMPARED_ENCODINGS), "seed": SEEDS[suite]})]

    return make


EXPERIMENT = register_experiment(Experiment(
    name="lm_extrapolation",
    description="Character-level LM trained at one context length; perplexity at longer contexts.",
    configs={
        "smoke": configs("smoke", 16, [8, 16, 32, 64]),
        "standard": configs("standard", 32, [16, 32, 64, 128, 256], steps=800),
        "paper": configs("paper", 128, [64, 128, 256, 512, 1024, 2048]),
    },
    script=__file__,
    report=ReportSpec(layout="perplexity", position=40),
))


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", "standard", "--experiment", EXPERIMENT.name]))
