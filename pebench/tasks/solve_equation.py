"""Solve equation: the value of the unknown in a bracketed linear equation modulo 5."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task
from pebench.tasks.modular_arithmetic_brackets import MODULUS, evaluate, random_expressions

if TYPE_CHECKING:
    from torch import Tensor

#: Deletang et al.'s symbols for this task: digits are 0..4, then + - ( ) x =
PLUS, MINUS, OPEN, CLOSE, UNKNOWN, EQUALS = range(MODULUS, MODULUS + 6)
SYMBOLS = {"+": PLUS, "-": MINUS, "(": OPEN, ")": CLOSE, "x": UNKNOWN}


@register("solve_equation", paper="deletang2023chomsky", chomsky="context_free")
class SolveEquation(Task):
    """The unknown ``x`` of a bracketed equation modulo 5: ``( x - ( - 1 ) ) = 3 -> 2``.

    Symbols follow Deletang et al.'s generator: digits ``0..4`` are 0..4,
    ``+`` 5, ``-`` 6, ``(`` 7, ``)`` 8, ``x`` 9, ``=`` 10 (``vocab_size = 11``).
    An input of length ``L >= 3`` is ``E = v`` where ``E`` is an expression of
    length ``L - 2`` drawn exactly as in ``modular_arithmetic_brackets``
    (only ``+`` and ``-``, so the solution is unique), ``v`` its value modulo
    5, and then one digit of ``E`` replaced by ``x``: a position is drawn
    uniformly and moved forward (cyclically) to the first digit, as in their
    generator. The output is the replaced digit: in the example
    ``x + 1 = 3`` gives ``x = 2``; ``x = 4 -> 4``. Output: 1 token.

    :meth:`solve` evaluates the left side of the first ``=`` at ``x = 0..4``
    (with :func:`~pebench.tasks.modular_arithmetic_brackets.evaluate`) and
    answers the smallest ``x`` equal to the right side, or 0 if none is; it is
    total on shuffled inputs. Deletang et al.'s sampler returns a constant
    all-zero placeholder for lengths below 3, where no equation fits, so
    pebench's ``min_length`` is 3.

    "Solve equation" of Deletang et al. (2023) (``tasks/dcf/solve_equation.py``
    of google-deepmind/neural_networks_chomsky_hierarchy, modulus 5), a
    deterministic context-free task.

    Order-dependent: the signs in front of ``x`` decide its value. Chance: the
    digits of ``E`` are uniform and independent of which position is replaced
    (that choice depends only on the bracket structure), so the answer is a
    uniform digit: chance token accuracy is exactly ``1/5``.
    """

    version = 1
    order_dependent = True
    vocab_size = MODULUS + 6
    min_length = 3

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        expressions = random_expressions(n, length - 2, generator, SYMBOLS)
        starts = torch.randint(0, length - 2, (n,), generator=generator).tolist()
        rows = []
        for tokens, position in zip(expressions, starts, strict=True):
            value = evaluate(tokens, SYMBOLS)
            while tokens[position] >= MODULUS:  # forward to the next digit, cyclically
                position = (position + 1) % (length - 2)
            tokens[position] = UNKNOWN
            rows.append([*tokens, EQUALS, value])
        return torch.tensor(rows, dtype=torch.long).view(n, length)

    def solve(self, inputs: Tensor) -> Tensor:
        answers = []
        for row in inputs.tolist():
            split = row.index(EQUALS) if EQUALS in row else len(row)
            left, right = row[:split], row[split + 1 :]
            target = evaluate(right, SYMBOLS)
            roots = [x for x in range(MODULUS) if evaluate(left, SYMBOLS, unknown=x) == target]
            answers.append(roots[0] if roots else 0)
        return torch.tensor(answers, dtype=torch.long, device=inputs.device).view(-1, 1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / MODULUS
