"""NoPE/RoPE interleave (Llama 4's iRoPE, SmolLM3's 3:1): RoPE in most blocks, none in every k-th."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

# rope as a module, not its class: a plugin may import rope first, and this file then meets it half made
from pebench.encodings import register, rope
from pebench.encodings.base import PositionalEncoding


class TemperedNoPE(PositionalEncoding):
    """A NoPE block of :class:`Interleave`: queries at position ``p`` times ``1 + a log(1 + floor((p + 1) / c))``.

    Shapes:
        ``rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), positions (Tq,) or (B, Tq) -> q, k of the same shapes.
    """

    def __init__(self, *args: Any, temperature: float = 0.1, temperature_length: int = 8192, **shared: Any) -> None:
        super().__init__(*args, **shared)
        self.temperature = temperature
        self.temperature_length = temperature_length

    def query_scale(self, q_pos: Tensor) -> Tensor:
        """``1 + a log(1 + floor((p + 1) / c))`` (Tq,) or (B, Tq), float32."""
        steps = torch.div(q_pos + 1, self.temperature_length, rounding_mode="floor").to(torch.float32)
        return 1 + self.temperature * torch.log1p(steps)

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        if not self.temperature:
            return q, k
        scale = self.query_scale(q_pos).unsqueeze(-1)  # (Tq, 1) or (B, Tq, 1)
        if scale.dim() == 3:
            scale = scale.unsqueeze(1)  # (B, 1, Tq, 1)
        return q * scale.to(q.dtype), k

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, temperature_length={self.temperature_length}"


@register("irope", label="iRoPE", kind="architectural", paper="meta2025llama4", has_parameters=False,
          cites=("huggingface2025smollm3",),
          summary="NoPE/RoPE interleave: RoPE in most blocks, NoPE with tempered queries in every k-th block.")
class Interleave(PositionalEncoding):
    """NoPE/RoPE interleave: a per-layer choice of encoding, the long-context recipe of Llama 4 and SmolLM3.

    Meta 2025, "The Llama 4 herd" (iRoPE), as in HF transformers ``models/llama4/modeling_llama4.py``:
    block ``i`` (0-based) uses no positional encoding when ``(i + 1) % nope_every == 0`` (Llama 4's
    ``no_rope_layers`` with interval 4; SmolLM3's 3:1 is the same) and RoPE otherwise. On the NoPE
    blocks the queries at position ``p`` are multiplied by Llama 4's attention temperature::

        1 + a log(1 + floor((p + 1) / c))

    (``attn_temperature_tuning``: ``log1p(floor((cache_position + 1) / floor_scale)) * attn_scale + 1``,
    ``attn_scale = 0.1``). Llama 4 sets ``c = 8192``, its short training context; here ``c`` is the
    training context ``train_len`` by default, so the scale is 1 on the training lengths below it and
    grows beyond. ``nope_every = 1``: NoPE in every block (equals ``none`` where the scale is 1,
    tested); ``nope_every = 0``: no NoPE block (equals ``rope``, tested). RoPE is pebench's ``rope``
    (interleaved pairs, RoFormer Eq. 15, as Llama 4's complex ``apply_rotary_emb``).

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`): ``train_len`` gives the default of
            ``temperature_length``; ``max_len`` and ``causal`` are unused.
        nope_every: k: every k-th block has no positional encoding; 0: none has.
        theta: RoPE's frequency base.
        temperature: a, the NoPE blocks' attention temperature; 0 leaves their queries as they are.
        temperature_length: c (default ``train_len``).

    Shapes:
        ``for_layer(i).rotate(q, k, q_pos, k_pos)``: q (B, H, Tq, Dh), k (B, H, Tk, Dh) -> same shapes.
    """

    def __init__(self, *args: Any, nope_every: int = 4, theta: float = 10000.0, temperature: float = 0.1,
                 temperature_length: int | None = None, **shared: Any) -> None:
        super().__init__(*args, **shared)
        if nope_every < 0:
            raise ValueError(f"irope nope_every must be >= 0 (0: no NoPE block), got {nope_every}")
        temperature_length = self.train_len if temperature_length is None else temperature_length
        if temperature_length <= 0:
            raise ValueError(f"irope temperature_length must be positive, got {temperature_length}")
        self.nope_every = nope_every
        self.theta = theta
        self.temperature = temperature
        self.temperature_length = temperature_length
        self.rope = rope.RoPE(*args, theta=theta, **shared)
        self.nope = TemperedNoPE(*args, temperature=temperature, temperature_length=temperature_length, **shared)

    def is_nope(self, index: int) -> bool:
        """Whether block ``index`` (0-based) has no positional encoding."""
        return bool(self.nope_every) and (index + 1) % self.nope_every == 0

    def for_layer(self, index: int) -> PositionalEncoding:
        return self.nope if self.is_nope(index) else self.rope

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, nope_every={self.nope_every}"
