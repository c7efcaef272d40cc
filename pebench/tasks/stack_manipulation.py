"""Stack manipulation: apply POP / PUSH instructions to a stack and write the final stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

POP, PUSH_0, PUSH_1 = 2, 3, 4
END = 2  # output termination symbol


@register("stack_manipulation", paper="deletang2023chomsky", chomsky="context_free")
class StackManipulation(Task):
    """Run stack instructions and write the final stack, top first: ``0 1 1 0 4 2 2 -> 1 1 0 2 0 0 0 0``.

    Input symbols (Deletang et al.'s encoding): 0 and 1 are stack symbols, 2 is
    POP, 3 is PUSH 0, 4 is PUSH 1 (``vocab_size = 5``). An input of length
    ``L >= 2`` is an initial stack of ``k`` uniform bits, given bottom to top,
    with ``k`` uniform in ``[1, L - 1]``, followed by ``L - k`` instructions
    uniform over POP / PUSH 0 / PUSH 1; a POP on an empty stack does nothing.
    The output is the final stack top to bottom, the termination symbol 2, then
    zeros up to ``L + 1`` tokens. In the example (their first) the stack
    ``0 1 1 0`` becomes ``0 1 1 0 1`` (PUSH 1), ``0 1 1 0``, ``0 1 1`` (two POPs),
    so the output is ``1 1 0 2 0 0 0 0``; ``1 1 0 2 2 2 -> 2 0 0 0 0 0 0``.
    For ``L = 1`` the input is one uniform bit and the stack is that bit
    (``1 -> 1 2``), as in their generator. Output: ``L + 1`` tokens.

    "Stack manipulation" of Deletang et al. (2023) (``tasks/dcf/
    stack_manipulation.py`` of google-deepmind/neural_networks_chomsky_hierarchy),
    a deterministic context-free task. One difference in scoring: their
    accuracy masks the positions after the termination symbol, pebench scores
    every output position, so the zero padding (easy to predict) raises token
    accuracy; sequence accuracy is unaffected once the padding is learned.

    :meth:`solve` reads every input token as an instruction, a stack symbol
    pushing itself; this equals the definition above (the initial stack is
    its bits pushed in order) and is total on shuffled inputs.

    Order-dependent: instructions act on the stack in order. Chance: every
    symbol on the final stack is a fair bit independent of the stack's size
    (initial bits and PUSH 0 / PUSH 1 are equally likely), so output ``j`` is
    a fair bit if the size ``s > j``, the symbol 2 if ``s = j`` and 0 if
    ``s < j``; the distribution of ``s`` is computed exactly by a recursion
    over positions, and chance is the mean over positions of the larger of
    ``P(s > j)/2 + P(s < j)`` and ``P(s = j)`` (``3/4`` at ``L = 1``).
    """

    version = 1
    order_dependent = True
    vocab_size = 5

    def output_length(self, length: int) -> int:
        return length + 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        if length == 1:
            return torch.randint(0, 2, (n, 1), generator=generator)
        stack_length = torch.randint(1, length, (n, 1), generator=generator)  # (n, 1) in [1, L-1]
        bits = torch.randint(0, 2, (n, length), generator=generator)
        actions = torch.randint(POP, PUSH_1 + 1, (n, length), generator=generator)
        is_stack = torch.arange(length) < stack_length  # (n, L)
        return torch.where(is_stack, bits, actions)

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        outputs = torch.zeros(n, length + 1, dtype=torch.long)
        for row, tokens in enumerate(inputs.tolist()):
            stack: list[int] = []
            for token in tokens:  # linear in L: every token is one O(1) stack operation
                if token == POP:
                    if stack:
                        stack.pop()
                elif token in (PUSH_0, PUSH_1):
                    stack.append(token - PUSH_0)
                else:
                    stack.append(token)
            outputs[row, : len(stack)] = torch.tensor(stack[::-1], dtype=torch.long)
            outputs[row, len(stack)] = END
        return outputs.to(inputs.device)

    def size_distribution(self, length: int) -> list[float]:
        """``P(final stack size = s)`` for ``s = 0..length``, exactly (a recursion over input positions)."""
        self.check_length(length)
        if length == 1:
            return [0.0, 1.0]
        # sizes[s]: probability that the instructions have started and the stack holds s symbols
        sizes = torch.zeros(length + 2, dtype=torch.float64)
        for position in range(1, length + 1):
            popped = torch.cat([sizes[1:2] + sizes[0:1], sizes[2:], sizes.new_zeros(1)])  # POP (empty stays empty)
            pushed = torch.cat([sizes.new_zeros(1), sizes[:-1]])
            sizes = popped / 3 + pushed * 2 / 3
            if position <= length - 1:  # the initial stack has exactly `position` symbols
                sizes[position] += 1 / (length - 1)
        return sizes[: length + 1].tolist()

    def chance_accuracy(self, length: int) -> float:
        sizes = self.size_distribution(length)
        best, below = 0.0, 0.0  # below = P(s < j)
        for j in range(length + 1):
            above = 1.0 - below - sizes[j]
            best += max(above / 2 + below, sizes[j])
            below += sizes[j]
        return best / (length + 1)
