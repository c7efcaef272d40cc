"""Learned absolute position embeddings (Gehring et al. 2017; BERT, Devlin et al. 2019)."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding, PositionCache

POLICIES = ("error", "clamp")


@register("learned", label="Learned", kind="input", paper="gehring2017convolutional", has_parameters=True,
          cites=("devlin2019bert",),
          summary="A learned vector per absolute position (max_len rows) added to the embeddings.")
class Learned(PositionalEncoding):
    """Learned absolute positional embeddings, added to the token embeddings.

    Gehring et al. 2017, "Convolutional Sequence to Sequence Learning"
    (Section 3.1), and BERT (Devlin et al. 2019): a table ``P`` of ``max_len``
    trainable vectors, ``embed(x, pos) = x + P[pos]``.

    Initialised ``N(0, 1)``, the scale of the token embeddings
    (:class:`pebench.model.Transformer` initialises them ``N(0, 1)``, as
    ``nn.Embedding`` does), so that position is as loud as content at the
    input. BERT / GPT-2 use ``N(0, 0.02^2)`` for both tables; with content at
    std 1 and position at 0.02, position was ~50x quieter than content, and
    the encoder did not learn copy within 1000 steps.

    Positions ``>= max_len`` have no row. By default (``policy="error"``) they
    raise a :class:`ValueError` naming the position and the fix, because a
    silent fallback would turn a length-extrapolation experiment into a
    different experiment. ``policy="clamp"`` maps every position
    ``>= max_len`` to the last row ``max_len - 1`` — a common baseline
    ("repeat the last learned position") that must be chosen explicitly.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``max_len`` rows, positions
            ``0 .. max_len - 1``; ``n_heads``, ``causal`` and ``train_len`` are unused (rows past ``train_len``
            exist but are not trained).
        policy: ``"error"`` (default) or ``"clamp"`` for positions ``>= max_len``.

    Shapes:
        ``embed(x, pos)``: x (B, T, D), pos (T,) or (B, T) -> (B, T, D).
    """

    def __init__(self, *args: Any, policy: str = "error", **shared: Any) -> None:
        super().__init__(*args, **shared)
        if policy not in POLICIES:
            raise ValueError(f"learned policy must be one of {POLICIES}, got {policy!r}")
        self.policy = policy
        self.table = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.table.weight, mean=0.0, std=1.0)  # the token embeddings' scale
        self._range = PositionCache()

    def embed(self, x: Tensor, pos: Tensor) -> Tensor:
        # the range check reads the positions on the host: once per position tensor (a device sync on GPU)
        smallest, largest = self._range.get(pos, lambda p: (int(p.min()), int(p.max())) if p.numel() else (0, -1))
        if smallest < 0:
            raise ValueError(f"learned positions must be >= 0, got {smallest}")
        if self.policy == "clamp":
            pos = pos.clamp(max=self.max_len - 1)
        elif largest >= self.max_len:
            raise ValueError(
                f"learned positional table has max_len={self.max_len} rows (positions 0..{self.max_len - 1}) "
                f"but got position {largest}; build it with max_len >= {largest + 1}, or pass policy='clamp' "
                f"to reuse row {self.max_len - 1} for every position >= {self.max_len}"
            )
        return x + self.table(pos).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, policy={self.policy!r}"
