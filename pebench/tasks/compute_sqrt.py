"""Compute sqrt: the floor of the square root of a big-endian binary number."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("compute_sqrt", paper="deletang2023chomsky", chomsky="context_sensitive")
class ComputeSqrt(Task):
    """Floor of the square root of a binary number, both big-endian: ``1 0 0 1 0 1 -> 1 1 0``.

    An input of length ``L`` is a number uniform over ``[1, 2**L - 1]``
    written with ``L`` bits, most significant first (leading zeros allowed);
    the output is ``floor(sqrt(x))`` with ``ceil(L / 2)`` bits, most
    significant first (``vocab_size = 2``). Their examples: 37 = ``100101``
    has square root 6.08, so the output is 6 = ``110`` (above); 7 = ``111``
    gives 2, ``1 1 1 -> 1 0``. Output: ``ceil(L / 2)`` tokens. Inputs are
    drawn as ``L`` uniform bits, an all-zero row redrawn; :meth:`solve` uses
    Python's exact integer square root (``math.isqrt``), total for any bits.

    "Compute sqrt" of Deletang et al. (2023) (``tasks/cs/compute_sqrt.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a context-sensitive
    task.

    Order-dependent: a bit's value depends on its position. Chance: no closed
    form is used; the default Monte-Carlo estimate from 20,000 examples (a
    standard error of at most 0.004, plus a small upward bias from taking the
    most frequent symbol per position).
    """

    version = 1
    order_dependent = True
    vocab_size = 2

    def output_length(self, length: int) -> int:
        return math.ceil(length / 2)

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        bits = torch.randint(0, 2, (n, length), generator=generator)
        while True:
            zero = bits.sum(1) == 0  # (n,)
            if not zero.any():
                return bits
            bits[zero] = torch.randint(0, 2, (int(zero.sum()), length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        width = self.output_length(inputs.shape[1])
        rows = []
        for row in inputs.tolist():
            root = math.isqrt(int("".join(map(str, row)), 2))
            rows.append([int(bit) for bit in f"{root:0{width}b}"])
        return torch.tensor(rows, dtype=torch.long, device=inputs.device).view(-1, width)
