"""Held-out examples disjoint from the training stream (the fit criterion of protocol v3).

The fit criterion scores a model on held-out examples of the training distribution. Where an input space
is small (a binary task at length 8 has 256 inputs), fresh samples of the same distribution are mostly
inputs the model also trained on, so they are not held out. Protocol v3 therefore splits every input
space in two by a fixed hash of the input (its symbols and length, :func:`pebench.tasks.base.is_held_out`): one
input in :data:`~pebench.tasks.base.HELD_OUT_SHARE` belongs to the held-out part. The training stream never contains
a held-out input (:func:`training_batch` draws again in its place) and the fit check draws only held-out inputs
(:func:`held_out_batch`), so the two are disjoint at every length, whatever the size of the space, and each keeps
the task's distribution restricted to its part (the hash does not look at what an input means).

Where a split length's held-out part holds fewer distinct inputs than a check's examples, the examples
repeat them, and a check resolves accuracy only to one in as many inputs as the part holds
(:meth:`pebench.tasks.base.Task.distinct_inputs` counts them): a model that answers those few right passes,
whatever it does on the other inputs of that length.

A length whose space is so small that its held-out part holds fewer than
:data:`~pebench.tasks.base.MIN_HELD_OUT_INPUTS` distinct inputs (binary inputs of length 6 or less, say) cannot be
split usefully: there the model trains on every input, and the check scores fresh examples of the whole
distribution (:meth:`pebench.tasks.base.Task.is_split` says which lengths; the protocol page lists them).
"""

from __future__ import annotations

import torch

from pebench.tasks.base import Batch, Task, is_held_out

#: rounds of drawing after which a held-out or training batch that is still incomplete is an error
MAX_ROUNDS = 1000


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
                       "rounds of draws; its input space is too small to split (pebench.tasks.base.Task.is_split)")


def training_batch(task: Task, n: int, length: int, generator: torch.Generator) -> Batch:
    """``n`` training examples at ``length`` with no held-out input (:func:`~pebench.tasks.base.is_held_out`) where
    the length is split (:meth:`~pebench.tasks.base.Task.is_split`), else ``task.sample`` as it is."""
    batch = task.sample(n, length, generator)
    held = is_held_out(batch.inputs)
    if not bool(held.any()) or not task.is_split(length):
        return batch
    inputs, targets = batch.inputs.clone(), batch.targets.clone()
    again = _fill(task, int(held.sum()), length, generator, "train", keep_held_out=False)
    inputs[held], targets[held] = again.inputs, again.targets
    return Batch(inputs, targets)


def held_out_batch(task: Task, n: int, length: int, generator: torch.Generator) -> Batch:
    """``n`` held-out examples at ``length`` (``split="eval"``): only held-out inputs where the length is split
    (:meth:`~pebench.tasks.base.Task.is_split`), else fresh examples of the whole distribution."""
    if not task.is_split(length):
        return task.sample(n, length, generator, split="eval")
    return _fill(task, n, length, generator, "eval", keep_held_out=True)
