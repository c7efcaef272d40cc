"""Modular sums: parity of a bit string and the sum of symbols modulo k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("sum_mod", paper="deletang2023chomsky", label="sum modulo 3")
class SumMod(Task):
    """Sum of the input symbols modulo 3: ``2 2 1 -> 2``.

    Inputs are uniform over the ``k = vocab_size = 3`` symbols ``0..2`` and the
    output is ``sum(x) mod 3`` (5 mod 3 = 2 in the example). Output: 1 token.

    Order-invariant control: a sum does not depend on the order of its terms,
    and with one output token a position-free encoder can represent the answer.
    The sum of ``L >= 1`` uniform residues is uniform, so chance token accuracy
    is exactly ``1/3``. It is the commutative core of Deletang et al.'s (2023)
    "cycle navigation" (the sum of moves on a cycle, of length 5 there); ``k``
    is 3 because a 2-layer, 64-wide encoder with learned absolute positions
    (batch 64) learns ``k = 3`` at lengths <= 16 within 10k steps (0.96
    accuracy) but not ``k = 5`` (0.57).
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = False
    vocab_size = 3

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        return inputs.sum(dim=1, keepdim=True) % self.vocab_size

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size


@register("parity", paper="deletang2023chomsky")
class Parity(SumMod):
    """Parity of the number of ones in a bit string: ``1 0 1 1 -> 1``.

    The output is ``sum(x) mod 2`` — 1 if the count of ones is odd. Inputs are
    uniform bits; ``vocab_size = 2``. Output: 1 token.

    Order-invariant control (a function of the count of ones only). The parity
    of ``L >= 1`` fair bits is a fair bit, so chance token accuracy is exactly
    ``1/2``. "Parity check" in Deletang et al. (2023), a regular task that is
    nevertheless hard for transformers to learn and extrapolate (Hahn 2020):
    a deliberately hard control. A 2-layer, 64-wide encoder with learned
    absolute positions (batch 64) stays at chance after 10k steps on lengths
    <= 16, so expect chance-level rows unless models are trained much longer.
    """

    vocab_size = 2
