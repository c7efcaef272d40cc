"""What a run is configured with, importable without torch: the architectures, the optimisation and fit
criterion of training (:class:`TrainConfig`), the evaluation's conditions and decodings.

:mod:`pebench.model`, :mod:`pebench.learn.train` and :mod:`pebench.learn.evaluate`, which need torch, import these from
here (and give them under their own names too); run specs (:mod:`pebench.plan.experiment`) read them from here, so that
listing the suites and their runs (``pebench list``) does not import torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

ARCHS = ("encoder", "decoder")


def is_causal(arch: str) -> bool:
    """Whether ``arch`` attends causally (``decoder``); every encoding of such a model is built with ``causal=True``."""
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    return arch == "decoder"


def check_encoding_options(options: Mapping[str, Any]) -> None:
    """Reject encoding options that are not the user's to choose (``causal`` comes from the architecture)."""
    if "causal" in options:
        raise ValueError(
            f"'causal' is not an encoding option (got causal={options['causal']!r}): it comes from the "
            "architecture (arch='decoder' builds every encoding causal, arch='encoder' bidirectional); "
            "remove it from the encoding options and choose the arch instead"
        )


#: the input conditions a run is evaluated under (:func:`pebench.learn.evaluate.evaluate`): as generated, and shuffled
CONDITIONS = ("original", "shuffled")
#: how outputs are decoded in evaluation: teacher-forced, or greedily from the model's own tokens
DECODINGS = ("teacher", "greedy")

#: how a training run ended
STATUSES = ("ok", "diverged", "failed")
#: where the fit criterion is checked: ``longest`` (protocol v2: the longest training length only) or ``all``
#: (protocol v3: every training length, longest first)
FIT_LENGTHS = ("longest", "all")
#: largest seed: derived seeds (e.g. 104_729 * seed + ... in pebench.learn.evaluate) stay in torch's 64-bit seed range
MAX_SEED = 2**32 - 1


