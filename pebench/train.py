"""Deterministic training of a :class:`~pebench.model.Transformer` on a task.

Protocol (Deletang et al. 2023): every step draws one batch whose input length
is uniform in ``[train_min_len, train_max_len]``; AdamW with linear warmup and
cosine decay; gradient-norm clipping. The same config and seed give a
bit-identical loss curve on CPU. A non-finite or exploding loss stops training
with ``status="diverged"`` instead of raising.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from pebench.model import Transformer
from pebench.tasks import IGNORE, Task, render

STATUSES = ("ok", "diverged", "failed")


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
    divergence_loss: float = 1e4  # a loss above this counts as divergence

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size <= 0 or self.lr <= 0:
            raise ValueError(
                f"need steps >= 0, batch_size > 0 and lr > 0; got {self.steps}, {self.batch_size}, {self.lr}"
            )
        if not 1 <= self.train_min_len <= self.train_max_len:
            raise ValueError(
                f"need 1 <= train_min_len <= train_max_len, got {self.train_min_len} and {self.train_max_len}"
            )
        if self.warmup_steps < 0 or not 0 <= self.min_lr_ratio <= 1 or self.grad_clip < 0:
            raise ValueError("warmup_steps and grad_clip must be >= 0 and min_lr_ratio in [0, 1]")

    def to_dict(self) -> dict:
        """Flat dict of the config, for result rows."""
        return asdict(self)


@dataclass
class TrainResult:
    """Outcome of :func:`train`."""

    status: str  # one of STATUSES
    losses: list[float] = field(default_factory=list)  # training loss per step
    seconds: float = 0.0  # wall time of the training loop
    steps_done: int = 0
    error: str = ""  # why training stopped early, if it did

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 5% of steps (NaN if no step ran)."""
        if not self.losses:
            return float("nan")
        tail = self.losses[-max(1, len(self.losses) // 20) :]
        return sum(tail) / len(tail)


def learning_rate(step: int, config: TrainConfig) -> float:
    """Learning rate at ``step`` (0-based): linear warmup, then cosine decay."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return config.lr * (config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on weight matrices only (not biases, norms or tables)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        is_matrix = param.dim() >= 2 and "embedding" not in name and not name.startswith("encoding")
        (decay if is_matrix else no_decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-8)


def data_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """The CPU generator that draws training data for ``seed`` (separate from init)."""
    return torch.Generator().manual_seed(1_000_003 * seed + 17)


def train(model: Transformer, task: Task, config: TrainConfig, device: torch.device | str | None = None) -> TrainResult:
    """Train ``model`` on ``task`` in place.

    Args:
        model: the transformer (its ``config.arch`` decides how the task is rendered).
        task: the task to train on.
        config: optimisation settings; ``config.seed`` fixes data order and any
            randomness inside the model (dropout, randomized positions).
        device: where to train; default the model's current device.

    Returns:
        A :class:`TrainResult`; ``status`` is ``"diverged"`` if the loss became
        non-finite or exceeded ``config.divergence_loss``.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    task.check_length(config.train_min_len)
    optimizer = make_optimizer(model, config)
    generator = data_generator(config.seed)
    length_generator = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)  # dropout and randomized positions
    result = TrainResult(status="ok")
    start = time.perf_counter()
    for step in range(config.steps):
        length = int(torch.randint(config.train_min_len, config.train_max_len + 1, (1,), generator=length_generator))
        tokens, labels = render(task, task.sample(config.batch_size, length, generator), model.config.arch)
        tokens, labels = tokens.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        value = loss.item()
        result.losses.append(value)
        result.steps_done = step + 1
        if not math.isfinite(value) or value > config.divergence_loss:
            result.status = "diverged"
            result.error = f"loss {value} at step {step} (length {length})"
            break
    result.seconds = time.perf_counter() - start
    model.eval()
    return result
