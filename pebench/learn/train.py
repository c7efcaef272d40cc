"""Deterministic training of a :class:`~pebench.model.Transformer` on a task.

Protocol (Deletang et al. 2023): every step draws one batch whose input length
is uniform in ``[train_min_len, train_max_len]``; AdamW with linear warmup and
cosine decay; gradient-norm clipping. The same config and seed give a
bit-identical loss curve on CPU. A non-finite or exploding loss stops training
with ``status="diverged"`` instead of raising.

Speed (see docs/performance.md): the loss sits on the output positions, a
suffix of every rendered sequence, so the model computes logits only there
(``Transformer.forward(..., outputs=)``); the parameters live in two flat
buffers (:class:`FlatParameters`), so fused AdamW and gradient clipping cost a
few vectorised operations per step; losses are read from an
accelerator in blocks (:class:`LossMonitor`). Runs that differ only in seed
can be trained together by :func:`pebench.learn.batched.train_batched`; they then
share the per-step length stream (``TrainConfig.length_seed``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from pebench.config import (  # noqa: F401  (re-exported: a run's configuration is pebench.config's)
    FIT_LENGTHS,
    MAX_SEED,
    STATUSES,
    TrainConfig,
    check_int,
    check_seed,
    still_improving,
)
from pebench.learn import heldout
from pebench.model import Transformer
from pebench.tasks import IGNORE, Batch, Task, render


@dataclass
class TrainResult:
    """Outcome of :func:`train`."""

    status: str  # one of STATUSES
    losses: list[float] = field(default_factory=list)  # training loss per step
    seconds: float = 0.0  # wall time of the training loop
    steps_done: int = 0
    error: str = ""  # why training stopped early, if it did
    fitted: bool | None = None  # reached the fit criterion (None: never checked)
    steps_to_fit: int | None = None  # optimizer steps when it was first reached
    fit_token_acc: float = float("nan")  # held-out token accuracy at the last check (the lowest of its lengths)
    stop_reason: str = ""  # "fit", "plateau", "cap" (all steps done) or "diverged"
    # (steps, held-out token accuracy) at every check of the fit criterion, in order: the learning curve a
    # stopping rule is judged on (docs: protocol)
    fit_curve: list[tuple[int, float]] = field(default_factory=list)

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


def decays(name: str, param: torch.Tensor) -> bool:
    """Whether AdamW decays this parameter: weight matrices only (not biases, norms, embeddings or PE)."""
    return param.dim() >= 2 and "embedding" not in name and not name.startswith("encoding")


class FlatParameters:
    """A model's trainable parameters moved into one contiguous tensor per weight-decay group.

    Every parameter (and its ``.grad``) becomes a view of a flat buffer, so the optimizer and the
    gradient clipping work on two tensors instead of one per weight: on a CPU, where PyTorch's
    ``foreach`` kernels are loops over the tensors, that removes most of the per-step overhead of
    a small model (see docs/performance.md). The parameters stay the same leaf ``Parameter``
    objects; backward accumulates into the flat gradient in place, so :meth:`zero_grad` must be
    used instead of the optimizer's. The update is exactly AdamW's: a weight that got no
    gradient in a step sees a zero gradient (torch's AdamW would skip a parameter whose ``.grad``
    is None; every parameter of :class:`~pebench.model.Transformer` gets one in every step).

    Args:
        model: the model, already on its training device (moving it afterwards breaks the views).
    """

    def __init__(self, model: torch.nn.Module) -> None:
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("the model has no trainable parameters")
        kinds = {(p.dtype, p.device) for _, p in named}
        if len(kinds) > 1:
            kinds_text = sorted(map(str, kinds))
            raise ValueError(f"all parameters must share one dtype and device to be flattened, got {kinds_text}")
        dtype, device = kinds.pop()
        self.params: list[torch.Tensor] = []  # flat leaves, one per group
        self.grads: list[torch.Tensor] = []
        self.decay: list[bool] = []
        for decay in (True, False):
            members = [p for name, p in named if decays(name, p) == decay]
            if not members:
                continue
            size = sum(p.numel() for p in members)
            flat = torch.empty(size, dtype=dtype, device=device)
            grad = torch.zeros(size, dtype=dtype, device=device)
            offset = 0
            with torch.no_grad():
                for p in members:
                    n = p.numel()
                    flat[offset : offset + n].copy_(p.reshape(-1))
                    p.data = flat[offset : offset + n].view_as(p)
                    p.grad = grad[offset : offset + n].view_as(p)
                    offset += n
            leaf = flat.requires_grad_()
            leaf.grad = grad
            self.params.append(leaf)
            self.grads.append(grad)
            self.decay.append(decay)

    def zero_grad(self) -> None:
        """Set every gradient to zero, keeping the views."""
        for grad in self.grads:
            grad.zero_()

    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """:func:`torch.nn.utils.clip_grad_norm_` over all gradients; returns the norm before clipping."""
        return torch.nn.utils.clip_grad_norm_(self.params, max_norm, foreach=True)


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> tuple[torch.optim.AdamW, FlatParameters]:
    """AdamW with weight decay on weight matrices only (not biases, norms or tables), over flat parameters.

    Returns the optimizer and the :class:`FlatParameters` it updates (use its ``zero_grad`` and
    ``clip_grad_norm_``). The fused AdamW kernel is used on CPU and CUDA.
    """
    flat = FlatParameters(model)
    groups = [
        {"params": [param], "weight_decay": config.weight_decay if decay else 0.0}
        for param, decay in zip(flat.params, flat.decay, strict=True)
    ]
    fused = flat.params[0].device.type in ("cpu", "cuda")
    optimizer = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-8, fused=True if fused else None)
    return optimizer, flat


def data_generator(seed: int) -> torch.Generator:
    """The CPU generator that draws training data for ``seed`` (separate from init)."""
    return torch.Generator().manual_seed(1_000_003 * seed + 17)


def length_generator(config: TrainConfig) -> torch.Generator:
    """The CPU generator of the per-step input lengths: seeded by ``length_seed``, else by ``seed``."""
    return torch.Generator().manual_seed(config.seed if config.length_seed is None else config.length_seed)


def draw_length(config: TrainConfig, generator: torch.Generator) -> int:
    """The input length of the next step, uniform in ``[train_min_len, train_max_len]``."""
    return int(torch.randint(config.train_min_len, config.train_max_len + 1, (1,), generator=generator))


def first_labeled(labels: torch.Tensor) -> int:
    """Index of the first column of ``labels`` (N, T) with a loss: the tasks' loss sits on a suffix.

    Read from the CPU labels before they move to the device, so it costs no device sync.
    """
    labeled = (labels != IGNORE).any(dim=0)  # (T,)
    return int(labeled.int().argmax()) if bool(labeled.any()) else 0


#: the held-out examples of the fit criterion: (input length, inputs (N, L), targets (N, L_out)), longest first
FitSet = list[tuple[int, Tensor, Tensor]]


def fit_lengths(config: TrainConfig) -> list[int]:
    """The input lengths the fit criterion checks, longest first (:attr:`TrainConfig.fit_lengths`)."""
    if config.fit_lengths == "longest":
        return [config.train_max_len]
    return list(range(config.train_max_len, config.train_min_len - 1, -1))


def fit_batch(task: Task, config: TrainConfig) -> FitSet:
    """The held-out examples of the fit criterion: ``fit_examples`` at each of :func:`fit_lengths`, longest
    first, rendered for no architecture yet. Drawn from the ``eval`` split with their own generators, so they
    are neither training data nor the evaluation's examples; with ``fit_disjoint``, only inputs that the
    training stream never contains (:mod:`pebench.learn.heldout`)."""
    if config.fit_lengths == "longest" and not config.fit_disjoint:  # protocol v2, as its runs were made
        generator = torch.Generator().manual_seed(2_147_483_647 - 7 * config.seed)
        batch = task.sample(config.fit_examples, config.train_max_len, generator, split="eval")
        return [(config.train_max_len, batch.inputs, batch.targets)]
    held_out = []
    for length in fit_lengths(config):
        generator = torch.Generator().manual_seed(1_000_003 * config.seed + 7_919 * length + 2_718_281)
        if config.fit_disjoint:
            batch = heldout.held_out_batch(task, config.fit_examples, length, generator)
        else:
            batch = task.sample(config.fit_examples, length, generator, split="eval")
        held_out.append((length, batch.inputs, batch.targets))
    return held_out


def training_batch(task: Task, config: TrainConfig, length: int, generator: torch.Generator) -> Batch:
    """The next training batch at ``length``: ``task.sample``, without held-out inputs under ``fit_disjoint``
    (:func:`pebench.learn.heldout.training_batch`). The one place :func:`train` and the batched loop draw data."""
    if config.fit_disjoint:
        return heldout.training_batch(task, config.batch_size, length, generator)
    return task.sample(config.batch_size, length, generator)


def teacher_forced(model: torch.nn.Module, task: Task, batch: Batch,
                   device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """One teacher-forced forward pass over ``batch`` rendered for ``model``'s architecture.

    Returns ``(tokens, logits, labels)``: the rendered tokens (N, T) on ``device``, and the logits
    (N, T', V) and labels (N, T') of the positions from the first labeled one on (a
    :class:`~pebench.model.Transformer` computes logits only there; another model scores every
    position, ``T' = T``). Shared by the fit check and the evaluation, so both score alike.
    """
    tokens, labels = render(task, batch, model.config.arch)
    first = first_labeled(labels) if isinstance(model, Transformer) else 0
    tokens, labels = tokens.to(device), labels[:, first:].to(device)
    logits = model(tokens, outputs=tokens.shape[1] - first) if first else model(tokens)  # (N, T', V)
    return tokens, logits, labels


@torch.no_grad()
def fit_accuracy(model: Transformer, task: Task, held_out: FitSet, device: torch.device,
                 threshold: float = 0.0) -> float:
    """Teacher-forced token accuracy of ``model`` on the fit set (:func:`fit_batch`): the lowest over its
    lengths, scored longest first and stopping at the first length below ``threshold`` (whose accuracy is
    then returned: the criterion is not met, and the longest lengths are the hardest and cheapest to fail).

    Evaluated in eval mode under a forked RNG, so checking the fit never changes the training that
    follows (dropout and randomized positions draw from torch's global RNG)."""
    was_training = model.training
    model.eval()
    lowest = math.inf
    with torch.random.fork_rng(devices=[]):
        for _length, inputs, targets in held_out:
            torch.manual_seed(0)
            _, logits, labels = teacher_forced(model, task, Batch(inputs, targets), device)
            mask = labels != IGNORE
            lowest = min(lowest, float((logits.argmax(-1)[mask] == labels[mask]).float().mean()))
            if lowest < threshold:
                break
    model.train(was_training)
    return lowest


def train(
    model: Transformer,
    task: Task,
    config: TrainConfig,
    device: torch.device | str | None = None,
    compile: bool = False,
    on_step: Callable[[int, int], None] | None = None,
) -> TrainResult:
    """Train ``model`` on ``task`` in place.

    Args:
        model: the transformer (its ``config.arch`` decides how the task is rendered).
        task: the task to train on.
        config: optimisation settings; ``config.seed`` fixes data order and any
            randomness inside the model (dropout, randomized positions).
        device: where to train; default the model's current device.
        compile: run the forward pass under ``torch.compile`` (inductor, dynamic shapes); the
            parameters are shared, so ``model`` itself is trained. Off by default: measured slower on
            CPUs, compile time included (docs: performance). Losses then agree with
            eager training to float rounding, not bit for bit.
        on_step: called after each step with the steps done and the step budget (:func:`step_budget`: a
            progress display); it never changes the training.

    Returns:
        A :class:`TrainResult`; ``status`` is ``"diverged"`` if the loss became
        non-finite or exceeded ``config.divergence_loss``.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device).train()
    task.check_length(config.train_min_len)
    optimizer, flat = make_optimizer(model, config)
    generator = data_generator(config.seed)
    lengths = length_generator(config)
    torch.manual_seed(config.seed)  # dropout and randomized positions
    monitor = LossMonitor(config, device)
    forward = torch.compile(model, dynamic=True) if compile else model
    held_out = fit_batch(task, config) if config.fit_every else None
    fit = FitTracker()
    start = time.perf_counter()
    ceiling = config.step_ceiling
    for step in range(ceiling):
        length = draw_length(config, lengths)
        tokens, labels = render(task, training_batch(task, config, length, generator), model.config.arch)
        first = first_labeled(labels)
        tokens, labels = tokens.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        logits = forward(tokens, outputs=tokens.shape[1] - first)  # only where the loss is
        loss = F.cross_entropy(logits.flatten(0, 1), labels[:, first:].flatten(), ignore_index=IGNORE)
        flat.zero_grad()
        loss.backward()
        if config.grad_clip > 0:
            flat.clip_grad_norm_(config.grad_clip)
        optimizer.step()
        if on_step is not None:
            on_step(step + 1, step_budget(step + 1, config))
        if monitor.record(loss, length):
            break
        if held_out is not None and fit_check_due(step + 1, config):
            if fit.update(fit_accuracy(model, task, held_out, device, config.fit_threshold), step + 1, config):
                break
    result = monitor.result()
    fit.record(result, config, checked=held_out is not None)
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


def fit_check_due(steps: int, config: TrainConfig) -> bool:
    """Whether the fit criterion is checked after ``steps`` steps: every ``fit_every`` steps, at the cap and at
    the ceiling."""
    return steps % config.fit_every == 0 or steps in (config.steps, config.step_ceiling)


def step_budget(steps: int, config: TrainConfig) -> int:
    """The budget a progress display shows after ``steps`` steps: the cap, then the ceiling once a run is
    extended past it."""
    return config.steps if steps <= config.steps else config.step_ceiling


class FitTracker:
    """The state of the fit criterion during training: the last held-out accuracy and when (if ever)
    the threshold was first reached."""

    def __init__(self) -> None:
        self.fitted = False
        self.steps_to_fit: int | None = None
        self.best_error, self.best_step = math.inf, 0  # lowest held-out error (by a fit_min_drop margin), when
        self.plateaued = False
        self.ended: str | None = None  # "cap", "stalled" or "ceiling" once the step budget ended the run
        self.curve: list[tuple[int, float]] = []  # (steps, accuracy) at every check

    @property
    def accuracy(self) -> float:
        """The held-out accuracy at the last check (NaN before the first)."""
        return self.curve[-1][1] if self.curve else float("nan")

    def record(self, result: TrainResult, config: TrainConfig, checked: bool) -> None:
        """Write the fit fields (if the criterion was ``checked``) and the ``stop_reason`` into ``result``."""
        if checked:
            result.fitted, result.steps_to_fit, result.fit_token_acc = self.fitted, self.steps_to_fit, self.accuracy
            result.fit_curve = list(self.curve)
        result.stop_reason = ("diverged" if result.status == "diverged" else "fit" if self.fitted and config.stop_at_fit
                              else "plateau" if self.plateaued else self.ended or "cap")

    def update(self, accuracy: float, steps: int, config: TrainConfig) -> bool:
        """Record the accuracy after ``steps`` steps; True if training must stop here: fitted with
        ``stop_at_fit``, no relative drop in held-out error for ``fit_patience`` steps (a plateau), or the step
        budget is spent (:meth:`budget_spent`)."""
        if self.check(accuracy, steps, config) and config.stop_at_fit:
            return True
        if config.fit_patience and steps - self.best_step >= config.fit_patience:
            self.plateaued = True
            return True
        return self.budget_spent(steps, config)

    def budget_spent(self, steps: int, config: TrainConfig) -> bool:
        """True if an unfitted run ends after ``steps`` steps: at its cap unless extended, at the end of an
        extension window in which it gained less than ``extend_min_gain`` ("stalled"), or at the ceiling."""
        if steps < config.steps:
            return False
        if steps >= config.step_ceiling:
            self.ended = "ceiling" if steps > config.steps else "cap"
            return True
        if (steps - config.steps) % config.extend_window:
            return False  # inside an extension window
        if still_improving(self.curve, config.extend_window, config.extend_min_gain):
            return False
        self.ended = "cap" if steps == config.steps else "stalled"
        return True

    def check(self, accuracy: float, steps: int, config: TrainConfig) -> bool:
        """Record the accuracy after ``steps`` steps; True if the criterion is met (now or before)."""
        self.curve.append((steps, accuracy))
        if 1 - accuracy <= (1 - config.fit_min_drop) * self.best_error:
            self.best_error, self.best_step = 1 - accuracy, steps
        if not self.fitted and accuracy >= config.fit_threshold:
            self.fitted, self.steps_to_fit = True, steps
        return self.fitted


@dataclass(frozen=True)
class ReplayedStop:
    """Where a stopping rule ends a run, replayed on its fit curve (:func:`replay_stop`)."""

    steps_done: int  # the check at which training ends (the curve's last step if the rule never fires)
    stop_reason: str  # "fit", "plateau", or "curve" (the rule did not fire within the recorded curve)
    fitted: bool
    steps_to_fit: int | None


def replay_stop(curve: Sequence[tuple[int, float]], config: TrainConfig) -> ReplayedStop:
    """Replay ``config``'s fit criterion and plateau stop on a recorded fit curve (``[(steps, accuracy)]``,
    :attr:`TrainResult.fit_curve`), with the same :class:`FitTracker` that :func:`train` uses.

    Training is deterministic and the checks never change it (they run under a forked RNG), so a run
    trained under ``config`` stops where this says, as long as the recorded run went at least that far:
    ``stop_reason`` ``"curve"`` says the rule never fired within the curve, which then says nothing about
    what would follow it. The recorded checks must be ``config.fit_every`` apart, as train() makes them.
    """
    if not config.fit_every:
        raise ValueError("replaying a stop needs a fit criterion (fit_every > 0)")
    tracker = FitTracker()
    for steps, accuracy in curve:
        if tracker.update(float(accuracy), int(steps), config) and tracker.ended is None:
            reason = "fit" if tracker.fitted else "plateau"
            return ReplayedStop(int(steps), reason, tracker.fitted, tracker.steps_to_fit)
        if tracker.ended is not None:  # the step budget, not the rule, ended it: as a curve the rule outlived
            return ReplayedStop(int(steps), "curve", tracker.fitted, tracker.steps_to_fit)
    last = int(curve[-1][0]) if len(curve) else 0
    return ReplayedStop(last, "curve", tracker.fitted, tracker.steps_to_fit)


class LossMonitor:
    """Collects per-step losses and stops training at divergence, with few host-device syncs.

    On CPU every loss is read at once (reading it costs nothing). On an
    accelerator the losses stay on the device and are read every
    :attr:`sync_every` steps, so the loop never waits for the device in
    between; the first diverged step of a block is then found in the block,
    and the losses, ``steps_done`` and ``error`` are those of that step (the
    model itself may have taken up to ``sync_every - 1`` more steps).
    """

    sync_every = 32

    def __init__(self, config: TrainConfig, device: torch.device) -> None:
        self.config = config
        self.every = 1 if device.type == "cpu" else self.sync_every
        self.pending: list[tuple[torch.Tensor, int]] = []  # (loss, length) not yet read
        self.losses: list[float] = []
        self.error = ""

    def record(self, loss: torch.Tensor, length: int) -> bool:
        """Add the loss of the next step; True if training must stop (divergence)."""
        self.pending.append((loss.detach(), length))
        if len(self.pending) >= self.every:
            return self.flush()
        return False

    def flush(self) -> bool:
        """Read the pending losses; True if one of them diverged."""
        if not self.pending:
            return False
        if len(self.pending) == 1:
            values = [self.pending[0][0].item()]
        else:
            values = torch.stack([loss for loss, _ in self.pending]).tolist()
        lengths = [length for _, length in self.pending]
        self.pending = []
        for value, length in zip(values, lengths, strict=True):
            self.losses.append(value)
            if not math.isfinite(value) or value > self.config.divergence_loss:
                self.error = f"loss {value} at step {len(self.losses) - 1} (length {length})"
                return True
        return False

    def result(self) -> TrainResult:
        """The :class:`TrainResult` so far (reads any pending losses)."""
        self.flush()
        status = "diverged" if self.error else "ok"
        return TrainResult(status=status, losses=self.losses, steps_done=len(self.losses), error=self.error)
