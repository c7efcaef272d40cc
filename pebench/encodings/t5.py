"""T5 bucketed relative position bias (Raffel et al. 2020)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, PositionCache, relative_distance


def relative_position_bucket(
    relative_position: Tensor, *, causal: bool, num_buckets: int = 32, max_distance: int = 128
) -> Tensor:
    """T5's bucket of each relative position ``memory - query`` (``k_pos - q_pos``), int64, same shape.

    The mesh-tensorflow / HF ``_relative_position_bucket`` function:

    * bidirectional (``causal=False``): half of the buckets for keys at or
      before the query, half (offset by ``num_buckets / 2``) for keys after it;
    * causal: every future key (``k_pos > q_pos``) falls in bucket 0 with the
      query itself; all buckets are for the past.

    Within a side of ``n`` buckets, distances ``0 .. n/2 - 1`` get a bucket
    each; larger distances share ``n/2`` log-spaced buckets up to
    ``max_distance``; every distance ``>= max_distance`` is in the last bucket.
    Computed in float32 like the reference, so bucket boundaries agree exactly.
    """
    buckets = torch.zeros_like(relative_position)
    if causal:
        distance = (-relative_position).clamp(min=0)
    else:
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # clamp: log(0) is -inf; those distances are small and take the exact bucket anyway
    log_ratio = torch.log(distance.clamp(min=max_exact).float() / max_exact) / math.log(max_distance / max_exact)
    if_large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    if_large = if_large.clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, if_large)


@register("t5", label="T5 bias", kind="bias", paper="raffel2020t5", has_parameters=True,
          summary="Learned per-head scalar bias for each of 32 log-spaced relative-distance buckets.")
class T5RelativeBias(PositionalEncoding):
    """T5 relative position bias: a learned scalar per head and distance bucket.

    Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
    Unified Text-to-Text Transformer", Section 2.1: the score of query ``i``
    and key ``j`` gets ``b[bucket(j - i), h]``, with ``num_buckets=32``
    buckets (:func:`relative_position_bucket`, checked against HF
    transformers' ``T5Attention._relative_position_bucket``) and
    ``max_distance=128``. The bias ``b`` is an ``nn.Embedding(num_buckets,
    n_heads)`` table times ``sqrt(Dh)`` (``Dh = D / H``), the parametrisation of
    x-transformers' ``RelativePositionBias``; the table starts at ``N(0, 1/(D Dh))``
    so that ``b`` starts at ``N(0, 1/D)`` as in HF ``T5PreTrainedModel``. Why the
    factor: pebench adds the bias to logits already divided by ``sqrt(Dh)``, where
    a sharp attention pattern needs biases of several units, and Adam moves each
    table entry by about the learning rate per step; in logit units the bias took
    thousands of steps to grow (T5 fitted decoder reverse only after 4700 steps in
    the pilot runs, where the absolute encodings fit within 2500; pebench.plan.experiment).
    The factor is Adam's step for these few parameters times ``sqrt(Dh)``; it
    changes neither the function class nor the initial model. One module serves
    every layer, so — as in T5 — the bias is shared across layers.

    ``causal`` picks the bucket function: T5's encoder uses the bidirectional
    one (``causal=False``), its decoder the causal one; ``causal`` comes from
    the model's architecture (:func:`pebench.model.build_model` passes
    ``causal=True`` for decoders, also through wrappers such as
    ``randomized:t5``).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``d_model`` sets the init scale, one bias per
            head, causal (decoder) or bidirectional (encoder) buckets; ``max_len`` and ``train_len`` are unused:
            every distance has a bucket (``max_distance`` is fixed).
        num_buckets: number of buckets (32 in T5).
        max_distance: distance from which all keys share the last bucket (128 in T5).

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    def __init__(self, *args: Any, num_buckets: int = 32, max_distance: int = 128, **shared: Any) -> None:
        super().__init__(*args, **shared)
        side = num_buckets if self.causal else num_buckets // 2
        if side < 2 or (not self.causal and num_buckets % 2):
            raise ValueError(f"t5 needs num_buckets >= 2 per side (and even when bidirectional), got {num_buckets}")
        if max_distance <= side // 2:
            raise ValueError(f"t5 max_distance must exceed the {side // 2} exact buckets, got {max_distance}")
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, self.n_heads)
        # the bias is the table times sqrt(Dh) (x-transformers' RelativePositionBias scale): the same
        # initial bias as HF's N(0, 1/D), but Adam moves it sqrt(Dh) times faster (see the class docstring)
        self.scale = math.sqrt(self.head_dim)
        nn.init.normal_(self.relative_attention_bias.weight, mean=0.0, std=self.d_model**-0.5 / self.scale)
        self._buckets = PositionCache()  # the buckets depend on the positions only

    def buckets(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """Bucket of every (query, key) pair: (Tq, Tk) or (B, Tq, Tk) int64."""
        return relative_position_bucket(
            relative_distance(q_pos, k_pos), causal=self.causal,
            num_buckets=self.num_buckets, max_distance=self.max_distance,
        )

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        buckets = self._buckets.get((q_pos, k_pos), lambda pair: self.buckets(*pair))  # (Tq, Tk) or (B, Tq, Tk)
        values = self.relative_attention_bias(buckets) * self.scale  # (..., Tq, Tk, H)
        return values.movedim(-1, -3).to(torch.float32)  # (H, Tq, Tk) or (B, H, Tq, Tk)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, num_buckets={self.num_buckets}, max_distance={self.max_distance}"
