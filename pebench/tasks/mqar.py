"""Multi-query associative recall (MQAR): key-value pairs, then every key asked once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

KEYS = 8  # key symbols 0..7; value symbols 8..15 (pebench keeps vocabularies within 16)
POWER_A = 0.01  # Zoology's default power law of the query gaps


def pairs(length: int) -> int:
    """Key-value pairs of an input of ``length``: ``length // 4``, Zoology's densest setting (4 pairs <= length)."""
    return length // 4


@register("mqar", paper="arora2023zoology", label="MQAR")
class MultiQueryAssociativeRecall(Task):
    """The values of every key, in the order the keys are asked: ``3 10 7 13 7 14 3 15 -> 13 10``.

    Zoology's multi-query associative recall (Arora et al. 2023; ``_mqar`` in
    ``zoology/data/associative_recall.py`` of HazyResearch/zoology). An input of
    length ``L`` holds ``k = L // 4`` pairs, then a query region of ``L - 2k``
    tokens: ``k1 v1 ... kk vk`` with distinct keys (symbols 0..7) and distinct
    values (8..15), each key asked exactly once in the region, at an even offset
    ``2g``. Key ``i``'s slot ``g`` is drawn i-th, without replacement, among the
    ``(L - 2k) // 2`` slots with Zoology's power law ``P(g) ∝ (g + 1)**(a - 1)``,
    ``a = 0.01``, so early keys tend to be asked early. The other region
    positions are uniform value symbols (Zoology fills them with uniform tokens
    of its whole vocabulary; pebench keeps keys out, so that a key in the region
    is always a query). In the example (``L = 8``, ``k = 2``) the region is
    ``7 14 3 15``: 7 is asked first (value 13), then 3 (value 10). Output: the
    ``k`` values in the order their queries appear; ``vocab_size = 16``,
    ``min_length = 4``, ``max_length = 35`` (8 keys; Zoology uses thousands of
    symbols, pebench keeps every task within 16).

    Zoology scores a causal model at each query position, where the value is
    the next token. pebench renders every task as ``[input, SEP, output]``, so
    the answers follow the separator in query order; the decoder, teacher-forced,
    has seen the earlier answers, not which queries they answered. The number of
    pairs is a property of the length alone (``L // 4``), so a longer input
    holds more pairs. Unlike ``associative_recall`` (one query, keys may repeat,
    the most recent binding wins), keys are distinct and every one is asked.

    :meth:`solve` is total: the queries are the first ``k`` key symbols of the
    region, each answered with the value after the last pair-region key that
    matches it (at an even position), or with value symbol 8 where there is
    none or fewer than ``k`` queries (only on shuffled inputs).

    Order-dependent: a value belongs to the key just before it. Chance token
    accuracy is exactly ``1/8``: relabelling the values by a permutation maps
    the input distribution to itself and each answer to its image, so each
    answer is uniform over the 8 values. The position-free floor is exact in
    its conditionals (:meth:`position_free_scores`) and sampled over inputs:
    ``9/16`` at ``L = 4`` (the bag shows two values, the answer one of them,
    certain when the filler repeats it).
    """

    version = 1
    order_dependent = True
    vocab_size = 2 * KEYS
    min_length = 4
    max_length = 4 * KEYS + 3

    def output_length(self, length: int) -> int:
        return pairs(length)

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        k = pairs(length)
        keys = torch.rand(n, KEYS, generator=generator).argsort(1)[:, :k]  # (n, k) distinct
        values = KEYS + torch.rand(n, KEYS, generator=generator).argsort(1)[:, :k]  # (n, k) distinct
        slots = (length - 2 * k) // 2
        weights = POWER_A * torch.arange(1, slots + 1, dtype=torch.float64) ** (POWER_A - 1)
        gaps = torch.multinomial(weights.expand(n, slots), k, replacement=False, generator=generator)  # (n, k)
        region = KEYS + torch.randint(0, KEYS, (n, length - 2 * k), generator=generator)  # fillers: values
        region.scatter_(1, 2 * gaps, keys)
        context = torch.stack([keys, values], dim=2).view(n, 2 * k)  # k1 v1 k2 v2 ...
        return torch.cat([context, region], dim=1)

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        k = pairs(length)
        pair_keys, pair_values = inputs[:, 0 : 2 * k : 2], inputs[:, 1 : 2 * k : 2]  # (n, k) each
        region = inputs[:, 2 * k :]  # (n, L - 2k), at least k tokens
        positions = torch.arange(region.shape[1], device=inputs.device).expand_as(region)
        order = torch.where(region < KEYS, positions, region.shape[1]).sort(1).values[:, :k]  # (n, k) query places
        asked = order < region.shape[1]
        queries = region.gather(1, order.clamp(max=region.shape[1] - 1))  # (n, k)
        match = queries.unsqueeze(2) == pair_keys.unsqueeze(1)  # (n, k queries, k pairs)
        last = torch.where(match, torch.arange(k, device=inputs.device), -1).max(2).values  # (n, k)
        answers = pair_values.gather(1, last.clamp(min=0))
        return torch.where(asked & (last >= 0), answers, KEYS)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / KEYS

    def position_free_scores(self, inputs: Tensor, targets: Tensor, arch: str) -> Tensor:
        """Exact position-free conditionals, up to their argmax set (:mod:`pebench.tasks.floors`).

        A value's count ``c_v`` in the input is 1 if it is paired, plus its fillers (``L - 3k`` uniform draws),
        so the posterior of the paired set ``S`` is proportional to the product of ``c_v`` over ``S``; the
        answers are ``S`` in a uniform order (independent of the fillers). Hence ``P(y_j = v | bags)`` is
        ``c_v * e_{r-1}(c without v and y_<j) / e_r(...)`` for a value ``v`` not yet answered (``r`` answers
        left, ``e`` the elementary symmetric polynomials), which grows with ``c_v``: the argmax set is the
        unanswered values of largest count, and the counts serve as scores.

        Returns:
            (n, 1, V) for the encoder (no answer seen), (n, L_out, V) for the decoder.
        """
        counts = torch.nn.functional.one_hot(inputs, self.vocab_size).sum(1).float()  # (n, V)
        counts[:, :KEYS] = 0  # answers are values
        if arch == "encoder":
            return counts.unsqueeze(1)
        answered = torch.nn.functional.one_hot(targets, self.vocab_size).cumsum(1) - \
            torch.nn.functional.one_hot(targets, self.vocab_size)  # (n, L_out, V): y_<j
        return counts.unsqueeze(1) * (answered == 0)
