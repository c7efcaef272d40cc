"""A small pre-LayerNorm transformer that takes its positional encoding as a module.

Shape notation: B batch, T length, D model width, H heads, Dh = D / H, V vocab.

The positional encoding is consulted in its three slots (see
:mod:`pebench.encodings.base`): ``embed`` after the token embedding,
``rotate`` on queries and keys in every attention layer, and ``bias`` as an
additive float mask given to :func:`torch.nn.functional.scaled_dot_product_attention`.
The bias is computed once per forward pass and shared by all layers (as in
T5 and ALiBi). The model never branches on the encoding's name.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench import encodings
from pebench.encodings import PositionalEncoding
from pebench.encodings.base import is_compiling

ARCHS = ("encoder", "decoder")


@dataclass(frozen=True)
class ModelConfig:
    """Transformer hyper-parameters; identical for every encoding in a comparison."""

    vocab_size: int  # embeddings, including a task's SEP and BLANK tokens
    arch: str = "decoder"  # "decoder": causal self-attention; "encoder": bidirectional
    d_model: int = 128  # width D
    n_layers: int = 2  # transformer blocks
    n_heads: int = 4  # attention heads H; head width is d_model // n_heads
    mlp_ratio: int = 4  # MLP hidden width = mlp_ratio * d_model
    dropout: float = 0.0  # dropout on attention output and MLP output

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {self.arch!r}")
        for key in ("vocab_size", "d_model", "n_layers", "n_heads", "mlp_ratio"):
            if getattr(self, key) <= 0:
                raise ValueError(f"{key} must be positive, got {getattr(self, key)}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose d_model = n_heads * head_dim"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def to_dict(self) -> dict:
        """Flat dict of the config, for result rows."""
        return asdict(self)


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def causal_mask(length: int, device: torch.device) -> Tensor:
    """(T, T) float mask: 0 on and below the diagonal, -inf above."""
    upper = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(length, length, device=device).masked_fill(upper, float("-inf"))


class Attention(nn.Module):
    """Multi-head self-attention with a fused QKV projection and the encoding's hooks."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.dropout = config.dropout

    def forward(
        self,
        x: Tensor,
        encoding: PositionalEncoding,
        pos: Tensor,
        mask: Tensor | None,
        is_causal: bool,
        q_pos: Tensor | None = None,
    ) -> Tensor:
        """Attention output (B, Tq, D); queries at every position, or only at the last ``Tq`` given ``q_pos``."""
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, D // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, Dh)
        if q_pos is None:
            q_pos = pos
        else:
            q = q[:, :, T - q_pos.shape[-1] :]  # (B, H, Tq, Dh)
        q, k = encoding.rotate(q, k, q_pos, pos)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, Tq, Dh)
        return self.proj(y.transpose(1, 2).reshape(B, q.shape[2], D))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)); x + mlp(ln(x))."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.ln_attn = nn.LayerNorm(config.d_model)
        self.attn = Attention(config)
        self.ln_mlp = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, config.mlp_ratio * config.d_model),
            nn.GELU(),
            nn.Linear(config.mlp_ratio * config.d_model, config.d_model),
        )
        self.drop = nn.Dropout(config.dropout)

    def forward(
        self,
        x: Tensor,
        encoding: PositionalEncoding,
        pos: Tensor,
        mask: Tensor | None,
        is_causal: bool,
        q_pos: Tensor | None = None,
    ) -> Tensor:
        """(B, T, D) -> (B, T, D), or (B, Tq, D) for the last Tq positions given their positions ``q_pos``."""
        attended = self.attn(self.ln_attn(x), encoding, pos, mask, is_causal, q_pos)
        if q_pos is not None:
            x = x[:, x.shape[1] - q_pos.shape[-1] :]
        x = x + self.drop(attended)
        return x + self.drop(self.mlp(self.ln_mlp(x)))


