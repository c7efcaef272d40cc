"""Cycle navigation: the final position of a walk on a cycle of five states."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

CYCLE = 5


@register("cycle_navigation", paper="deletang2023chomsky", chomsky="regular")
class CycleNavigation(Task):
    """Final position on a cycle of 5 states after a walk: ``2 0 1 0 0 -> 3``.

    Each input token is a move: 0 = one step left (-1), 1 = stay, 2 = one step
    right (+1); the walk starts at state 0 and the output is the final state
    ``sum(x - 1) mod 5``. In the example the moves are +1 -1 0 -1 -1, the walk
    ends at -2, i.e. state 3 (Deletang et al.'s example ``1 -1 0 -1 -1 -> 3``);
    ``2 2 2 0 -> 2``. Moves are uniform over the three symbols. Output: 1
    token; ``vocab_size = 5`` (inputs use 0..2, outputs 0..4).

    "Cycle navigation" of Deletang et al. (2023), a regular task, with the
    input distribution, move encoding (``action - 1``) and cycle length of
    their generator (``tasks/regular/cycle_navigation.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy). pebench's ``sum_mod``
    is the same computation with moves in ``{0, 1, 2}`` on a cycle of 3.

    Order-invariant control: a sum of moves does not depend on their order.
    Chance: the final state is ``S mod 5`` for ``S`` a sum of ``L`` uniform
    steps in ``{-1, 0, 1}``; its distribution is computed exactly and chance is
    its largest probability (``1/3`` at ``L = 1``, tending to ``1/5``).
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = False
    vocab_size = CYCLE

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, 3, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        return (inputs - 1).sum(dim=1, keepdim=True) % CYCLE

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        states = torch.zeros(CYCLE, dtype=torch.float64)
        states[0] = 1.0
        for _ in range(length):
            states = (states.roll(-1) + states + states.roll(1)) / 3
        return float(states.max())
