"""The positional-encoding interface: three hooks, identity by default.

Shape notation: B batch, T sequence length, D model width, H heads, Dh head
width (D / H), Tq/Tk query/key lengths.

A positional encoding may act in any of the three places positional
information enters a transformer (the "slots" of x-transformers):

* :meth:`PositionalEncoding.embed` — added to (or applied to) the token
  embeddings, e.g. sinusoidal or learned absolute tables;
* :meth:`PositionalEncoding.rotate` — a transform of queries and keys inside
  attention, e.g. RoPE and xPos;
* :meth:`PositionalEncoding.bias` — an additive bias on the attention scores,
  e.g. ALiBi, T5 relative buckets and FIRE.

Positions are always explicit integer tensors, so wrappers (randomized
positions, RoPE scaling) change positions or frequencies without touching the
model. :meth:`PositionalEncoding.positions` is what the model calls to get the
positions of a batch; only position-sampling wrappers override it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

Value = TypeVar("Value")


class PositionalEncoding(nn.Module):
    """Base class of every positional encoding; all hooks are the identity.

    Args:
        d_model: model width D.
        n_heads: number of attention heads H.
        max_len: largest number of positions the encoding must support at
            construction time (only tables of fixed size, such as ``learned``,
            are limited by it).
    """

    #: registry name, set by :func:`pebench.encodings.register`
    name: str = "base"

    def __init__(self, d_model: int, n_heads: int, max_len: int) -> None:
        super().__init__()
        if d_model <= 0 or n_heads <= 0 or max_len <= 0:
            raise ValueError(
                f"d_model, n_heads and max_len must be positive, got {d_model}, {n_heads}, {max_len}"
            )
        if d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}; choose d_model = n_heads * head_dim"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.max_len = max_len

    def positions(self, batch_size: int, length: int, device: torch.device | str) -> Tensor:
        """Positions of a batch: ``(T,)`` or ``(B, T)`` int64. Default ``0..T-1``."""
        return torch.arange(length, device=device)

    def embed(self, x: Tensor, pos: Tensor) -> Tensor:
        """Input slot. ``x`` (B, T, D), ``pos`` (T,) or (B, T) -> (B, T, D)."""
        return x

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        """Query/key slot. ``q`` (B, H, Tq, Dh), ``k`` (B, H, Tk, Dh) -> same shapes."""
        return q, k

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor | None:
        """Score slot: additive bias (H, Tq, Tk) or (B, H, Tq, Tk), or ``None``."""
        return None

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, max_len={self.max_len}"


def relative_distance(q_pos: Tensor, k_pos: Tensor) -> Tensor:
    """``k_pos - q_pos`` broadcast to (Tq, Tk) or (B, Tq, Tk) (int64).

    Negative values are keys in the past of the query (the convention of
    the T5 and ALiBi reference code: ``relative_position = memory - query``).
    """
    return k_pos.unsqueeze(-2) - q_pos.unsqueeze(-1)


def is_compiling() -> bool:
    """True while ``torch.compile`` traces the code (False on torch versions without the query)."""
    query = getattr(torch.compiler, "is_compiling", None)
    return bool(query()) if query is not None else False


class PositionCache:
    """Remembers what an encoding computed for the most recent position tensors.

    Every layer of one forward pass uses the same position tensors, and the
    model reuses one position tensor per length (``Transformer._positions``),
    so tables derived from positions only (RoPE/xPos cos and sin, sinusoidal
    tables, T5 buckets, the learned table's range check) are computed once per
    length for a whole training run instead of once per layer and step.
    Entries are keyed by the identity and in-place version of the position
    tensor (and by inference mode); the cache holds a reference to the tensor,
    so its identity cannot be reused while cached. Inference tensors have no
    version counter, so they are never cached. Only for values that carry no
    autograd graph. Bypassed while ``torch.compile`` traces (:func:`is_compiling`).
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._entries: list[tuple[Tensor, tuple[int, bool], Any]] = []

    def get(self, pos: Tensor, compute: Callable[[Tensor], Value]) -> Value:
        # under torch.compile the computation is traced into the graph instead: a Python cache
        # would make dynamo guard on its contents and recompile for every new length
        if pos.is_inference() or is_compiling():
            return compute(pos)
        key = (pos._version, torch.is_inference_mode_enabled())
        for cached_pos, cached_key, value in self._entries:
            if cached_pos is pos and cached_key == key:
                return value
        value = compute(pos)
        self._entries = [(pos, key, value), *self._entries[: self.size - 1]]
        return value

    def clear(self) -> None:
        self._entries = []
