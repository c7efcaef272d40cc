"""Modular arithmetic: reduce an expression over + - * modulo 5, without brackets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

MODULUS = 5
PLUS, MINUS, TIMES, BLANK = MODULUS, MODULUS + 1, MODULUS + 2, MODULUS + 3


@register("modular_arithmetic", paper="deletang2023chomsky", chomsky="regular")
class ModularArithmetic(Task):
    """Value modulo 5 of an expression of digits and ``+ - *``, ``*`` binding first: ``1 + 2 * 3 -> 2``.

    Symbols follow Deletang et al.'s generator: digits ``0..4`` are 0..4,
    ``+`` is 5, ``-`` is 6, ``*`` is 7 and the blank ``_`` is 8
    (``vocab_size = 9``). An input of odd length ``L`` is ``d o d o ... d``
    with ``(L + 1) / 2`` uniform digits and ``(L - 1) / 2`` operators uniform
    over ``+ - *``; the output is its value modulo 5 with the usual precedence
    (their examples: ``1 + 2 * 3 -> 2``, ``1 - 1 - 1 -> 4``,
    ``0 * 1 + 4 * 3 - 2 -> 0``). Output: 1 token.

    Deletang et al.'s sampler only makes odd lengths (it shortens an even
    length by one); pebench keeps the requested length by appending their
    blank ``_`` to the expression of length ``L - 1``, which their evaluator
    reads as a trailing ``+`` with no operand, i.e. without changing the value:
    ``1 + 2 * 3 _ -> 2``. :meth:`solve` uses the same positional rule as
    their evaluator and is total: even positions are operands (a symbol that
    is not a digit counts as 0), odd positions are operators (a symbol that
    is not ``-`` or ``*`` counts as ``+``).

    "Modular arithmetic" of Deletang et al. (2023) (``tasks/regular/
    modular_arithmetic.py`` of google-deepmind/neural_networks_chomsky_hierarchy,
    modulus 5, all three operators), a regular task. pebench's ``sum_mod`` is
    its order-invariant special case: only ``+``, no operator tokens, modulus 3.

    Order-dependent: which digit an operator applies to depends on position.
    Chance: the value's distribution is computed exactly by a recursion over
    (sum of finished terms, current product) modulo 5; chance is its largest
    probability (``1/5`` at ``L = 1``; 19/75 = 0.253 at ``L = 3``, because ``*`` makes
    0 more likely).
    """

    version = 1
    order_dependent = True
    vocab_size = MODULUS + 4

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        odd = length - 1 + length % 2  # the expression's length
        digits = torch.randint(0, MODULUS, (n, (odd + 1) // 2), generator=generator)
        operators = MODULUS + torch.randint(0, 3, (n, odd // 2), generator=generator)
        inputs = torch.full((n, length), BLANK, dtype=torch.long)
        inputs[:, 0:odd:2] = digits
        inputs[:, 1:odd:2] = operators
        return inputs

    def solve(self, inputs: Tensor) -> Tensor:
        operands = inputs[:, 0::2]  # (n, ceil(L/2))
        operands = torch.where(operands < MODULUS, operands, 0)
        total = torch.zeros(inputs.shape[0], dtype=torch.long, device=inputs.device)
        term = operands[:, 0]
        for i in range(1, operands.shape[1]):  # one vectorized step per operand: linear in L
            operator, value = inputs[:, 2 * i - 1], operands[:, i]
            times = operator == TIMES
            total = torch.where(times, total, total + term)
            term = torch.where(times, term * value, torch.where(operator == MINUS, -value, value)) % MODULUS
        return ((total + term) % MODULUS).unsqueeze(1)

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        # states[s][t] = P(sum of finished terms = s, current product = t), all mod 5
        states = [[1 / MODULUS] * MODULUS if s == 0 else [0.0] * MODULUS for s in range(MODULUS)]
        for _ in range((length - 1) // 2):
            new = [[0.0] * MODULUS for _ in range(MODULUS)]
            for s in range(MODULUS):
                for t in range(MODULUS):
                    p = states[s][t] / (3 * MODULUS)
                    for v in range(MODULUS):
                        new[(s + t) % MODULUS][v] += p  # + v
                        new[(s + t) % MODULUS][-v % MODULUS] += p  # - v
                        new[s][t * v % MODULUS] += p  # * v
            states = new
        values = [0.0] * MODULUS
        for s in range(MODULUS):
            for t in range(MODULUS):
                values[(s + t) % MODULUS] += states[s][t]
        return max(values)
