"""Attention with Linear Biases (ALiBi, Press et al. 2022)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, relative_distance


def alibi_slopes(n_heads: int) -> list[float]:
    """The head slopes of the ALiBi reference code (``get_slopes``, ofirpress/attention_with_linear_biases).

    For a power of two ``n``: the geometric sequence with first term and ratio
    ``2^(-8/n)`` (8 heads: 1/2, 1/4, ..., 1/256). Otherwise: the slopes of the
    closest smaller power of two ``p``, followed by every other slope (the 1st,
    3rd, ...) of ``2p`` heads, up to ``n`` in total — so 12 heads get the 8-head
    slopes and then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    """

    def power_of_two_slopes(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_two_slopes(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_two_slopes(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


@register("alibi", label="ALiBi", kind="bias", paper="press2022alibi", has_parameters=False,
          summary="Head-specific linear penalty -slope * distance on the attention scores.")
class ALiBi(PositionalEncoding):
    """ALiBi: a fixed, head-specific linear penalty on the query-key distance.

    Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases
    Enables Input Length Extrapolation". Query ``i`` attending to key ``j``
    gets the score bias ``-m_h * (i - j)`` with head slopes ``m_h`` from
    :func:`alibi_slopes` (the reference ``get_slopes``, incl. non-power-of-2
    head counts; tested against it for 1..32 heads). The bias is computed from
    the explicit positions ``i = q_pos``, ``j = k_pos`` (not from ``arange``),
    so randomized or offset positions work. The paper's definition is used;
    the reference fairseq code adds ``m_h * j`` instead, which differs by a
    per-query constant and gives the same softmax.

    Variants:

    * ``causal=False`` (default): the symmetric bidirectional variant for
      encoders, ``-m_h * |i - j|``. Under a causal mask it is identical to the
      causal variant, so it is also correct for decoders.
    * ``causal=True``: ``-m_h * max(i - j, 0)``: future keys (j > i) count as
      distance 0, as the causal T5 bucket function does; they must be masked
      by the model.
    * ``past_offset`` (bidirectional only): subtract ``past_offset`` from the
      distance of keys before the query (``j < i``), so left and right are
      distinguishable. The encoder code of Ruoss et al. (2023)
      (``compute_alibi_encodings_biases``) uses 0.5; the default 0 is the
      plain symmetric bias.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): one slope per head, ``causal`` as above;
            ``max_len`` and ``train_len`` are unused.
        past_offset: see above.

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    def __init__(self, *args: Any, past_offset: float = 0.0, **shared: Any) -> None:
        super().__init__(*args, **shared)
        if self.causal and past_offset:
            raise ValueError("alibi past_offset breaks the symmetry of the bidirectional bias; "
                             "it has no effect with causal=True, so leave it at 0")
        self.past_offset = past_offset
        self.register_buffer("slopes", torch.tensor(alibi_slopes(self.n_heads), dtype=torch.float32), persistent=False)

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        distance = (-relative_distance(q_pos, k_pos)).to(torch.float32)  # i - j: (Tq, Tk) or (B, Tq, Tk)
        if self.causal:
            distance = distance.clamp(min=0)
        else:
            distance = distance.abs() - self.past_offset * (distance > 0)
        return -self.slopes.view(-1, 1, 1) * distance.unsqueeze(-3)  # (H, Tq, Tk) or (B, H, Tq, Tk)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, past_offset={self.past_offset}"
