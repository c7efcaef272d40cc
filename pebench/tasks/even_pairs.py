"""Even pairs: is the number of ``01`` and ``10`` substrings odd?"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("even_pairs", paper="deletang2023chomsky", chomsky="regular")
class EvenPairs(Task):
    """Parity of the number of ``01`` and ``10`` pairs in a binary string: ``0 1 1 0 -> 0``.

    The output is 1 if the count of adjacent unequal pairs is odd and 0 if it
    is even (the class convention of Deletang et al.'s code). The count is odd
    exactly when the first and last symbols differ, so the answer is
    ``x[0] != x[L-1]``: ``0 0 1 1 1 0 -> 0`` (one ``01``, one ``10``) and
    ``0 1 0 1 0 0 1 -> 1``. Output: 1 token; ``vocab_size = 2``.

    Order-dependent: moving a different symbol to either end flips the
    answer, so it needs to know which tokens are first and last — a single
    token answer that a position-free encoder cannot give. Chance: for
    ``L = 1`` the answer is always 0 (accuracy 1); for ``L >= 2`` the two ends
    are independent fair bits, so exactly ``1/2``. "Even pairs" in Deletang et
    al. (2023), a regular task.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = 2

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, 2, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        unequal_pairs = (inputs[:, 1:] != inputs[:, :-1]).sum(dim=1, keepdim=True)  # (n, 1)
        return unequal_pairs % 2

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        return 1.0 if length == 1 else 0.5