def check_int(key: str, value: object) -> None:
    """Raise ValueError unless ``value`` is an int (not a bool, not a float such as 2.5)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{key} must be an int, got {value!r}")


def check_seed(key: str, value: object) -> None:
    """Raise ValueError unless ``value`` is an int seed in ``[0, MAX_SEED]``."""
    check_int(key, value)
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"{key} must be in [0, 2**32 - 1], got {value}")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation hyper-parameters of one run."""

    steps: int = 2000  # optimizer steps
    batch_size: int = 64  # examples per step
    lr: float = 1e-3  # peak learning rate
    weight_decay: float = 0.01  # AdamW decay, on matrices only
    warmup_steps: int = 100  # linear warmup from 0 to lr
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    grad_clip: float = 1.0  # max global gradient norm (0 disables)
    train_min_len: int = 1  # shortest training input length
    train_max_len: int = 16  # longest training input length
    seed: int = 0  # data order (the model's init seed is set where it is built)
    # Seed of the per-step length stream; None = ``seed``. Runs that share it see the same length at
    # every step, so they can be trained together by pebench.learn.batched.train_batched.
    length_seed: int | None = None
    divergence_loss: float = 1e4  # a loss above this counts as divergence
    # Fit criterion (docs: protocol): every ``fit_every`` steps (0 = never) the model is scored,
    # teacher-forced, on ``fit_examples`` held-out examples at each length of ``fit_lengths``; it has
    # fitted once their token accuracy reaches ``fit_threshold`` at every one. ``stop_at_fit``: training
    # ends there. ``fit_disjoint``: held-out inputs never occur in the training stream (pebench.learn.heldout).
    fit_every: int = 0
    fit_threshold: float = 0.99
    fit_examples: int = 128
    stop_at_fit: bool = False
    fit_lengths: str = "longest"
    fit_disjoint: bool = False
    # Plateau stop (0 = off): training also ends, unfitted, once the held-out error (1 - token accuracy)
    # has not fallen below ``1 - fit_min_drop`` times its best for ``fit_patience`` steps (a run that
    # stopped learning). Relative, so a run near the threshold that still halves its error goes on.
    fit_patience: int = 0
    fit_min_drop: float = 0.1
    # Extension (0 = off; protocol v4, issue 66): a run that has not fitted at its cap ``steps`` trains on, at
    # the schedule's final learning rate, in blocks of ``extend_window`` steps, as long as its held-out accuracy
    # rose by at least ``extend_min_gain`` over the last ``extend_window`` steps, up to ``extend_to`` steps in
    # all (the ceiling). Decided on held-out training lengths only (rule 2), so the budget stops binding a run
    # that is still learning without depending on any evaluation.
    extend_to: int = 0
    extend_window: int = 1000
    extend_min_gain: float = 0.01

    def __post_init__(self) -> None:
        for key in ("steps", "batch_size", "warmup_steps", "train_min_len", "train_max_len"):
            check_int(key, getattr(self, key))
        check_seed("seed", self.seed)
        if self.length_seed is not None:
            check_seed("length_seed", self.length_seed)
        if self.steps < 0 or self.batch_size <= 0 or not self.lr > 0 or math.isinf(self.lr):
            raise ValueError(
                f"need steps >= 0, batch_size > 0 and a finite lr > 0; got {self.steps}, {self.batch_size}, {self.lr}"
            )
        if not 1 <= self.train_min_len <= self.train_max_len:
            raise ValueError(
                f"need 1 <= train_min_len <= train_max_len, got {self.train_min_len} and {self.train_max_len}"
            )
        # written as "not inside the range" so that NaN (every comparison false) is rejected too
        if self.warmup_steps < 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"need warmup_steps >= 0 and min_lr_ratio in [0, 1]; got {self.warmup_steps}, "
                             f"{self.min_lr_ratio}")
        for key in ("grad_clip", "weight_decay"):
            if not 0 <= getattr(self, key) < math.inf:
                raise ValueError(f"{key} must be a finite number >= 0 (grad_clip 0 disables clipping), "
                                 f"got {getattr(self, key)}")
        self._check_fit()
        if not self.divergence_loss > 0:
            raise ValueError(f"divergence_loss must be > 0 (inf: never stop), got {self.divergence_loss}")

    def _check_fit(self) -> None:
        """The fit criterion's fields, each in its range, and the combinations a run can honour."""
        check_int("fit_every", self.fit_every)
        check_int("fit_examples", self.fit_examples)
        if self.fit_every < 0 or self.fit_examples < 1 or not 0 < self.fit_threshold <= 1:
            raise ValueError(f"need fit_every >= 0, fit_examples >= 1 and fit_threshold in (0, 1]; got "
                             f"{self.fit_every}, {self.fit_examples}, {self.fit_threshold}")
        check_int("fit_patience", self.fit_patience)
        if self.fit_patience < 0 or not 0 <= self.fit_min_drop < 1:
            raise ValueError(f"need fit_patience >= 0 and fit_min_drop in [0, 1); got {self.fit_patience}, "
                             f"{self.fit_min_drop}")
        if self.fit_lengths not in FIT_LENGTHS:
            raise ValueError(f"fit_lengths must be one of {', '.join(FIT_LENGTHS)}, got {self.fit_lengths!r}")
        if self.fit_disjoint and not self.fit_every:
            raise ValueError("fit_disjoint needs fit_every > 0 (a fit criterion whose held-out examples it keeps "
                             "out of training)")
        if self.fit_patience and not self.stop_at_fit:
            raise ValueError("fit_patience (the plateau stop) needs stop_at_fit")
        if self.stop_at_fit and not self.fit_every:
            raise ValueError("stop_at_fit needs fit_every > 0 (how often the fit criterion is checked)")
        self._check_extension()

    def _check_extension(self) -> None:
        """The extension's fields: a ceiling above the cap, reached in whole windows of whole fit checks."""
        for key in ("extend_to", "extend_window"):
            check_int(key, getattr(self, key))
        if not self.extend_to:
            return
        if not self.stop_at_fit:
            raise ValueError("extend_to (the extension of a run still improving at its cap) needs stop_at_fit")
        if self.extend_window < 1 or not 0 < self.extend_min_gain <= 1 or self.extend_to <= self.steps:
            raise ValueError(f"need extend_window >= 1, extend_min_gain in (0, 1] and extend_to > steps; got "
                             f"{self.extend_window}, {self.extend_min_gain}, {self.extend_to} (steps {self.steps})")
        for key in ("steps", "extend_window", "extend_to"):
            if getattr(self, key) % self.fit_every:
                raise ValueError(f"{key} ({getattr(self, key)}) must be a multiple of fit_every ({self.fit_every}) "
                                 "when runs are extended: the extension is decided at fit checks")
        if (self.extend_to - self.steps) % self.extend_window:
            raise ValueError(f"extend_to - steps ({self.extend_to - self.steps}) must be a multiple of "
                             f"extend_window ({self.extend_window})")

    @property
    def step_ceiling(self) -> int:
        """The most steps a run can take: ``extend_to`` when runs are extended, else the cap ``steps``."""
        return max(self.steps, self.extend_to)

    def to_dict(self) -> dict:
        """Flat dict of the config, for result rows (``length_seed`` only when set, the fit
        criterion only when it is checked, its protocol-v3 fields only when they differ from v2's, and the extension
        only when runs are extended, so
        run ids of configs that leave them at their defaults are unchanged)."""
        flat = {f.name: getattr(self, f.name) for f in fields(self)}  # asdict's deep copies: every field is a scalar
        if flat["length_seed"] is None:
            del flat["length_seed"]
        if flat["fit_lengths"] == "longest":
            del flat["fit_lengths"]
        if not flat["fit_disjoint"]:
            del flat["fit_disjoint"]
        if not flat["fit_every"]:
            for key in ("fit_every", "fit_threshold", "fit_examples", "stop_at_fit", "fit_lengths"):
                flat.pop(key, None)
        if not flat["fit_patience"]:
            del flat["fit_patience"], flat["fit_min_drop"]
        if not flat["extend_to"]:
            del flat["extend_to"], flat["extend_window"], flat["extend_min_gain"]
        return flat


