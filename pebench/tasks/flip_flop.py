"""Flip-flop language: write / ignore / read instructions on a one-bit memory; recall the last written bit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

WRITE, IGNORE, READ = 2, 3, 4  # instruction symbols; the bits are 0 and 1


class FlipFlop(Task):
    """The bit written by the last ``w`` instruction, asked by a final ``r``: ``w 1 i 0 w 0 r 0 i 1 r -> 0``.

    Flip-flop language of Liu et al. (2023): a sequence of instructions, each
    followed by a bit: ``w b`` writes ``b`` to a one-bit memory, ``i b`` is
    noise, ``r b`` reads and ``b`` is the memory's content (the last written
    bit). Symbols: bits 0 and 1, ``w`` 2, ``i`` 3, ``r`` 4 (``vocab_size = 5``,
    the output is a bit). The first instruction is ``w``, the others are
    ``i`` with probability ``p_ignore`` and ``w`` or ``r`` with probability
    ``(1 - p_ignore) / 2`` each, written and ignored bits are uniform. The
    input ends with a final ``r`` whose bit is the output: in the example the
    last write is ``w 0``. Output: 1 token.

    Lengths: the stream up to the final ``r`` has odd length; for even ``L``
    the input starts with one leading uniform bit, as if cut from a longer
    stream (it precedes the first ``w`` and cannot matter):
    ``1 w 1 i 0 r -> 1``. ``min_length = 3`` (``w b r``). Liu et al. train on
    sequences of 512 tokens with ``p_ignore = 0.8`` (``flip_flop``) and test
    on sparse ``p_ignore = 0.98`` (``flip_flop_sparse``) and dense
    ``p_ignore = 0.1`` (``flip_flop_dense``) sequences; they score every
    read, pebench the final one. No generator of theirs was found in the
    stored repositories; this follows the paper's definition.

    :meth:`solve` finds the last ``w`` before the final token and answers the
    first bit after it (0 if there is none): the definition on generated
    inputs, and total on shuffled ones.

    Order-dependent: the answer is the most recent write. Chance token
    accuracy is exactly ``1/2``: the last written bit is a uniform bit.
    """

    version = 1
    order_dependent = True
    vocab_size = 5
    min_length = 3
    p_ignore = 0.8

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        pairs = (length - 1) // 2
        uniforms = torch.rand(n, pairs, generator=generator)
        half = (1 - self.p_ignore) / 2
        instructions = torch.where(uniforms < half, WRITE, torch.where(uniforms < 2 * half, READ, IGNORE))
        instructions[:, 0] = WRITE
        bits = torch.randint(0, 2, (n, pairs), generator=generator)
        # a read's bit is the memory: the bit of the last write at or before it (vectorized over pairs)
        index = torch.arange(pairs).expand(n, pairs)
        last_write = torch.where(instructions == WRITE, index, 0).cummax(1).values  # (n, pairs)
        bits = torch.where(instructions == READ, bits.gather(1, last_write), bits)
        stream = torch.stack([instructions, bits], dim=2).view(n, 2 * pairs)
        lead = torch.randint(0, 2, (n, 1 - length % 2), generator=generator)  # even L: one leading bit
        query = torch.full((n, 1), READ, dtype=torch.long)
        return torch.cat([lead, stream, query], dim=1)

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        body = inputs[:, :-1]  # (n, L-1): everything before the final read
        positions = torch.arange(length - 1, device=inputs.device).expand_as(body)
        last_write = torch.where(body == WRITE, positions, -1).max(1, keepdim=True).values  # (n, 1)
        is_bit_after = (body <= 1) & (positions > last_write) & (last_write >= 0)
        first_bit = torch.where(is_bit_after, positions, length).min(1, keepdim=True).values  # (n, 1)
        padded = torch.cat([body, body.new_zeros(n, 1)], dim=1)  # index L-1 (no bit found) reads 0
        return padded.gather(1, first_bit.clamp(max=length - 1))

    def chance_accuracy(self, length: int) -> float:
        return 0.5


def _variant_doc(p_ignore: float, which: str) -> str:
    """The docstring of :class:`FlipFlop` with this variant's ``p_ignore`` in its first line."""
    first = f"Flip-flop, ``p_ignore = {p_ignore}`` ({which}): the bit written"
    return FlipFlop.__doc__.replace("The bit written", first, 1)


@register("flip_flop", paper="liu2023flipflop", label="flip-flop")
class FlipFlopTrain(FlipFlop):
    __doc__ = _variant_doc(0.8, "Liu et al.'s training distribution")
    p_ignore = 0.8


@register("flip_flop_sparse", paper="liu2023flipflop", label="flip-flop (sparse)")
class FlipFlopSparse(FlipFlop):
    __doc__ = _variant_doc(0.98, "their sparse test set")
    p_ignore = 0.98


@register("flip_flop_dense", paper="liu2023flipflop", label="flip-flop (dense)")
class FlipFlopDense(FlipFlop):
    __doc__ = _variant_doc(0.1, "their dense test set")
    p_ignore = 0.1
