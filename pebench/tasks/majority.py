"""Majority: the most frequent input symbol."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("majority", paper="zhou2023algorithms")
class Majority(Task):
    """The most frequent of 4 symbols, ties to the smallest: ``2 0 2 1 0 -> 0``.

    Inputs are uniform over ``vocab_size = 4`` symbols. The output is the
    symbol with the largest count; a tie goes to the smallest tied symbol
    (``0`` and ``2`` both occur twice in the example). Output: 1 token.

    Order-invariant control: the answer is a function of the symbol counts.
    Zhou et al. (2023) call it "mode".

    Chance: by the tie rule symbol 0 is the most likely answer, so chance is
    ``P(count_0 >= count_j for all j)``, computed exactly by counting strings:
    ``4**-L * sum_c C(L, c) W_3(L - c, c)`` where ``W_j(m, c)`` is the number of
    length-``m`` strings over ``j`` symbols with every count ``<= c``. It is
    ``1/4`` at ``L = 1``, ``7/16`` at ``L = 2, 3``, and falls towards ``1/4``
    as ties become rare (0.312 at ``L = 16``, 0.266 at ``L = 256``).
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = False
    vocab_size = 4

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        counts = torch.nn.functional.one_hot(inputs, self.vocab_size).sum(dim=1)  # (n, V)
        symbols = torch.arange(self.vocab_size, device=inputs.device).expand_as(counts)
        is_max = counts == counts.max(dim=1, keepdim=True).values
        return torch.where(is_max, symbols, self.vocab_size).min(dim=1, keepdim=True).values

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        others = self.vocab_size - 1
        winning = sum(math.comb(length, c) * _bounded_strings(others, length - c, c) for c in range(length + 1))
        return winning / self.vocab_size**length


def _bounded_strings(symbols: int, length: int, bound: int) -> int:
    """Number of strings of ``length`` over ``symbols`` symbols in which every symbol occurs at most ``bound`` times."""

    @functools.cache
    def count(symbols: int, length: int) -> int:
        if length > symbols * bound:
            return 0
        if length <= bound:
            return symbols**length
        # choose how often the first symbol occurs and where; the others recurse
        return sum(math.comb(length, k) * count(symbols - 1, length - k) for k in range(min(bound, length) + 1))

    return count(symbols, length)
