"""Duplicate: output the input sequence twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("duplicate", paper="deletang2023chomsky")
class Duplicate(Task):
    """Write the input twice: ``a b c -> a b c a b c``.

    Output length is ``2 L``. Order-dependent: outputs ``i`` and ``L + i``
    are the input at position ``i``. Inputs are uniform over
    ``vocab_size = 10`` symbols, so chance token accuracy is exactly ``1/10``.
    "Duplicate string" in Deletang et al. (2023), a context-sensitive task.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = 10

    def output_length(self, length: int) -> int:
        return 2 * length

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        return torch.cat([inputs, inputs], dim=1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
