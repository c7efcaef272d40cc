"""Fixed sinusoidal absolute positions added to the token embeddings (Vaswani et al. 2017)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, PositionCache


@register("sinusoidal", label="Sinusoidal", kind="input", paper="vaswani2017attention", has_parameters=False,
          summary="Fixed interleaved sin/cos of the absolute position added to the embeddings.")
class Sinusoidal(PositionalEncoding):
    """Sinusoidal absolute positional encoding, added to the token embeddings.

    Vaswani et al. 2017, "Attention Is All You Need", Section 3.5::

        PE[pos, 2i]     = sin(pos / theta^(2i / D))
        PE[pos, 2i + 1] = cos(pos / theta^(2i / D)),     theta = 10000

    i.e. sin and cos of one frequency are *interleaved* (dims 2i, 2i+1), as in
    the paper. Some code bases (e.g. the Randomized PE reference of Ruoss et
    al. 2023) concatenate all sines then all cosines instead, which is the same
    encoding up to a fixed permutation of the embedding dimensions.

    Each (sin, cos) pair at position ``pos + k`` is a rotation of the pair at
    ``pos`` by the angle ``k / theta^(2i/D)`` — the relative-position property
    the paper motivates it with (tested). The table is computed on the fly in
    float32 from the explicit positions, so any position (also past
    ``max_len``, also randomized) is exact and no table has to be grown.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``d_model`` must be even; the others are unused
            (the encoding is defined for every position).
        theta: the base of the geometric frequency progression (10000 in the paper).

    Shapes:
        ``embed(x, pos)``: x (B, T, D), pos (T,) or (B, T) -> (B, T, D).
    """

    def __init__(self, *args: Any, theta: float = 10000.0, **shared: Any) -> None:
        super().__init__(*args, **shared)
        if self.d_model % 2:
            raise ValueError(f"sinusoidal needs an even d_model (sin/cos pairs), got d_model={self.d_model}; "
                             f"use d_model={self.d_model + 1} or {self.d_model - 1}")
        if theta <= 1:
            raise ValueError(f"sinusoidal theta must be > 1, got {theta}")
        self.theta = theta
        exponents = torch.arange(0, self.d_model, 2, dtype=torch.float64) / self.d_model  # 2i / D
        self.register_buffer("inv_freq", (theta ** -exponents).to(torch.float32), persistent=False)  # (D/2,)
        self._tables = PositionCache()  # the model reuses one position tensor per length

    def table(self, pos: Tensor) -> Tensor:
        """The encodings of ``pos`` (T,) or (B, T): (T, D) or (B, T, D), float32."""
        angles = pos.to(torch.float32).unsqueeze(-1) * self.inv_freq  # (..., T, D/2)
        return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # (..., T, D) interleaved

    def embed(self, x: Tensor, pos: Tensor) -> Tensor:
        return x + self._tables.get(pos, self.table).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, theta={self.theta}"
