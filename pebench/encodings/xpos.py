"""xPos: rotary embedding with exponential decay (Sun et al. 2023)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings._rotary import apply_rotation, cached_cos_sin
from pebench.encodings.base import PositionalEncoding, PositionCache


@register("xpos", label="xPos", kind="rotary", paper="sun2023xpos", has_parameters=False, causal_only=True,
          summary="RoPE whose q/k are scaled by zeta^(+-n/scale_base), so scores decay with distance.")
class XPos(PositionalEncoding):
    """xPos ("Extrapolatable Position Embedding"): RoPE with an exponential decay.

    Sun et al. 2023, "A Length-Extrapolatable Transformer", Section 3. With
    ``zeta_i = (2i/Dh + gamma) / (1 + gamma)``, ``gamma = 0.4``, a query at
    position n and a key at position m are rotated as in RoPE (interleaved
    pairs, ``theta_i = 10000^(-2i/Dh)``) and scaled::

        q_n -> R(n theta) q_n * zeta^( n' / scale_base)
        k_m -> R(m theta) k_m * zeta^(-m' / scale_base),      scale_base = 512

    so ``<q_n, k_m>`` carries the factor ``zeta_i^((n - m) / scale_base)``:
    for ``n >= m`` (causal) scores decay with distance, and they still depend
    on positions only through ``n - m`` (tested). ``n'``, ``m'`` are the
    positions shifted by a common centre ``c`` to keep the factors near 1; as
    in torchscale ``XPOS`` (``min_pos = -(length + offset) // 2``),
    ``c = ceil(L / 2)`` with ``L = max(k_pos) + 1``, so for positions
    ``0 .. L-1`` the result equals torchscale's exactly (tested). The shift
    cancels in every q·k score (lucidrains-style ports centre at
    ``floor(L / 2)``; same scores). The rotation itself uses the uncentred
    positions, as torchscale does. Checked against torchscale
    ``component/xpos_relative_position.py``, which also fixes the interleaved
    (``rotate_every_two``) layout and scales queries up, keys down.

    xPos is defined for causal models (``causal_only`` in the registry): for
    a key after the query the factor grows with distance. It runs in an
    encoder without error; that is then an extension the paper does not cover.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): the head width Dh = D / H must be even;
            ``max_len`` and ``train_len`` are unused (the decay scale is ``scale_base``, not a length of the run),
            ``causal`` too.
        theta: rotary frequency base (10000).
        gamma: decay shape (0.4 in the paper).
        scale_base: decay length scale (512 in the paper).

    Shapes:
        ``rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh),
        positions (T,) or (B, T) -> q, k of the same shapes and dtype.
    """

    def __init__(
        self, *args: Any, theta: float = 10000.0, gamma: float = 0.4, scale_base: float = 512.0, **shared: Any
    ) -> None:
        super().__init__(*args, **shared)
        if self.head_dim % 2:
            raise ValueError(
                f"xpos rotates pairs of dimensions, so head_dim = d_model / n_heads must be even; got "
                f"{self.head_dim} (d_model={self.d_model}, n_heads={self.n_heads}); "
                f"choose e.g. d_model={self.n_heads * (self.head_dim + 1)}"
            )
        if theta <= 1 or gamma <= 0 or scale_base <= 0:
            raise ValueError(f"xpos needs theta > 1, gamma > 0, scale_base > 0; got {theta}, {gamma}, {scale_base}")
        self.theta = theta
        self.gamma = gamma
        self.scale_base = scale_base
        pair_start = torch.arange(0, self.head_dim, 2, dtype=torch.float64)  # 2i
        inv_freq = theta ** -(pair_start / self.head_dim)
        zeta = (pair_start + gamma * self.head_dim) / ((1 + gamma) * self.head_dim)
        self.register_buffer("inv_freq", inv_freq.to(torch.float32), persistent=False)  # (Dh/2,)
        self.register_buffer("zeta", zeta.to(torch.float32), persistent=False)  # (Dh/2,)
        self._cache = PositionCache()

    def cos_sin(self, pos: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of ``pos * inv_freq``: each (T, Dh/2) or (B, T, Dh/2), float32."""
        return cached_cos_sin(self._cache, pos, self.inv_freq)

    def decay(self, pos: Tensor, centre: Tensor) -> Tensor:
        """``zeta^((pos - centre) / scale_base)``: (T, Dh/2) or (B, T, Dh/2), float32."""
        exponent = (pos - centre).to(torch.float32).unsqueeze(-1) / self.scale_base
        return self.zeta**exponent

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        centre = (k_pos.amax() + 2) // 2  # ceil((max(k_pos) + 1) / 2), shared by q and k
        cos_q, sin_q = self.cos_sin(q_pos)
        cos_k, sin_k = (cos_q, sin_q) if k_pos is q_pos else self.cos_sin(k_pos)
        up = self.decay(q_pos, centre)
        down = up if k_pos is q_pos else self.decay(k_pos, centre)
        q = apply_rotation(q, cos_q * up, sin_q * up, "interleaved")
        k = apply_rotation(k, cos_k / down, sin_k / down, "interleaved")
        return q, k

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, theta={self.theta}, gamma={self.gamma}, scale_base={self.scale_base}"
