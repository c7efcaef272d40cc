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

import torch
from torch import Tensor

from pebench.encodings.base import PositionCache

LAYOUTS = ("interleaved", "half")

_COMPLEX = (torch.float32, torch.float64)  # dtypes with a complex counterpart for the fast path


def rotation_angles(pos: Tensor, inv_freq: Tensor) -> Tensor:
    """``pos`` (T,) or (B, T) integer, ``inv_freq`` (Dr/2,) -> angles (T, Dr/2) or (B, T, Dr/2), float32."""
    return pos.to(torch.float32).unsqueeze(-1) * inv_freq.to(torch.float32)


def cached_cos_sin(
    cache: PositionCache, pos: Tensor, inv_freq: Tensor, scale: float | Tensor = 1.0
) -> tuple[Tensor, Tensor]:
    """``scale * cos`` and ``scale * sin`` of ``pos * inv_freq``, each (T, Dr/2) or (B, T, Dr/2), float32,
    computed once per cached positions (``cache`` belongs to the calling encoding, whose ``inv_freq`` and
    ``scale`` are fixed)."""

    def compute(p: Tensor) -> tuple[Tensor, Tensor]:
        angles = rotation_angles(p, inv_freq)
        return angles.cos() * scale, angles.sin() * scale

    return cache.get(pos, compute)


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
    rotated_dims = 2 * cos.shape[-1]
    if layout == "interleaved" and rotated_dims == x.shape[-1] and x.dtype in _COMPLEX and x.stride(-1) == 1:
        # The same products as below, as one complex multiplication (3x faster on CPU, bit-identical):
        # pair (x[2i], x[2i+1]) is the complex number x[2i] + i x[2i+1], turned by cos + i sin.
        turn = torch.complex(cos.to(x.dtype), sin.to(x.dtype))  # (..., T, Dh/2)
        return torch.view_as_real(torch.view_as_complex(x.unflatten(-1, (-1, 2))) * turn).flatten(-2)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
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
