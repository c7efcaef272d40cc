"""Addition of two decimal numbers written least-significant digit first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

PLUS = 10


@register("addition", paper="lee2024teaching")
class Addition(Task):
    """Add two decimal numbers, all digits reversed: ``4 2 + 7 5 -> 1 8 0``.

    The example reads 24 + 57 = 81. An input of length ``L`` is ``a + b``
    where ``a`` has ``n_a = L // 2`` digits, ``+`` is the token 10 and ``b``
    has ``n_b = (L - 1) // 2`` digits, each number least-significant digit
    first; digits are uniform (leading zeros allowed), so ``a`` and ``b`` are
    uniform in ``[0, 10**n_a)`` and ``[0, 10**n_b)``. The output is ``a + b``,
    least-significant digit first, zero-padded to ``n_a + 1`` digits (the last
    one is the final carry). ``min_length = 3`` (one digit each);
    ``vocab_size = 11``. Output: ``L // 2 + 1`` tokens.

    Reversed digits let each output digit depend only on digits at and below
    it, which makes the task learnable left to right (Lee et al. 2024; Zhou
    et al. 2024). Unlike Deletang et al.'s (2023) binary addition, the split
    point and output length are fixed by ``L``, so no termination token or
    accuracy mask is needed. :meth:`solve` reads digits by position and
    ignores position ``n_a``, so it is total on shuffled inputs too.

    Order-dependent: a digit's value depends on its position. Chance: every
    digit below the last is uniform (it contains a uniform digit of ``a``
    plus terms independent of it), hence ``1/10``; the final carry is 1 with
    probability ``(N - 1) / (2N)`` if ``n_a = n_b`` and ``(N - 1) / (20N)``
    if ``n_a = n_b + 1`` (``N = 10**n_b``), so the best guess there is 0.
    Chance token accuracy is the mean over the ``n_a + 1`` positions.
    """

    version = 1
    order_dependent = True
    vocab_size = 11
    min_length = 3

    @staticmethod
    def operand_lengths(length: int) -> tuple[int, int]:
        """Digit counts ``(n_a, n_b)`` of the two operands for input length ``length``."""
        return length // 2, (length - 1) // 2

    def output_length(self, length: int) -> int:
        return length // 2 + 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        n_a, n_b = self.operand_lengths(length)
        a = torch.randint(0, 10, (n, n_a), generator=generator)
        b = torch.randint(0, 10, (n, n_b), generator=generator)
        plus = torch.full((n, 1), PLUS, dtype=torch.long)
        return torch.cat([a, plus, b], dim=1)  # (n, L)

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        n_a, n_b = self.operand_lengths(length)
        a = inputs[:, :n_a]
        b = torch.nn.functional.pad(inputs[:, n_a + 1 :], (0, n_a - n_b))  # (n, n_a), zero high digits
        digits = []
        carry = torch.zeros(n, dtype=torch.long, device=inputs.device)
        for i in range(n_a):  # ripple-carry, least significant digit first
            total = a[:, i] + b[:, i] + carry
            digits.append(total % 10)
            carry = total // 10
        # the last digit is the final carry; it is at most 1 for digit inputs
        # (a shuffled '+' read as a digit 10 can make it 2, still a valid symbol)
        digits.append(carry)
        return torch.stack(digits, dim=1)  # (n, n_a + 1)

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        n_a, n_b = self.operand_lengths(length)
        big = 10**n_b
        if n_a == n_b:
            carry_probability = (big - 1) / (2 * big)
        else:
            carry_probability = (big - 1) / (20 * big)
        return (n_a / 10 + 1 - carry_probability) / (n_a + 1)
