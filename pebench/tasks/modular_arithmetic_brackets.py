"""Modular arithmetic with brackets: reduce a fully bracketed + / - expression modulo 5."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

MODULUS = 5
#: Deletang et al.'s symbols for this task: digits are 0..4, then + - * ( ) x
PLUS, MINUS, TIMES, OPEN, CLOSE, UNKNOWN = range(MODULUS, MODULUS + 6)


def random_expressions(n: int, length: int, generator: torch.Generator, symbols: dict[str, int]) -> list[list[int]]:
    """``n`` random bracketed expressions of exactly ``length`` tokens, with Deletang et al.'s grammar.

    An expression of length 1 is a digit ``d``; of length 2, ``-d``; of 3,
    ``(d)``; of 4, ``(-d)``; of ``L >= 5``, ``(A o B)`` where the length of
    ``A`` is uniform in ``[1, L - 4]``, ``B`` takes the rest and the operator
    ``o`` is uniform over ``+`` and ``-``; digits are uniform in ``0..4``.
    ``symbols`` maps ``"+" "-" "(" ")"`` to token ids (digits are themselves).
    Tokens are written in place from an explicit work list (no recursion, no
    string concatenation), so the cost is linear in ``length``.
    """
    # every node uses at most two uniforms and there are fewer than `length` nodes
    uniforms = torch.rand(n, length + 1, generator=generator, dtype=torch.float64).tolist()
    expressions = []
    for draws in uniforms:
        draws.reverse()  # consumed with pop() from the end
        tokens = [0] * length
        work = [(0, length)]  # (start, length) of the sub-expressions still to write
        while work:
            start, size = work.pop()
            if size <= 4:
                digit = int(draws.pop() * MODULUS)
                body = {1: [digit], 2: [symbols["-"], digit], 3: [symbols["("], digit, symbols[")"]],
                        4: [symbols["("], symbols["-"], digit, symbols[")"]]}[size]
                tokens[start : start + size] = body
                continue
            left = 1 + int(draws.pop() * (size - 4))  # uniform in [1, size - 4]
            operator = symbols["+"] if draws.pop() < 0.5 else symbols["-"]
            tokens[start] = symbols["("]
            tokens[start + 1 + left] = operator
            tokens[start + size - 1] = symbols[")"]
            work.append((start + 2 + left, size - left - 3))
            work.append((start + 1, left))
        expressions.append(tokens)
    return expressions


def _apply(frame: list, value: int, plus: int, minus: int, times: int | None) -> None:
    """Apply ``value`` to an open bracket's ``frame`` (:func:`evaluate`): negated if pending, then combined by the
    pending operator (added when it is the bracket's first value)."""
    if frame[2]:
        value, frame[2] = -value, False
    if frame[0] is None:
        frame[0] = value
    elif frame[1] == times:
        frame[0] = frame[0] * value % MODULUS
    else:
        frame[0] = (frame[0] - value if frame[1] == minus else frame[0] + value) % MODULUS
    frame[1] = plus


def evaluate(tokens: list[int], symbols: dict[str, int], unknown: int = 0) -> int:
    """Value modulo 5 of a bracketed expression, read left to right with a stack of open brackets.

    Digits are values (the symbol ``symbols.get("x")``, if any, is ``unknown``);
    ``-`` before any value in a bracket negates the next value, otherwise it
    (like ``+`` and ``*``) is the operator applied to the next value, left to
    right; a value with no operator before it is added; ``)`` closes the
    innermost bracket (an unmatched one is skipped) and brackets still open at
    the end are closed. On Deletang et al.'s expressions this is the usual
    value; on any other token string (shuffled inputs) it is still defined.
    """
    plus, minus, times = symbols["+"], symbols["-"], symbols.get("*")
    opening, closing, variable = symbols["("], symbols[")"], symbols.get("x")
    frames = [[None, plus, False]]  # per open bracket: [accumulated value, pending operator, negate next]

    def push_value(value: int) -> None:
        _apply(frames[-1], value, plus, minus, times)

    for token in tokens:
        if token < MODULUS or token == variable:
            push_value(token if token < MODULUS else unknown)
        elif token == opening:
            frames.append([None, plus, False])
        elif token == closing and len(frames) > 1:
            push_value(frames.pop()[0] or 0)
        elif token in (plus, minus, times):
            if frames[-1][0] is None:
                frames[-1][2] ^= token == minus
            else:
                frames[-1][1] = token
    while len(frames) > 1:
        push_value(frames.pop()[0] or 0)
    return (frames[0][0] or 0) % MODULUS


SYMBOLS = {"+": PLUS, "-": MINUS, "*": TIMES, "(": OPEN, ")": CLOSE}


@register("modular_arithmetic_brackets", paper="deletang2023chomsky", chomsky="context_free")
class ModularArithmeticBrackets(Task):
    """Value modulo 5 of a fully bracketed expression over ``+`` and ``-``: ``( ( - 3 ) + ( 4 - 1 ) ) -> 0``.

    Symbols follow Deletang et al.'s generator: digits ``0..4`` are 0..4,
    ``+`` 5, ``-`` 6, ``*`` 7, ``(`` 8, ``)`` 9, ``x`` 10 (``vocab_size = 11``;
    ``*`` and ``x`` never occur, as in their default ``mult=False``). An input
    of length ``L`` is drawn from their grammar: length 1 is a digit ``d``,
    2 is ``-d``, 3 is ``(d)``, 4 is ``(-d)``, and ``L >= 5`` is ``(A o B)``
    with ``len(A)`` uniform in ``[1, L - 4]``, ``B`` of the remaining length,
    ``o`` uniform over ``+ -``, digits uniform. The output is the value modulo
    5: in the example ``-3 + (4 - 1) = 0``; ``( 2 - 4 ) -> 3``. Output: 1
    token. The generator writes tokens in place (cost linear in ``L``);
    :meth:`solve` is the left-to-right bracket-stack evaluation of
    :func:`evaluate`, total on shuffled inputs.

    "Modular arithmetic (brackets)" of Deletang et al. (2023) (``tasks/dcf/
    modular_arithmetic_brackets.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy, modulus 5), a
    deterministic context-free task; ``modular_arithmetic`` is its regular
    counterpart without brackets (with ``*``).

    Order-dependent: brackets and signs apply to what follows them. Chance:
    with only ``+`` and ``-`` every digit enters the value with coefficient
    ``+1`` or ``-1``, so the value is a uniform digit plus an independent
    term, uniform modulo 5: chance token accuracy is exactly ``1/5``.
    """

    version = 1
    order_dependent = True
    vocab_size = MODULUS + 6

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.tensor(random_expressions(n, length, generator, SYMBOLS), dtype=torch.long).view(n, length)

    def solve(self, inputs: Tensor) -> Tensor:
        values = [evaluate(row, SYMBOLS) for row in inputs.tolist()]
        return torch.tensor(values, dtype=torch.long, device=inputs.device).view(-1, 1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / MODULUS
