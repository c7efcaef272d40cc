"""KERPLE: kernelized relative positional embeddings, log and power variants (Chi et al. 2022)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, relative_distance


class _Kerple(PositionalEncoding):
    """Shared part of the two KERPLE variants: two learnable per-head parameters ``r1``, ``r2`` > 0 and
    the distance ``|i - j|`` of query ``i`` and key ``j`` (causal: future keys at distance 0)."""

    #: lower bound of both parameters (the reference's ``eps``)
    eps = 1e-2
    #: upper bound of ``r2`` (None: unbounded)
    r2_max: float | None = None

    def __init__(self, *args: Any, **shared: Any) -> None:
        super().__init__(*args, **shared)
        self.r1 = nn.Parameter(torch.empty(self.n_heads))
        self.r2 = nn.Parameter(torch.empty(self.n_heads))

    def constrain(self) -> None:
        """Project ``r1`` and ``r2`` onto their constraints in place, as the reference does before every use."""
        with torch.no_grad():
            self.r1.clamp_(min=self.eps)
            self.r2.clamp_(min=self.eps, max=self.r2_max)

    def distance(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """``|i - j|`` as float32 (Tq, Tk) or (B, Tq, Tk); causal: ``max(i - j, 0)``."""
        distance = (-relative_distance(q_pos, k_pos)).to(torch.float32)  # i - j
        return distance.clamp(min=0) if self.causal else distance.abs()

    def kernel(self, r1: Tensor, r2: Tensor, distance: Tensor) -> Tensor:
        raise NotImplementedError

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        self.constrain()
        distance = self.distance(q_pos, k_pos).unsqueeze(-3)  # (1, Tq, Tk) or (B, 1, Tq, Tk)
        return self.kernel(self.r1.view(-1, 1, 1), self.r2.view(-1, 1, 1), distance)  # (H, Tq, Tk) or (B, H, Tq, Tk)


@register("kerple_log", label="Kerple (log)", kind="bias", paper="chi2022kerple", has_parameters=True,
          summary="Learnable per-head logarithmic bias -r1 log(1 + r2 |i - j|) (KERPLE, log variant).")
class KerpleLog(_Kerple):
    """KERPLE, logarithmic variant: per head, the score bias ``-r1 * log(1 + r2 * |i - j|)``, r1, r2 > 0.

    Chi et al. 2022, "KERPLE: Kernelized Relative Positional Embedding for Length Extrapolation"
    (NeurIPS), Eq. (log variant of the conditionally positive definite kernels). Checked against
    the reference code, chijames/KERPLE ``megatron/mpu/layers.py`` ``ParallelKerpleLog``
    (``bias = -bias_p * log(1 + bias_a * diff)``, ``bias_p`` = r1, ``bias_a`` = r2):

    * initialisation: ``r1 = 2 U(0, 1)``, ``r2 = U(0, 1)`` per head, drawn in that order;
    * constraints: both are clamped in place to ``>= 0.01`` before every use (the reference's
      ``.data.clamp(min=eps)`` at each forward: projected gradient descent);
    * causal: future keys get distance 0 (the reference's ``torch.tril``), the model masks them;
      bidirectional (encoders): ``|i - j|``, symmetric, as NeMo's ``KERPLERelativePositionEmbedding``.

    The bias depends on positions only through ``|i - j|`` and falls monotonically with it (tested).
    One module serves every layer (as T5's bias); the reference has one per model too.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): one r1, r2 per head, ``causal`` as above;
            ``d_model``, ``max_len`` and ``train_len`` are unused.

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    def __init__(self, *args: Any, **shared: Any) -> None:
        super().__init__(*args, **shared)
        with torch.no_grad():
            self.r1.copy_(2 * torch.rand(self.n_heads))
            self.r2.copy_(torch.rand(self.n_heads))

    def kernel(self, r1: Tensor, r2: Tensor, distance: Tensor) -> Tensor:
        return -r1 * torch.log1p(r2 * distance)


@register("kerple_power", label="Kerple (power)", kind="bias", paper="chi2022kerple", has_parameters=True,
          summary="Learnable per-head power bias -r1 |i - j|^r2, 0 < r2 <= 2 (KERPLE, power variant).")
class KerplePower(_Kerple):
    """KERPLE, power variant: per head, the score bias ``-r1 * |i - j|^r2``, r1 > 0, 0 < r2 <= 2.

    Chi et al. 2022, "KERPLE: Kernelized Relative Positional Embedding for Length Extrapolation"
    (NeurIPS), power variant. Checked against the reference code, chijames/KERPLE
    ``megatron/mpu/layers.py`` ``ParallelKerplePower`` with ``pos_emb=kerple_power_ap_`` (learnable
    ``bias_a`` = r1 and ``bias_p`` = r2, no weight kernel): ``bias = -bias_a * diff ** bias_p``.

    * initialisation: ``r2 = 2 U(0, 1)``, then ``r1 = U(0, 1)`` per head (the reference's order);
    * constraints: clamped in place before every use, ``r1 >= 0.01`` and ``0.01 <= r2 <= 2``
      (r2 <= 2 keeps the kernel conditionally positive definite);
    * causal / bidirectional: as :class:`KerpleLog`.

    With r2 = 1 it is ALiBi with learnable slopes. The bias depends on ``|i - j|`` only and falls
    monotonically with it (tested).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): one r1, r2 per head, ``causal`` as for
            :class:`KerpleLog`; ``d_model``, ``max_len`` and ``train_len`` are unused.

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    r2_max = 2.0

    def __init__(self, *args: Any, **shared: Any) -> None:
        super().__init__(*args, **shared)
        with torch.no_grad():
            self.r2.copy_(2 * torch.rand(self.n_heads))
            self.r1.copy_(torch.rand(self.n_heads))

    def kernel(self, r1: Tensor, r2: Tensor, distance: Tensor) -> Tensor:
        return -r1 * distance.pow(r2)
