"""Forgetting attention (FoX, Lin et al. 2025): softmax attention with a data-dependent forget gate."""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


class ForgetGate(PositionalEncoding):
    """One block's forget gate of :class:`ForgettingAttention`: ``log f_t = log sigmoid(w_h . x_t + b_h)`` per head.

    Shapes:
        ``attention_weights(logits, x, q_pos, k_pos)``: logits (B, H, Tq, Tk), x (B, Tk, D) -> (B, H, Tq, Tk).
    """

    def __init__(self, *args: Any, **shared: Any) -> None:
        super().__init__(*args, **shared)
        self.gate = nn.Linear(self.d_model, self.n_heads)  # w_h, b_h of every head h

    def log_forget(self, x: Tensor) -> Tensor:
        """``log f_t`` (B, H, T) of the block input ``x`` (B, T, D)."""
        return F.logsigmoid(self.gate(x)).transpose(1, 2)

    def attention_weights(self, logits: Tensor, x: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        if x is None:
            raise ValueError("fox's forget gate is computed from the block input: pass x to the attention")
        cumulative = self.log_forget(x).cumsum(-1)  # (B, H, Tk): G_t = sum_{s <= t} log f_s
        Tq = logits.shape[-2]
        decay = cumulative[..., -Tq:, None] - cumulative[..., None, :]  # (B, H, Tq, Tk): G_i - G_j
        return (logits + decay).softmax(-1)


@register("fox", label="FoX", kind="gate", paper="lin2025fox", has_parameters=True, causal_only=True,
          summary="Forgetting attention: a per-head sigmoid forget gate of the layer input decays the logits.")
class ForgettingAttention(PositionalEncoding):
    """Forgetting attention: every head down-weights the past by a forget gate computed from the content.

    Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget Gate" (ICLR 2025),
    Eq. 5-6. In every block and head ``h`` a scalar gate of the block's (normalised) input,
    ``f_t = sigmoid(w_h . x_t + b_h)``, and with ``G_t = sum_{s <= t} log f_s``::

        o_i = sum_{j <= i} softmax_j(q_i . k_j / sqrt(Dh) + G_i - G_j) v_j

    so a key ``i - j`` steps back is weighted by the product of the gates in between: a
    data-dependent ALiBi. No other positional encoding is used (the paper's FoX). Checked against
    fla-org/flash-linear-attention ``fla/ops/forgetting_attn/naive.py`` (``naive_forgetting_attn``:
    the log gates cumulatively summed, ``G_i - G_j`` added to the scaled scores, causal mask,
    softmax), transcribed in the tests; with every gate 1 it is NoPE (tested).

    Each block has its own gate (:meth:`for_layer`), a ``Linear(D, H)`` with PyTorch's default
    initialisation, drawn from the encoding's own seed. The paper's "Pro" block (output gate,
    QK-norm, key shift) is not part of it.

    Causal only: the gate products are defined for keys in the past. Building it for an encoder
    (``causal=False``) raises a ValueError.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): one gate per head; ``causal`` must be True (a
            decoder); ``max_len`` and ``train_len`` are unused.
        n_layers: one gate per block; from the model (``None``: one gate, for a single block).

    Shapes:
        ``for_layer(i).attention_weights(logits, x, q_pos, k_pos)``: logits (B, H, Tq, Tk), x (B, Tk, D)
        -> weights (B, H, Tq, Tk), each row summing to 1.
    """

    def __init__(self, *args: Any, n_layers: int | None = None, **shared: Any) -> None:
        super().__init__(*args, n_layers=n_layers, **shared)
        if not self.causal:
            raise ValueError("fox (forgetting attention) is defined for causal attention only: its forget gates "
                             "multiply over the keys in the past; use it in a decoder (arch='decoder')")
        self.layers = nn.ModuleList(ForgetGate(*args, **shared) for _ in range(n_layers or 1))

    def for_layer(self, index: int) -> PositionalEncoding:
        if not 0 <= index < len(self.layers):
            raise ValueError(f"fox was built with {len(self.layers)} layer gate(s), asked for block {index}; "
                             f"build it with n_layers (pebench.model.build_model does)")
        return self.layers[index]