def still_improving(curve: Sequence[tuple[int, float]], window: int, min_gain: float) -> bool:
    """Whether a fit curve (``[(steps, held-out accuracy)]``) rose by at least ``min_gain`` over its last
    ``window`` steps: its last accuracy against the last one recorded ``window`` or more steps before (0, the
    accuracy of no model, if none was). The extension rule of :class:`TrainConfig` and the
    report's count of runs that ended still improving both ask this."""
    if not len(curve):
        return False
    last_step, last = curve[-1]
    before = [accuracy for steps, accuracy in curve if steps <= last_step - window]
    return last - (before[-1] if before else 0.0) >= min_gain


# --------------------------------------------------------------------------- run ids


def run_id_of(resolved: Mapping[str, Any]) -> str:
    """A run's id: the first 16 hex digits of the SHA-256 of its resolved configuration as sorted JSON
    (:meth:`pebench.plan.experiment.RunSpec.resolved`, or the configuration columns of its run file read back), so
    that the same run has the same id on every machine and a run file's id can be recomputed from its rows."""
    payload = json.dumps(dict(resolved), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


#: sizes of a run that must be positive ints (the model's, the evaluation's, the suite's capacity)
POSITIVE_INTS = ("d_model", "n_layers", "n_heads", "mlp_ratio", "eval_n_examples", "eval_batch_size",
                 "position_capacity")


def check_configuration(resolved: Mapping[str, Any]) -> None:
    """Raise ValueError unless the values of a resolved configuration (as a run file records it; fields it lacks
    are not checked) have the types and ranges a run can have: its training fields as :class:`TrainConfig` checks
    them, positive sizes, seeds in ``[0, 2**32 - 1]``, a dropout in ``[0, 1)``, a task version >= 0."""
    train = {f.name: resolved[f.name] for f in fields(TrainConfig) if f.name in resolved}
    TrainConfig(**train)  # the run's seed is the configuration's seed
    for keys, least in ((POSITIVE_INTS, 1), (("task_version", "protocol"), 0)):
        for key in (key for key in keys if key in resolved):
            check_int(key, resolved[key])
            if resolved[key] < least:
                raise ValueError(f"{key} must be >= {least}, got {resolved[key]}")
    for key in ("seed", "eval_seed"):
        if key in resolved:
            check_seed(key, resolved[key])
    if "dropout" in resolved:
        dropout = resolved["dropout"]
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
