"""Rotary position embedding (RoPE, Su et al. 2021) with evaluation-time scaling (PI, NTK-aware, YaRN)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from pebench.encodings import register
from pebench.encodings._rotary import LAYOUTS, apply_rotation, cached_cos_sin
from pebench.encodings.base import PositionalEncoding, PositionCache


def _default_inv_freq(rotary_dim: int, theta: float) -> Tensor:
    """``theta^(-2i / Dr)`` for i = 0 .. Dr/2 - 1, float64 (Dr/2,)."""
    return theta ** -(torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)


def _no_scaling(rotary_dim: int, theta: float, factor: float, original_max_len: int,
                beta_fast: float, beta_slow: float) -> tuple[Tensor, float]:
    """Plain RoPE (RoFormer Eq. 15): ``theta_i = theta^(-2i/Dr)``."""
    return _default_inv_freq(rotary_dim, theta), 1.0


def _linear_scaling(rotary_dim: int, theta: float, factor: float, original_max_len: int,
                    beta_fast: float, beta_slow: float) -> tuple[Tensor, float]:
    """Position interpolation (Chen et al. 2023): position ``m`` is rotated as ``m / s``.

    Expressed, as in HF ``_compute_linear_scaling_rope_parameters``, as ``inv_freq / s``.
    """
    return _default_inv_freq(rotary_dim, theta) / factor, 1.0


def _ntk_scaling(rotary_dim: int, theta: float, factor: float, original_max_len: int,
                 beta_fast: float, beta_slow: float) -> tuple[Tensor, float]:
    """NTK-aware scaling (bloc97 2023): base ``theta * s^(Dr / (Dr - 2))``, no interpolation of positions.

    The lowest frequency is interpolated by exactly ``s`` while the highest is
    (almost) unchanged. This is the static variant of the Reddit post (HF's
    ``dynamic`` type recomputes ``s`` from the current length; not used here).
    """
    if rotary_dim <= 2:
        raise ValueError(f"ntk scaling needs more than 2 rotary dims (exponent Dr/(Dr-2)), got {rotary_dim}")
    return _default_inv_freq(rotary_dim, theta * factor ** (rotary_dim / (rotary_dim - 2))), 1.0


def _yarn_scaling(rotary_dim: int, theta: float, factor: float, original_max_len: int,
                  beta_fast: float, beta_slow: float) -> tuple[Tensor, float]:
    """YaRN (Peng et al. 2023): NTK-by-parts frequencies + attention temperature.

    For each pair ``i`` let ``r_i = L / wavelength_i`` (rotations completed over
    the training length ``L = original_max_len``). Pairs with ``r_i > beta_fast``
    (high frequency) keep their frequency, pairs with ``r_i < beta_slow`` are
    interpolated by ``s`` (frequency / s), and a linear ramp over pair index
    blends between them. The ramp bounds are the (floored/ceiled) pair indices
    where ``r_i`` equals beta_fast and beta_slow, exactly as HF
    ``_compute_yarn_parameters`` with ``truncate=True``. The attention
    temperature ``sqrt(1/t) = 0.1 ln(s) + 1`` multiplies both q and k (so the
    scores by its square), as in the paper and HF ``attention_factor``.
    """

    def pair_index_with_rotations(rotations: float) -> float:
        return rotary_dim * math.log(original_max_len / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low = max(math.floor(pair_index_with_rotations(beta_fast)), 0)
    high = min(math.ceil(pair_index_with_rotations(beta_slow)), rotary_dim - 1)
    if high <= low:  # zero-width ramp (the reference adds 0.001 when equal); negative only for L < 2 pi beta_slow
        high = low + 0.001
    ramp = ((torch.arange(rotary_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    extrapolate = 1 - ramp  # 1: keep the original frequency, 0: interpolate by s
    inv_freq = _default_inv_freq(rotary_dim, theta)
    inv_freq = inv_freq / factor * (1 - extrapolate) + inv_freq * extrapolate
    attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return inv_freq, attention_factor


#: scaling name -> pure function (rotary_dim, theta, factor, original_max_len, beta_fast, beta_slow)
#: returning (inverse frequencies (Dr/2,), factor multiplying the rotated q and k); as HF ROPE_INIT_FUNCTIONS.
SCALINGS: dict[str, Callable[..., tuple[Tensor, float]]] = {
    "none": _no_scaling,
    "linear": _linear_scaling,
    "ntk": _ntk_scaling,
    "yarn": _yarn_scaling,
}


@register("rope", label="RoPE", kind="rotary", paper="su2021roformer", has_parameters=False,
          cites=("chen2023pi", "bloc97ntk2023", "peng2023yarn"),
          summary="Rotary embedding: rotates q/k pairs by position-proportional angles (RoFormer Eq. 15).")
class RoPE(PositionalEncoding):
    """Rotary position embedding (RoPE), applied to queries and keys.

    Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", Eq. 15: the query at position m is rotated pairwise,
    ``(q_2i, q_2i+1) -> R(m theta_i) (q_2i, q_2i+1)`` with
    ``theta_i = theta^(-2i/Dr)``, ``theta = 10000``; equivalently each pair is
    the complex number ``q_2i + i q_2i+1`` multiplied by ``exp(i m theta_i)``.
    Then ``<R_m q, R_n k>`` depends on positions only through ``n - m`` (tested).
    Checked against the RoFormer formula (complex multiplication, tested),
    torchscale ``rotate_every_two`` (interleaved) and HF Llama ``rotate_half``.

    Options:

    * ``layout="interleaved"`` (paper) pairs dims (2i, 2i+1); ``"half"``
      (GPT-NeoX / Llama) pairs (i, i + Dr/2). Same model up to a fixed
      permutation of the head dimensions (tested).
    * ``rotary_fraction``: rotate only the first ``Dr = int(Dh * fraction)``
      head dims (GPT-NeoX ``rotary_pct``); frequencies use ``Dr``; the other
      dims pass through unchanged.
    * ``scaling`` (evaluation-time context extension of a model trained with
      plain RoPE; :data:`SCALINGS`): ``"linear"`` = position interpolation
      (Chen et al. 2023), ``"ntk"`` = NTK-aware base change (bloc97 2023),
      ``"yarn"`` = YaRN (Peng et al. 2023), each with ``scaling_factor`` s >= 1;
      every variant equals plain RoPE at s = 1 (tested).

    RoPE has no trainable parameters and its frequency buffer is not saved
    (``persistent=False``), so the state of a model trained with plain RoPE
    loads into one whose ``rope`` is built with a scaling (tested). cos/sin are computed in
    float32 from the explicit positions (cached for the latest position
    tensors, so the layers of one forward pass share them).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): the head width Dh = D / H must give an even
            ``Dr``; ``train_len`` is the default ``original_max_len`` of YaRN, unused otherwise; ``max_len`` and
            ``causal`` are unused.
        theta: frequency base (10000 in the paper).
        layout: ``"interleaved"`` or ``"half"``.
        rotary_fraction: fraction of each head's dims that is rotated, in (0, 1].
        scaling: ``"none"``, ``"linear"``, ``"ntk"`` or ``"yarn"``.
        scaling_factor: s, the context-extension factor (>= 1).
        original_max_len: YaRN only: the training context length L (default ``train_len``); its
            resolved value is ``None`` for the other scalings, which do not use it.
        beta_fast, beta_slow: YaRN only: ramp bounds in rotations over L (32 and 1 in the paper).

    Shapes:
        ``rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh),
        positions (T,) or (B, T) -> q, k of the same shapes and dtype.
    """

    def __init__(
        self,
        *args: Any,
        theta: float = 10000.0,
        layout: str = "interleaved",
        rotary_fraction: float = 1.0,
        scaling: str = "none",
        scaling_factor: float = 1.0,
        original_max_len: int | None = None,
        beta_fast: float = 32.0,
        beta_slow: float = 1.0,
        **shared: Any,
    ) -> None:
        super().__init__(*args, **shared)
        if layout not in LAYOUTS:
            raise ValueError(f"rope layout must be one of {LAYOUTS}, got {layout!r}")
        if not 0 < rotary_fraction <= 1:
            raise ValueError(f"rope rotary_fraction must be in (0, 1], got {rotary_fraction}")
        rotary_dim = int(self.head_dim * rotary_fraction)
        if rotary_dim == 0 or rotary_dim % 2:
            raise ValueError(
                f"rope rotates pairs of dimensions, so the rotated width must be even and > 0, but "
                f"head_dim={self.head_dim} (d_model={self.d_model} / n_heads={self.n_heads}) x "
                f"rotary_fraction={rotary_fraction} gives {rotary_dim}; choose d_model and n_heads with an even "
                f"head_dim, or a rotary_fraction that makes int(head_dim * rotary_fraction) even"
            )
        if theta <= 1:
            raise ValueError(f"rope theta must be > 1, got {theta}")
        if scaling not in SCALINGS:
            raise ValueError(f"rope scaling must be one of {tuple(SCALINGS)}, got {scaling!r}")
        if scaling_factor < 1:
            raise ValueError(f"rope scaling_factor must be >= 1 (a context-extension factor), got {scaling_factor}")
        if scaling == "none" and scaling_factor != 1:
            raise ValueError(f"scaling_factor={scaling_factor} has no effect with scaling='none'; "
                             f"pass scaling='linear', 'ntk' or 'yarn'")
        if scaling != "yarn" and (original_max_len is not None or beta_fast != 32.0 or beta_slow != 1.0):
            raise ValueError("original_max_len, beta_fast and beta_slow are YaRN options; pass scaling='yarn'")
        if beta_fast <= beta_slow:
            raise ValueError(f"yarn needs beta_fast > beta_slow, got beta_fast={beta_fast}, beta_slow={beta_slow}")
        self.theta = theta
        self.layout = layout
        self.rotary_fraction = rotary_fraction
        self.rotary_dim = rotary_dim
        self.scaling = scaling
        self.scaling_factor = scaling_factor
        self.beta_fast = beta_fast
        self.beta_slow = beta_slow
        training_context = self.train_len if original_max_len is None else original_max_len
        # None unless YaRN: the other scalings neither use nor accept it
        self.original_max_len = training_context if scaling == "yarn" else None
        inv_freq, self.attention_factor = SCALINGS[scaling](
            rotary_dim, theta, scaling_factor, training_context, beta_fast, beta_slow
        )
        self.register_buffer("inv_freq", inv_freq.to(torch.float32), persistent=False)  # (Dr/2,)
        self._cache = PositionCache()

    def cos_sin(self, pos: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of ``pos * inv_freq`` (times the YaRN attention factor): each (T, Dr/2) or (B, T, Dr/2)."""
        return cached_cos_sin(self._cache, pos, self.inv_freq, self.attention_factor)

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        cos_q, sin_q = self.cos_sin(q_pos)
        cos_k, sin_k = (cos_q, sin_q) if k_pos is q_pos else self.cos_sin(k_pos)
        return apply_rotation(q, cos_q, sin_q, self.layout), apply_rotation(k, cos_k, sin_k, self.layout)

    def extra_repr(self) -> str:
        text = f"{super().extra_repr()}, theta={self.theta}, layout={self.layout!r}, rotary_dim={self.rotary_dim}"
        if self.scaling != "none":
            text += f", scaling={self.scaling!r}, scaling_factor={self.scaling_factor}"
        return text
