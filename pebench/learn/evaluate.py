"""Per-length evaluation, the shuffled-input condition and the equivariance gap.

Every function returns raw numbers; aggregation (ID/OOD means, seeds, CIs)
happens later in :mod:`pebench.analysis.results`.

Conditions:

* ``original`` — inputs as sampled;
* ``shuffled`` — each input row permuted at random, scored against the
  **original** targets. On an order-dependent task the drop from
  ``original`` to ``shuffled`` is the model's *order reliance*; on an
  order-invariant task the targets do not change, so any drop is an
  *invariance gap*.

Decoding: ``teacher`` (default) scores each output token given the correct
previous ones; ``greedy`` feeds back the model's own predictions (decoders
only; for encoders the two are the same).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.config import CONDITIONS, DECODINGS  # noqa: F401  (re-exported)
from pebench.learn.train import teacher_forced
from pebench.model import Transformer
from pebench.tasks import IGNORE, Batch, Task, render, shuffle_inputs


def eval_generator(seed: int, length: int) -> torch.Generator:
    """The generator for evaluation data at ``length``: independent of training data."""
    return torch.Generator().manual_seed(7_919 * length + 104_729 * seed + 3)


@torch.inference_mode()
def _score(
    model: Transformer, task: Task, batch: Batch, decoding: str, device: torch.device
) -> tuple[dict[str, float], list[float], Tensor]:
    """Summed token hits, sequence hits, summed loss and counts for one batch, each
    example's mean loss per output token, and the predicted output tokens (N, L_out)."""
    tokens, logits, labels = teacher_forced(model, task, batch, device)  # logits (N, T', V) from the first label
    mask = labels != IGNORE  # (N, T - first)
    loss = F.cross_entropy(logits[mask], labels[mask], reduction="sum")
    # per token as well (summing these would change the loss column's last bits)
    token_losses = F.cross_entropy(logits[mask], labels[mask], reduction="none")  # (N * L_out,)
    if decoding == "greedy" and model.config.arch == "decoder":
        predictions = _greedy(model, tokens, batch.targets.shape[1])
    else:
        predictions = logits.argmax(-1)[mask].view(labels.shape[0], -1)  # (N, L_out)
    targets = batch.targets.to(device)
    hits = predictions == targets  # (N, L_out)
    example_losses = token_losses.view(hits.shape).mean(dim=1)  # (N,); every example has L_out labels
    token_hits, seq_hits, loss_sum, *losses = torch.cat(
        [torch.stack([hits.sum(), hits.all(dim=1).sum(), loss]), example_losses]
    ).tolist()  # one sync
    totals = {
        "token_hits": token_hits,
        "seq_hits": seq_hits,
        "loss_sum": loss_sum,
        "n_tokens": float(hits.numel()),
        "n": float(hits.shape[0]),
    }
    return totals, losses, predictions


def example_records(
    length: int, condition: str, batch: Batch, predictions: Tensor, losses: list[float], first: int
) -> list[dict]:
    """One record per example of ``batch`` (numbered from ``first``) as :func:`evaluate` gives them in
    ``examples``: its ``eval_len``, ``condition`` and number, its ``input``, ``target`` and ``prediction`` as
    space-separated token ids (the input as the model saw it under ``condition``), its ``token_hits`` out of
    ``n_tokens``, and its ``loss`` (mean per output token, nats)."""
    predictions = predictions.cpu()
    hits = (predictions == batch.targets).sum(dim=1).tolist()
    inputs, targets, predicted = ([" ".join(map(str, row)) for row in tokens.tolist()]
                                  for tokens in (batch.inputs, batch.targets, predictions))
    return [{"eval_len": length, "condition": condition, "example": first + i, "input": inputs[i],
             "target": targets[i], "prediction": predicted[i], "token_hits": hits[i],
             "n_tokens": int(batch.targets.shape[1]), "loss": losses[i]} for i in range(len(inputs))]


def _greedy(model: Transformer, tokens: Tensor, out_len: int) -> Tensor:
    """Greedy decoding of ``out_len`` tokens after the input and SEP (decoder)."""
    prefix = tokens[:, : tokens.shape[1] - out_len + 1]  # [x, SEP]
    outputs = []
    for _ in range(out_len):
        logits = model(prefix, outputs=1) if isinstance(model, Transformer) else model(prefix)
        next_token = logits[:, -1].argmax(-1, keepdim=True)  # (N, 1)
        outputs.append(next_token)
        prefix = torch.cat([prefix, next_token], dim=1)
    return torch.cat(outputs, dim=1)


