"""A small pre-LayerNorm transformer that takes its positional encoding as a module.

Shape notation: B batch, T length, D model width, H heads, Dh = D / H, V vocab.

The positional encoding is consulted in its four slots (see
:mod:`pebench.encodings.base`): ``embed`` after the token embedding,
``rotate`` on queries and keys in every attention layer, ``bias`` as an
additive float mask given to :func:`torch.nn.functional.scaled_dot_product_attention`,
and ``content_score``, an additive term computed from the queries, keys and logits
of every layer. The bias is computed once per forward pass and shared by all layers
(as in T5 and ALiBi). Attention takes the fused SDPA kernel unless the encoding uses
``content_score`` (:attr:`~pebench.encodings.base.PositionalEncoding.uses_content_score`)
or replaces the softmax (``attention_weights``); only then it is computed explicitly
(:func:`attend`). The model never branches on the encoding's name.

Block ``i`` consults the encoding's per-layer view ``encoding.for_layer(i)`` (the encoding
itself unless it has per-layer parts) for ``rotate``, ``content_score``, ``attention_weights``
and ``mix``, the last a transform of the block's normalised input before attention (Canon
layers); ``embed``, ``bias`` and ``positions`` are asked of the encoding itself. Every hook
is the identity (or unused) by default, so encodings that leave them alone keep the fused
path and their outputs.

Public seam (used by :mod:`pebench.learn.batched` and :mod:`pebench.explain`):
:func:`attend` and :func:`attention_probabilities` (one attention computation, both paths),
:meth:`Transformer.positions` (a batch's positions),
:meth:`Transformer.attention_inputs` (the positions and masks every attention
layer gets, as :class:`AttentionInputs`), :meth:`Transformer.attention_weights`
and :meth:`Attention.weights` (attention probabilities). Models are built by
:func:`build_model`, the one factory, which gives the encoding ``causal`` from
the architecture.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench import encodings
from pebench.config import ARCHS, check_encoding_options, is_causal  # noqa: F401  (re-exported)
from pebench.encodings import PositionalEncoding
from pebench.encodings.base import cache_key, is_compiling, with_cache_key


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
            value = getattr(self, key)
            if isinstance(value, bool) or not hasattr(value, "__index__") or value <= 0:  # ints, numpy ints
                raise ValueError(f"{key} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose d_model = n_heads * head_dim"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def causal(self) -> bool:
        """Whether the model attends causally (a decoder); see :func:`pebench.config.is_causal`."""
        return is_causal(self.arch)


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def causal_mask(length: int, device: torch.device | str) -> Tensor:
    """(T, T) float mask: 0 on and below the diagonal, -inf above. The model's only causal mask."""
    upper = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)
    return torch.zeros(length, length, device=device).masked_fill(upper, float("-inf"))


@dataclass(frozen=True)
class AttentionInputs:
    """What an attention layer gets besides its hidden states; from :meth:`Transformer.attention_inputs`.

    Queries sit at the last ``Tq`` of the ``T`` key positions (``Tq = T`` except in the last block of a
    forward pass asked for a suffix of outputs).

    Attributes:
        q_pos: (Tq,) or (B, Tq) int64 positions of the queries (the same tensor as ``k_pos`` when Tq = T).
        k_pos: (T,) or (B, T) int64 positions of the keys.
        mask: additive float mask for SDPA, the encoding's bias plus the causal mask: (1, H, Tq, T),
            (B, H, Tq, T) or (Tq, T) (causal mask only); ``None`` when there is nothing to add.
        is_causal: SDPA's ``is_causal`` flag: causal attention given by the kernel (then ``mask`` is
            ``None`` and Tq = T, since SDPA aligns its causal mask top-left).
    """

    q_pos: Tensor
    k_pos: Tensor
    mask: Tensor | None
    is_causal: bool

    @property
    def first_query(self) -> int:
        """Index of the first query among the T positions: ``T - Tq``."""
        return self.k_pos.shape[-1] - self.q_pos.shape[-1]

    def float_mask(self, device: torch.device | str) -> Tensor | None:
        """The additive mask with SDPA's ``is_causal`` written out: what the scores get in every case."""
        if self.is_causal:
            return causal_mask(self.k_pos.shape[-1], device)
        return self.mask


