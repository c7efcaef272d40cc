"""p-RoPE: RoPE with the lowest frequencies removed (Barbero et al. 2025)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings._rotary import LAYOUTS, apply_rotation, cached_cos_sin
from pebench.encodings.base import PositionalEncoding, PositionCache


@register("p_rope", label="p-RoPE", kind="rotary", paper="barbero2025rope", has_parameters=False,
          summary="RoPE keeping only the highest fraction p of its frequencies; the other pairs are not rotated.")
class PRoPE(PositionalEncoding):
    """p-RoPE: RoPE whose lowest-frequency ``1 - p`` of the spectrum is removed.

    Barbero et al. 2025, "Round and Round We Go! What makes Rotary Positional Encodings useful?"
    (ICLR), Section 6: of RoPE's ``Dh / 2`` frequencies ``theta^(-2i / Dh)`` the highest
    ``n = int(p * Dh // 2)`` are kept and the others set to zero, so those pairs carry no rotation
    and serve as position-free semantic channels (p = 1 is RoPE, p = 0 is NoPE). As in the
    paper's code (Gemma's ``apply_rope`` with the removed timescales set to infinity), the kept
    frequencies are RoPE's own, computed with the full head width ``Dh``, and the layout is the
    rotate-half one of Gemma: pair ``i`` is ``(x[i], x[i + Dh/2])``.

    This differs from ``rope``'s ``rotary_fraction`` (GPT-NeoX ``rotary_pct``), which rotates the
    leading ``Dr`` dims with frequencies recomputed from ``Dr``, ``theta^(-2i / Dr)``: a whole
    RoPE spectrum squeezed into fewer pairs, whose lowest frequency stays ``~1/theta``. p-RoPE's
    lowest kept frequency is ``theta^(-2(n-1) / Dh)`` (tested).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): the head width Dh = D / H must be even;
            ``max_len``, ``train_len`` and ``causal`` are unused.
        theta: frequency base (10000).
        fraction: p, the kept fraction of frequencies, in [0, 1] (0.75: the paper's best Gemma 2B
            setting, beside 0.25).
        layout: ``"half"`` (the paper's code) or ``"interleaved"`` (RoFormer pairs; the same
            model up to a permutation of head dims).

    Shapes:
        ``rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh), positions (T,) or
        (B, T) -> q, k of the same shapes and dtype.
    """

    def __init__(
        self, *args: Any, theta: float = 10000.0, fraction: float = 0.75, layout: str = "half", **shared: Any
    ) -> None:
        super().__init__(*args, **shared)
        if self.head_dim % 2:
            raise ValueError(f"p_rope rotates pairs of dimensions, so head_dim = d_model / n_heads must be even; "
                             f"got {self.head_dim} (d_model={self.d_model}, n_heads={self.n_heads})")
        if not 0 <= fraction <= 1:
            raise ValueError(f"p_rope fraction must be in [0, 1], got {fraction}")
        if theta <= 1:
            raise ValueError(f"p_rope theta must be > 1, got {theta}")
        if layout not in LAYOUTS:
            raise ValueError(f"p_rope layout must be one of {LAYOUTS}, got {layout!r}")
        self.theta = theta
        self.fraction = fraction
        self.layout = layout
        self.rotated_pairs = int(fraction * self.head_dim // 2)
        inv_freq = theta ** -(torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim)  # (Dh/2,)
        inv_freq[self.rotated_pairs:] = 0  # removed: angle 0, cos 1, sin 0 - exactly unrotated
        self.register_buffer("inv_freq", inv_freq.to(torch.float32), persistent=False)
        self._cache = PositionCache()

    def cos_sin(self, pos: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of ``pos * inv_freq``: each (T, Dh/2) or (B, T, Dh/2), float32."""
        return cached_cos_sin(self._cache, pos, self.inv_freq)

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        cos_q, sin_q = self.cos_sin(q_pos)
        cos_k, sin_k = (cos_q, sin_q) if k_pos is q_pos else self.cos_sin(k_pos)
        return apply_rotation(q, cos_q, sin_q, self.layout), apply_rotation(k, cos_k, sin_k, self.layout)

    def extra_repr(self) -> str:
        return (f"{super().extra_repr()}, theta={self.theta}, fraction={self.fraction}, layout={self.layout!r}, "
                f"rotated_pairs={self.rotated_pairs}")