def evaluate(
    model: Transformer,
    task: Task,
    lengths: Iterable[int],
    *,
    n_examples: int = 256,
    batch_size: int = 128,
    seed: int = 0,
    conditions: Iterable[str] = CONDITIONS,
    decoding: str = "teacher",
    device: torch.device | str | None = None,
    examples: list[dict] | None = None,
) -> list[dict]:
    """Evaluate ``model`` on fresh examples at every input length.

    Args:
        model: a trained transformer (put in eval mode here).
        task: the task it was trained on.
        lengths: input lengths to evaluate.
        n_examples: examples per length (and condition), drawn by the task's
            :meth:`~pebench.tasks.Task.eval_batches`; a task with a fixed
            evaluation text (``charlm``) scores all of its windows instead, and
            the row's ``n`` is the number scored.
        batch_size: examples per forward pass.
        seed: evaluation seed; the examples at a length depend only on
            (task, length, seed), so every encoding sees the same examples.
        conditions: subset of :data:`pebench.config.CONDITIONS`.
        decoding: ``teacher`` or ``greedy`` (see module doc).
        device: default the model's device.
        examples: if given, every example scored is appended to it, one record per example, length and
            condition (:func:`example_records`): what a run's per-example predictions file holds
            (:func:`pebench.store.predictions.write_predictions`). The rows do not change.

    Returns:
        One dict per (length, condition) with ``eval_len``, ``condition``,
        ``decoding``, ``token_acc``, ``seq_acc``, ``loss`` (mean per output
        token, nats), ``loss_se`` (standard error of ``loss``: the standard
        deviation of the examples' mean losses over sqrt(n), treating examples
        as independent; NaN when n = 1) and ``n`` (examples scored).
    """
    conditions = tuple(conditions)
    for condition in conditions:
        if condition not in CONDITIONS:
            raise ValueError(f"unknown condition {condition!r}; valid: {', '.join(CONDITIONS)}")
    if decoding not in DECODINGS:
        raise ValueError(f"unknown decoding {decoding!r}; valid: {', '.join(DECODINGS)}")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.eval()
    rows = []
    for length in lengths:
        # Encodings that sample positions (randomized) draw from torch's global
        # RNG: seed it per length so evaluation is deterministic and leave the
        # caller's RNG state as it was.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed * 7_919 + length)
            rows.extend(
                _evaluate_length(model, task, length, n_examples, batch_size, seed, conditions, decoding, device,
                                 examples)
            )
    return rows


def _evaluate_length(
    model: Transformer,
    task: Task,
    length: int,
    n_examples: int,
    batch_size: int,
    seed: int,
    conditions: tuple[str, ...],
    decoding: str,
    device: torch.device,
    examples: list[dict] | None = None,
) -> list[dict]:
    """Rows of one evaluation length (and its ``examples``, if given; see :func:`evaluate`)."""
    rows = []
    generator = eval_generator(seed, length)
    batches = task.eval_batches(length, n_examples, batch_size, generator)
    shuffle_generator = torch.Generator().manual_seed(seed + 1)
    for condition in conditions:
        totals: dict[str, float] = {}
        example_losses: list[float] = []
        for batch in batches:
            if condition == "shuffled":
                batch = Batch(inputs=shuffle_inputs(batch.inputs, shuffle_generator), targets=batch.targets)
            scores, losses, predictions = _score(model, task, batch, decoding, device)
            if examples is not None:
                examples.extend(example_records(length, condition, batch, predictions, losses, len(example_losses)))
            for key, value in scores.items():
                totals[key] = totals.get(key, 0.0) + value
            example_losses.extend(losses)
        rows.append(
            {
                "eval_len": length,
                "condition": condition,
                "decoding": decoding,
                "token_acc": totals["token_hits"] / totals["n_tokens"],
                "seq_acc": totals["seq_hits"] / totals["n"],
                "loss": totals["loss_sum"] / totals["n_tokens"],
                "loss_se": standard_error(example_losses),
                "n": int(totals["n"]),
            }
        )
    return rows


def standard_error(values: list[float]) -> float:
    """Standard error of the mean of ``values`` (sample standard deviation over sqrt(n)); NaN if n < 2."""
    n = len(values)
    if n < 2:
        return float("nan")
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n)


@torch.inference_mode()
def equivariance_gap(
    model: Transformer,
    task: Task,
    length: int,
    *,
    n_examples: int = 32,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> float:
    """Permutation-equivariance gap ``||f(Px) - P f(x)|| / ||f(x)||`` of final hidden states.

    ``x`` is the rendered model input (input, separator and blanks or
    outputs) and ``P`` a random permutation of all its positions; positions
    given to the encoding are ``0..T-1`` in both passes. It is 0 up to float
    error for a bidirectional model without positional information and
    positive whenever the model can tell positions apart. Both passes get
    the same positions (drawn once from the encoding, so randomized
    positions are compared like for like).
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.eval()
    generator = eval_generator(seed, length)
    tokens, _ = render(task, task.sample(n_examples, length, generator), model.config.arch)
    tokens = tokens.to(device)
    perm = torch.randperm(tokens.shape[1], generator=torch.Generator().manual_seed(seed)).to(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        pos = model.positions(tokens.shape[0], tokens.shape[1], device)
    _, hidden = model(tokens, pos=pos, return_hidden=True)  # (N, T, D)
    _, hidden_permuted = model(tokens[:, perm], pos=pos, return_hidden=True)
    return float((hidden_permuted - hidden[:, perm]).norm() / hidden.norm())
