"""PoPE: polar coordinate positional embeddings (Gopalakrishnan et al. 2025)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, PositionCache


class PolarLayer(PositionalEncoding):
    """One block's PoPE: its own key phase offsets ``delta`` (H, Dh); frequencies shared.

    Shapes:
        ``rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh) -> (B, H, Tq, 2 Dh), (B, H, Tk, 2 Dh).
    """

    def __init__(self, *args: Any, inv_freq: Tensor, **shared: Any) -> None:
        super().__init__(*args, **shared)
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (Dh,)
        self.delta = nn.Parameter(torch.zeros(self.n_heads, self.head_dim))  # key phase offsets, clamped to [-2 pi, 0]
        self._cache = PositionCache()

    def angles(self, pos: Tensor) -> Tensor:
        """``pos * theta_c`` (T, Dh) or (B, T, Dh), float32, cached for keyed positions."""
        return self._cache.get(pos, lambda p: p.to(torch.float32).unsqueeze(-1) * self.inv_freq)

    @staticmethod
    def polar(magnitude: Tensor, phase: Tensor) -> Tensor:
        """``(m cos phase, m sin phase)`` interleaved per channel: (..., Dh) -> (..., 2 Dh)."""
        return torch.stack((magnitude * phase.cos(), magnitude * phase.sin()), dim=-1).flatten(-2)

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        q_phase, k_phase = self.angles(q_pos), self.angles(k_pos)
        if q_phase.dim() == 3:  # (B, T, Dh): one set of positions per batch row
            q_phase, k_phase = q_phase.unsqueeze(1), k_phase.unsqueeze(1)
        k_phase = k_phase + self.delta.clamp(-2 * math.pi, 0).unsqueeze(-2)  # (H, Tk, Dh) or (B, H, Tk, Dh)
        q_polar = self.polar(F.softplus(q.float()), q_phase)  # (B, H, Tq, 2 Dh)
        k_polar = self.polar(F.softplus(k.float()), k_phase)  # (B, H, Tk, 2 Dh)
        # sqrt(2): the model divides by sqrt(2 Dh), the width returned; the paper's logits by sqrt(Dh)
        return (q_polar * math.sqrt(2)).to(q.dtype), k_polar.to(k.dtype)


@register("pope", label="PoPE", kind="rotary", paper="gopalakrishnan2025pope", has_parameters=True,
          summary="Polar positions: softplus magnitudes of q/k channels, phases t theta_c (keys + a learned offset).")
class PoPE(PositionalEncoding):
    """Polar coordinate positional embeddings: what (magnitude) and where (phase) decoupled.

    Gopalakrishnan et al. 2025, "Decoupling the 'What' and 'Where' With Polar Coordinate Positional
    Embeddings" (arXiv 2509.10534). Each of the ``Dh`` channels ``c`` of a query at position ``t``
    and a key at position ``s`` is a complex number with magnitude ``softplus`` of the channel and
    phase ``t theta_c`` (key: ``s theta_c + delta_hc``); the logit is the real part of their product::

        a_ts = sum_c softplus(q_c) softplus(k_c) cos((t - s) theta_c - delta_hc) / sqrt(Dh)

    with ``theta_c = theta^(-c / Dh)`` over all ``Dh`` channels (not pairs, as RoPE) and ``delta``
    learned per head and channel, initialised to 0 and clamped to ``[-2 pi, 0]``. The logit depends on
    positions only through ``t - s`` (tested). Checked against lucidrains/PoPE-pytorch
    ``PoPE_pytorch/pope.py`` (``PoPE.forward`` and ``apply_pope_to_qk``: ``inv_freqs = theta **
    -(arange(dim) / dim)``, ``bias.clamp(-2 pi, 0)`` added to the keys' phases, ``softplus``
    magnitudes, ``(m cos, m sin)`` interleaved per channel), transcribed in the tests.

    :meth:`rotate` returns the Cartesian form, queries and keys of width ``2 Dh``, so the fused SDPA
    kernel computes the sum above; the queries carry a factor ``sqrt(2)`` so that the model's scale
    ``1 / sqrt(2 Dh)`` is the paper's ``1 / sqrt(Dh)``. Each block has its own ``delta``
    (:meth:`for_layer`).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`); ``max_len``, ``train_len`` and ``causal`` are
            unused.
        n_layers: one ``delta`` per block; from the model (``None``: one, for a single block).
        theta: frequency base (10000).

    Shapes:
        ``for_layer(i).rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh), positions (T,) or
        (B, T) -> q (B, H, Tq, 2 Dh), k (B, H, Tk, 2 Dh).
    """

    def __init__(self, *args: Any, n_layers: int | None = None, theta: float = 10000.0, **shared: Any) -> None:
        super().__init__(*args, n_layers=n_layers, **shared)
        if theta <= 1:
            raise ValueError(f"pope theta must be > 1, got {theta}")
        self.theta = theta
        inv_freq = theta ** -(torch.arange(self.head_dim, dtype=torch.float64) / self.head_dim)
        self.layers = nn.ModuleList(
            PolarLayer(*args, inv_freq=inv_freq.to(torch.float32), **shared) for _ in range(n_layers or 1)
        )

    def for_layer(self, index: int) -> PositionalEncoding:
        if not 0 <= index < len(self.layers):
            raise ValueError(f"pope was built with {len(self.layers)} layer(s), asked for block {index}; "
                             f"build it with n_layers (pebench.model.build_model does)")
        return self.layers[index]

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, theta={self.theta}"
