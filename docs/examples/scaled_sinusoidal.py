"""Scaled sinusoidal positions: the sinusoidal table times one learned scalar (Hua et al. 2022)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.sinusoidal import Sinusoidal


@register("scaled_sinusoidal", kind="input", paper="hua2022flash", has_parameters=True,
          summary="Sinusoidal table times a learned scalar, added to the embeddings.")
class ScaledSinusoidal(Sinusoidal):
    """Sinusoidal absolute positions multiplied by a learned scalar ``g``: ``embed(x, pos) = x + g * PE[pos]``.

    The "scaled sinusoidal" position embedding of FLASH (Hua et al. 2022). ``PE`` is the interleaved
    table of :class:`~pebench.encodings.sinusoidal.Sinusoidal`; with ``init_scale=1`` the encoding
    starts out equal to ``sinusoidal`` and learns how loud positions should be.

    Args:
        d_model, n_heads, max_len, causal, train_len: the arguments every encoding shares, given by pebench
            (:class:`~pebench.encodings.base.PositionalEncoding`); ``d_model`` must be even.
        theta: base of the frequencies (10000).
        init_scale: initial value of ``g``.

    Shapes:
        ``embed(x, pos)``: x (B, T, D), pos (T,) or (B, T) -> (B, T, D).
    """

    def __init__(self, *args: Any, theta: float = 10000.0, init_scale: float = 1.0, **shared: Any) -> None:
        super().__init__(*args, theta=theta, **shared)
        self.scale = nn.Parameter(torch.tensor(float(init_scale)))

    def embed(self, x: Tensor, pos: Tensor) -> Tensor:
        return x + self.scale * self.table(pos).to(x.dtype)
