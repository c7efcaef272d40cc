"""Selective copy: copy the symbols of a sequence in order, skipping the blanks between them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

SYMBOLS = 10
BLANK = SYMBOLS  # the filler token


@register("selective_copy", paper="golovneva2024cope", cites=("gu2023mamba",))
class SelectiveCopy(Task):
    """Copy the non-blank tokens in order: ``3 _ _ 1 4 _ -> 3 1 4``.

    An input of length ``L`` holds ``k = ceil(L / 2)`` symbols uniform over
    ``0..9`` at uniformly random positions (a uniform ``k``-subset) and the
    blank token 10 (``_`` above) everywhere else, so ``vocab_size = 11``. The
    output is the ``k`` symbols in their input order; ``_ 7 7 _ 2 -> 7 7 2``.
    Output: ``ceil(L / 2)`` tokens.

    The selective copying task of Gu & Dao (2023, Mamba) as used by CoPE
    (Golovneva et al. 2024), who train on equal numbers of blank and
    non-blank tokens (128 of each) and test on denser and sparser inputs.
    Neither released a generator that could be found (facebookresearch/RAM
    ``projects/cope`` ships only the counting generator), so this follows the
    papers' description; the symbol alphabet (10, as pebench's ``copy``) and
    the half-blank density at every length are pebench's choices. Positions
    are drawn by sorting ``L`` uniform keys (time ``O(L log L)``, memory
    ``O(L)`` per example).

    :meth:`solve` keeps the non-blank tokens in order and cuts or pads (with
    blanks) to ``k``; on generated and shuffled inputs there are exactly ``k``.

    Order-dependent: the output order is the input order of the symbols, so a
    task that a position-free model cannot solve, but one whose positions are
    contextual (the i-th non-blank token), not absolute. Chance token accuracy
    is exactly ``1/10``: every output is a uniform symbol.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = SYMBOLS + 1

    def output_length(self, length: int) -> int:
        return (length + 1) // 2

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        keys = torch.rand(n, length, generator=generator)
        ranks = keys.argsort(1).argsort(1)  # (n, L): a uniform permutation
        symbols = torch.randint(0, SYMBOLS, (n, length), generator=generator)
        return torch.where(ranks < self.output_length(length), symbols, BLANK)

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        k = self.output_length(length)
        positions = torch.arange(length, device=inputs.device).expand(n, length)
        order = torch.where(inputs == BLANK, positions + length, positions).argsort(1)  # non-blanks first, in order
        return inputs.gather(1, order[:, :k])

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / SYMBOLS