def attention_probabilities(
    q: Tensor, k: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs, x: Tensor | None = None
) -> Tensor:
    """Attention probabilities (B, H, Tq, T): ``softmax(q k^T / sqrt(Dh) + mask + content score)``.

    Args:
        q: (B, H, Tq, Dh) rotated queries; k: (B, H, T, Dh) rotated keys (or both of another width E,
            which then scales the logits by ``1 / sqrt(E)``).
        encoding: its :meth:`~pebench.encodings.base.PositionalEncoding.content_score` gets the
            logits with the mask (bias and causal mask) added, and its term is added to them; where it
            replaces the softmax (:meth:`~pebench.encodings.base.PositionalEncoding.attention_weights`),
            its weights are returned instead of the softmax.
        inputs: the positions and mask of the layer.
        x: (B, T, D) the block's input to attention, for ``attention_weights`` (gates).
    """
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, Tq, T)
    mask = inputs.float_mask(q.device)
    if mask is not None:
        scores = scores + mask
    term = encoding.content_score(q, k, scores, inputs.q_pos, inputs.k_pos)
    if term is not None:
        scores = scores + term
    if encoding.uses_attention_weights:
        return encoding.attention_weights(scores, x, inputs.q_pos, inputs.k_pos)
    return scores.softmax(-1)


def attend(
    q: Tensor, k: Tensor, v: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs, dropout_p: float = 0.0,
    x: Tensor | None = None,
) -> Tensor:
    """Attention output (B, H, Tq, Dh) of rotated queries (B, H, Tq, Dh), keys and values (B, H, T, Dh).

    The fused :func:`~torch.nn.functional.scaled_dot_product_attention` for every encoding that leaves
    :meth:`~pebench.encodings.base.PositionalEncoding.content_score` and
    :meth:`~pebench.encodings.base.PositionalEncoding.attention_weights` unused; for one that uses
    either, :func:`attention_probabilities` (dropout on them, as SDPA does) times the values. ``x``
    (B, T, D), the block's input to attention, is what ``attention_weights`` gets.
    """
    if not encoding.explicit_attention:
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=inputs.mask, is_causal=inputs.is_causal, dropout_p=dropout_p
        )
    weights = attention_probabilities(q, k, encoding, inputs, x)  # (B, H, Tq, T)
    if dropout_p:
        weights = F.dropout(weights, dropout_p)
    return weights @ v


class Attention(nn.Module):
    """Multi-head self-attention with a fused QKV projection and the encoding's hooks."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)
        self.dropout = config.dropout

    def queries_keys_values(
        self, x: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Rotated queries (B, H, Tq, Dh) and keys (B, H, T, Dh), and values (B, H, T, Dh), of ``x`` (B, T, D)."""
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, D // self.n_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, Dh)
        if inputs.first_query:
            q = q[:, :, inputs.first_query :]  # (B, H, Tq, Dh)
        q, k = encoding.rotate(q, k, inputs.q_pos, inputs.k_pos)
        return q, k, v

    def forward(self, x: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs) -> Tensor:
        """Attention output (B, Tq, D) of ``x`` (B, T, D): queries at the positions ``inputs.q_pos``."""
        B, T, D = x.shape
        q, k, v = self.queries_keys_values(x, encoding, inputs)
        y = attend(q, k, v, encoding, inputs, dropout_p=self.dropout if self.training else 0.0, x=x)  # (B, H, Tq, Dh)
        return self.proj(y.transpose(1, 2).reshape(B, q.shape[2], D))

    def weights(self, x: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs) -> Tensor:
        """Attention probabilities (B, H, Tq, T) of ``x`` (B, T, D): ``softmax(q k^T / sqrt(Dh) + mask)``,
        plus the encoding's content score where it has one (:func:`attention_probabilities`).

        The queries and keys of :meth:`forward` (the same projection and rotation), with the mask that
        SDPA gets written out; ``forward`` equals these weights times the values (tested).
        """
        q, k, _ = self.queries_keys_values(x, encoding, inputs)
        return attention_probabilities(q, k, encoding, inputs, x)


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(mix(ln(x))); x + mlp(ln(x)), ``mix`` the encoding's (identity by default).

    ``encoding`` is the block's view of the encoding (:meth:`~pebench.encodings.base.PositionalEncoding.for_layer`).
    """

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

    def forward(self, x: Tensor, encoding: PositionalEncoding, inputs: AttentionInputs) -> Tensor:
        """(B, T, D) -> (B, Tq, D): the block's output at the query positions ``inputs.q_pos`` (the last Tq)."""
        attended = self.attn(encoding.mix(self.ln_attn(x)), encoding, inputs)
        if inputs.first_query:
            x = x[:, inputs.first_query :]
        x = x + self.drop(attended)
        return x + self.drop(self.mlp(self.ln_mlp(x)))


