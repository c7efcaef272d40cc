"""Evaluation batches: the default random examples, and charlm's one validation span (Press et al. 2022)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pebench import tasks
from pebench.learn.evaluate import eval_generator, evaluate, standard_error
from pebench.model import ModelConfig, build_model
from pebench.plan.experiment import load_experiments
from pebench.tasks import Batch
from pebench.tasks.charlm import EVAL_SPAN, corpus


def charlm_windows(length: int) -> Batch:
    batches = tasks.get("charlm").eval_batches(length, 1, 7, torch.Generator())
    return Batch(inputs=torch.cat([b.inputs for b in batches]), targets=torch.cat([b.targets for b in batches]))


@pytest.mark.parametrize("length", [1, 16, 32, 64, 512, 2048, 4096])
def test_charlm_predicts_every_character_of_the_span_once(length):
    """Consecutive, non-overlapping windows: inputs c_0..c_{S-1}, targets c_1..c_S, in order."""
    validation = corpus()[1]
    windows = charlm_windows(length)
    assert windows.inputs.shape == (EVAL_SPAN // length, length) == windows.targets.shape
    assert torch.equal(windows.inputs.flatten(), validation[:EVAL_SPAN])
    assert torch.equal(windows.targets.flatten(), validation[1 : EVAL_SPAN + 1])


def test_charlm_scores_the_same_characters_at_every_length():
    """The (position, character) pairs predicted at L and 2L are one set, whatever the batch size."""
    def scored(length: int) -> set[tuple[int, int]]:
        targets = charlm_windows(length).targets.flatten().tolist()
        return set(enumerate(targets, start=1))

    assert scored(32) == scored(64) == scored(512)


def test_charlm_remainder_is_the_span_tail():
    """A length that does not divide the span scores whole windows from its start and drops the tail."""
    validation = corpus()[1]
    windows = charlm_windows(3000)
    n = EVAL_SPAN // 3000
    assert windows.inputs.shape == (n, 3000)
    assert torch.equal(windows.targets.flatten(), validation[1 : n * 3000 + 1])
    with pytest.raises(ValueError, match="EVAL_SPAN"):
        tasks.get("charlm").eval_batches(EVAL_SPAN + 1, 1, 1, torch.Generator())


def test_charlm_eval_batches_are_deterministic_and_batched():
    task = tasks.get("charlm")
    a = task.eval_batches(128, 16, 100, torch.Generator().manual_seed(0))
    b = task.eval_batches(128, 4096, 100, torch.Generator().manual_seed(9))  # n_examples, generator ignored
    assert [len(batch.inputs) for batch in a] == [100, 100, 100, 52]  # 352 windows
    assert all(torch.equal(x.inputs, y.inputs) and torch.equal(x.targets, y.targets) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", ["copy", "majority", "passkey", "modular_arithmetic"])
def test_default_eval_batches_are_the_previous_random_examples(name):
    """Every other task evaluates on exactly the examples it did before the hook existed."""
    task = tasks.get(name)
    length = max(task.min_length, 12)
    generator, previous = eval_generator(0, length), []
    for start in range(0, 70, 32):
        previous.append(task.sample(min(32, 70 - start), length, generator, split="eval"))
    batches = task.eval_batches(length, 70, 32, eval_generator(0, length))
    assert len(batches) == len(previous) == 3
    for batch, old in zip(batches, previous, strict=True):
        assert torch.equal(batch.inputs, old.inputs) and torch.equal(batch.targets, old.targets)


def test_copy_rows_and_loss_se():
    """Pinned rows (token_acc, loss, n unchanged by the hook) and loss_se from the examples' losses."""
    task = tasks.get("copy")
    model = build_model(ModelConfig(tasks.model_vocab_size(task), arch="decoder", d_model=32, n_layers=1, n_heads=4),
                        "rope", max_len=64, seed=0)
    rows = evaluate(model, task, [4, 9], n_examples=70, batch_size=32, seed=1, conditions=["original"])
    assert [row["n"] for row in rows] == [70, 70]
    # recomputed by hand from the examples the rows score
    generator = eval_generator(1, 9)
    batch = task.sample(70, 9, generator, split="eval")
    tokens, labels = tasks.render(task, batch, "decoder")
    with torch.inference_mode():
        logits = model(tokens)
    per_token = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")  # (N, T), 0 where ignored
    per_example = (per_token.sum(1) / (labels != -100).sum(1)).tolist()
    assert rows[1]["loss"] == pytest.approx(sum(per_example) / 70, rel=1e-5)
    assert rows[1]["loss_se"] == pytest.approx(standard_error(per_example), rel=1e-4)
    assert all(math.isfinite(row["loss_se"]) and row["loss_se"] > 0 for row in rows)


def test_standard_error():
    assert standard_error([1.0, 2.0, 3.0, 4.0]) == pytest.approx(math.sqrt(5 / 3) / 2)
    assert math.isnan(standard_error([2.0]))


def test_charlm_rows_score_the_whole_span():
    task = tasks.get("charlm")
    model = build_model(ModelConfig(tasks.model_vocab_size(task), arch="decoder", d_model=16, n_layers=1, n_heads=2),
                        "alibi", max_len=16, seed=0)
    rows = evaluate(model, task, [16, 64], n_examples=3, batch_size=512, conditions=["original"])
    assert [row["n"] for row in rows] == [EVAL_SPAN // 16, EVAL_SPAN // 64]
    assert all(math.isfinite(row["loss_se"]) and 0 < row["loss_se"] < 0.1 for row in rows)
    windows = charlm_windows(64)
    with torch.inference_mode():
        logits = model(windows.inputs)
    expected = F.cross_entropy(logits.flatten(0, 1), windows.targets.flatten()).item()  # every character once
    assert rows[1]["loss"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("suite", ["smoke", "standard", "paper"])
def test_lm_extrapolation_evaluates_whole_windows_at_1x_to_16x_context(suite):
    (base, _), = load_experiments().get("lm_extrapolation").configs[suite]()
    context, lengths = base["train_max_len"], base["eval_lengths"]
    assert lengths[0] == context and all(length % context == 0 and EVAL_SPAN % length == 0 for length in lengths)
    assert max(lengths) // context >= 8
    assert base["eval_batch_size"] * max(lengths) <= 16_384
