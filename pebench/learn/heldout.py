"""Held-out examples disjoint from the training stream (the fit criterion of protocol v3).

The fit criterion scores a model on held-out examples of the training distribution. Where an input space
is small (a binary task at length 8 has 256 inputs), fresh samples of the same distribution are mostly
inputs the model also trained on, so they are not held out. Protocol v3 therefore splits every input
space in two by a fixed hash of the input (its symbols and length): one input in :data:`HELD_OUT_SHARE`
belongs to the held-out part. The training stream never contains a held-out input (:func:`training_batch`
draws again in its place) and the fit check draws only held-out inputs (:func:`held_out_batch`), so the
two are disjoint at every length, whatever the size of the space, and each keeps the task's distribution
restricted to its part (the hash does not look at what an input means).

Where a split length's held-out part holds fewer distinct inputs than a check's examples, the examples
repeat them, and a check resolves accuracy only to one in as many inputs as the part holds
(:func:`check_inputs` counts them): a model that answers those few right passes, whatever it does on the
other inputs of that length.

A length whose space is so small that its held-out part holds fewer than :data:`MIN_HELD_OUT_INPUTS`
distinct inputs (binary inputs of length 6 or less, say) cannot be split usefully: there the model
trains on every input, and the check scores fresh examples of the whole distribution
(:func:`separable` says which lengths; the protocol page lists them).

The hash is exact integer arithmetic below 2**63 (no overflow), so the split is the same on every
machine.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from pebench.tasks.base import Batch, Task

#: one input in this many belongs to the held-out part of its input space
HELD_OUT_SHARE = 8
#: a length is split only if its held-out part holds at least this many distinct inputs
MIN_HELD_OUT_INPUTS = 16
#: draws of the probe that decides whether a length is split (:func:`separable`)
PROBE_DRAWS = 4096
#: draws of the probe that counts the distinct inputs a fit check draws from (:func:`check_inputs`), at most,
#: in chunks of :data:`COUNT_CHUNK`; it stops once it has seen :data:`COUNT_ENOUGH` (more than any check's examples)
COUNT_DRAWS = 65_536
COUNT_CHUNK = 8_192
COUNT_ENOUGH = 1_024
#: rounds of drawing after which a held-out or training batch that is still incomplete is an error
MAX_ROUNDS = 1000

_MODULUS = 2**31 - 1  # a prime: the rolling hash stays below it, so key * multiplier < 2**63
_MULTIPLIER = 1_000_003
_MIX = 2_654_435_761  # Knuth's multiplicative hash constant, < 2**32


def input_keys(inputs: Tensor) -> Tensor:
    """A 32-bit hash (N,) of each input row (N, L) and its length, in exact int64 arithmetic."""
    n, length = inputs.shape
    key = torch.full((n,), length, dtype=torch.long)
    for column in inputs.long().cpu().unbind(1):  # (N,) each
        key = (key * _MULTIPLIER + column + 1) % _MODULUS
    return (key * _MIX) % 2**32


def is_held_out(inputs: Tensor) -> Tensor:
    """Which input rows (N, L) belong to the held-out part of their input space (bool (N,))."""
    return (input_keys(inputs) >> 16) % HELD_OUT_SHARE == 0


def separable(task: Task, length: int) -> bool:
    """Whether ``task`` at input ``length`` is split into training and held-out inputs: its held-out part
    holds at least :data:`MIN_HELD_OUT_INPUTS` distinct inputs among :data:`PROBE_DRAWS` fixed draws
    (computed once per task version and length: :func:`pebench.tasks.get` makes a new instance per call)."""
    return _separable(type(task), task.name, task.version, length)


@functools.lru_cache(maxsize=4096)
def _separable(cls: type[Task], name: str, version: int, length: int) -> bool:
    inputs = cls().sample(PROBE_DRAWS, length, torch.Generator().manual_seed(7_919 * length + 1), split="eval").inputs
    held = inputs[is_held_out(inputs)]
    return len(torch.unique(held, dim=0)) >= MIN_HELD_OUT_INPUTS if len(held) else False


def _fill(task: Task, n: int, length: int, generator: torch.Generator, split: str, keep_held_out: bool) -> Batch:
    """``n`` examples drawn in order with ``generator``, keeping only inputs whose held-out membership is
    ``keep_held_out`` (deterministic: the same generator state gives the same batch)."""
    kept: list[Batch] = []
    count = 0
    for _ in range(MAX_ROUNDS):
        batch = task.sample(n, length, generator, split=split)
        keep = is_held_out(batch.inputs) == keep_held_out
        kept.append(Batch(batch.inputs[keep], batch.targets[keep]))
        count += int(keep.sum())
        if count >= n:
            inputs = torch.cat([b.inputs for b in kept])[:n]
            targets = torch.cat([b.targets for b in kept])[:n]
            return Batch(inputs, targets)
    part = "held-out" if keep_held_out else "training"
    raise RuntimeError(f"task {task.name!r} at length {length}: fewer than {n} {part} inputs in {MAX_ROUNDS} "
                       "rounds of draws; its input space is too small to split (pebench.learn.heldout.separable)")


def training_batch(task: Task, n: int, length: int, generator: torch.Generator) -> Batch:
    """``n`` training examples at ``length`` with no held-out input (:func:`is_held_out`) where the length is
    :func:`separable`, else ``task.sample`` as it is."""
    batch = task.sample(n, length, generator)
    held = is_held_out(batch.inputs)
    if not bool(held.any()) or not separable(task, length):
        return batch
    inputs, targets = batch.inputs.clone(), batch.targets.clone()
    again = _fill(task, int(held.sum()), length, generator, "train", keep_held_out=False)
    inputs[held], targets[held] = again.inputs, again.targets
    return Batch(inputs, targets)


def held_out_batch(task: Task, n: int, length: int, generator: torch.Generator) -> Batch:
    """``n`` held-out examples at ``length`` (``split="eval"``): only held-out inputs where the length is
    :func:`separable`, else fresh examples of the whole distribution."""
    if not separable(task, length):
        return task.sample(n, length, generator, split="eval")
    return _fill(task, n, length, generator, "eval", keep_held_out=True)


def check_inputs(task: Task, length: int, disjoint: bool = True) -> int:
    """How many distinct inputs the fit check at ``length`` draws its examples from: the held-out part of the
    input space where the check is ``disjoint`` (protocol v3) and the length :func:`separable`, else the whole
    space (v2, or a length not split). Counted among up to :data:`COUNT_DRAWS` fixed draws (held-out ones: one in
    :data:`HELD_OUT_SHARE` of them), so a count of a few hundred or fewer is the exact size of a uniformly drawn
    space; counting stops at :data:`COUNT_ENOUGH` or more, where the space holds at least as many (computed once
    per task version, length and part)."""
    return _check_inputs(type(task), task.name, task.version, length, disjoint and separable(task, length))


@functools.lru_cache(maxsize=4096)
def _check_inputs(cls: type[Task], name: str, version: int, length: int, held_out_part: bool) -> int:
    task, generator = cls(), torch.Generator().manual_seed(7_919 * length + 2)
    seen = torch.empty(0, length, dtype=torch.long)
    for _ in range(COUNT_DRAWS // COUNT_CHUNK):
        inputs = task.sample(COUNT_CHUNK, length, generator, split="eval").inputs.long()
        if held_out_part:
            inputs = inputs[is_held_out(inputs)]
        seen = torch.unique(torch.cat([seen, inputs]), dim=0)
        if len(seen) >= COUNT_ENOUGH:
            break
    return len(seen)


def unsplit_lengths(task: Task, lengths: range | list[int]) -> list[int]:
    """The lengths among ``lengths`` at which ``task`` is not split (:func:`separable` is False): there the model
    trains on every input and the fit check scores the whole distribution (the protocol page lists them)."""
    return [length for length in lengths if not separable(task, length)]