class Transformer(nn.Module):
    """Encoder (bidirectional) or decoder (causal) transformer with a pluggable PE.

    Args:
        config: the architecture.
        encoding: a :class:`~pebench.encodings.PositionalEncoding` built for the
            same ``d_model`` and ``n_heads``.

    ``forward(tokens)`` returns logits (B, T, V); positions default to
    ``encoding.positions(B, T)`` and may be given explicitly.
    """

    def __init__(self, config: ModelConfig, encoding: PositionalEncoding) -> None:
        super().__init__()
        if encoding.d_model != config.d_model or encoding.n_heads != config.n_heads:
            raise ValueError(
                f"encoding built for d_model={encoding.d_model}, n_heads={encoding.n_heads} "
                f"but the model has d_model={config.d_model}, n_heads={config.n_heads}"
            )
        self.config = config
        self.encoding = encoding
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self._init_weights()
        # Per-(length, device) caches of tensors that do not change between steps
        # (see _positions and _mask). They hold no autograd graph.
        self._default_positions = type(encoding).positions is PositionalEncoding.positions
        self._position_cache: dict[tuple, Tensor] = {}
        self._mask_cache: dict[tuple, Any] = {}

    def _init_weights(self) -> None:
        # GPT-2 style: N(0, 0.02) for linear layers, residual projections scaled
        # by 1/sqrt(2 * n_layers). Token embeddings N(0, 1), the scale of the
        # sinusoidal table, so that no encoding is drowned out at init.
        for name, module in self.named_modules():
            if name.startswith("encoding"):
                continue
            if isinstance(module, nn.Linear):
                std = 0.02
                if name.endswith("attn.proj") or name.endswith("mlp.2"):
                    std = 0.02 / (2 * self.config.n_layers) ** 0.5
                nn.init.normal_(module.weight, std=std)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.token_embedding.weight, std=1.0)

    def _positions(self, batch_size: int, length: int, device: torch.device) -> Tensor:
        """Default positions of a batch; ``0..T-1`` is cached per (length, device).

        Reusing one tensor per length lets the encodings' caches (cos/sin tables,
        bias buckets, keyed by the position tensor) hit on every step, not only
        across the layers of one pass. Cached tensors are created outside
        inference mode so training may use them after an evaluation.
        """
        if not self._default_positions:
            return self.encoding.positions(batch_size, length, device)
        if is_compiling():  # traced into the graph, so that one graph serves every length
            return torch.arange(length, device=device)
        key = (length, str(device))
        pos = self._position_cache.get(key)
        if pos is None:
            with torch.inference_mode(False):
                pos = self._position_cache[key] = torch.arange(length, device=device)
        return pos

    def _causal_mask(self, length: int, device: torch.device) -> Tensor:
        """(T, T) float mask: 0 on and below the diagonal, -inf above; cached."""
        if is_compiling():  # traced into the graph, not cached (see _positions)
            return causal_mask(length, device)
        key = ("causal", length, str(device))
        if key not in self._mask_cache:
            with torch.inference_mode(False):
                self._mask_cache[key] = causal_mask(length, device)
        return self._mask_cache[key]

    def _mask(self, pos: Tensor, length: int, device: torch.device) -> tuple[Tensor | None, bool]:
        """Float attention mask and SDPA's ``is_causal`` flag for this forward pass.

        An encoding without parameters gives the same bias for the same cached
        positions, so its final mask (bias + causal mask, in the model's dtype)
        is cached too, keyed by the identity and version of its buffers; a
        learned bias (T5, FIRE) is recomputed every pass, as its graph changes.
        """
        causal = self.config.arch == "decoder"
        cacheable = (
            not is_compiling()
            and self._default_positions
            and self._position_cache.get((length, str(device))) is pos
            and next(self.encoding.parameters(), None) is None
        )
        key = None
        if cacheable:
            buffers = tuple((id(b), b._version) for b in self.encoding.buffers() if not b.is_inference())
            key = ("bias", length, str(device), self.head.weight.dtype, buffers)
            if key in self._mask_cache:
                return self._mask_cache[key]
        with torch.inference_mode(False) if cacheable else contextlib.nullcontext():
            bias = self.encoding.bias(pos, pos)
            if bias is None:
                mask, is_causal = None, causal
            else:
                if bias.dim() == 3:
                    bias = bias.unsqueeze(0)  # (1, H, T, T)
                if causal:
                    bias = bias + self._causal_mask(length, device)
                mask, is_causal = bias.to(self.head.weight.dtype), False
        if cacheable:
            self._mask_cache[key] = (mask, is_causal)
        return mask, is_causal

    def forward(
        self, tokens: Tensor, pos: Tensor | None = None, return_hidden: bool = False, outputs: int | None = None
    ):
        """Logits (B, T, V) for ``tokens`` (B, T); also the final hidden states if asked.

        Args:
            tokens: (B, T) int64 token ids.
            pos: (T,) or (B, T) int64 positions; default ``encoding.positions``.
            return_hidden: also return the final (post-LayerNorm) hidden states (B, T, D).
            outputs: only the last ``outputs`` positions' logits (and hidden states): (B, outputs, V).
                The last block then attends from those queries only and skips its MLP and the
                head elsewhere. The values equal the matching slice of the full output (the
                tasks' loss sits on such a suffix; :func:`pebench.train.train` uses it).
        """
        B, T = tokens.shape
        if pos is None:
            pos = self._positions(B, T, tokens.device)
        x = self.encoding.embed(self.token_embedding(tokens), pos)  # (B, T, D)
        mask, is_causal = self._mask(pos, T, tokens.device)
        last_mask, last_is_causal, q_pos = mask, is_causal, None
        if outputs is not None and outputs < T:
            first = T - outputs
            q_pos = self._suffix(pos, first)
            if is_causal:  # SDPA's is_causal aligns the corners top-left; a suffix of queries needs the mask
                last_mask, last_is_causal = self._causal_mask(T, tokens.device)[first:], False
            elif mask is not None:
                last_mask = mask[..., first:, :]
        for index, block in enumerate(self.blocks):
            if index == len(self.blocks) - 1 and q_pos is not None:
                x = block(x, self.encoding, pos, last_mask, last_is_causal, q_pos)  # (B, outputs, D)
            else:
                x = block(x, self.encoding, pos, mask, is_causal)
        hidden = self.ln_final(x)
        logits = self.head(hidden)  # (B, T or outputs, V)
        return (logits, hidden) if return_hidden else logits

    def _suffix(self, pos: Tensor, first: int) -> Tensor:
        """``pos[..., first:]``; one cached tensor per (length, first) for cached default positions."""
        key = ("suffix", pos.shape[-1], first, str(pos.device))
        if is_compiling() or self._position_cache.get((pos.shape[-1], str(pos.device))) is not pos:
            return pos[..., first:]
        if key not in self._position_cache:
            self._position_cache[key] = pos[..., first:]
        return self._position_cache[key]

    def num_parameters(self) -> int:
        """Number of trainable parameters, the encoding's included."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def encoding_parameters(self) -> int:
        """Number of trainable parameters added by the positional encoding."""
        return sum(p.numel() for p in self.encoding.parameters() if p.requires_grad)


def build_model(
    config: ModelConfig, encoding: str, *, max_len: int, seed: int | None = None, **options: Any
) -> Transformer:
    """The one factory of pebench models: the runner, seed-batched training, the throughput benchmark and
    the tests all build their models here.

    Args:
        config: the architecture; ``causal`` is given to the encoding from ``config.arch``
            (``decoder`` -> causal), never inferred elsewhere.
        encoding: a registered encoding name (``randomized:<base>`` for wrappers).
        max_len: positions the encoding must support (from the training configuration).
        seed: if given, ``torch.manual_seed(seed)`` before the encoding and the model are initialised.
        **options: the encoding's options (see :func:`pebench.encodings.options`).
    """
    if seed is not None:
        torch.manual_seed(seed)
    if "causal" in encodings.options(encoding) and "causal" not in options:
        options["causal"] = config.arch == "decoder"
    pe = encodings.build(encoding, d_model=config.d_model, n_heads=config.n_heads, max_len=max_len, **options)
    return Transformer(config, pe)
