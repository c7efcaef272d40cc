"""Copy: output the input sequence unchanged."""

from __future__ import annotations

import torch
from torch import Tensor

from pebench.tasks import register
from pebench.tasks.base import Task


@register("copy", paper="deletang2023chomsky")
class Copy(Task):
    """Copy the input: ``a b c -> a b c``.

    Order-dependent: the i-th output is the i-th input. Inputs are uniform
    over ``vocab_size`` symbols, so chance token accuracy is ``1/vocab_size``.
    Deletang et al. (2023) list it as "duplicate string" without the repeat.
    """

    version = 1
    order_dependent = True
    vocab_size = 10

    def output_length(self, length: int) -> int:
        return length

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        return inputs.clone()

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
