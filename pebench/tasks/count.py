"""Count: how many ones a bit string holds, written in decimal."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

DIGITS = 3


@register("count", paper="weiss2021thinking")
class Count(Task):
    """Number of ones in a bit string, three decimal digits least significant first: ``1 0 1 1 -> 3 0 0``.

    Inputs are uniform bits (symbols 0 and 1); the output is the count of ones
    as ``DIGITS = 3`` decimal digits (symbols ``0..9``), least significant
    first and zero-padded, so ``vocab_size = 10`` and the output length is 3
    at every length. Twelve ones, for instance, are ``2 1 0``. Three digits
    cap the length at ``max_length = 999``. Output: 3 tokens — a multi-token
    control: a position-free encoder sees three identical blank positions and
    cannot write different digits at them, while a decoder can.

    Order-invariant control: the answer depends only on how many ones there
    are. It is the counting primitive of RASP (Weiss et al. 2021) with a
    fixed-width output, so the output format is the same at every length.
    Counts beyond the training range need digit values never seen in
    training (a tens digit of 2 or more when trained on lengths <= 16), an
    extrapolation difficulty shared by every encoding.

    Chance: the count is Binomial(L, 1/2); at each digit position the best
    guess is that digit's most likely value under it, computed exactly.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = False
    vocab_size = 10
    max_length = 10**DIGITS - 1

    def output_length(self, length: int) -> int:
        return DIGITS

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, 2, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        ones = (inputs == 1).sum(dim=1, keepdim=True)  # (n, 1)
        place_values = 10 ** torch.arange(DIGITS, device=inputs.device)  # (DIGITS,)
        return ones // place_values % 10  # (n, DIGITS)

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        best = 0
        for place in range(DIGITS):
            ways = [0] * 10  # number of bit strings per value of this digit
            for ones in range(length + 1):
                ways[ones // 10**place % 10] += math.comb(length, ones)
            best += max(ways)
        return best / (DIGITS * 2**length)
