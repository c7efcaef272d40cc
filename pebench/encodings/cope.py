"""CoPE: contextual position encoding (Golovneva et al. 2024), a content-dependent score term."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


@register("cope", label="CoPE", kind="content", paper="golovneva2024cope", has_parameters=True, causal_only=True,
          summary="Positions counted by sigmoid gates of the query-key logits; interpolated position logits.")
class CoPE(PositionalEncoding):
    """Contextual position encoding: positions are counts of the keys a query's gates let through.

    Golovneva et al. 2024, "Contextual Position Encoding: Learning to Count What's Important",
    Section 3 and the code of its Appendix B. For query ``i`` and key ``j`` (causal, ``j <= i``)::

        g_ij = sigmoid(logit_ij)                  logit_ij = q_i^T k_j / sqrt(Dh)   (-inf: masked, g = 0)
        p_ij = sum_{t=j}^{i} g_it                 a reversed cumulative sum over the keys
        e(p) = (1 - (p - floor p)) e[floor p] + (p - floor p) e[ceil p]
        score term: q_i^T e(p_ij)                 added to the logits, not divided by sqrt(Dh)

    with ``e`` a learned table of ``n_positions`` vectors of the head width, initialised to zero,
    and ``p`` clamped to ``n_positions - 1``. Position logits ``q_i^T e[p]`` are computed for the
    integer positions once and interpolated (``gather``), as in the reference. When every gate is
    1 the positions count the keys, ``p_ij = i - j + 1`` (tested); they change when the content
    changes (tested).

    Checked against the Appendix B code, which x-transformers' ``CoPE`` (used with
    ``attn_use_cope``) reproduces: gates from the scaled, masked logits, the term added without
    scaling. facebookresearch/RAM ``projects/cope`` divides the term by ``sqrt(Dh)`` by default
    (``--cope-nodiv`` off) and defaults ``n_positions`` to the block size + 1 ("position 0 is
    possible"). The default here is the same with the training context: ``train_len + 1``, one
    position per key of the longest training sequence and position 0, so the table has no rows that
    training never reaches and evaluation lengths never change it; longer inputs clamp to the last
    trained position, as the paper clamps to ``p_max``. One table serves every head and layer (RAM's
    ``--cope-shared``).

    CoPE is defined for causal attention (``causal_only`` in the registry). In an encoder
    (``causal=False``) this module counts from the query to the key on either side,
    ``p_ij = sum of g_it for t between j and i`` (both included), so left and right neighbours at
    the same distance share a position, as FIRE's and ALiBi's symmetric encoder variants do; with
    a causal mask it is the paper's count.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``train_len`` gives the default of
            ``n_positions``, ``causal`` as above; ``max_len`` is unused.
        n_positions: size of the position table; positions beyond ``n_positions - 1`` are clamped.

    Shapes:
        ``content_score(q, k, logits, q_pos, k_pos)``: q (B, H, Tq, Dh), logits (B, H, Tq, Tk)
        -> (B, H, Tq, Tk). Queries are the last Tq of the Tk keys.
    """

    def __init__(self, *args: Any, n_positions: int | None = None, **shared: Any) -> None:
        super().__init__(*args, **shared)
        n_positions = self.train_len + 1 if n_positions is None else n_positions
        if n_positions < 2:
            raise ValueError(f"cope needs n_positions >= 2 (positions 0 and 1 at least), got {n_positions}")
        self.n_positions = n_positions
        self.position_embedding = nn.Parameter(torch.zeros(self.head_dim, n_positions))  # e, as columns

    def contextual_positions(self, logits: Tensor) -> Tensor:
        """Positions p (B, H, Tq, Tk) of every key for every query, from the logits (``-inf``: masked)."""
        gates = logits.sigmoid()  # (B, H, Tq, Tk); 0 on masked keys
        if self.causal:
            return gates.flip(-1).cumsum(-1).flip(-1)  # sum_{t >= j} g_it
        Tq, Tk = logits.shape[-2:]
        key_index = torch.arange(Tk, device=logits.device)
        query_index = torch.arange(Tk - Tq, Tk, device=logits.device).unsqueeze(-1)  # (Tq, 1)
        left = key_index <= query_index  # (Tq, Tk): keys up to the query
        right = key_index >= query_index  # keys from the query on
        before = (gates * left).flip(-1).cumsum(-1).flip(-1)  # sum_{t = j .. i} for j <= i
        after = (gates * right).cumsum(-1)  # sum_{t = i .. j} for j >= i
        return torch.where(left, before, after)

    def content_score(self, q: Tensor, k: Tensor, logits: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        positions = self.contextual_positions(logits).clamp(max=self.n_positions - 1)  # (B, H, Tq, Tk)
        position_logits = q @ self.position_embedding.to(q.dtype)  # (B, H, Tq, n_positions): q_i^T e[p]
        floor, ceil = positions.floor(), positions.ceil()
        weight = positions - floor  # differentiable: gradients reach the gates through it
        at_floor = position_logits.gather(-1, floor.long())
        at_ceil = position_logits.gather(-1, ceil.long())
        return at_ceil * weight + at_floor * (1 - weight)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, n_positions={self.n_positions}"
