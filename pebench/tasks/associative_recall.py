"""Associative recall: which symbol followed the query the last time it occurred?"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor


@register("associative_recall", paper="olsson2022induction")
class AssociativeRecall(Task):
    """Output the symbol that followed the last earlier occurrence of the query.

    The input is a context ``x[0..L-2]`` followed by a query ``q = x[L-1]``;
    the answer is ``x[j+1]`` for the largest ``j <= L-3`` with ``x[j] = q``
    (the pair ``(x[j], x[j+1])`` must lie inside the context). Examples:
    ``a b c a d c -> a`` (the query ``c`` last occurred at position 2,
    followed by ``a``) and ``a b a d a -> d`` (the query ``a`` last occurred
    at position 2, followed by ``d``). Output: 1 token.

    This is the induction-head task of Olsson et al. (2022), a single-vocabulary
    form of associative recall (Ba et al. 2016): every "key" is a symbol and
    its "value" is the symbol after it. Unlike a literal index lookup it needs
    no index tokens, so one 16-symbol vocabulary serves every length; keys may
    repeat, and the most recent binding wins.

    Generation: the context is uniform over ``vocab_size = 16`` symbols; a
    position ``p`` uniform in ``[0, L-3]`` is drawn and the query is
    ``x[p]``, so a valid answer always exists (``min_length = 3``). If the
    query does not occur (impossible for generated inputs; possible for
    shuffled ones), :meth:`solve` answers the query itself.

    Order-dependent: the answer is defined by adjacency and recency. Chance
    token accuracy is exactly ``1/16``: relabelling the symbols by any
    permutation maps the input distribution to itself and the answer ``a`` to
    its image, so the answer is uniform.
    """

    version = 1
    order_dependent = True
    vocab_size = 16
    min_length = 3

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        context = torch.randint(0, self.vocab_size, (n, length - 1), generator=generator)  # (n, L-1)
        query_pos = torch.randint(0, length - 2, (n, 1), generator=generator)  # (n, 1)
        query = torch.gather(context, 1, query_pos)  # (n, 1)
        return torch.cat([context, query], dim=1)

    def solve(self, inputs: Tensor) -> Tensor:
        length = inputs.shape[1]
        keys = inputs[:, : length - 2]  # (n, L-2): positions that have a successor in the context
        query = inputs[:, -1:]  # (n, 1)
        positions = torch.arange(length - 2, device=inputs.device).expand_as(keys)
        last = torch.where(keys == query, positions, -1).max(dim=1, keepdim=True).values  # (n, 1)
        answer = torch.gather(inputs, 1, (last + 1).clamp(min=0))
        return torch.where(last >= 0, answer, query)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size
