"""Seed-batched training equals separate training runs (within float rounding)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from pebench import tasks
from pebench.learn.batched import BatchedTransformer, train_batched
from pebench.learn.train import TrainConfig, first_labeled, train
from pebench.model import ModelConfig, Transformer, build_model
from pebench.tasks import IGNORE, render

D_MODEL, N_HEADS = 32, 4
SEEDS = (0, 1, 2)
CASES = [("none", "encoder"), ("rope", "decoder"), ("rope", "encoder"), ("xpos", "decoder"), ("alibi", "decoder"),
         ("alibi", "encoder"), ("t5", "decoder"), ("t5", "encoder"), ("learned", "decoder"),
         ("sinusoidal", "encoder"), ("fire", "decoder"), ("randomized:rope", "decoder"),
         ("randomized:alibi", "encoder"), ("transformer_xl", "encoder"), ("cope", "decoder")]  # content score


def make_model(name: str, arch: str, task: tasks.Task, seed: int, dropout: float = 0.0) -> Transformer:
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch=arch, d_model=D_MODEL, n_heads=N_HEADS,
                         dropout=dropout)
    return build_model(config, name, max_len=64, seed=seed)


def assert_adam_trained_close(trained: Transformer, reference: Transformer, lr: float, steps: int) -> None:
    """Weights of two runs from one init that differ by float rounding only, after ``steps`` AdamW steps.

    AdamW divides each gradient element by its running RMS, so an element whose gradient is ~0 moves by
    up to ``lr`` per step in a direction rounding decides (batched matmuls round differently from the
    separate ones). Every element must stay within that bound, ``2 * lr * steps``, and all but 1% within
    rounding tolerance (rtol 1e-3, atol 1e-4). Exactness of the batched computation itself is tested on
    one step without an optimizer (:func:`test_batched_forward_and_gradients_equal_the_models`).
    """
    for (key, a), (_, b) in zip(reference.state_dict().items(), trained.state_dict().items(), strict=True):
        difference = (a - b).abs()
        assert float(difference.max()) <= 2 * lr * steps, key
        outside = difference > 1e-4 + 1e-3 * a.abs()
        assert float(outside.float().mean()) <= 0.01, (key, int(outside.sum()), a.numel())


def configs(steps: int = 6) -> list[TrainConfig]:
    return [TrainConfig(steps=steps, batch_size=8, train_max_len=8, warmup_steps=2, seed=s, length_seed=11)
            for s in SEEDS]


@pytest.fixture(scope="module")
def copy_task() -> tasks.Task:
    return tasks.get("copy")


@pytest.mark.parametrize(("name", "arch"), CASES)
def test_batched_forward_and_gradients_equal_the_models(name, arch, copy_task):
    """One step without an optimizer: the batched forward pass is each model's forward pass (logits, loss,
    gradients), also for the output suffix the training loop asks for. Rounding only: bmm vs mm."""
    models = [make_model(name, arch, copy_task, seed).train() for seed in SEEDS]
    batched = BatchedTransformer(models)
    generator = torch.Generator().manual_seed(5)
    rendered = [tasks.render(copy_task, copy_task.sample(4, 6, generator), arch) for _ in SEEDS]
    tokens = torch.stack([t for t, _ in rendered])  # (S, B, T)
    labels = torch.stack([label for _, label in rendered])
    first = first_labeled(labels.flatten(0, 1))
    T = tokens.shape[-1]
    with torch.random.fork_rng():
        torch.manual_seed(0)
        positions = batched.positions(4, T, torch.device("cpu"), None)
    logits = batched(tokens, positions, outputs=T - first)  # (S, B, T - first, V)
    losses = torch.nn.functional.cross_entropy(
        logits.flatten(0, 2), labels[..., first:].flatten(), ignore_index=IGNORE, reduction="none"
    ).view(len(SEEDS), -1).sum(1)
    losses.sum().backward()
    for s, model in enumerate(models):
        pos = positions if torch.is_tensor(positions) else positions[s]
        own = model(tokens[s], pos=pos, outputs=T - first)
        torch.testing.assert_close(logits[s], own, rtol=1e-5, atol=1e-5)
        own_loss = torch.nn.functional.cross_entropy(
            own.flatten(0, 1), labels[s, :, first:].flatten(), ignore_index=IGNORE, reduction="sum")
        torch.testing.assert_close(losses[s], own_loss, rtol=1e-5, atol=1e-5)
        # the batched model trains each model's own encoding module: take its batched gradient out first
        batched_grads = {}
        for key, parameter in model.named_parameters():
            batched_grads[key] = batched.weight(key).grad[s] if not key.startswith("encoding.") else parameter.grad
            if key.startswith("encoding."):
                parameter.grad = None
        own_loss.backward()
        for key, parameter in model.named_parameters():
            torch.testing.assert_close(batched_grads[key], parameter.grad, rtol=1e-4, atol=1e-6, msg=key)
    full = batched(tokens, positions)  # every position: the suffix above is its slice
    torch.testing.assert_close(full[..., first:, :], logits, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("name", "arch"), CASES)
def test_batched_equals_separate_runs(name, arch, copy_task):
    separate_models = [make_model(name, arch, copy_task, seed) for seed in SEEDS]
    separate = [train(model, copy_task, config) for model, config in zip(separate_models, configs(), strict=True)]
    batched_models = [make_model(name, arch, copy_task, seed) for seed in SEEDS]
    batched = train_batched(batched_models, copy_task, configs())
    for one, many, model_a, model_b in zip(separate, batched, separate_models, batched_models, strict=True):
        assert many.status == one.status == "ok" and many.steps_done == one.steps_done
        # the losses are means over every output token of a step: rounding moves them ~1e-7
        torch.testing.assert_close(torch.tensor(many.losses), torch.tensor(one.losses), rtol=1e-4, atol=1e-5)
        assert_adam_trained_close(model_b, model_a, configs()[0].lr, configs()[0].steps)
        assert not model_b.training  # left in eval mode, as train() does
    assert batched[0].losses != batched[1].losses  # the seeds really differ


@pytest.mark.parametrize(("name", "arch"), [("learned", "encoder"), ("rope", "decoder")])
def test_each_seed_stops_at_its_own_fit_or_plateau_as_a_separate_run(name, arch):
    """With the fit criterion on, each model of the batch stops where train() would have stopped it (fit or
    plateau, at its own step), with its weights, encoding state and fit fields of that step."""
    task = tasks.get("majority")
    fit_configs = [TrainConfig(steps=200, batch_size=16, train_max_len=6, warmup_steps=5, lr=3e-3, seed=seed,
                               length_seed=11, fit_every=10, fit_threshold=0.9, stop_at_fit=True, fit_patience=40)
                   for seed in SEEDS]
    separate_models = [make_model(name, arch, task, seed) for seed in SEEDS]
    separate = [train(model, task, config) for model, config in zip(separate_models, fit_configs, strict=True)]
    batched_models = [make_model(name, arch, task, seed) for seed in SEEDS]
    batched = train_batched(batched_models, task, fit_configs)
    for one, many, model_a, model_b in zip(separate, batched, separate_models, batched_models, strict=True):
        assert (many.steps_done, many.stop_reason, many.fitted, many.steps_to_fit) == (
            one.steps_done, one.stop_reason, one.fitted, one.steps_to_fit)
        assert many.fit_token_acc == pytest.approx(one.fit_token_acc, abs=1e-6)
        assert [s for s, _ in many.fit_curve] == [s for s, _ in one.fit_curve]
        assert [a for _, a in many.fit_curve] == pytest.approx([a for _, a in one.fit_curve], abs=1e-6)
        torch.testing.assert_close(torch.tensor(many.losses), torch.tensor(one.losses), rtol=1e-4, atol=1e-5)
        # over a hundred steps AdamW drifts the weights whose gradient is ~0 (the key biases, which softmax
        # ignores) by rounding, so the trained models are compared by what they compute
        tokens, _ = render(task, task.sample(32, 6, torch.Generator().manual_seed(3)), arch)
        with torch.no_grad():
            torch.testing.assert_close(model_b(tokens), model_a(tokens), rtol=1e-3, atol=1e-3)
    assert len({r.steps_done for r in batched}) > 1  # the seeds stopped at different steps
    assert all(r.steps_done < 200 for r in batched)


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
