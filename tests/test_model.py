"""Transformer, training and evaluation: equivariance, determinism, statuses."""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings, tasks
from pebench.evaluate import equivariance_gap, evaluate
from pebench.model import ModelConfig, Transformer
from pebench.train import TrainConfig, learning_rate, train

D_MODEL, N_HEADS = 32, 4


def all_encoding_names() -> list[str]:
    """Every registered encoding; wrappers around rope and sinusoidal."""
    names = []
    for name in encodings.names():
        if encodings.meta(name)["kind"] == "wrapper":
            names += [f"{name}:rope", f"{name}:sinusoidal"]
        else:
            names.append(name)
    return names


def make_model(name: str, arch: str, task: tasks.Task, seed: int = 0, max_len: int = 128) -> Transformer:
    options = {"causal": arch == "decoder"} if "causal" in encodings.options(name) else {}
    torch.manual_seed(seed)
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch=arch, d_model=D_MODEL, n_heads=N_HEADS)
    return Transformer(config, encodings.build(name, d_model=D_MODEL, n_heads=N_HEADS, max_len=max_len, **options))


@pytest.fixture(scope="module")
def copy_task() -> tasks.Task:
    return tasks.get("copy")


def test_nope_encoder_is_permutation_equivariant(copy_task):
    model = make_model("none", "encoder", copy_task)
    assert equivariance_gap(model, copy_task, 12) < 1e-5


def test_nope_encoder_stays_equivariant_after_training(copy_task):
    model = make_model("none", "encoder", copy_task)
    train(model, copy_task, TrainConfig(steps=5, batch_size=8, train_max_len=8))
    assert equivariance_gap(model, copy_task, 12) < 1e-5


def test_nope_decoder_is_not_equivariant(copy_task):
    model = make_model("none", "decoder", copy_task)
    assert equivariance_gap(model, copy_task, 12) > 1e-3


@pytest.mark.parametrize("name", [n for n in all_encoding_names() if n != "none"])
def test_every_other_encoding_breaks_equivariance(name, copy_task):
    model = make_model(name, "encoder", copy_task)
    if encodings.meta(name)["has_parameters"] and encodings.meta(name)["kind"] == "bias":
        # Learned biases may start at exactly zero (T5 init is random, FIRE's MLP
        # is not); train a few steps so the encoding is in use.
        train(model, copy_task, TrainConfig(steps=3, batch_size=8, train_max_len=8))
    assert equivariance_gap(model, copy_task, 12) > 1e-6  # float noise is ~1e-8


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
@pytest.mark.parametrize("name", all_encoding_names())
def test_every_encoding_trains_deterministically(name, arch, copy_task):
    config = TrainConfig(steps=4, batch_size=8, train_max_len=8, warmup_steps=2, seed=3)
    curves = []
    for _ in range(2):
        model = make_model(name, arch, copy_task, seed=3)
        result = train(model, copy_task, config)
        assert result.status == "ok", result.error
        assert all(math.isfinite(x) for x in result.losses)
        curves.append(result.losses)
    assert curves[0] == curves[1]  # bit-identical on CPU


def test_compiled_training_matches_eager(copy_task):
    # one length, so that torch.compile builds one graph; rope exercises the encoding's caches
    config = TrainConfig(steps=3, batch_size=4, train_min_len=3, train_max_len=3, warmup_steps=1, seed=1)
    eager_model, compiled_model = (make_model("rope", "decoder", copy_task, seed=1) for _ in range(2))
    eager = train(eager_model, copy_task, config)
    compiled = train(compiled_model, copy_task, config, compile=True)
    assert compiled.status == "ok", compiled.error
    assert compiled.losses == pytest.approx(eager.losses, rel=1e-5)
    for a, b in zip(eager_model.parameters(), compiled_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)  # the eager module itself was trained


def test_different_seeds_give_different_curves(copy_task):
    config = TrainConfig(steps=3, batch_size=8, train_max_len=8)
    a = train(make_model("rope", "decoder", copy_task, seed=0), copy_task, config).losses
    b = train(make_model("rope", "decoder", copy_task, seed=1), copy_task, TrainConfig(
        steps=3, batch_size=8, train_max_len=8, seed=1)).losses
    assert a != b


