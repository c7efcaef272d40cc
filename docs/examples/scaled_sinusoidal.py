"""Scaled sinusoidal positions: the sinusoidal table times one learned scalar (Hua et al. 2022)."""

from __future__ import annotations

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
        d_model: model width D (even).
        n_heads: attention heads (unused).
        max_len: unused: defined for every position.
        causal: given by pebench from the model's architecture (unused here: the table is the same).
        theta: base of the frequencies (10000).
        init_scale: initial value of ``g``.

    Shapes:
        ``embed(x, pos)``: x (B, T, D), pos (T,) or (B, T) -> (B, T, D).
    """

    def __init__(self, d_model: int, n_heads: int, max_len: int, *, causal: bool = False, theta: float = 10000.0,
                 init_scale: float = 1.0) -> None:
        super().__init__(d_model, n_heads, max_len, causal=causal, theta=theta)
        self.scale = nn.Parameter(torch.tensor(float(init_scale)))

    def embed(self, x: Tensor, pos: Tensor) -> Tensor:
        return x + self.scale * self.table(pos).to(x.dtype)
