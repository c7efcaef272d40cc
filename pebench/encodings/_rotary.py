"""Helpers shared by the rotary encodings (``rope``, ``xpos``); registers nothing.

A rotary encoding turns pairs of head dimensions by an angle ``pos * inv_freq[i]``.
Two layouts decide which dimensions form pair ``i`` of a rotated width ``Dr``:

* ``interleaved`` — ``(x[2i], x[2i+1])``, RoFormer Eq. 15 (Su et al. 2021),
  torchscale's ``rotate_every_two``;
* ``half`` — ``(x[i], x[i + Dr/2])``, GPT-NeoX / HF Llama ``rotate_half``.

Both rotate ``(a, b) -> (a cos - b sin, a sin + b cos)``; they differ only by a
fixed permutation of the head dimensions. Dimensions past ``Dr`` are untouched
(partial rotary).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor

LAYOUTS = ("interleaved", "half")

Value = TypeVar("Value")


def rotation_angles(pos: Tensor, inv_freq: Tensor) -> Tensor:
    """``pos`` (T,) or (B, T) integer, ``inv_freq`` (Dr/2,) -> angles (T, Dr/2) or (B, T, Dr/2), float32."""
    return pos.to(torch.float32).unsqueeze(-1) * inv_freq.to(torch.float32)


def apply_rotation(x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
    """Rotate the first ``Dr = 2 * cos.shape[-1]`` dims of ``x``; the rest pass through.

    Args:
        x: (B, H, T, Dh) queries or keys.
        cos, sin: (T, Dr/2) or (B, T, Dr/2); may carry a per-pair scale (xPos,
            YaRN attention temperature), which then multiplies the rotated dims.
        layout: ``"interleaved"`` or ``"half"`` (see the module docstring).

    Returns:
        (B, H, T, Dh), same dtype as ``x``.
    """
    if cos.dim() == 3:  # (B, T, Dr/2) -> (B, 1, T, Dr/2): one set of positions per batch row
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    rotated_dims = 2 * cos.shape[-1]
    x_rot, x_pass = x[..., :rotated_dims], x[..., rotated_dims:]
    if layout == "interleaved":
        first, second = x_rot[..., 0::2], x_rot[..., 1::2]
        rotated = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1).flatten(-2)
    else:
        first, second = x_rot[..., : rotated_dims // 2], x_rot[..., rotated_dims // 2 :]
        rotated = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
    if x_pass.shape[-1] == 0:
        return rotated
    return torch.cat((rotated, x_pass), dim=-1)


class PositionCache:
    """Remembers what was computed for the most recent position tensors.

    Every attention layer of one forward pass rotates with the same position
    tensors, so the cos/sin tables are computed once per pass instead of once
    per layer. Entries are keyed by the identity and in-place version of the
    position tensor (and by inference mode); the cache holds a reference to the
    tensor, so its identity cannot be reused while cached. Inference tensors
    have no version counter, so they are never cached. Only for values that
    carry no autograd graph (encodings without parameters).
    """

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._entries: list[tuple[Tensor, tuple[int, bool], Any]] = []

    def get(self, pos: Tensor, compute: Callable[[Tensor], Value]) -> Value:
        if pos.is_inference():
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
