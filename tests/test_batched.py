"""Seed-batched training equals separate training runs (within float rounding)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from pebench import encodings, tasks
from pebench.batched import train_batched
from pebench.model import ModelConfig, Transformer
from pebench.train import TrainConfig, train

D_MODEL, N_HEADS = 32, 4
SEEDS = (0, 1, 2)


def make_model(name: str, arch: str, task: tasks.Task, seed: int, dropout: float = 0.0) -> Transformer:
    options = {"causal": arch == "decoder"} if "causal" in encodings.options(name) else {}
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch=arch, d_model=D_MODEL, n_heads=N_HEADS,
                         dropout=dropout)
    return Transformer(config, encodings.build(name, d_model=D_MODEL, n_heads=N_HEADS, max_len=64, **options))


def configs(steps: int = 6) -> list[TrainConfig]:
    return [TrainConfig(steps=steps, batch_size=8, train_max_len=8, warmup_steps=2, seed=s, length_seed=11)
            for s in SEEDS]


@pytest.fixture(scope="module")
def copy_task() -> tasks.Task:
    return tasks.get("copy")


@pytest.mark.parametrize(
    ("name", "arch"),
    [("none", "encoder"), ("rope", "decoder"), ("rope", "encoder"), ("xpos", "decoder"), ("alibi", "decoder"),
     ("alibi", "encoder"), ("t5", "decoder"), ("t5", "encoder"), ("learned", "decoder"), ("sinusoidal", "encoder"),
     ("randomized:rope", "decoder")],
)
def test_batched_equals_separate_runs(name, arch, copy_task):
    separate_models = [make_model(name, arch, copy_task, seed) for seed in SEEDS]
    separate = [train(model, copy_task, config) for model, config in zip(separate_models, configs(), strict=True)]
    batched_models = [make_model(name, arch, copy_task, seed) for seed in SEEDS]
    batched = train_batched(batched_models, copy_task, configs())
    for one, many, model_a, model_b in zip(separate, batched, separate_models, batched_models, strict=True):
        assert many.status == one.status == "ok" and many.steps_done == one.steps_done
        torch.testing.assert_close(torch.tensor(many.losses), torch.tensor(one.losses), rtol=1e-4, atol=1e-5)
        for (key, a), (_, b) in zip(model_a.state_dict().items(), model_b.state_dict().items(), strict=True):
            torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4, msg=key)
        assert not model_b.training  # left in eval mode, as train() does
    assert batched[0].losses != batched[1].losses  # the seeds really differ


def test_length_seed_defaults_to_seed_and_keeps_run_ids(copy_task):
    config = TrainConfig(steps=4, batch_size=8, train_max_len=8, seed=5)
    explicit = dataclasses.replace(config, length_seed=5)
    a = train(make_model("rope", "decoder", copy_task, 0), copy_task, config).losses
    b = train(make_model("rope", "decoder", copy_task, 0), copy_task, explicit).losses
    assert a == b
    assert "length_seed" not in config.to_dict() and explicit.to_dict()["length_seed"] == 5


def test_single_model_needs_no_length_seed(copy_task):
    config = TrainConfig(steps=3, batch_size=8, train_max_len=8, seed=4)
    one = train(make_model("alibi", "decoder", copy_task, 0), copy_task, config)
    many = train_batched([make_model("alibi", "decoder", copy_task, 0)], copy_task, [config])
    torch.testing.assert_close(torch.tensor(many[0].losses), torch.tensor(one.losses), rtol=1e-4, atol=1e-5)


def test_divergence_stops_only_that_model(copy_task):
    models = [make_model("rope", "decoder", copy_task, seed) for seed in SEEDS]
    with torch.no_grad():
        models[1].head.weight.fill_(float("nan"))
    results = train_batched(models, copy_task, configs(steps=4))
    assert [r.status for r in results] == ["ok", "diverged", "ok"]
    assert results[1].steps_done == 1 and "loss nan" in results[1].error
    reference = train(make_model("rope", "decoder", copy_task, 2), copy_task, configs(steps=4)[2])
    torch.testing.assert_close(torch.tensor(results[2].losses), torch.tensor(reference.losses), rtol=1e-4, atol=1e-5)
    assert all(math.isfinite(x) for x in results[0].losses)


def test_rejects_what_it_cannot_reproduce(copy_task):
    models = [make_model("rope", "decoder", copy_task, seed) for seed in SEEDS]
    with pytest.raises(ValueError, match="length_seed"):
        train_batched(models, copy_task, [dataclasses.replace(c, length_seed=None) for c in configs()])
    with pytest.raises(ValueError, match="differ only in seed"):
        train_batched(models, copy_task, [configs()[0], dataclasses.replace(configs()[1], lr=1e-2), configs()[2]])
    with pytest.raises(ValueError, match="dropout"):
        train_batched([make_model("rope", "decoder", copy_task, s, dropout=0.1) for s in SEEDS], copy_task, configs())
