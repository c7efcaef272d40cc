"""Seed-batched training: S models that differ only in seed, trained together as one batched model.

Shape notation: S models (seeds), B batch, T length, D width, H heads, Dh head width, V vocab.

:func:`train_batched` stacks the weights of S :class:`~pebench.model.Transformer` s of the same
architecture into (S, ...) tensors and runs every linear layer as one batched matmul
(``baddbmm``) and all S attention computations as one ``scaled_dot_product_attention`` call, so
the per-operation overhead that dominates small models on a CPU is paid once per step instead of
S times. Each model keeps its own data (``data_generator(config.seed)``), its own positions
(randomized encodings draw from a per-model RNG stream, as :func:`~pebench.learn.train.train` does
after ``torch.manual_seed(config.seed)``), its own loss, its own gradient-norm clipping and its
own AdamW state, so model ``s`` ends up equal — within float rounding — to
``train(models[s], task, configs[s])`` (tested).

The one shared quantity is the per-step input length: all S runs must draw it from the same
stream, i.e. set the same :attr:`~pebench.config.TrainConfig.length_seed` (train() then uses it
too, so batched and separate training stay equivalent). Every other config field must be equal
across the batch, and dropout must be 0 (a batched dropout mask could not reproduce S separate
RNG streams).

Encodings without parameters and with the default positions (none, sinusoidal, rope, xpos,
alibi and RoPE variants) are applied once to the whole (S * B) batch; encodings with parameters
(learned, t5, fire) or sampled positions (randomized) are applied model by model, with each
model's own encoding module, whose parameters are trained in place. Encodings with a content
score (:meth:`~pebench.encodings.base.PositionalEncoding.content_score`: transformer_xl, cope)
also attend model by model, each through :func:`pebench.model.attend` with its own encoding and
inputs (the explicit attention of the model); so do encodings that replace the softmax
(``attention_weights``: fox, stick_breaking). Every other encoding attends in one SDPA call. Block
``i`` uses each encoding's per-layer view (``for_layer(i)``) for ``mix``, ``rotate`` and attention,
as the model does.

Only the models' public seam is used: :meth:`~pebench.model.Transformer.positions`,
:meth:`~pebench.model.Transformer.attention_inputs` (positions and masks of every layer) and the
encodings' hooks. The batched forward pass is the model's, with stacked weights; it is tested equal
to :meth:`~pebench.model.Transformer.forward` (``tests/test_batched.py``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pebench.encodings import PositionalEncoding
from pebench.learn.train import (
    FitTracker,
    TrainConfig,
    TrainResult,
    data_generator,
    decays,
    draw_length,
    first_labeled,
    fit_accuracy,
    fit_batch,
    fit_check_due,
    learning_rate,
    length_generator,
    step_budget,
    train,
    training_batch,
)
from pebench.model import AttentionInputs, Transformer, attend
from pebench.tasks import IGNORE, Task, render


def _stack(models: Sequence[Transformer], name: str) -> nn.Parameter:
    return nn.Parameter(torch.stack([model.get_parameter(name).detach() for model in models]))


def _same_encoding(encodings: Sequence[PositionalEncoding]) -> bool:
    """All encodings of the same class and options, with equal buffers."""
    first = encodings[0]
    reference = list(first.buffers())
    for other in encodings[1:]:
        if type(other) is not type(first) or repr(other) != repr(first):
            return False
        buffers = list(other.buffers())
        if len(buffers) != len(reference):
            return False
        if not all(torch.equal(a, b) for a, b in zip(reference, buffers, strict=True)):
            return False
    return True


class BatchedTransformer(nn.Module):
    """S transformers of one configuration, their weights stacked along a leading model dimension.

    Built from the models (their current weights are copied); :meth:`copy_back` copies the trained
    weights back. The encodings stay the models' own modules (not copied).

    ``forward(tokens)``: tokens (S, B, T) -> logits (S, B, T, V).
    """

    def __init__(self, models: Sequence[Transformer]) -> None:
        super().__init__()
        if not models:
            raise ValueError("train_batched needs at least one model")
        config = models[0].config
        for model in models[1:]:
            if model.config != config:
                raise ValueError(f"seed-batched models must share one ModelConfig; got {config} and {model.config}")
        if config.dropout:
            raise ValueError(f"seed-batched training needs dropout=0 (got {config.dropout}): a batched dropout "
                             f"mask cannot reproduce the separate runs; train these models with train()")
        self.config = config
        self.models = list(models)  # plain list: their encodings are used, their other weights are copies
        self.encodings = [model.encoding for model in models]
        self.shared_encoding = (
            models[0].fixed_positions
            and next(models[0].encoding.parameters(), None) is None
            and _same_encoding(self.encodings)
        )
        self.names = [name for name, _ in models[0].named_parameters() if not name.startswith("encoding.")]
        # nn.ParameterDict keys may not contain dots
        self.stacked = nn.ParameterDict({name.replace(".", "__"): _stack(models, name) for name in self.names})
        self.decay = {name: decays(name, models[0].get_parameter(name)) for name in self.names}

    def weight(self, name: str) -> Tensor:
        """The stacked (S, ...) parameter of the models' parameter ``name``."""
        return self.stacked[name.replace(".", "__")]

    @torch.no_grad()
    def copy_back(self, index: int) -> None:
        """Copy model ``index``'s current weights from the stack into the model."""
        for name in self.names:
            self.models[index].get_parameter(name).copy_(self.weight(name)[index])

    def _linear(self, x: Tensor, name: str) -> Tensor:
        """x (S, N, Din) -> (S, N, Dout) with model s's weight (Dout, Din) and bias (Dout,)."""
        weight, bias = self.weight(f"{name}.weight"), self.weight(f"{name}.bias")
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))

    def _layer_norm(self, x: Tensor, name: str) -> Tensor:
        """Per-model LayerNorm of x (S, N, D)."""
        x = F.layer_norm(x, x.shape[-1:])
        return torch.addcmul(self.weight(f"{name}.bias").unsqueeze(1), x, self.weight(f"{name}.weight").unsqueeze(1))

    def positions(self, batch_size: int, length: int, device: torch.device, rng_states: list[Tensor] | None):
        """Positions of every model: one tensor (shared) or a list (per model, each from its own RNG stream)."""
        if self.shared_encoding:
            return self.models[0].positions(batch_size, length, device)
        positions = []
        for index, model in enumerate(self.models):
            if rng_states is None:
                positions.append(model.positions(batch_size, length, device))
                continue
            torch.set_rng_state(rng_states[index])
            positions.append(model.positions(batch_size, length, device))
            rng_states[index] = torch.get_rng_state()
        return positions

    def _stacked_mask(self, inputs: Sequence[AttentionInputs], batch_size: int) -> Tensor | None:
        """One SDPA mask for the (S * B) batch from each model's inputs: (S * B, H, Tq, T), or the models'
        common mask when it holds no bias (``None`` or the (Tq, T) causal mask, the same for every model)."""
        mask = inputs[0].mask
        if mask is None or mask.dim() == 2:
            return mask
        H, Tq, T = self.config.n_heads, inputs[0].q_pos.shape[-1], inputs[0].k_pos.shape[-1]
        stacked = torch.stack([i.mask.expand(batch_size, H, Tq, T) for i in inputs])  # (S, B, H, Tq, T)
        return stacked.view(len(inputs) * batch_size, H, Tq, T)

    def forward(self, tokens: Tensor, positions: Tensor | list[Tensor], outputs: int | None = None) -> Tensor:
        """Logits (S, B, T, V) of tokens (S, B, T), or of the last ``outputs`` positions (see Transformer)."""
        S, B, T = tokens.shape
        D, H = self.config.d_model, self.config.n_heads
        table = self.weight("token_embedding.weight")  # (S, V, D)
        x = table[torch.arange(S, device=tokens.device).view(S, 1, 1), tokens]  # (S, B, T, D)
        if self.shared_encoding:
            x = self.encodings[0].embed(x.view(S * B, T, D), positions).view(S, B * T, D)
            every, last = self.models[0].attention_inputs(positions, outputs)
            masks = {False: (every.mask, every.is_causal), True: (last.mask, last.is_causal)}
            model_inputs = [(every, last)]
        else:
            x = torch.stack([enc.embed(x[s], positions[s]) for s, enc in enumerate(self.encodings)]).view(S, B * T, D)
            model_inputs = [model.attention_inputs(positions[s], outputs) for s, model in enumerate(self.models)]
            masks = {False: (self._stacked_mask([every for every, _ in model_inputs], B), model_inputs[0][0].is_causal)}
            masks[True] = masks[False] if outputs is None or outputs >= T else (
                self._stacked_mask([last for _, last in model_inputs], B), model_inputs[0][1].is_causal)
        first = model_inputs[0][1].first_query  # the last block's queries: positions first .. T-1
        for layer in range(self.config.n_layers):
            is_last = layer == self.config.n_layers - 1
            prefix = f"blocks.{layer}"
            views = [enc.for_layer(layer) for enc in self.encodings]
            h = self._layer_norm(x, f"{prefix}.ln_attn")
            if views[0].uses_mix and self.shared_encoding:
                h = views[0].mix(h.view(S * B, T, D)).view(S, B * T, D)
            elif views[0].uses_mix:
                h = torch.stack([view.mix(h[s].view(B, T, D)).view(B * T, D) for s, view in enumerate(views)])
            qkv = self._linear(h, f"{prefix}.attn.qkv").view(S * B, T, 3, H, D // H)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (S * B, H, T, Dh)
            if is_last and first:
                q = q[:, :, first:]  # (S * B, H, Tq, Dh)
            Tq = q.shape[2]
            if self.shared_encoding:
                inputs = model_inputs[0][is_last]
                q, k = views[0].rotate(q, k, inputs.q_pos, inputs.k_pos)
            else:
                rotated = [
                    enc.rotate(q.view(S, B, H, Tq, -1)[s], k.view(S, B, H, T, -1)[s],
                               model_inputs[s][is_last].q_pos, model_inputs[s][is_last].k_pos)
                    for s, enc in enumerate(views)
                ]
                q = torch.stack([r[0] for r in rotated]).view(S * B, H, Tq, -1)
                k = torch.stack([r[1] for r in rotated]).view(S * B, H, T, -1)
            if views[0].explicit_attention:  # explicit attention, model by model
                y = torch.cat([
                    attend(q.view(S, B, H, Tq, -1)[s], k.view(S, B, H, T, -1)[s], v.view(S, B, H, T, -1)[s],
                           view, model_inputs[0 if self.shared_encoding else s][is_last], x=h[s].view(B, T, D))
                    for s, view in enumerate(views)
                ])  # (S * B, H, Tq, Dh)
            else:
                mask, is_causal = masks[is_last]
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)  # (S * B, H, Tq, Dh)
            y = y.transpose(1, 2).reshape(S, B * Tq, D)  # (S, B * Tq, D)
            if is_last and first:
                x = x.view(S, B, T, D)[:, :, first:].reshape(S, B * Tq, D)
            x = x + self._linear(y, f"{prefix}.attn.proj")
            h = F.gelu(self._linear(self._layer_norm(x, f"{prefix}.ln_mlp"), f"{prefix}.mlp.0"))
            x = x + self._linear(h, f"{prefix}.mlp.2")
        logits = self._linear(self._layer_norm(x, "ln_final"), "head")  # (S, B * Tq, V)
        return logits.view(S, B, T - first, -1)


