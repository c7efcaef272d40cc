"""Transformer-XL relative positional encoding (Dai et al. 2019): a content-dependent score term."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, PositionCache, relative_distance


def relative_sinusoids(offsets: Tensor, width: int, max_timescale: float = 1e4) -> Tensor:
    """Sinusoidal embeddings (n, width) of integer ``offsets`` (n,): ``[sin(o w_i), cos(o w_i)]`` concatenated.

    ``w_i = max_timescale^(-2i / width)``, i = 0 .. width/2 - 1: the sines fill the first half, the
    cosines the second (DeepMind's ``sinusoid_position_encoding``, not the interleaved layout of
    ``sinusoidal``). Computed in float64, returned as float32.
    """
    inv_freq = max_timescale ** -(torch.arange(0, width, 2, dtype=torch.float64) / width)  # (width/2,)
    angles = offsets.to(torch.float64).unsqueeze(-1) * inv_freq.to(offsets.device)  # (n, width/2)
    return torch.cat((angles.sin(), angles.cos()), dim=-1).to(torch.float32)


@register("transformer_xl", label="Transformer-XL", kind="content", paper="dai2019transformerxl", has_parameters=True,
          summary="Relative sinusoids projected to keys, with global content and position biases u, v.")
class TransformerXL(PositionalEncoding):
    """Transformer-XL's relative positional encoding: content-position term and global biases u, v.

    Dai et al. 2019, "Transformer-XL: Attentive Language Models beyond a Fixed-Length Context",
    Section 3.3: the score of query ``i`` and key ``j`` is ``(a) + (b) + (c) + (d)``::

        (q_i + u)^T k_j  +  (q_i + v)^T W_R R_{j-i}      all divided by sqrt(Dh)

    with ``R`` the sinusoidal embedding of the relative offset (width D, sines then cosines,
    timescale 10000; :func:`relative_sinusoids`), ``W_R`` a learned D x D projection (no bias)
    split into heads, and learned per-head global biases ``u`` (content) and ``v`` (position). The
    model computes ``q_i^T k_j / sqrt(Dh)``; :meth:`content_score` adds the rest:
    ``(u^T k_j + (q_i + v)^T W_R R_{j-i}) / sqrt(Dh)``.

    Convention: DeepMind's ``compute_attention_with_relative_encodings``
    (google-deepmind/randomized_positional_encodings, ``models/positional_encodings.py``), which
    Ruoss et al. 2023 and Deletang et al. 2023 benchmark, with ``causal=False``: offsets ``j - i``
    from ``-T`` to ``T - 1`` and its ``relative_shift`` (tested against it, scores equal). The paper
    writes ``R_{i-j}``: the same model with the sine columns of ``W_R`` negated (sin is odd). Here the
    offsets come from the explicit positions (``k_pos - q_pos``), not from a shift of an ``arange``,
    so randomized positions work; the reference's causal shift, which gives offset
    ``T - 1 - (i - j)`` (it depends on the length), is not used: decoders use the same ``j - i``
    and the model masks future keys. Initialisation as the reference: ``u, v ~ N(0, 0.02)``,
    ``W_R`` truncated normal with std ``1 / sqrt(D)`` cut at two std (Haiku's ``Linear``).

    One ``u``, ``v`` and ``W_R`` serve every layer (the original code shares ``u`` and ``v``
    across layers; DeepMind's has a set per layer): pebench's encodings are one module per model.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``d_model`` is the width of R and of W_R;
            ``max_len`` and ``train_len`` are unused (every offset has an embedding), ``causal`` too (future keys
            are masked by the model).
        max_timescale: the sinusoids' timescale (10000).

    Shapes:
        ``content_score(q, k, logits, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh),
        positions (T,) or (B, T) -> (B, H, Tq, Tk), q's dtype.
    """

    def __init__(self, *args: Any, max_timescale: float = 10000.0, **shared: Any) -> None:
        super().__init__(*args, **shared)
        if self.d_model % 2:
            raise ValueError(f"transformer_xl needs an even d_model for its sin/cos embeddings, got {self.d_model}")
        if max_timescale <= 1:
            raise ValueError(f"transformer_xl max_timescale must be > 1, got {max_timescale}")
        self.max_timescale = max_timescale
        self.content_bias = nn.Parameter(torch.randn(self.n_heads, self.head_dim) * 0.02)  # u
        self.position_bias = nn.Parameter(torch.randn(self.n_heads, self.head_dim) * 0.02)  # v
        self.relative_keys = nn.Linear(self.d_model, self.d_model, bias=False)  # W_R
        std = self.d_model**-0.5
        nn.init.trunc_normal_(self.relative_keys.weight, std=std, a=-2 * std, b=2 * std)
        self._offsets = PositionCache()  # sinusoids and gather indices depend on the positions only

    def offsets(self, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        """Sinusoids R (n, D) of the offsets that occur, and each pair's index into them.

        Consecutive positions give the dense range ``lo .. hi`` of offsets (``n = Tq + Tk - 1``).
        Positions far apart (randomized positions drawn from thousands) would make that range thousands
        long, so then R holds only the distinct offsets that occur (``n <= B Tq Tk``), and
        :meth:`content_score` scores each pair on its own instead of every query against all of R.

        Returns:
            R (n, D) float32 and indices (Tq, Tk) or (B, Tq, Tk) int64 with ``R[index] = R_{j-i}``.
        """

        def compute(pair: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
            distance = relative_distance(*pair)  # j - i
            lo, hi = int(distance.min()), int(distance.max())
            if hi - lo + 1 <= self._dense_limit(distance):
                offsets = torch.arange(lo, hi + 1, device=distance.device)
                return relative_sinusoids(offsets, self.d_model, self.max_timescale), distance - lo
            offsets, index = torch.unique(distance, return_inverse=True)
            return relative_sinusoids(offsets, self.d_model, self.max_timescale), index

        return self._offsets.get((q_pos, k_pos), compute)

    @staticmethod
    def _dense_limit(distance: Tensor) -> int:
        """The most offsets R may hold for the dense scoring of every query against all of R: the
        ``Tq + Tk - 1`` offsets of consecutive positions."""
        return distance.shape[-2] + distance.shape[-1] - 1

    def content_score(self, q: Tensor, k: Tensor, logits: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        B, H, Tq, Dh = q.shape
        sinusoids, index = self.offsets(q_pos, k_pos)  # (n, D), (Tq, Tk) or (B, Tq, Tk)
        relative_keys = self.relative_keys(sinusoids.to(q.dtype)).view(-1, H, Dh)  # (n, H, Dh): W_R R
        content = torch.einsum("hd,bhkd->bhk", self.content_bias.to(q.dtype), k).unsqueeze(2)  # (B, H, 1, Tk): u k
        query = q + self.position_bias.to(q.dtype).view(1, H, 1, Dh)  # q + v
        if relative_keys.shape[0] <= self._dense_limit(index):  # dense offsets: every query against all of R
            position = torch.einsum("bhqd,nhd->bhqn", query, relative_keys)  # (B, H, Tq, n)
            index = index.unsqueeze(-3).expand(B, H, Tq, index.shape[-1])  # (B, H, Tq, Tk)
            return (content + position.gather(-1, index)) / math.sqrt(Dh)
        # sparse offsets (randomized positions): each pair against its own W_R R_{j-i}
        pairs = relative_keys[index]  # (Tq, Tk, H, Dh) or (B, Tq, Tk, H, Dh)
        equation = "bhqd,qkhd->bhqk" if index.dim() == 2 else "bhqd,bqkhd->bhqk"
        return (content + torch.einsum(equation, query, pairs)) / math.sqrt(Dh)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, max_timescale={self.max_timescale}"
