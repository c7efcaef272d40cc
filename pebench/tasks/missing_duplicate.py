"""Missing duplicate: restore the masked symbol of a string written twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

MASK = 2
PAD = 3


@register("missing_duplicate", paper="ruoss2023randomized", chomsky="context_sensitive")
class MissingDuplicate(Task):
    """A binary string written twice with one symbol masked; output that symbol: ``0 1 1 0 0 M 1 0 -> 1``.

    An input of length ``L`` is ``w w`` for a uniform binary ``w`` of length
    ``h = L // 2``, with one uniformly chosen position of the ``2h`` replaced
    by the mask token 2, followed for odd ``L`` by the padding token 3 (the
    construction of Deletang et al.'s code). The answer is the masked symbol,
    i.e. the symbol ``h`` positions away from the mask: ``1 0 1 1 M 1 3 -> 0``.
    Output: 1 token; ``vocab_size = 4``; ``min_length = 2``.

    Order-free as generated, hence a control: every symbol of ``w w`` occurs an
    even number of times, so the masked symbol is the one whose count among the
    visible symbols is odd, and the bag of the input gives the answer at every
    length (position-free floor exactly 1.0). :meth:`solve` computes it that way
    (the parity of the visible ones), the same answer on every generated input
    and on any permutation of one. A model may still read it at the
    offset ``h`` from the mask; nothing in the data requires it. The masked
    symbol is a uniform bit, so chance token accuracy is exactly ``1/2``.
    Introduced by Ruoss et al. (2023) alongside Deletang et al.'s (2023) tasks
    (context-sensitive), where it counts as order-dependent.
    """

    version = 1
    order_dependent = False
    vocab_size = 4
    min_length = 2

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        half = length // 2
        strings = torch.randint(0, 2, (n, half), generator=generator)
        doubled = torch.cat([strings, strings], dim=1)  # (n, 2h)
        masked = torch.randint(0, 2 * half, (n, 1), generator=generator)
        doubled = doubled.scatter(1, masked, MASK)
        padding = torch.full((n, length % 2), PAD, dtype=torch.long)
        return torch.cat([doubled, padding], dim=1)  # (n, L)

    def solve(self, inputs: Tensor) -> Tensor:
        ones = (inputs == 1).sum(dim=1, keepdim=True)  # (n, 1): visible ones; odd iff the masked symbol is 1
        return ones % 2

    def chance_accuracy(self, length: int) -> float:
        return 0.5
