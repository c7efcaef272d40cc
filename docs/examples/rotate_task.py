"""Rotate: output the input cyclically shifted left by one symbol (a task kept outside the package)."""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks import register
from pebench.tasks.base import SequenceTask


@register("rotate", paper="")
class Rotate(SequenceTask):
    """Rotate the input left by one: ``a b c d -> b c d a``.

    Order-dependent: the i-th output is the (i+1)-th input, and the last output
    is the first input. Inputs are uniform over ``vocab_size`` symbols, so
    chance token accuracy is ``1/vocab_size``.
    """

    version = 1
    order_dependent = True
    vocab_size = 10

    def solve(self, inputs: Tensor) -> Tensor:
        return torch.roll(inputs, shifts=-1, dims=1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
