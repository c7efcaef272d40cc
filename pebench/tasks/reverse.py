"""Reverse: output the input sequence back to front."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.tasks import register
from pebench.tasks.base import SequenceTask

if TYPE_CHECKING:
    from torch import Tensor


@register("reverse", paper="deletang2023chomsky")
class Reverse(SequenceTask):
    """Reverse the input: ``a b c -> c b a``.

    Order-dependent: the i-th output is the input at position ``L-1-i``, so
    any permutation that moves a token to a position holding a different
    symbol changes the answer. Inputs are uniform over ``vocab_size = 10``
    symbols and every output position is one uniform input symbol, so chance
    token accuracy is exactly ``1/10``. "Reverse string" in Deletang et al.
    (2023), a deterministic context-free task.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = 10

    def solve(self, inputs: Tensor) -> Tensor:
        return inputs.flip(1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
