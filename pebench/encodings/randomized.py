"""Randomized positional encodings (Ruoss et al. 2023): a wrapper around any other encoding."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from pebench.encodings import build, register
from pebench.encodings.base import PositionalEncoding, WrappedEncoding

EVAL_POSITIONS = ("random", "arange")


@register("randomized", label="Randomized", kind="wrapper", paper="ruoss2023randomized", has_parameters=False,
          summary="Wraps any encoding: positions are a sorted random subset of [0, max_position).")
class Randomized(WrappedEncoding):
    """Randomized positions for any base encoding, built as ``randomized:<base>``.

    Ruoss et al. 2023, "Randomized Positional Encodings Boost Length
    Generalization of Transformers": instead of ``0 .. T-1``, a sequence of
    length T gets the positions of a uniformly random subset of size T of
    ``[0, max_position)``, drawn without replacement and sorted ascending, so
    the model sees during training every position a test sequence of length
    up to ``max_position`` will use. The base encoding (built with
    ``max_len = max_position``) then encodes those positions; its ``embed``,
    ``rotate``, ``bias`` and ``content_score`` are used unchanged.

    Conventions (checked against the reference code,
    google-deepmind/randomized_positional_encodings):

    * ``max_position`` is the paper's L; it must be at least the longest
      evaluated length (the reference example uses L = 2048 with training
      lengths up to 40). The default is ``max_len``, the position capacity:
      a protocol constant of the suite, never the evaluation lengths, so the
      range positions are drawn from (and so every training batch) does not
      change when other lengths are evaluated.
    * ``eval_positions="random"`` (default): also in eval mode positions are a
      sorted random subset, as in the reference code, which samples them on
      every call (``noisy_fixed_positional_encodings``) and evaluates with a
      fresh RNG key per batch. ``"arange"`` uses ``0 .. T-1`` in eval mode.
    * ``per_example=True`` (default): each batch row gets its own subset,
      positions (B, T). The reference code draws one subset per batch (shared
      by its rows); ``per_example=False`` does that, positions (T,).

    Sampling uses torch's global CPU RNG (so ``torch.manual_seed`` makes a run
    deterministic, and the same on every device) unless ``generator`` is set
    to a CPU ``torch.Generator``; the positions are then moved to ``device``.

    Args:
        d_model, n_heads, max_len, causal, train_len: the shared arguments
            (:class:`~pebench.encodings.base.PositionalEncoding`), passed on to the base encoding (``causal``:
            e.g. T5's causal buckets in a decoder), whose ``max_len`` is ``max_position``; this one's ``max_len``,
            the position capacity, is the default of ``max_position``.
        base: registered name of the wrapped encoding.
        n_layers: passed on to the wrapped encoding; its per-layer views are the blocks' (:meth:`for_layer`).
        max_position: L; positions are drawn from ``[0, L)``.
        eval_positions: ``"random"`` or ``"arange"``, positions in eval mode.
        per_example: one subset per batch row (True) or per batch (False).
        base_options: keyword options of the base encoding, e.g. ``{"layout": "half"}``.

    Shapes:
        ``positions(B, T, device)`` -> (B, T) int64 (or (T,) with
        ``per_example=False`` or ``eval_positions="arange"`` in eval mode);
        the hooks have the shapes of the base encoding.
    """

    def __init__(
        self,
        *args: Any,
        base: str,
        n_layers: int | None = None,
        max_position: int | None = None,
        eval_positions: str = "random",
        per_example: bool = True,
        base_options: dict[str, Any] | None = None,
        **shared: Any,
    ) -> None:
        super().__init__(*args, n_layers=n_layers, **shared)
        max_position = self.max_len if max_position is None else max_position
        if max_position <= 0:
            raise ValueError(f"randomized max_position must be positive, got {max_position}")
        if eval_positions not in EVAL_POSITIONS:
            raise ValueError(f"randomized eval_positions must be one of {EVAL_POSITIONS}, got {eval_positions!r}")
        if base.partition(":")[0] == "randomized":
            raise ValueError(f"randomized:{base} wraps randomized positions twice; wrap a plain encoding, "
                             f"e.g. 'randomized:rope'")
        if "causal" in (base_options or {}):
            raise ValueError(f"randomized:{base}: drop 'causal' from base_options; the wrapped encoding gets "
                             f"causal={self.causal} from the model's architecture")
        self.base_name = base
        self.max_position = max_position
        self.eval_positions = eval_positions
        self.per_example = per_example
        self.inner = build(base, d_model=self.d_model, n_heads=self.n_heads, max_len=max_position, causal=self.causal,
                           train_len=self.train_len, n_layers=n_layers, **(base_options or {}))
        self.generator: torch.Generator | None = None

    def positions(self, batch_size: int, length: int, device: torch.device | str) -> Tensor:
        if length > self.max_position:
            raise ValueError(
                f"randomized positions draw {length} distinct positions from [0, {self.max_position}), which is "
                f"impossible for length {length} > max_position={self.max_position}; build "
                f"'randomized:{self.base_name}' with max_position >= the longest length you evaluate"
            )
        if not self.training and self.eval_positions == "arange":
            return torch.arange(length, device=device)
        rows = batch_size if self.per_example else 1
        scores = torch.rand(rows, self.max_position, generator=self.generator)  # (rows, L), CPU
        # the T largest of L iid uniforms are a uniformly random T-subset; sort to keep the order
        subset = scores.topk(length, dim=-1).indices.sort(dim=-1).values  # (rows, T)
        subset = subset.to(device)
        return subset if self.per_example else subset[0]

    def resolved_options(self) -> dict[str, Any]:
        """This wrapper's options, with ``base_options`` the resolved options of the base encoding
        (less its ``max_len``, which is ``max_position``, and its ``train_len``, which is this one's)."""
        return {
            "max_len": self.max_len,
            "train_len": self.train_len,
            "max_position": self.max_position,
            "eval_positions": self.eval_positions,
            "per_example": self.per_example,
            "base_options": self.inner_options(),
        }

    def for_layer(self, index: int) -> PositionalEncoding:
        """The base encoding's view of block ``index`` where it has per-layer parts, else this wrapper (whose
        hooks are the base encoding's)."""
        view = self.inner.for_layer(index)
        return self if view is self.inner else view

    def rotate(self, q: Tensor, k: Tensor, q_pos: Tensor, k_pos: Tensor) -> tuple[Tensor, Tensor]:
        return self.inner.rotate(q, k, q_pos, k_pos)

    def extra_repr(self) -> str:
        return (f"base={self.base_name!r}, causal={self.causal}, train_len={self.train_len}, "
                f"max_position={self.max_position}, eval_positions={self.eval_positions!r}, "
                f"per_example={self.per_example}")
