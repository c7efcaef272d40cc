"""Sort: the input symbols in ascending order."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pebench.tasks import register
from pebench.tasks.base import SequenceTask

if TYPE_CHECKING:
    from torch import Tensor


@register("sort", paper="deletang2023chomsky")
class Sort(SequenceTask):
    """Sort the input ascending: ``3 1 2 1 -> 1 1 2 3``.

    Inputs are uniform over ``vocab_size = 10`` symbols; the output has the
    input length. Output: ``L`` tokens — a multi-token control: the input
    order is irrelevant, but the output is a sequence, so the model must know
    which output position it is writing (a position-free encoder cannot).

    Order-invariant control: sorting maps every permutation of an input to
    the same output. "Bucket sort" in Deletang et al. (2023); "sort" in Zhou
    et al. (2023).

    Chance: output ``i`` is the ``(i+1)``-th smallest input, and
    ``P(out_i <= v) = P(Binomial(L, (v+1)/10) >= i+1)``; chance is the mean
    over positions of the largest ``P(out_i = v)``, computed exactly. Order
    statistics concentrate as ``L`` grows (output ``i`` is close to
    ``10 i / L``), so chance rises with length: 0.23 at ``L = 3``, 0.42 at
    ``L = 16``, 0.81 at ``L = 256`` — compare accuracies with it, not with
    ``1/10``.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = False
    vocab_size = 10

    def solve(self, inputs: Tensor) -> Tensor:
        return inputs.sort(dim=1).values

    def chance_accuracy(self, length: int) -> float:
        self.check_length(length)
        size = self.vocab_size
        # at_most[v][i] = number of inputs whose sorted output i is <= v, i.e. that hold
        # at least i + 1 symbols <= v; row v = size - 1 counts every input
        at_most = []
        for v in range(size):
            small, large = v + 1, size - v - 1
            ways = [math.comb(length, k) * small**k * large ** (length - k) for k in range(length + 1)]
            tail = [0] * (length + 2)  # tail[k] = inputs with at least k symbols <= v
            for k in range(length, -1, -1):
                tail[k] = tail[k + 1] + ways[k]
            at_most.append(tail[1:])
        best = 0
        for i in range(length):
            best += max(at_most[v][i] - (at_most[v - 1][i] if v else 0) for v in range(size))
        return best / (length * size**length)
