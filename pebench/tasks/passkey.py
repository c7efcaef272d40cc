"""Passkey retrieval: find a key hidden at a random depth in filler and write it out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

KEY_DIGITS = 5
FILLER, MARKER = 10, 11


@register("passkey", paper="mohtashami2023landmark")
class Passkey(Task):
    """Retrieve the 5-digit key that follows the marker in a filler sequence: ``_ _ K 3 1 4 1 5 _ -> 3 1 4 1 5``.

    Symbols: digits 0..9, the filler 10 (``_`` above) and the key marker 11
    (``K``), ``vocab_size = 12``. An input of length ``L >= 6`` is filler
    with the marker followed by five uniform digits inserted at a uniform
    position ``p`` in ``[0, L - 6]`` (a uniform depth); the output is the five
    digits: ``K 2 7 1 8 2 _ _ -> 2 7 1 8 2``. Output: 5 tokens.

    The passkey retrieval test of Mohtashami & Jaggi (2023, landmark
    attention), used to probe long-context retrieval by, e.g., Chen et al.
    (2023) and Peng et al. (2023): "The pass key is 12345. Remember it." hidden
    in repeated filler sentences, then "What is the pass key?". Here the
    sentences are single tokens: the marker stands for "the pass key is",
    one filler token for the repeated text, and the separator of the
    rendering for the question; their key is a number up to 50,000, here five
    uniform digits. Generation is linear in ``L``.

    :meth:`solve` reads the five tokens after the first marker (position 0 if
    there is none; positions past the end read as filler), total on shuffled
    inputs.

    Order-dependent: the key is what follows the marker. Chance token accuracy
    is exactly ``1/10``: every output is a uniform digit.
    """

    version = 1
    order_dependent = True
    vocab_size = 12
    min_length = KEY_DIGITS + 1

    def output_length(self, length: int) -> int:
        return KEY_DIGITS

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        depth = torch.randint(0, length - KEY_DIGITS, (n, 1), generator=generator)  # (n, 1) marker position
        key = torch.randint(0, 10, (n, KEY_DIGITS), generator=generator)
        offset = torch.arange(length).expand(n, length) - depth  # (n, L): position relative to the marker
        inside = (offset >= 1) & (offset <= KEY_DIGITS)
        digits = key.gather(1, (offset - 1).clamp(0, KEY_DIGITS - 1))
        return torch.where(offset == 0, MARKER, torch.where(inside, digits, FILLER))

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        marker = (inputs == MARKER).long().argmax(1, keepdim=True)  # (n, 1): first marker, 0 if none
        where = marker + 1 + torch.arange(KEY_DIGITS, device=inputs.device)  # (n, 5)
        padded = torch.cat([inputs, torch.full((n, KEY_DIGITS), FILLER, device=inputs.device)], dim=1)
        return padded.gather(1, where)

    def chance_accuracy(self, length: int) -> float:
        return 0.1
