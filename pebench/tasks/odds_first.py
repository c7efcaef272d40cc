"""Odds first: the tokens at odd positions, then those at even positions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import SequenceTask

if TYPE_CHECKING:
    from torch import Tensor


@register("odds_first", paper="deletang2023chomsky", chomsky="context_sensitive")
class OddsFirst(SequenceTask):
    """Tokens at odd positions first, then even ones: ``a b c d e -> a c e b d``.

    Positions are counted from 1 as in Deletang et al. (2023), whose example
    is ``aaabaa -> aaaaba``: the output is ``x1 x3 x5 ... x2 x4 ...``, i.e.
    in 0-based indices ``inputs[0::2]`` followed by ``inputs[1::2]``. Output
    length equals input length. Order-dependent: each output position reads a
    fixed input position. Inputs are uniform over ``vocab_size = 10`` symbols,
    so chance token accuracy is exactly ``1/10``. "Odds first" in Deletang et
    al. (2023), a context-sensitive task.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = 10

    def solve(self, inputs: Tensor) -> Tensor:
        return torch.cat([inputs[:, 0::2], inputs[:, 1::2]], dim=1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
