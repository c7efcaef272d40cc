"""Evaluation lengths never change a model: two runs that differ only in the lengths they are evaluated
at build the same encoding, start from the same weights and train identically.

Every encoding is built from the suite's position capacity and the training context, never from the
longest evaluated length; this pins it for every registered encoding, every wrapper around each, and
both architectures.
"""

from __future__ import annotations

import pytest
import torch
from test_encodings import every_encoding

from pebench import encodings, tasks
from pebench.learn.train import train
from pebench.plan.execute import model_for
from pebench.plan.experiment import make_spec

SHORT_EVAL, LONG_EVAL = [4, 8], [4, 8, 64, 120]


CASES = [
    pytest.param(name, arch, id=f"{name}-{arch}")
    for name in every_encoding()
    for arch in ("decoder", "encoder")
    if arch == "decoder" or not encodings.meta(name)["causal_only"]
]


def spec(encoding: str, arch: str, eval_lengths: list[int]):
    return make_spec("smoke", "eval-independence", {
        "task": "copy", "encoding": encoding, "arch": arch, "seed": 3, "d_model": 16, "n_layers": 1,
        "n_heads": 2, "steps": 5, "batch_size": 4, "warmup_steps": 1, "train_max_len": 6,
        "eval_lengths": eval_lengths,
    })


@pytest.mark.parametrize(("name", "arch"), CASES)
def test_evaluation_lengths_change_neither_initial_weights_nor_training(name, arch):
    short, long = spec(name, arch, SHORT_EVAL), spec(name, arch, LONG_EVAL)
    models = [model_for(short), model_for(long)]
    assert models[0].encoding.resolved_options() == models[1].encoding.resolved_options()
    initial = [model.state_dict() for model in models]
    assert initial[0].keys() == initial[1].keys()
    for key, value in initial[0].items():
        other = initial[1][key]
        assert value.shape == other.shape, key
        assert torch.equal(value, other), key

    task = tasks.get("copy")
    losses = [train(model, task, s.train).losses for model, s in zip(models, (short, long), strict=True)]
    assert len(losses[0]) == 5
    assert losses[0] == losses[1]