def _check_configs(configs: Sequence[TrainConfig]) -> None:
    if configs[0].length_seed is None and len(configs) > 1:
        raise ValueError("seed-batched runs must share the per-step length stream: set the same "
                         "TrainConfig.length_seed on every config (train() then uses it too)")
    reference = dataclasses.replace(configs[0], seed=0)
    for config in configs[1:]:
        if dataclasses.replace(config, seed=0) != reference:
            raise ValueError(f"seed-batched configs may differ only in seed; got {configs[0]} and {config}")


def make_batched_optimizer(batched: BatchedTransformer, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with the parameter groups of :func:`pebench.learn.train.make_optimizer`, over stacked weights.

    AdamW is elementwise, so one optimizer over (S, ...) tensors is S independent optimizers.
    """
    decay = [batched.weight(name) for name in batched.names if batched.decay[name]]
    no_decay = [batched.weight(name) for name in batched.names if not batched.decay[name]]
    no_decay += [p for enc in batched.encodings for p in enc.parameters() if p.requires_grad]
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-8, foreach=True)


def _clip_per_model(batched: BatchedTransformer, max_norm: float) -> None:
    """``clip_grad_norm_`` of each model separately: one global gradient norm per model."""
    stacked = [batched.weight(name) for name in batched.names]
    squares = torch.stack([p.grad.flatten(1).pow(2).sum(1) for p in stacked if p.grad is not None]).sum(0)  # (S,)
    own = [[p for p in enc.parameters() if p.grad is not None] for enc in batched.encodings]
    if any(own):
        squares = squares + torch.stack([
            sum((p.grad.pow(2).sum() for p in params), torch.zeros((), device=squares.device)) for params in own
        ])
    coef = (max_norm / (squares.sqrt() + 1e-6)).clamp(max=1.0)  # (S,)
    for p in stacked:
        if p.grad is not None:
            p.grad.mul_(coef.view(-1, *([1] * (p.dim() - 1))))
    for index, params in enumerate(own):
        for p in params:
            p.grad.mul_(coef[index])


def train_batched(
    models: Sequence[Transformer],
    task: Task,
    configs: Sequence[TrainConfig],
    device: torch.device | str | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> list[TrainResult]:
    """Train S models that differ only in seed together; equal to S :func:`~pebench.learn.train.train` calls.

    Args:
        models: S transformers of one :class:`~pebench.model.ModelConfig` (dropout 0), each
            initialised from its own seed; trained in place (their weights are replaced by the
            trained ones at the end).
        task: the task all of them train on.
        configs: one :class:`~pebench.config.TrainConfig` per model, equal except ``seed`` and with a
            common ``length_seed`` (one config may be given alone, with any ``length_seed``).
        device: where to train; default the first model's device.
        on_step: as :func:`~pebench.learn.train.train`'s (steps done by the batch, the step cap).

    Returns:
        One :class:`~pebench.learn.train.TrainResult` per model. A model that diverges, fits (with
        ``stop_at_fit``) or plateaus (``fit_patience``) stops there, as with train(): its weights are
        those of that step and its ``steps_done``, fit fields and ``stop_reason`` are train()'s, while the
        others go on (the batch keeps computing it, unused). The fit criterion is checked on each model
        by itself (:func:`~pebench.learn.train.fit_accuracy`, its own held-out examples); ``seconds`` is the wall
        time of the loop until the model stopped.
    """
    if len(models) != len(configs):
        raise ValueError(f"got {len(models)} models but {len(configs)} configs; pass one config per model")
    _check_configs(configs)
    if len(models) == 1:  # nothing to batch: the plain loop is faster (mm instead of bmm)
        return [train(models[0], task, configs[0], device, on_step=on_step)]
    config = configs[0]
    device = torch.device(device) if device is not None else next(models[0].parameters()).device
    for model in models:
        model.to(device).train()
    task.check_length(config.train_min_len)
    batched = BatchedTransformer(models).to(device)
    optimizer = make_batched_optimizer(batched, config)
    generators = [data_generator(c.seed) for c in configs]
    lengths = length_generator(config)
    rng_states = None if models[0].fixed_positions else _seeded_rng_states(configs)
    sync_every = 1 if device.type == "cpu" else 32
    run = _BatchedRun(models, batched, task, configs, device)
    with torch.random.fork_rng(devices=[]):
        for step in range(config.step_ceiling):
            if not run.active:
                break
            length = draw_length(config, lengths)
            losses = _train_step(batched, optimizer, task, config, step, length, generators, rng_states, device)
            run.pending.append((losses.detach(), step, length))
            if on_step is not None:
                on_step(step + 1, step_budget(step + 1, config))
            check = run.held_out is not None and fit_check_due(step + 1, config)
            if len(run.pending) >= sync_every or check:
                run.flush()
            if check and run.active:
                run.check_fit(step + 1)
        run.flush()
    return run.finish()


def _seeded_rng_states(configs: Sequence[TrainConfig]) -> list[Tensor]:
    """Per-model global-RNG states (randomized positions), as train() seeds ``torch.manual_seed(config.seed)``."""
    with torch.random.fork_rng(devices=[]):
        states = []
        for c in configs:
            torch.manual_seed(c.seed)
            states.append(torch.get_rng_state())
    return states


def _train_step(
    batched: BatchedTransformer, optimizer: torch.optim.Optimizer, task: Task, config: TrainConfig, step: int,
    length: int, generators: Sequence[torch.Generator], rng_states: list[Tensor] | None, device: torch.device,
) -> Tensor:
    """One optimizer step of every model on its own batch at input ``length``; returns the (S,) losses."""
    rendered = [render(task, training_batch(task, config, length, g), batched.config.arch) for g in generators]
    tokens = torch.stack([t for t, _ in rendered])  # (S, B, T)
    labels = torch.stack([label for _, label in rendered])
    first = first_labeled(labels.flatten(0, 1))
    tokens, labels = tokens.to(device, non_blocking=True), labels.to(device, non_blocking=True)
    for group in optimizer.param_groups:
        group["lr"] = learning_rate(step, config)
    positions = batched.positions(config.batch_size, tokens.shape[-1], device, rng_states)
    logits = batched(tokens, positions, outputs=tokens.shape[-1] - first)  # (S, B, T - first, V)
    labels = labels[..., first:]
    token_losses = F.cross_entropy(
        logits.flatten(0, 2), labels.flatten(), ignore_index=IGNORE, reduction="none"
    ).view(len(generators), -1)  # (S, B * (T - first))
    counts = (labels != IGNORE).flatten(1).sum(1)  # (S,)
    losses = token_losses.sum(1) / counts  # (S,): each model's mean loss, as train()
    optimizer.zero_grad(set_to_none=True)
    losses.sum().backward()  # the models share no weights: each gets the gradient of its own loss
    if config.grad_clip > 0:
        _clip_per_model(batched, config.grad_clip)
    optimizer.step()
    return losses


class _BatchedRun:
    """What :func:`train_batched` tracks per model: which still train, their results, fit trackers and the
    encoding state of those that stopped; losses are read from the device in groups (:attr:`pending`)."""

    def __init__(self, models: Sequence[Transformer], batched: BatchedTransformer, task: Task,
                 configs: Sequence[TrainConfig], device: torch.device) -> None:
        self.models, self.batched, self.task, self.config, self.device = models, batched, task, configs[0], device
        self.results = [TrainResult(status="ok") for _ in models]
        self.active = list(range(len(models)))
        self.frozen: dict[int, dict[str, Tensor]] = {}  # encoding state of stopped models at their last step
        self.pending: list[tuple[Tensor, int, int]] = []  # (losses (S,), step, length) not yet read
        self.held_out = [fit_batch(task, c) for c in configs] if self.config.fit_every else None
        self.fits = [FitTracker() for _ in models]
        self.start = time.perf_counter()

    def stop(self, index: int) -> None:
        """Model ``index`` stops here: its weights (and its own encoding's state) are kept as they are now."""
        self.active.remove(index)
        self.batched.copy_back(index)
        self.frozen[index] = {k: v.clone() for k, v in self.models[index].encoding.state_dict().items()}
        self.results[index].seconds = time.perf_counter() - self.start

    def check_fit(self, steps: int) -> None:
        """The fit criterion of every running model after ``steps`` steps, as train() checks it."""
        for index in list(self.active):
            self.batched.copy_back(index)
            accuracy = fit_accuracy(self.models[index], self.task, self.held_out[index], self.device,
                                    self.config.fit_threshold)
            if self.fits[index].update(accuracy, steps, self.config):
                self.stop(index)

    def flush(self) -> None:
        """Record the pending losses of every running model; a model whose loss diverged stops there."""
        if not self.pending:
            return
        values = torch.stack([losses for losses, _, _ in self.pending]).tolist()
        for row, (_, step, length) in zip(values, self.pending, strict=True):
            for index in list(self.active):
                value = row[index]
                result = self.results[index]
                result.losses.append(value)
                result.steps_done = step + 1
                if not math.isfinite(value) or value > self.config.divergence_loss:
                    result.status = "diverged"
                    result.error = f"loss {value} at step {step} (length {length})"
                    self.stop(index)
        self.pending.clear()

    def finish(self) -> list[TrainResult]:
        """Copy the trained weights back into every model and complete the results."""
        seconds = time.perf_counter() - self.start
        for index in list(self.active):
            self.batched.copy_back(index)
            self.results[index].seconds = seconds
        for index, state in self.frozen.items():  # a stopped model's own encoding kept training: restore it
            self.models[index].encoding.load_state_dict(state)
        for result, fit, model in zip(self.results, self.fits, self.models, strict=True):
            fit.record(result, self.config, checked=self.held_out is not None)
            model.eval()
        return self.results
