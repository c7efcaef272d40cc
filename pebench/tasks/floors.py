"""Position-free floors: the best accuracy a model WITHOUT position information can reach on a task.

Uniform chance is a weak baseline for models without positional encodings: a
position-free model still sees which symbols the input holds. This module
computes, for a task, an input length and a rendering (see
:mod:`pebench.tasks.base`), the Bayes-optimal token and sequence accuracy of a
predictor that sees only

* encoder (bidirectional, no PE): the multiset (bag) of input tokens. All
  blank output positions are indistinguishable, so it emits ONE symbol
  distribution, the same at every output position. Token floor
  ``E_bag[max_s E[#{j : y_j = s} / L_out | bag]]``.
* decoder (causal, teacher-forced, no PE): at output step ``j`` the bag of
  the input and the bag of the previous targets ``y_<j`` (hence ``j``), not
  their order. Token floor
  ``E[(1/L_out) sum_j max_s P(y_j = s | bag(x), bag(y_<j))]``.

Sequence floor, both archs: the exact-match rate of that token-optimal
predictor (argmax at every output position, teacher-forced for the decoder,
ties broken uniformly at random, so an example scores ``1/m`` at a step whose
argmax is tied ``m`` ways and the true symbol is among them). For the encoder
this is the probability that every ``y_j`` equals the one predicted symbol.
It is what a greedy position-free model trained for token accuracy reaches,
not the maximum exact match over all position-free predictors.

How the conditionals are obtained (:attr:`Floor.method`):

* ``"exact"``: no sampling. An order-invariant task (``order_dependent =
  False``) has an answer that is a function of the bag, so the decoder (which
  also knows ``j``) and, for one output token, the encoder reach 1.0.
* ``"monte_carlo"``: the task declares exchangeable inputs (``P(x)`` depends on
  ``bag(x)`` only; the task attribute ``exchangeable_inputs``), so ``P(y | bag) `` is the law of ``solve(pi x)`` over
  uniform permutations ``pi``. Each of ``n_examples`` inputs is permuted
  ``permutations`` times; the predictor for one permuted copy is built from
  the OTHER copies only (leave-one-out) and scored on it, so the prediction
  is independent of the scored answer given the bag: the estimate is unbiased
  for that finite-sample predictor and, being a noisy argmax, can only fall
  slightly below the Bayes floor, never above it (the upward bias of
  ``max`` over noisy estimates is avoided). The decoder's vote counts the
  copies whose prefix bag equals the scored prefix bag (64-bit hashes of
  count vectors); with no such copy it falls back to the mode of the
  remaining expected output multiset ``E[bag(y)] - bag(y_<j)``, exact when
  the output is a uniformly ordered arrangement of a bag fixed by
  ``bag(x)`` (``selective_copy``). When ``solve`` is a block permutation of
  the input positions (the output is ``x`` rearranged by a fixed map, once or
  several times: copy, reverse, odds_first, duplicate, ...), the conditionals
  are exact: the encoder predicts the mode of ``bag(x)`` and the decoder the
  mode of what remains of ``bag(x)`` in the current block. Only the average
  over inputs is sampled; the standard errors are over inputs.
* a task that defines ``position_free_scores(inputs, targets, arch)`` gives the
  exact conditionals itself, as scores whose argmax set is that of
  ``P(y_j | bag(x)[, bag(y_<j)])`` ((n, L_out, V) for the decoder, (n, 1, V) for
  the encoder): the floor is then sampled over inputs only (``"monte_carlo"``),
  as for block permutations (``mqar``).
* ``"permutation"`` (approximate): inputs are structured (digits and
  operators, instruction streams, markers), so ``P(y | bag)`` is NOT the law
  of ``solve(pi x)``. The same estimator is used, with predictors built from
  permuted copies of each input and scored on the ORIGINAL input and answer:
  the result is the accuracy of a legitimate position-free predictor on the
  real task, hence a lower bound on the true floor, possibly a loose one
  (``passkey``: shuffled inputs rarely keep the key after the marker).

Tests (``tests/test_floors.py``) compare the estimates with exhaustive
enumeration of every input at small lengths and vocabularies. Results are
cached per (task, version, length, arch, sample sizes, seed) and
deterministic for these arguments.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks.base import ARCHS, Task

if TYPE_CHECKING:
    from torch import Tensor

METHODS = ("exact", "monte_carlo", "permutation")
#: the methods whose floor is only a lower bound: tables print it as one
BOUND_METHODS = ("permutation",)
_CHUNK = 64  # examples per vectorised block of the decoder's prefix matching (bounds memory)
_SCORED_TOKENS = 256  # scored output tokens per example (more copies at short outputs)
_MAX_VOTERS = 256


@dataclass(frozen=True)
class Floor:
    """Position-free floor of one (task, length, arch).

    Attributes:
        token_acc: Bayes token accuracy without position information.
        seq_acc: exact-match rate of that token-optimal predictor (see module doc).
        token_se, seq_se: standard errors of the two (0.0 for ``"exact"``).
        method: ``"exact"``, ``"monte_carlo"`` (exact conditionals or unbiased
            permutation estimates, averaged over sampled inputs) or
            ``"permutation"`` (approximate lower bound, structured inputs).
    """

    token_acc: float
    seq_acc: float
    token_se: float
    seq_se: float
    method: str


def position_free_floor(
    task: Task | str, length: int, arch: str, *, n_examples: int = 1000, permutations: int = 32, seed: int = 0
) -> Floor:
    """Best token and sequence accuracy of a model without position information (see module doc).

    Args:
        task: a task or its registered name.
        length: input length (``task.check_length`` must accept it).
        arch: ``"encoder"`` or ``"decoder"`` (the rendering of :mod:`pebench.tasks.base`).
        n_examples: inputs drawn from the task.
        permutations: permuted copies of each input (at least 2).
        seed: seed of the inputs, permutations and hashes.

    Raises:
        ValueError: for a language-modelling task (``decoder_only``, e.g. ``charlm``),
            whose targets are not a function of the input, or a bad ``arch`` / ``length``.
    """
    from pebench import tasks  # the registry imports this module

    task = tasks.get(task) if isinstance(task, str) else task
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    if getattr(task, "decoder_only", False):
        raise ValueError(f"task {task.name!r} is a language-modelling task: its targets are not a function of "
                         "the input, so it has no position-free floor; skip it")
    if permutations < 2 or n_examples < 2:
        raise ValueError(f"need permutations >= 2 and n_examples >= 2, got {permutations} and {n_examples}")
    task.check_length(length)
    return _cached_floor(type(task), task.name, task.version, length, arch, n_examples, permutations, seed)


@functools.lru_cache(maxsize=4096)
def _cached_floor(
    cls: type[Task], name: str, version: int, length: int, arch: str, n_examples: int, permutations: int, seed: int
) -> Floor:
    task = cls()
    out_len = task.output_length(length)
    if not task.order_dependent and (arch == "decoder" or out_len == 1):
        return Floor(1.0, 1.0, 0.0, 0.0, "exact")
    generator = torch.Generator().manual_seed(seed)
    if hasattr(task, "position_free_scores"):  # the task knows its exact conditionals: no permuted copies
        inputs = task.generate_inputs(n_examples, length, generator)  # (n, L)
        targets = task.solve(inputs).unsqueeze(1)  # (n, 1, L_out)
        scores = task.position_free_scores(inputs, targets[:, 0], arch).unsqueeze(1)  # (n, 1, L_out or 1, V)
        return _score(targets, scores, arch, "monte_carlo")
    exchangeable = task.exchangeable_inputs
    # copies scored per example: about 256 scored tokens per example keeps the cost flat in L_out
    scored = min(permutations, -(-_SCORED_TOKENS // out_len)) if exchangeable else 1
    blocks = _block_map(task, length) if exchangeable else None
    inputs = task.generate_inputs(n_examples, length, generator)  # (n, L)
    # voters: short outputs get more copies (up to 256, and 2**22 input tokens in all, for speed),
    # so a near-tied vote rarely picks the wrong symbol
    more = min(_MAX_VOTERS, _SCORED_TOKENS // out_len, 2**22 // (n_examples * length))
    voters = max(permutations, more) if exchangeable else permutations
    copies = permuted_copies(inputs, scored if blocks else voters, generator)  # (n, K, L), copy 0 the original
    n, k = copies.shape[:2]
    targets = task.solve(copies.reshape(n * k, length)).view(n, k, out_len)  # (n, K, L_out)
    if blocks:
        scores = _exact_scores(task.vocab_size, copies, targets, blocks, arch)  # (n, K, L_out, V)
    else:
        scores = _vote_scores(task.vocab_size, targets, arch, scored, exchangeable, generator)  # (n, S, L_out, V)
    targets = targets[:, :scored]  # copy 0 is the original: scored alone when copies are not draws of the task
    return _score(targets, scores, arch, "monte_carlo" if exchangeable else "permutation")


def _score(targets: Tensor, scores: Tensor, arch: str, method: str) -> Floor:
    """The floor of the predictor that takes the argmax of ``scores`` (n, S, L_out or 1, V), ties broken uniformly,
    scored on ``targets`` (n, S, L_out): token and sequence accuracy and their standard errors over the n inputs."""
    scores = scores.expand(*targets.shape, -1)  # the encoder's one prediction, at every position
    best = scores == scores.max(-1, keepdim=True).values  # (n, S, L_out, V): the argmax set, ties broken uniformly
    hit = best.gather(-1, targets.unsqueeze(-1)).squeeze(-1) / best.sum(-1)  # (n, S, L_out) P(prediction correct)
    token = hit.mean(-1)
    if arch == "encoder":  # one tie-broken symbol for every position: right iff all y_j are that symbol
        seq = (targets == targets[..., :1]).all(-1) * hit[..., 0]
    else:  # independent tie-breaks per teacher-forced step
        seq = hit.prod(-1)
    token, seq = token.mean(1), seq.mean(1)  # (n,) per example
    se = 1 / math.sqrt(targets.shape[0])
    return Floor(
        token_acc=float(token.mean()), seq_acc=float(seq.mean()),
        token_se=float(token.std() * se), seq_se=float(seq.std() * se), method=method,
    )


def permuted_copies(inputs: Tensor, copies: int, generator: torch.Generator) -> Tensor:
    """(n, copies, L): each input followed by ``copies - 1`` uniformly permuted copies of it."""
    n, length = inputs.shape
    order = torch.rand(n, copies - 1, length, generator=generator).argsort(-1)  # (n, K-1, L)
    shuffled = inputs.unsqueeze(1).expand(n, copies - 1, length).gather(2, order)
    return torch.cat([inputs.unsqueeze(1), shuffled], dim=1)


def _block_map(task: Task, length: int) -> int:
    """Number of blocks if ``solve`` writes fixed permutations of the input positions one after another, else 0.

    Probed on random inputs: output ``j`` must equal one fixed input position
    in all 256 probe rows, and each block of ``length`` outputs must read
    every input position once.
    """
    out_len = task.output_length(length)
    if out_len % length:
        return 0
    probe = torch.randint(0, task.vocab_size, (256, length), generator=torch.Generator().manual_seed(1))
    outputs = task.solve(probe)  # (256, L_out)
    same = (outputs.unsqueeze(2) == probe.unsqueeze(1)).all(0)  # (L_out, L): output j equals input i in every row
    if not bool((same.sum(1) == 1).all()):
        return 0
    source = same.long().argmax(1).view(out_len // length, length)  # (blocks, L)
    if not bool((source.sort(1).values == torch.arange(length)).all()):
        return 0
    return out_len // length


def _exact_scores(vocab: int, copies: Tensor, targets: Tensor, blocks: int, arch: str) -> Tensor:
    """(n, K, L_out or 1, V) exact posterior scores of block-permutation tasks on exchangeable inputs."""
    n, k, out_len = targets.shape
    bag = torch.nn.functional.one_hot(copies, vocab).sum(2, dtype=torch.int32)  # (n, K, V)
    if arch == "encoder":
        return bag.unsqueeze(2)  # (n, K, 1, V): the mode of the input bag, at every position
    onehot = torch.nn.functional.one_hot(targets, vocab).to(torch.int32).view(n, k, blocks, out_len // blocks, vocab)
    seen = onehot.cumsum(3, dtype=torch.int32) - onehot  # (n, K, B, L, V): this block's symbols before step j
    return (bag[:, :, None, None, :] - seen).view(n, k, out_len, vocab)


def _vote_scores(
    vocab: int, targets: Tensor, arch: str, scored: int, exchangeable: bool, generator: torch.Generator
) -> Tensor:
    """(n, scored, L_out or 1, V) leave-one-out votes of the permuted copies for the first ``scored`` copies.

    Voters are all copies (exchangeable inputs) or the permuted ones only.
    The decoder adds the normalised remaining expected output multiset as a
    prior worth one vote: it breaks ties and decides alone where no voter's
    prefix bag matches.
    """
    n, k, out_len = targets.shape
    onehot = torch.nn.functional.one_hot(targets, vocab).float()  # (n, K, L_out, V)
    is_voter = torch.ones(k)
    is_voter[0] = float(exchangeable)
    not_self = (1 - torch.eye(k))[:scored] * is_voter  # (S, K): who votes for each scored copy
    bags = onehot.sum(2)  # (n, K, V) output bag of every copy
    if arch == "encoder":
        return torch.einsum("sk,nkv->nsv", not_self, bags).unsqueeze(2)  # (n, S, 1, V)
    # decoder: voters whose prefix bag equals the scored copy's, compared by 64-bit hashes of the count vectors
    weights = torch.randint(0, 2**40, (vocab,), generator=generator)  # sums of < 2**20 terms stay below 2**63
    steps = weights[targets]
    hashes = (steps.cumsum(2) - steps).transpose(1, 2)  # (n, L_out, K): hash of bag(y_<j)
    votes = torch.empty(n, scored, out_len, vocab)
    for start in range(0, n, _CHUNK):
        rows = slice(start, start + _CHUNK)
        h = hashes[rows]
        match = (h[:, :, :scored, None] == h[:, :, None, :]) * not_self  # (c, L_out, S, K)
        votes[rows] = torch.einsum("cjsk,ckjv->csjv", match, onehot[rows])
    expected = torch.einsum("sk,nkv->nsv", not_self, bags) / not_self.sum(1, keepdim=True)  # (n, S, V)
    seen = onehot[:, :scored].cumsum(2) - onehot[:, :scored]  # (n, S, L_out, V)
    remaining = (expected.unsqueeze(2) - seen).clamp(min=0)
    prior = remaining / remaining.sum(-1, keepdim=True).clamp(min=1e-9)
    return votes + prior


def expected_max_count(length: int, symbols: int) -> float:
    """``E[max_s count_s]`` for ``length`` iid uniform draws of ``symbols`` symbols, exactly.

    ``P(max <= m) = length! / symbols**length * [t**length] (sum_{c<=m} t**c / c!)**symbols``,
    in exact rationals. The encoder floor of copy and reverse is this over ``length``.
    """
    from fractions import Fraction

    total = Fraction(0)
    for m in range(length):  # E[max] = sum_{m >= 0} P(max > m)
        series = [Fraction(1, math.factorial(c)) for c in range(m + 1)]
        power = [Fraction(1)]
        for _ in range(symbols):
            power = [sum(power[i] * series[c - i] for i in range(len(power)) if 0 <= c - i <= m)
                     for c in range(min(len(power) + m, length + 1))]
        at_most = power[length] * math.factorial(length) / Fraction(symbols) ** length if len(power) > length else 0
        total += 1 - at_most
    return float(total)
