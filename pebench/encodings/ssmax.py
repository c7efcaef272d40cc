"""Scalable softmax (SSMax, Nakanishi 2025): logits scaled by s log n, around any encoding."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from pebench.encodings import build, register
from pebench.encodings.base import PositionalEncoding, WrappedEncoding


class ScaledLayer(PositionalEncoding):
    """One block's view of :class:`ScalableSoftmax`: the base encoding's view of the block, with queries
    scaled by ``s_h log n`` (``s`` (H,), this block's own)."""

    def __init__(self, inner: PositionalEncoding, init_scale: float) -> None:
        super().__init__(inner.d_model, inner.n_heads, inner.max_len, causal=inner.causal, train_len=inner.train_len)
        self.__dict__["inner"] = inner  # the base encoding's view, owned (and moved) by the wrapper
        self.scale = nn.Parameter(torch.full((inner.n_heads,), float(init_scale)))

    def log_keys(self, Tq: int, Tk: int, device: torch.device) -> Tensor:
        """``log n`` (Tq,) of every query: the number of keys it attends (``i + 1`` causal, ``Tk`` not)."""
        if self.causal:
            return torch.arange(Tk - Tq + 1, Tk + 1, device=device, dtype=torch.float32).log()
        return torch.full((Tq,), math.log(Tk), device=device)

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        q, k = self.inner.rotate(q, k, q_pos, k_pos)
        factor = self.scale.view(-1, 1, 1) * self.log_keys(q.shape[-2], k.shape[-2], q.device).view(1, -1, 1)
        return q * factor.to(q.dtype), k  # (B, H, Tq, E): logits times s_h log n

    def content_score(self, q: Tensor, k: Tensor, logits: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor | None:
        return self.inner.content_score(q, k, logits, q_pos, k_pos)

    @property
    def uses_content_score(self) -> bool:
        return self.inner.uses_content_score

    def attention_weights(self, logits: Tensor, x: Tensor, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        return self.inner.attention_weights(logits, x, q_pos, k_pos)

    @property
    def uses_attention_weights(self) -> bool:
        return self.inner.uses_attention_weights

    def mix(self, x: Tensor) -> Tensor:
        return self.inner.mix(x)

    @property
    def uses_mix(self) -> bool:
        return self.inner.uses_mix


@register("ssmax", label="SSMax", kind="softmax", paper="nakanishi2025ssmax", has_parameters=True,
          summary="Scalable softmax: the logits of a query attending n keys times s log n, s learned per head.")
class ScalableSoftmax(WrappedEncoding):
    """Scalable softmax around any encoding, built as ``ssmax:<base>`` (e.g. ``ssmax:rope``, ``ssmax:none``).

    Nakanishi 2025, "Scalable-Softmax Is Superior for Attention" (arXiv 2501.19399), Eq. 3:
    ``SSMax(z)_j = exp(s log n z_j) / sum_k exp(s log n z_k) = softmax(s log n z)`` with ``n`` the
    number of keys attended (``i + 1`` for query ``i`` of a decoder, ``T`` in an encoder) and ``s``
    learned per head and per block, initialised to 0.43 (the reference's default). With
    ``s log n = 1`` it is the softmax (tested). Checked against gdevos010/Scalable-Softmax
    ``src/scalable_softmax.py`` (``ScalableSoftmax``: ``softmax(s * log(n) * x)``; the reference
    takes ``n`` as the full row length, which equals the keys attended in an encoder; a decoder's
    query ``i`` attends ``i + 1``, as in the paper), transcribed in the tests.

    The scale multiplies the queries after the base encoding's ``rotate`` (so the fused SDPA kernel
    is kept): it scales ``q k^T / sqrt(Dh)``, and not an additive bias (ALiBi, T5) or a content
    score, which a full ``s log n z`` would scale too; for NoPE and rotary bases the two are equal.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`), passed on to the base encoding.
        base: registered name of the wrapped encoding.
        n_layers: passed on to the base encoding; one scale per block.
        init_scale: the initial ``s`` of every head and block.
        base_options: keyword options of the base encoding, e.g. ``{"layout": "half"}``.

    Shapes:
        the base encoding's; ``for_layer(i).rotate`` returns queries (B, H, Tq, E) times
        ``s_h log n_i`` and the base's keys.
    """

    def __init__(
        self, *args: Any, base: str, n_layers: int | None = None, init_scale: float = 0.43,
        base_options: dict[str, Any] | None = None, **shared: Any,
    ) -> None:
        super().__init__(*args, n_layers=n_layers, **shared)
        if base.partition(":")[0] == "ssmax":
            raise ValueError(f"ssmax:{base} scales the softmax twice; wrap a plain encoding, e.g. 'ssmax:rope'")
        if "causal" in (base_options or {}):
            raise ValueError(f"ssmax:{base}: drop 'causal' from base_options; the wrapped encoding gets "
                             f"causal={self.causal} from the model's architecture")
        if base.partition(":")[0] == "randomized":
            raise ValueError(f"ssmax:{base}: write randomized positions outside, 'randomized:ssmax:"
                             f"{base.partition(':')[2]}', so that the model draws them")
        self.base_name = base
        self.init_scale = init_scale
        self.inner = build(base, d_model=self.d_model, n_heads=self.n_heads, max_len=self.max_len, causal=self.causal,
                           train_len=self.train_len, n_layers=n_layers, **(base_options or {}))
        self.layers = nn.ModuleList(ScaledLayer(self.inner.for_layer(i), init_scale) for i in range(n_layers or 1))

    def for_layer(self, index: int) -> PositionalEncoding:
        if not 0 <= index < len(self.layers):
            raise ValueError(f"ssmax was built with {len(self.layers)} layer scale(s), asked for block {index}; "
                             f"build it with n_layers (pebench.model.build_model does)")
        return self.layers[index]

    def resolved_options(self) -> dict[str, Any]:
        """This wrapper's options, with ``base_options`` the resolved options of the base encoding."""
        return {"max_len": self.max_len, "train_len": self.train_len, "init_scale": self.init_scale,
                "base_options": self.inner_options()}

    def extra_repr(self) -> str:
        return f"base={self.base_name!r}, {super().extra_repr()}, init_scale={self.init_scale}"
