"""Canon layers (Allen-Zhu 2025): a causal depthwise convolution before attention, local order without a PE."""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

# rope as a module, not its class: a plugin may import rope first, and this file then meets it half made
from pebench.encodings import register, rope
from pebench.encodings.base import PositionalEncoding


class CanonLayer(PositionalEncoding):
    """One block's Canon-A convolution (its own weights), and the optional partial RoPE.

    Shapes:
        ``mix(x)``: (B, T, D) -> (B, T, D); ``rotate``: RoPE's, or the identity.
    """

    def __init__(self, *args: Any, kernel_size: int = 4, rotary_fraction: float = 0.0, **shared: Any) -> None:
        super().__init__(*args, **shared)
        self.conv = nn.Conv1d(self.d_model, self.d_model, kernel_size, groups=self.d_model, bias=False)  # (D, 1, K)
        self.rope = rope.RoPE(*args, rotary_fraction=rotary_fraction, **shared) if rotary_fraction else None

    def mix(self, x: Tensor) -> Tensor:
        channels = x.transpose(1, 2)  # (B, D, T)
        padded = F.pad(channels, (self.conv.kernel_size[0] - 1, 0))  # causal: only the K - 1 tokens before
        return x + self.conv(padded).transpose(1, 2)  # (B, T, D), residual

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        return (q, k) if self.rope is None else self.rope.rotate(q, k, q_pos, k_pos)


@register("canon", label="Canon", kind="architectural", paper="allenzhu2025canon", has_parameters=True,
          summary="Canon layers: a residual causal depthwise convolution (kernel 4) before attention; no PE.")
class Canon(PositionalEncoding):
    """Canon layers: local order from a short causal convolution in every block, no positional encoding.

    Allen-Zhu 2025, "Physics of Language Models: Part 4.1, Architecture Design and the Magic of
    Canon Layers" (NeurIPS 2025), Canon-A: after the block's input LayerNorm, before attention, every
    channel ``c`` of ``h`` (B, T, D) is replaced by::

        h_t + sum_{j=0}^{K-1} w_{c,j} h_{t-j}          (h_{t-j} = 0 before the sequence)

    a depthwise causal ``Conv1d`` with kernel ``K`` (4 by default; 2-4 in the paper), no bias, no
    activation and a residual, the defaults of facebookresearch/PhysicsLM4 (``canon_set``,
    ``canon_kernel = 4``, ``canon_residual = True``, ``canon_activation = False``,
    ``canon_bias = False``; the ``causal_conv1d`` operator). Hand-derived values in the tests check
    the sum above (``w_{c,j}`` is ``conv.weight[c, 0, K - 1 - j]``). Each block has its own
    weights (:meth:`for_layer`), PyTorch's default ``Conv1d`` initialisation from the encoding's seed.
    Canon-B/C/D (on q/k/v, before and inside the MLP) are not part of it. ``rotary_fraction > 0`` adds
    (partial) RoPE on the first ``rotary_fraction`` of each head's dims, as the paper's Canon
    models with and without (partial) RoPE.

    The convolution is causal in both architectures (the paper's); in an encoder it still gives
    local order, and breaks the permutation equivariance of NoPE.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`), passed to RoPE where it is used.
        n_layers: one convolution per block; from the model (``None``: one, for a single block).
        kernel_size: K.
        rotary_fraction: 0 (no RoPE) or the fraction of head dims RoPE rotates, in (0, 1].

    Shapes:
        ``for_layer(i).mix(x)``: (B, T, D) -> (B, T, D).
    """

    def __init__(self, *args: Any, n_layers: int | None = None, kernel_size: int = 4, rotary_fraction: float = 0.0,
                 **shared: Any) -> None:
        super().__init__(*args, n_layers=n_layers, **shared)
        if kernel_size < 1:
            raise ValueError(f"canon kernel_size must be >= 1, got {kernel_size}")
        if not 0 <= rotary_fraction <= 1:
            raise ValueError(f"canon rotary_fraction must be in [0, 1] (0: no RoPE), got {rotary_fraction}")
        self.kernel_size = kernel_size
        self.rotary_fraction = rotary_fraction
        self.layers = nn.ModuleList(
            CanonLayer(*args, kernel_size=kernel_size, rotary_fraction=rotary_fraction, **shared)
            for _ in range(n_layers or 1)
        )

    def for_layer(self, index: int) -> PositionalEncoding:
        if not 0 <= index < len(self.layers):
            raise ValueError(f"canon was built with {len(self.layers)} layer(s), asked for block {index}; "
                             f"build it with n_layers (pebench.model.build_model does)")
        return self.layers[index]

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, kernel_size={self.kernel_size}, rotary_fraction={self.rotary_fraction}"
