"""Copy: output the input sequence unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.tasks import register
from pebench.tasks.base import SequenceTask

if TYPE_CHECKING:
    from torch import Tensor


@register("copy", paper="deletang2023chomsky")
class Copy(SequenceTask):
    """Copy the input: ``a b c -> a b c``.

    Order-dependent: the i-th output is the i-th input. Inputs are uniform
    over ``vocab_size`` symbols, so chance token accuracy is ``1/vocab_size``.
    Deletang et al. (2023) list it as "duplicate string" without the repeat.
    """

    version = 1
    exchangeable_inputs = True
    order_dependent = True
    vocab_size = 10

    def solve(self, inputs: Tensor) -> Tensor:
        return inputs.clone()

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