def test_divergence_is_reported_not_raised(copy_task):
    model = make_model("sinusoidal", "decoder", copy_task)
    with torch.no_grad():
        model.head.weight.fill_(float("nan"))
    result = train(model, copy_task, TrainConfig(steps=5, batch_size=8, train_max_len=8))
    assert result.status == "diverged"
    assert result.steps_done == 1 and "loss nan" in result.error


def test_learning_rate_schedule():
    config = TrainConfig(steps=100, warmup_steps=10, lr=1e-3, min_lr_ratio=0.1)
    assert learning_rate(0, config) == pytest.approx(1e-4)
    assert learning_rate(9, config) == pytest.approx(1e-3)
    assert learning_rate(10, config) == pytest.approx(1e-3)
    assert learning_rate(99, config) == pytest.approx(1e-4, rel=0.05)
    values = [learning_rate(s, config) for s in range(10, 100)]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))


def test_model_config_rejects_bad_values():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(vocab_size=5, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="arch"):
        ModelConfig(vocab_size=5, arch="seq2seq")


def test_encoding_must_match_model(copy_task):
    config = ModelConfig(vocab_size=12, d_model=32, n_heads=4)
    with pytest.raises(ValueError, match="d_model"):
        Transformer(config, encodings.build("none", d_model=64, n_heads=4, max_len=8))


def test_explicit_positions_equal_default(copy_task):
    model = make_model("rope", "decoder", copy_task).eval()
    tokens = torch.randint(0, 10, (2, 9))
    assert torch.equal(model(tokens), model(tokens, pos=torch.arange(9)))


def test_decoder_is_causal(copy_task):
    """Changing a later token never changes earlier logits."""
    for name in all_encoding_names():
        model = make_model(name, "decoder", copy_task).eval()
        tokens = torch.randint(0, 10, (2, 10))
        changed = tokens.clone()
        changed[:, 6:] = (changed[:, 6:] + 1) % 10
        pos = model.encoding.positions(2, 10, "cpu")  # the same positions for both passes
        torch.testing.assert_close(model(tokens, pos=pos)[:, :6], model(changed, pos=pos)[:, :6], msg=name)


def test_parameter_counts(copy_task):
    plain = make_model("none", "decoder", copy_task)
    learned = make_model("learned", "decoder", copy_task, max_len=64)
    assert plain.encoding_parameters() == 0
    assert learned.encoding_parameters() == 64 * D_MODEL
    assert learned.num_parameters() == plain.num_parameters() + 64 * D_MODEL


def test_evaluate_rows_and_shuffled_condition(copy_task):
    model = make_model("rope", "decoder", copy_task)
    rows = evaluate(model, copy_task, [3, 5], n_examples=10, batch_size=4, conditions=("original", "shuffled"))
    assert [(r["eval_len"], r["condition"]) for r in rows] == [
        (3, "original"), (3, "shuffled"), (5, "original"), (5, "shuffled")
    ]
    for row in rows:
        assert 0 <= row["token_acc"] <= 1 and 0 <= row["seq_acc"] <= row["token_acc"] + 1e-9
        assert row["n"] == 10 and row["loss"] > 0


def test_evaluate_is_deterministic_and_greedy_matches_teacher_when_perfect(copy_task):
    model = make_model("sinusoidal", "decoder", copy_task)
    a = evaluate(model, copy_task, [4], n_examples=8)
    b = evaluate(model, copy_task, [4], n_examples=8)
    assert a == b
    greedy = evaluate(model, copy_task, [4], n_examples=8, decoding="greedy")
    assert greedy[0]["decoding"] == "greedy" and 0 <= greedy[0]["token_acc"] <= 1


def test_evaluate_rejects_unknown_condition(copy_task):
    model = make_model("none", "encoder", copy_task)
    with pytest.raises(ValueError, match="unknown condition"):
        evaluate(model, copy_task, [4], conditions=("reversed",))


