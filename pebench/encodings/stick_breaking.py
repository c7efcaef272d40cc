"""Stick-breaking attention (Tan et al. 2025): no softmax and no positional encoding."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


@register("stick_breaking", label="stick-breaking", kind="softmax", paper="tan2025stickbreaking",
          has_parameters=False, causal_only=True,
          summary="Stick-breaking attention: each key takes a sigmoid share of what the nearer keys left.")
class StickBreaking(PositionalEncoding):
    """Stick-breaking attention: the nearest keys break off their shares of the attention first.

    Tan et al. 2025, "Scaling Stick-Breaking Attention: An Efficient Implementation and In-depth
    Study" (ICLR 2025), Section 2. With ``z_ij = q_i . k_j / sqrt(Dh)`` and
    ``beta_ij = sigmoid(z_ij)``, query ``i`` gives key ``j < i`` the weight::

        A_ij = beta_ij prod_{j < k < i} (1 - beta_ik)
        log A_ij = log sigmoid(z_ij) + sum_{j < k < i} log sigmoid(-z_ik)

    and ``o_i = sum_j A_ij v_j``: no softmax, the weights sum to at most 1 (tested), and of two keys
    with equal logits the more recent one gets the larger share (tested), so order comes from the
    mechanism itself; no positional encoding is added. Checked against
    shawntan/stickbreaking-attention ``stickbreaking_attention/sb_ref.py`` (``stickbreaking``: the
    mask ``triu(0)`` excludes the diagonal, ``cum_weight = tril(-1)`` sums ``log(1 - beta)`` over the
    keys between), transcribed in the tests. The remainder ``1 - sum_j A_ij`` is dropped, as the
    reference's ``att @ v`` does (it returns it separately); the residual stream carries the query's
    own token.

    Causal only: building it for an encoder (``causal=False``) raises a ValueError.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``causal`` must be True (a decoder);
            ``max_len`` and ``train_len`` are unused.
        attend_self: also give the query's own key a share (``j <= i``, the diagonal ``A_ii =
            sigmoid(z_ii)`` first); the reference's default, False, attends strictly to the past.

    Shapes:
        ``attention_weights(logits, x, q_pos, k_pos)``: logits (B, H, Tq, Tk) -> (B, H, Tq, Tk); the
        queries are the last Tq of the Tk keys.
    """

    def __init__(self, *args: Any, attend_self: bool = False, **shared: Any) -> None:
        super().__init__(*args, **shared)
        if not self.causal:
            raise ValueError("stick_breaking attention is defined for causal attention only: each key's share is "
                             "what the keys between it and the query left; use it in a decoder (arch='decoder')")
        self.attend_self = attend_self

    def attention_weights(self, logits: Tensor, x: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        Tq, Tk = logits.shape[-2:]
        key = torch.arange(Tk, device=logits.device)
        query = torch.arange(Tk - Tq, Tk, device=logits.device).unsqueeze(-1)  # (Tq, 1): index among the keys
        masked = key > query if self.attend_self else key >= query  # (Tq, Tk)
        # finite logits on masked keys (their -inf would give NaN gradients), then masked out of both sums
        finite = logits.float().masked_fill(masked, 0.0)
        log_beta = F.logsigmoid(finite).masked_fill(masked, float("-inf"))  # (B, H, Tq, Tk)
        log_rest = F.logsigmoid(-finite).masked_fill(masked, 0.0)  # log(1 - beta)
        from_key = log_rest.flip(-1).cumsum(-1).flip(-1)  # sum over k >= j of log(1 - beta_ik)
        between = F.pad(from_key[..., 1:], (0, 1))  # sum over k > j (masked keys add 0 beyond the query)
        return (log_beta + between).exp().to(logits.dtype)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, attend_self={self.attend_self}"
