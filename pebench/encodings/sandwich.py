"""Sandwich: the parameter-free relative bias of sinusoidal embeddings' inner products (Chi et al. 2023)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, relative_distance


@register("sandwich", label="Sandwich", kind="bias", paper="chi2023sandwich", has_parameters=False,
          summary="Parameter-free bias: inner product of sinusoidal embeddings of i and j, per-head scaled.")
class Sandwich(PositionalEncoding):
    """Sandwich: the inner product of the sinusoidal embeddings of query and key as a score bias.

    Chi et al. 2023, "Dissecting Transformer Length Extrapolation via the Lens of Receptive Field
    Analysis" (ACL). Query ``i`` attending to key ``j`` gets, in head ``h = 1 .. H``::

        b_h(i, j) = ( sum_{k=1}^{d'/2} cos((i - j) w_k)  -  d'/2 ) / (8 h / H),    w_k = 10000^(-2k / d')

    i.e. ``p_i . p_j - d'/2`` for sinusoidal embeddings ``p`` of width ``d'`` (``sin`` and ``cos``
    of each frequency: ``sin a sin b + cos a cos b = cos(a - b)``), shifted to 0 at distance 0 and
    scaled per head as ALiBi's slopes spread over heads. No parameters. Checked against NeMo's
    ``SandwichRelativePositionEmbedding`` (its formula with ``k`` from 1 to ``d'/2`` and
    ``d'`` = the head width ``hidden_size // num_attention_heads``, as NeMo passes it); causal:
    future keys at distance 0 (NeMo's ``torch.tril``), masked by the model; bidirectional: the
    bias is symmetric in ``i - j`` (cos is even).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``causal`` as above; ``max_len`` and
            ``train_len`` are unused: every distance has a bias.
        sinusoid_dim: d', the width of the sinusoidal embeddings (even); default the head width D / H.

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    def __init__(self, *args: Any, sinusoid_dim: int | None = None, **shared: Any) -> None:
        super().__init__(*args, **shared)
        sinusoid_dim = self.head_dim if sinusoid_dim is None else sinusoid_dim
        if sinusoid_dim <= 0 or sinusoid_dim % 2:
            raise ValueError(f"sandwich sinusoid_dim must be even and positive, got {sinusoid_dim}; "
                             f"leave it unset for the head width ({self.head_dim})")
        self.sinusoid_dim = sinusoid_dim
        k = torch.arange(1, sinusoid_dim // 2 + 1, dtype=torch.float64)
        self.register_buffer("inv_freq", (10000.0 ** (-2 * k / sinusoid_dim)).to(torch.float32), persistent=False)
        head_scale = 8 * torch.arange(1, self.n_heads + 1, dtype=torch.float32) / self.n_heads  # 8h / H
        self.register_buffer("head_scale", head_scale, persistent=False)

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        distance = (-relative_distance(q_pos, k_pos)).to(torch.float32)  # i - j: (Tq, Tk) or (B, Tq, Tk)
        if self.causal:
            distance = distance.clamp(min=0)
        inner = torch.cos(distance.unsqueeze(-1) * self.inv_freq).sum(-1)  # (..., Tq, Tk)
        return (inner - self.sinusoid_dim / 2).unsqueeze(-3) / self.head_scale.view(-1, 1, 1)  # (H, ...) or (B, H, ...)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, sinusoid_dim={self.sinusoid_dim}"
