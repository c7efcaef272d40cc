"""Group word problems: the product of a sequence of permutations of five points (S5, and its subgroup A5)."""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

POINTS = 5


def is_even(permutation: tuple[int, ...]) -> bool:
    """Whether ``permutation`` (``permutation[i]`` is the image of ``i``) has an even number of inversions."""
    inversions = sum(a > b for a, b in itertools.combinations(permutation, 2))
    return inversions % 2 == 0


def elements(group: str) -> list[tuple[int, ...]]:
    """The elements of ``"S5"`` (all 120 permutations of 0..4) or ``"A5"`` (the 60 even ones), in
    lexicographic order; an element's token id is its index here, so the identity is id 0 in both."""
    if group not in ("S5", "A5"):
        raise ValueError(f"group must be 'S5' or 'A5', got {group!r}")
    every = list(itertools.permutations(range(POINTS)))
    return every if group == "S5" else [p for p in every if is_even(p)]


def compose(first: tuple[int, ...], then: tuple[int, ...]) -> tuple[int, ...]:
    """The product ``first · then``: apply ``first``, then ``then`` (a right action: ``i -> then[first[i]]``)."""
    return tuple(then[image] for image in first)


@functools.lru_cache(maxsize=2)
def multiplication_table(group: str) -> Tensor:
    """``(|G|, |G|)`` int64: entry ``[a, b]`` is the id of ``a · b`` (:func:`compose`) for element ids ``a``, ``b``."""
    members = elements(group)
    index = {p: i for i, p in enumerate(members)}
    return torch.tensor([[index[compose(a, b)] for b in members] for a in members], dtype=torch.long)


class WordProblem(Task):
    """Base of the word problems; subclasses name the group."""

    version = 1
    order_dependent = True
    exchangeable_inputs = True
    group = "S5"

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)

    def solve(self, inputs: Tensor) -> Tensor:
        table = multiplication_table(self.group).to(inputs.device)
        product = inputs[:, 0]
        for t in range(1, inputs.shape[1]):  # one vectorized step per element: linear in L
            product = table[product, inputs[:, t]]
        return product.unsqueeze(1)

    def chance_accuracy(self, length: int) -> float:
        return 1.0 / self.vocab_size


_DOC = """Final product of a sequence of {group} elements, read left to right: ``{example}``.

Each input token is an element of {what}, its id its index in the lexicographic
list of the permutations as tuples (``p[i]`` the image of point ``i``; the identity
is 0; :func:`elements`). The output is the id of the product ``x[0] · x[1] · ... ·
x[L-1]``, where ``a · b`` applies ``a`` first, then ``b`` (a right action on the
points, as an automaton reads its input: the state after ``t`` tokens is the
product of the first ``t``). {example_text} Elements are uniform and independent.
Output: 1 token; ``vocab_size = {size}``; ``min_length = 1``.

The word problem of Merrill et al. (2024), as in Liu et al. (2023), "Transformers
Learn Shortcuts to Automata": a finite group's word problem is a regular language
(a {size}-state automaton), but for a non-solvable group such as {group} it is
NC1-complete (Barrington 1989), so under standard conjectures no fixed-depth
transformer solves it at every length. Both papers label every prefix with its
running product; pebench asks for the final product only, because under teacher
forcing a decoder is given the previous running product and would only have to
compose one element with it, which is no longer state tracking. The encoder
predicts the product at one blank position.

Order-dependent: {group} is not abelian. Chance token accuracy is exactly
``1/{size}``: the product of a uniform element with anything is uniform. The
position-free floor is estimated from permuted copies (inputs are iid, so the
estimate is unbiased): it is 1 at length 1, ``1/2 + k/(2 |G|)`` at length 2 (``k``
conjugacy classes, the chance that two elements commute), and tends to the
largest probability of a coset of the commutator subgroup, the most the bag can
decide ({limit}).
"""


@register("s5_word_problem", paper="merrill2024illusion", label="S5 word problem",
          complexity="regular; NC1-complete word problem (non-solvable group)")
class S5WordProblem(WordProblem):
    __doc__ = _DOC.format(group="S5", what="the symmetric group on 5 points (120 permutations)", size=120,
                          example="(1, 0, 2, 3, 4) (0, 2, 1, 3, 4) -> (2, 0, 1, 3, 4)",
                          example_text="In the example (written as tuples, not ids) the transpositions (0 1) "
                          "and (1 2) send 0 to 1 and then to 2, 1 to 0, 2 to 1; the other order gives "
                          "``(1, 2, 0, 3, 4)``.",
                          limit="the sign of an S5 product is that of the number of odd elements: 1/60")
    group = "S5"
    vocab_size = 120


@register("a5_word_problem", paper="merrill2024illusion", label="A5 word problem",
          complexity="regular; NC1-complete word problem (non-solvable group)")
class A5WordProblem(WordProblem):
    __doc__ = _DOC.format(group="A5", what="the alternating group on 5 points (the 60 even permutations)", size=60,
                          example="(1, 2, 0, 3, 4) (0, 2, 3, 1, 4) -> (2, 3, 0, 1, 4)",
                          example_text="In the example (written as tuples, not ids) the 3-cycles (0 1 2) and "
                          "(1 2 3) send 0 to 1 and then to 2, 1 to 3, 2 to 0, 3 to 1; the other order gives "
                          "``(1, 0, 3, 2, 4)``.",
                          limit="A5 is simple, its own commutator subgroup: 1/60")
    group = "A5"
    vocab_size = 60