def test_shuffled_scores_against_original_targets():
    """A model that has learned copy perfectly loses accuracy when inputs are shuffled."""

    class Oracle(torch.nn.Module):
        # Predicts the next input token of the rendered sequence: a perfect copier.
        def __init__(self):
            super().__init__()
            self.config = ModelConfig(vocab_size=12, arch="decoder", d_model=4, n_heads=1)
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, tokens):
            n, length = tokens.shape
            source_len = (length + 0) // 2
            logits = torch.zeros(n, length, 12)
            for t in range(source_len, length):
                logits[torch.arange(n), t, tokens[:, t - source_len]] = 1.0
            return logits

    task = tasks.get("copy")
    rows = evaluate(Oracle(), task, [8], n_examples=64, conditions=("original", "shuffled"))
    assert rows[0]["token_acc"] == 1.0 and rows[0]["seq_acc"] == 1.0
    assert rows[1]["token_acc"] < 0.5


# --------------------------------------------------------------------------- flat-parameter AdamW


def _reference_step(model, optimizer, tokens, labels, clip):
    """One step the textbook way: per-parameter torch AdamW and clip_grad_norm_."""
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=tasks.IGNORE)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_([p for p in model.parameters()], clip)
    optimizer.step()
    return float(norm)


def test_flat_adamw_equals_per_parameter_adamw(copy_task):
    from pebench.train import decays, make_optimizer

    config = TrainConfig(steps=25, batch_size=8, train_max_len=8, lr=3e-3, weight_decay=0.1, warmup_steps=5)
    reference, flat_model = make_model("t5", "decoder", copy_task), make_model("t5", "decoder", copy_task)
    groups = [
        {"params": [p for n, p in reference.named_parameters() if decays(n, p)], "weight_decay": config.weight_decay},
        {"params": [p for n, p in reference.named_parameters() if not decays(n, p)], "weight_decay": 0.0},
    ]
    torch_adamw = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-8)
    optimizer, flat = make_optimizer(flat_model, config)
    generator = torch.Generator().manual_seed(0)
    clip, clipped = 0.5, 0
    for step in range(config.steps):
        tokens, labels = tasks.render(copy_task, copy_task.sample(8, 1 + step % 8, generator), "decoder")
        for group in torch_adamw.param_groups + optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        norm = _reference_step(reference, torch_adamw, tokens, labels, clip)
        clipped += norm > clip
        logits = flat_model(tokens)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=tasks.IGNORE)
        flat.zero_grad()
        loss.backward()
        flat_norm = flat.clip_grad_norm_(clip)
        optimizer.step()
        assert float(flat_norm) == pytest.approx(norm, rel=1e-4)
    assert clipped > 0  # the clipping path was exercised
    for (name, a), b in zip(reference.named_parameters(), flat_model.parameters(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)
    initial = make_model("t5", "decoder", copy_task)
    assert all(not torch.equal(a, b) for a, b in zip(initial.parameters(), flat_model.parameters(), strict=True))


def test_flat_parameters_are_views_of_the_flat_buffers(copy_task):
    from pebench.train import FlatParameters, decays

    model = make_model("learned", "decoder", copy_task)
    named = dict(model.named_parameters())
    flat = FlatParameters(model)
    assert flat.decay == [True, False]
    assert flat.params[0].numel() == sum(p.numel() for n, p in named.items() if decays(n, p))
    assert sum(p.numel() for p in flat.params) == model.num_parameters()
    assert dict(model.named_parameters()) == named  # the same Parameter objects
    with torch.no_grad():
        flat.params[0].zero_()
    assert float(model.blocks[0].attn.qkv.weight.abs().sum()) == 0.0  # a decayed matrix
    tokens, labels = tasks.render(copy_task, copy_task.sample(4, 5, torch.Generator().manual_seed(1)), "decoder")
    model(tokens).sum().backward()
    table_grad = model.encoding.table.weight.grad  # no decay: lives in the second flat gradient
    assert table_grad.untyped_storage().data_ptr() == flat.grads[1].untyped_storage().data_ptr()
    assert float(flat.grads[1].abs().sum()) > 0
    flat.zero_grad()
    assert float(sum(g.abs().sum() for g in flat.grads)) == 0.0
    assert float(model.head.weight.grad.abs().sum()) == 0.0


def test_flat_parameters_reject_mixed_dtypes(copy_task):
    from pebench.train import FlatParameters

    model = make_model("none", "decoder", copy_task)
    model.head.double()
    with pytest.raises(ValueError, match="one dtype and device"):
        FlatParameters(model)
