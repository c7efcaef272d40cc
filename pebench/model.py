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

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings import PositionalEncoding

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


class Attention(nn.Module):
    """Multi-head self-attention with a fused QKV projection and the encoding's hooks."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.dropout = config.dropout

    def forward(
        self, x: Tensor, encoding: PositionalEncoding, pos: Tensor, mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, D // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, Dh)
        q, k = encoding.rotate(q, k, pos, pos)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=is_causal, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T, Dh)
        return self.proj(y.transpose(1, 2).reshape(B, T, D))


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
        self, x: Tensor, encoding: PositionalEncoding, pos: Tensor, mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = x + self.drop(self.attn(self.ln_attn(x), encoding, pos, mask, is_causal))
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
        self._causal_masks: dict[tuple[int, str], Tensor] = {}

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

    def _mask(self, bias: Tensor | None, length: int, device: torch.device) -> tuple[Tensor | None, bool]:
        """Float attention mask and SDPA's ``is_causal`` flag for this forward pass."""
        causal = self.config.arch == "decoder"
        if bias is None:
            return None, causal
        if bias.dim() == 3:
            bias = bias.unsqueeze(0)  # (1, H, T, T)
        if causal:
            key = (length, str(device))
            if key not in self._causal_masks:
                upper = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
                self._causal_masks[key] = torch.zeros(length, length, device=device).masked_fill(upper, float("-inf"))
            bias = bias + self._causal_masks[key]
        return bias.to(self.head.weight.dtype), False

    def forward(self, tokens: Tensor, pos: Tensor | None = None, return_hidden: bool = False):
        """Logits (B, T, V) for ``tokens`` (B, T); also the final hidden states if asked.

        Args:
            tokens: (B, T) int64 token ids.
            pos: (T,) or (B, T) int64 positions; default ``encoding.positions``.
            return_hidden: also return the final (post-LayerNorm) hidden states (B, T, D).
        """
        B, T = tokens.shape
        if pos is None:
            pos = self.encoding.positions(B, T, tokens.device)
        x = self.encoding.embed(self.token_embedding(tokens), pos)  # (B, T, D)
        mask, is_causal = self._mask(self.encoding.bias(pos, pos), T, tokens.device)
        for block in self.blocks:
            x = block(x, self.encoding, pos, mask, is_causal)
        hidden = self.ln_final(x)
        logits = self.head(hidden)  # (B, T, V)
        return (logits, hidden) if return_hidden else logits

    def num_parameters(self) -> int:
        """Number of trainable parameters, the encoding's included."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def encoding_parameters(self) -> int:
        """Number of trainable parameters added by the positional encoding."""
        return sum(p.numel() for p in self.encoding.parameters() if p.requires_grad)