class Transformer(nn.Module):
    """Encoder (bidirectional) or decoder (causal) transformer with a pluggable PE.

    Args:
        config: the architecture.
        encoding: a :class:`~pebench.encodings.PositionalEncoding` built for the
            same ``d_model``, ``n_heads`` and ``causal`` (:func:`build_model` builds both).

    ``forward(tokens)`` returns logits (B, T, V); positions default to
    :meth:`positions` and may be given explicitly.

    The model owns what it caches between steps, keyed by values, never by tensor identity:
    its default positions (per length and device), the causal mask (per length and device) and,
    for encodings without parameters, the final attention mask (per positions' cache key, dtype
    and the encoding's :attr:`~pebench.encodings.base.PositionalEncoding.cache_generation`).
    None of them holds an autograd graph. :meth:`clear_caches` empties them (done on every
    device or dtype move).
    """

    def __init__(self, config: ModelConfig, encoding: PositionalEncoding) -> None:
        super().__init__()
        if encoding.d_model != config.d_model or encoding.n_heads != config.n_heads:
            raise ValueError(
                f"encoding built for d_model={encoding.d_model}, n_heads={encoding.n_heads} "
                f"but the model has d_model={config.d_model}, n_heads={config.n_heads}"
            )
        if getattr(encoding, "n_layers", None) not in (None, config.n_layers):
            raise ValueError(
                f"encoding built for n_layers={encoding.n_layers} but the model has n_layers={config.n_layers}; "
                f"build both with pebench.model.build_model"
            )
        if encoding.causal != config.causal:
            raise ValueError(
                f"encoding built with causal={encoding.causal} for a model with arch={config.arch!r}; build it with "
                f"causal={config.causal}, or build the model with pebench.model.build_model, which sets it"
            )
        self.config = config
        self.encoding = encoding
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_final = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self._init_weights()
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

    @property
    def fixed_positions(self) -> bool:
        """True when the positions of a batch are ``0 .. T-1`` (the encoding does not sample its own)."""
        return type(self.encoding).positions is PositionalEncoding.positions

    def positions(self, batch_size: int, length: int, device: torch.device | str) -> Tensor:
        """The positions of a batch of ``batch_size`` sequences of ``length``: (T,) or (B, T) int64.

        ``0 .. T-1`` unless the encoding samples positions (:attr:`fixed_positions`). Default
        positions carry the cache key ``("arange", T, device)``
        (:func:`~pebench.encodings.base.with_cache_key`), so the encoding's tables derived from
        positions (cos/sin, buckets, ...) are computed once per length for a whole run. They are
        created outside inference mode, so training may use them after an evaluation.
        """
        if not self.fixed_positions:
            return self.encoding.positions(batch_size, length, device)
        if is_compiling():  # traced into the graph, so that one graph serves every length
            return torch.arange(length, device=device)
        key = ("arange", length, str(device))
        pos = self._position_cache.get(key)
        if pos is None or cache_key(pos) != key:  # new, or modified in place by a caller
            with torch.inference_mode(False):
                pos = self._position_cache[key] = with_cache_key(torch.arange(length, device=device), key)
        return pos

    def _causal_mask(self, length: int, device: torch.device) -> Tensor:
        """:func:`causal_mask`, cached per (length, device)."""
        if is_compiling():  # traced into the graph, not cached (see positions)
            return causal_mask(length, device)
        key = ("causal", length, str(device))
        if key not in self._mask_cache:
            with torch.inference_mode(False):
                self._mask_cache[key] = causal_mask(length, device)
        return self._mask_cache[key]

    def _mask(self, pos: Tensor) -> tuple[Tensor | None, bool]:
        """Float attention mask (bias + causal mask) and SDPA's ``is_causal`` flag of one forward pass.

        An encoding without parameters gives the same bias for positions with the same cache key,
        so its final mask (in the model's dtype) is cached; a learned bias (T5, FIRE) is recomputed
        every pass, as its graph changes.
        """
        length, device = pos.shape[-1], pos.device
        positions_key = cache_key(pos)
        key = None
        if positions_key is not None and next(self.encoding.parameters(), None) is None:
            key = ("bias", positions_key, self.head.weight.dtype, self.encoding.cache_generation)
            if key in self._mask_cache:
                return self._mask_cache[key]
        with torch.inference_mode(False) if key is not None else contextlib.nullcontext():
            bias = self.encoding.bias(pos, pos)
            if bias is None and self.config.causal and self.encoding.uses_content_score:
                mask, is_causal = self._causal_mask(length, device), False  # the explicit path adds it
            elif bias is None:
                mask, is_causal = None, self.config.causal
            else:
                if bias.dim() == 3:
                    bias = bias.unsqueeze(0)  # (1, H, T, T)
                if self.config.causal:
                    bias = bias + self._causal_mask(length, device)
                mask, is_causal = bias.to(self.head.weight.dtype), False
        if key is not None:
            self._mask_cache[key] = (mask, is_causal)
        return mask, is_causal

    def attention_inputs(self, pos: Tensor, outputs: int | None = None) -> tuple[AttentionInputs, AttentionInputs]:
        """What the attention layers of one forward pass get: (every block but the last, the last block).

        Args:
            pos: (T,) or (B, T) positions of the sequence (e.g. from :meth:`positions`).
            outputs: only the last ``outputs`` positions are queried in the last block (see
                :meth:`forward`); ``None`` or ``>= T``: every position, and both items are the same.

        The bias of the encoding is computed once here and shared by every layer; the causal mask is
        the one of :func:`causal_mask`.
        """
        length = pos.shape[-1]
        mask, is_causal = self._mask(pos)
        every = AttentionInputs(q_pos=pos, k_pos=pos, mask=mask, is_causal=is_causal)
        if outputs is None or outputs >= length:
            return every, every
        first = length - outputs
        q_pos = pos[..., first:]
        positions_key = cache_key(pos)
        if positions_key is not None:  # a suffix of keyed positions is the same for the same key
            q_pos = with_cache_key(q_pos, ("suffix", first, positions_key))
        if is_causal:  # SDPA's is_causal aligns the corners top-left; a suffix of queries needs the mask
            last_mask = self._causal_mask(length, pos.device)[first:]  # (Tq, T)
        else:
            last_mask = None if mask is None else mask[..., first:, :]  # (1 or B, H, Tq, T)
        return every, AttentionInputs(q_pos=q_pos, k_pos=pos, mask=last_mask, is_causal=False)

    def clear_caches(self) -> None:
        """Forget the cached positions and masks, and the encoding's cached tables."""
        self._position_cache.clear()
        self._mask_cache.clear()
        self.encoding.clear_caches()

    def _apply(self, fn, recurse=True):
        # .to() / .cuda() / .double(): the cached positions and masks live on the old device or dtype
        self._position_cache.clear()
        self._mask_cache.clear()
        return super()._apply(fn, recurse)

    def forward(
        self, tokens: Tensor, pos: Tensor | None = None, return_hidden: bool = False, outputs: int | None = None
    ):
        """Logits (B, T, V) for ``tokens`` (B, T); also the final hidden states if asked.

        Args:
            tokens: (B, T) int64 token ids.
            pos: (T,) or (B, T) int64 positions; default :meth:`positions`.
            return_hidden: also return the final (post-LayerNorm) hidden states (B, T, D).
            outputs: only the last ``outputs`` positions' logits (and hidden states): (B, outputs, V).
                The last block then attends from those queries only and skips its MLP and the
                head elsewhere. The values equal the matching slice of the full output (the
                tasks' loss sits on such a suffix; :func:`pebench.learn.train.train` uses it).
        """
        B, T = tokens.shape
        if pos is None:
            pos = self.positions(B, T, tokens.device)
        x = self.encoding.embed(self.token_embedding(tokens), pos)  # (B, T, D)
        every, last = self.attention_inputs(pos, outputs)
        for index, block in enumerate(self.blocks):
            inputs = last if index == len(self.blocks) - 1 else every
            x = block(x, self.encoding.for_layer(index), inputs)  # (B, T or outputs, D)
        hidden = self.ln_final(x)
        logits = self.head(hidden)  # (B, T or outputs, V)
        return (logits, hidden) if return_hidden else logits

    @torch.no_grad()
    def attention_weights(self, tokens: Tensor, layer: int = 0, pos: Tensor | None = None) -> Tensor:
        """Attention probabilities (B, H, T, T) of block ``layer`` for ``tokens`` (B, T).

        The blocks before ``layer`` run as in :meth:`forward`; block ``layer``'s
        :meth:`Attention.weights` then gives ``softmax(q k^T / sqrt(Dh) + bias + causal mask)``, plus
        the encoding's content score where it uses one (what :func:`attend` weights the values by).
        Positions default to :meth:`positions`. For inspection (teaching figures): no gradient.
        """
        B, T = tokens.shape
        if pos is None:
            pos = self.positions(B, T, tokens.device)
        x = self.encoding.embed(self.token_embedding(tokens), pos)  # (B, T, D)
        every, _ = self.attention_inputs(pos)
        for index, block in enumerate(self.blocks[:layer]):
            x = block(x, self.encoding.for_layer(index), every)
        block, view = self.blocks[layer], self.encoding.for_layer(layer)
        return block.attn.weights(view.mix(block.ln_attn(x)), view, every)

    def num_parameters(self) -> int:
        """Number of trainable parameters, the encoding's included."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def encoding_parameters(self) -> int:
        """Number of trainable parameters added by the positional encoding."""
        return sum(p.numel() for p in self.encoding.parameters() if p.requires_grad)


def encoding_seed(seed: int) -> int:
    """The seed of the encoding's own random stream in :func:`build_model`: a 63-bit hash of ``seed``
    (not ``seed + 1``, which would be another run's model seed)."""
    digest = hashlib.sha256(f"pebench encoding {seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def build_model(
    config: ModelConfig,
    encoding: str,
    *,
    max_len: int,
    train_len: int | None = None,
    seed: int | None = None,
    **options: Any,
) -> Transformer:
    """The one factory of pebench models: the runner, seed-batched training, the teaching figures, the
    throughput benchmark and the tests all build their models here.

    Args:
        config: the architecture; the encoding is built with ``causal=config.causal`` (a decoder is
            causal), also through wrappers such as ``randomized:t5``.
        encoding: a registered encoding name (``randomized:<base>`` for wrappers).
        max_len: the position capacity (a protocol constant, never an evaluation length): sizes
            fixed-size position tables (see :func:`pebench.encodings.build`).
        train_len: the longest rendered training sequence, for defaults that mean the training
            context (FIRE's threshold, YaRN's original length, CoPE's table); ``None``: ``max_len``.
        seed: if given, the encoding is initialised from its own stream, ``torch.manual_seed(
            encoding_seed(seed))`` inside ``torch.random.fork_rng`` (CPU), and the rest of the model
            from ``torch.manual_seed(seed)``. So the encoding's parameters (a learned table of any
            size, FIRE's MLP) never shift the initial weights of the rest of the model: two models
            with the same seed and architecture start from the same token embeddings, attention
            and MLP weights whatever their encoding, ``max_len`` or ``train_len``. The global RNG
            is left as ``torch.manual_seed(seed)`` followed by the model's initialisation. Without
            a seed both are drawn from the global stream, encoding first.
        **options: the encoding's options (see :func:`pebench.encodings.options`); ``causal`` is not
            one (:func:`check_encoding_options`).

    Raises:
        ValueError: ``causal`` among the options, an unknown option, or an impossible configuration.
    """
    check_encoding_options(options)

    def build_encoding() -> PositionalEncoding:
        return encodings.build(
            encoding, d_model=config.d_model, n_heads=config.n_heads, max_len=max_len, causal=config.causal,
            train_len=train_len, n_layers=config.n_layers, **options,
        )

    if seed is None:
        return Transformer(config, build_encoding())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(encoding_seed(seed))
        pe = build_encoding()
    torch.manual_seed(seed)
    return Transformer(config, pe)
