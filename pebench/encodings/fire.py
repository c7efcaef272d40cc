"""FIRE: Functional Interpolation for Relative position Encoding (Li et al. 2024)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, relative_distance


@register("fire", label="FIRE", kind="bias", paper="li2024fire", has_parameters=True, causal_only=True,
          summary="Learned MLP of the log-distance normalised by the log query position (progressive interpolation).")
class FIRE(PositionalEncoding):
    """FIRE: an MLP of the log-transformed relative distance, normalised by the query position.

    Li et al. 2024, "Functional Interpolation for Relative Positions Improves
    Long Context Transformers" (ICLR), Section 3 and the PyTorch code in its
    appendix. Query ``i`` attending to key ``j`` gets, per head::

        b(i, j) = f_theta( psi(i - j) / psi(max(L, i)) ),    psi(x) = log(|c x| + 1)

    ``f_theta``: MLP 1 -> ``mlp_width`` (32) -> ReLU -> H; ``c``: learnable,
    initialised 0.1; ``L = |l * L0|``: a learnable threshold, ``L0`` fixed and
    the multiplier ``l`` learnable (initialised 1). Dividing by the query
    position ("progressive interpolation") maps every distance of every
    sequence length into [0, 1], so longer inputs stay in the trained input
    range (for causal pairs: ``0 <= i - j <= i``); the threshold keeps short
    prefixes from being over-stretched. An
    ``eps = 1e-6`` is added to the denominator, as in the reference.

    ``init_threshold`` (``L0``) defaults to ``train_len``, the longest
    rendered training sequence, so that progressive interpolation starts
    where training stops (the paper's intent: positions up to the training
    length keep the normaliser ``L``, longer ones are interpolated); it never
    depends on evaluation lengths or on the position capacity ``max_len``.
    The reference uses 512 for 2048-token training; pass
    ``init_threshold=512.0`` to reproduce that setting.

    FIRE is defined for causal attention (``i - j >= 0``; ``causal_only`` in
    the registry). For keys after the query (encoders) the reference's
    ``|c x|`` makes the bias symmetric, ``psi(|i - j|)`` — the default here
    (``causal=False``), so the same module runs in an encoder; then left and
    right neighbours at the same distance get the same bias. ``causal=True``
    maps future keys to distance 0 instead (they must be masked by the model).

    The MLP runs on every (query, key) pair: with per-example positions
    (``randomized:fire``, positions (B, T)) its hidden activations take
    ``B * Tq * Tk * mlp_width`` floats, against ``Tq * Tk * mlp_width`` for
    positions shared by the batch.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): one MLP output per head, ``train_len`` the
            default of ``init_threshold``, ``causal`` as above; ``d_model`` and ``max_len`` are unused.
        mlp_width: hidden width of f_theta (32 in the paper).
        init_c: initial c (0.1 in the reference).
        init_threshold: L0 (default ``train_len``; 512 in the reference).

    Shapes:
        ``bias(q_pos, k_pos)``: (Tq,), (Tk,) -> (H, Tq, Tk); (B, Tq), (B, Tk) -> (B, H, Tq, Tk); float32.
    """

    eps = 1e-6

    def __init__(
        self, *args: Any, mlp_width: int = 32, init_c: float = 0.1, init_threshold: float | None = None, **shared: Any
    ) -> None:
        super().__init__(*args, **shared)
        init_threshold = float(self.train_len) if init_threshold is None else init_threshold
        if mlp_width <= 0 or init_c <= 0 or init_threshold <= 0:
            raise ValueError(f"fire needs mlp_width, init_c and init_threshold > 0; got {mlp_width}, {init_c}, "
                             f"{init_threshold}")
        self.mlp_width = mlp_width
        self.init_c = init_c
        self.mlp = nn.Sequential(nn.Linear(1, mlp_width), nn.ReLU(), nn.Linear(mlp_width, self.n_heads))
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.threshold_multiplier = nn.Parameter(torch.tensor(1.0))
        self.register_buffer("init_threshold", torch.tensor(float(init_threshold)))

    def psi(self, x: Tensor) -> Tensor:
        """The log transform ``log(|c x| + 1)``."""
        return torch.log(torch.abs(self.c * x) + 1)

    def bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        distance = (-relative_distance(q_pos, k_pos)).to(torch.float32)  # i - j: (Tq, Tk) or (B, Tq, Tk)
        distance = distance.clamp(min=0) if self.causal else distance.abs()
        threshold = torch.abs(self.threshold_multiplier * self.init_threshold)
        normalizer = torch.maximum(q_pos.to(torch.float32), threshold).unsqueeze(-1)  # (Tq, 1) or (B, Tq, 1)
        normalized = self.psi(distance) / (self.psi(normalizer) + self.eps)  # in [0, 1] when 0 <= j <= i
        return self.mlp(normalized.unsqueeze(-1)).movedim(-1, -3).to(torch.float32)  # (H, Tq, Tk) or (B, H, Tq, Tk)

