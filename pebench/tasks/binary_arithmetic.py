"""Binary addition and multiplication of two little-endian numbers, with a termination token."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

OPERATOR = 2  # the token between the two numbers (``+`` or ``*``)
END = 2  # output termination symbol


def random_operands(n: int, length: int, generator: torch.Generator) -> Tensor:
    """Inputs ``a 2 b`` of Deletang et al.'s binary tasks: (n, length) int64, ``length >= 3``.

    ``a`` has ``k`` digits with ``k`` uniform in ``[1, length - 2]`` and ``b``
    the other ``length - 1 - k``; each number is uniform over the nonzero
    values of its digit count (leading zeros allowed), little-endian. A number
    that came out zero is redrawn until none is (each redraw is at least as
    likely to succeed as not).
    """
    split = torch.randint(1, length - 1, (n, 1), generator=generator)  # (n, 1): digits of a
    positions = torch.arange(length).expand(n, length)
    in_a, in_b = positions < split, positions > split
    bits = torch.randint(0, 2, (n, length), generator=generator)
    while True:
        zero_a = ((bits * in_a).sum(1) == 0)
        zero_b = ((bits * in_b).sum(1) == 0)
        redraw = zero_a | zero_b  # (n,)
        if not redraw.any():
            break
        bits[redraw] = torch.randint(0, 2, (int(redraw.sum()), length), generator=generator)
    return torch.where(positions == split, OPERATOR, bits)


def read_operands(row: list[int]) -> tuple[int, int]:
    """The two numbers of ``a 2 b`` (little-endian); ``b`` is 0 without a 2, later 2s read as 0 digits."""
    split = row.index(OPERATOR) if OPERATOR in row else len(row)
    a = sum(bit << i for i, bit in enumerate(row[:split]) if bit == 1)
    b = sum(bit << i for i, bit in enumerate(row[split + 1 :]) if bit == 1)
    return a, b


def write_result(value: int, digits: int, width: int) -> list[int]:
    """``value`` little-endian, shortest (``0`` is one digit), cut to ``digits`` digits; then 2, zeros to ``width``."""
    bits = [int(bit) for bit in reversed(f"{value:b}")][:digits]
    return [*bits, END] + [0] * (width - len(bits) - 1)


@register("binary_addition", paper="deletang2023chomsky", chomsky="context_sensitive")
class BinaryAddition(Task):
    """Sum of two little-endian binary numbers and an end symbol: ``0 0 1 2 0 1 1 0 1 -> 0 1 0 1 1 2 0 0 0 0``.

    Symbols as in Deletang et al.'s generator: inputs use 0 and 1 (bits) and 2
    (``+``); outputs 0, 1 and the termination symbol 2 (``vocab_size = 3``).
    An input of length ``L >= 3`` is ``a + b``: ``a`` has ``k`` digits with
    ``k`` uniform in ``[1, L - 2]``, ``b`` has ``L - 1 - k``, and each number
    is uniform over the nonzero numbers of that many digits (leading zeros
    allowed), all little-endian. The output is ``a + b`` little-endian without
    leading zeros, then 2, then zeros up to ``L + 1`` tokens. These are their
    examples: ``001 + 01101`` above (4 + 22 = 26) and ``1001 + 000001`` (9 + 32
    = 41), ``1 0 0 1 2 0 0 0 0 0 1 -> 1 0 0 1 0 1 2 0 0 0 0 0``. Output:
    ``L + 1`` tokens.

    Deletang et al.'s sampler makes no operator below length 3 (it returns the
    number itself); pebench's ``min_length`` is 3. As in
    ``stack_manipulation``, their accuracy masks the positions after the
    termination symbol while pebench scores them all. :meth:`solve` reads the
    numbers around the first 2 (a missing second number is 0), so it is total
    on shuffled inputs; Python integers keep it exact at any length.

    "Binary addition" of Deletang et al. (2023) (``tasks/cs/binary_addition.py``
    of google-deepmind/neural_networks_chomsky_hierarchy), a context-sensitive
    task. pebench's ``addition`` differs: decimal, the two operands' lengths
    fixed by ``L`` and a fixed-width output without termination symbol.

    Order-dependent: a digit's value depends on its position. Chance: no
    closed form; the default Monte-Carlo estimate from 20,000 examples is
    used (a standard error of at most 0.004, plus a small upward bias from
    taking the most frequent symbol per position).
    """

    version = 1
    order_dependent = True
    vocab_size = 3
    min_length = 3

    def output_length(self, length: int) -> int:
        return length + 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return random_operands(n, length, generator)

    def solve(self, inputs: Tensor) -> Tensor:
        length = inputs.shape[1]
        rows = [write_result(sum(read_operands(row)), length, length + 1) for row in inputs.tolist()]
        return torch.tensor(rows, dtype=torch.long, device=inputs.device).view(-1, length + 1)


@register("binary_multiplication", paper="deletang2023chomsky", chomsky="context_sensitive")
class BinaryMultiplication(Task):
    """Product of two little-endian binary numbers and an end symbol: ``0 0 1 2 0 1 1 0 1 -> 0 0 0 1 1 0 1 2 0``.

    Inputs and symbols exactly as in ``binary_addition`` (2 now stands for
    ``*``), drawn the same way. The output is ``a * b`` little-endian without
    leading zeros, then 2, then zeros up to ``L`` tokens (a product of numbers
    with ``k`` and ``L - 1 - k`` digits has at most ``L - 1`` digits). These
    are their examples: ``001 * 01101`` above (4 * 22 = 88) and
    ``1001 * 000001`` (9 * 32 = 288), ``1 0 0 1 2 0 0 0 0 0 1 -> 0 0 0 0 0 1 0 0 1 2 0``.
    Output: ``L`` tokens.

    As for ``binary_addition``: ``min_length`` is 3 (their sampler writes a
    placeholder below), every output position is scored, :meth:`solve` is
    total (a missing second factor is 0, and a result is cut to ``L - 1``
    digits, which generated inputs never need). Python's integer product is
    subquadratic (Karatsuba), negligible at the lengths of the protocol.

    "Binary multiplication" of Deletang et al. (2023)
    (``tasks/cs/binary_multiplication.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a context-sensitive task.

    Order-dependent: a digit's value depends on its position. Chance: no
    closed form; the default Monte-Carlo estimate from 20,000 examples is
    used (a standard error of at most 0.004, plus a small upward bias from
    taking the most frequent symbol per position).
    """

    version = 1
    order_dependent = True
    vocab_size = 3
    min_length = 3

    def output_length(self, length: int) -> int:
        return length

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return random_operands(n, length, generator)

    def solve(self, inputs: Tensor) -> Tensor:
        length = inputs.shape[1]
        rows = []
        for row in inputs.tolist():
            a, b = read_operands(row)
            rows.append(write_result(a * b, length - 1, length))
        return torch.tensor(rows, dtype=torch.long, device=inputs.device).view(-1, length)
