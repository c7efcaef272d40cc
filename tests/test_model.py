"""Transformer, training and evaluation: equivariance, determinism, statuses."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from test_encodings import every_encoding

from pebench import encodings, tasks
from pebench.learn.evaluate import equivariance_gap, evaluate
from pebench.learn.train import TrainConfig, learning_rate, train
from pebench.model import ModelConfig, Transformer, build_model, causal_mask

D_MODEL, N_HEADS = 32, 4


def all_encoding_names() -> list[str]:
    """Every registered encoding, and the wrappers around them (:func:`test_encodings.every_encoding`)."""
    return every_encoding()


@functools.cache
def refuses_the_encoder(name: str) -> bool:
    """Whether encoding ``name`` (or one it wraps) is causal-only and refuses to be built for an encoder (fox)."""
    try:
        with torch.random.fork_rng():  # a probe: the caller's seeded build draws what it would draw without it
            encodings.build(name, d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=False)
    except ValueError as error:
        return "causal attention only" in str(error)
    return False


def make_model(name: str, arch: str, task: tasks.Task, seed: int = 0, max_len: int = 128, **options) -> Transformer:
    """A model at the test sizes; a causal-only encoding that refuses the encoder skips the test there."""
    if arch == "encoder" and refuses_the_encoder(name):
        pytest.skip(f"{name} refuses the encoder (tests/test_encodings_2025.py tests the error)")
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch=arch, d_model=D_MODEL, n_heads=N_HEADS)
    return build_model(config, name, max_len=max_len, seed=seed, **options)


def assert_adam_trained_close(trained: Transformer, reference: Transformer, lr: float, steps: int) -> None:
    """Parameters of two runs from the same init that differ only by float rounding (another kernel,
    torch.compile, seed batching), after ``steps`` AdamW steps with peak learning rate ``lr``.

    AdamW divides each gradient element by its running RMS, so an element whose gradient is ~0 moves
    by up to ``lr`` per step in a direction that rounding decides: one parameter in thousands may
    differ by far more than rounding (seen: 1.6e-6 after 3 steps on a 2-core AVX2 AMD EPYC). So every
    element must stay within Adam's bound of ``2 * lr * steps``, and all but 1% within rounding
    tolerance of a few steps (rtol 1e-3, atol 1e-5).
    """
    for (name, a), b in zip(reference.named_parameters(), trained.parameters(), strict=True):
        a, b = a.detach(), b.detach()
        difference = (a - b).abs()
        assert float(difference.max()) <= 2 * lr * steps, name
        outside = difference > 1e-5 + 1e-3 * a.abs()
        assert float(outside.float().mean()) <= 0.01, (name, int(outside.sum()), a.numel())


@pytest.fixture(scope="module")
def copy_task() -> tasks.Task:
    return tasks.get("copy")


def test_nope_encoder_is_permutation_equivariant(copy_task):
    model = make_model("none", "encoder", copy_task)
    assert equivariance_gap(model, copy_task, 12) < 1e-5


def test_nope_encoder_stays_equivariant_after_training(copy_task):
    model = make_model("none", "encoder", copy_task)
    train(model, copy_task, TrainConfig(steps=5, batch_size=8, train_max_len=8))
    assert equivariance_gap(model, copy_task, 12) < 1e-5


def test_nope_decoder_is_not_equivariant(copy_task):
    model = make_model("none", "decoder", copy_task)
    assert equivariance_gap(model, copy_task, 12) > 1e-3


def gives_positions(name: str) -> bool:
    """Whether encoding ``name`` (or the encoding it wraps) gives the model positional information."""
    return encodings.meta(name.split(":")[-1])["kind"] != "none"


@pytest.mark.parametrize("name", [n for n in all_encoding_names() if gives_positions(n)])
def test_every_other_encoding_breaks_equivariance(name, copy_task):
    model = make_model(name, "encoder", copy_task)
    if encodings.meta(name)["has_parameters"] and encodings.meta(name.split(":")[-1])["kind"] in ("bias", "content"):
        # Learned biases and score terms may start at exactly zero (T5 init is random, FIRE's MLP
        # is not, CoPE's table is zero); train a few steps so the encoding is in use.
        train(model, copy_task, TrainConfig(steps=3, batch_size=8, train_max_len=8, warmup_steps=1))
    assert equivariance_gap(model, copy_task, 12) > 1e-6  # float noise is ~1e-8


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
@pytest.mark.parametrize("name", all_encoding_names())
def test_every_encoding_trains_deterministically(name, arch, copy_task):
    config = TrainConfig(steps=4, batch_size=8, train_max_len=8, warmup_steps=2, seed=3)
    curves = []
    for _ in range(2):
        model = make_model(name, arch, copy_task, seed=3)
        result = train(model, copy_task, config)
        assert result.status == "ok", result.error
        assert all(math.isfinite(x) for x in result.losses)
        curves.append(result.losses)
    assert curves[0] == curves[1]  # bit-identical on CPU


def test_compiled_training_matches_eager(copy_task):
    # one length, so that torch.compile builds one graph; rope exercises the encoding's caches
    config = TrainConfig(steps=3, batch_size=4, train_min_len=3, train_max_len=3, warmup_steps=1, seed=1)
    eager_model, compiled_model = (make_model("rope", "decoder", copy_task, seed=1) for _ in range(2))
    eager = train(eager_model, copy_task, config)
    compiled = train(compiled_model, copy_task, config, compile=True)
    assert compiled.status == "ok", compiled.error
    # the losses are means over every output token: rounding in the compiled kernels moves them ~1e-7
    assert compiled.losses == pytest.approx(eager.losses, rel=1e-5)
    # the eager module itself was trained; AdamW amplifies rounding in near-zero gradients
    assert_adam_trained_close(compiled_model, eager_model, config.lr, config.steps)


def test_different_seeds_give_different_curves(copy_task):
    config = TrainConfig(steps=3, batch_size=8, train_max_len=8)
    a = train(make_model("rope", "decoder", copy_task, seed=0), copy_task, config).losses
    b = train(make_model("rope", "decoder", copy_task, seed=1), copy_task, TrainConfig(
        steps=3, batch_size=8, train_max_len=8, seed=1)).losses
    assert a != b


def test_the_encoding_never_shifts_the_initial_weights_of_the_rest_of_the_model(copy_task):
    """The encoding is initialised from its own stream: its parameter count (a learned table of 64 or
    4096 rows, FIRE's MLP, nothing) leaves every other initial weight unchanged."""
    models = [make_model("learned", "decoder", copy_task, seed=4, max_len=64),
              make_model("learned", "decoder", copy_task, seed=4, max_len=4096),
              make_model("fire", "decoder", copy_task, seed=4), make_model("none", "decoder", copy_task, seed=4)]
    rest = [{k: v for k, v in m.state_dict().items() if not k.startswith("encoding.")} for m in models]
    for other in rest[1:]:
        assert other.keys() == rest[0].keys()
        assert all(torch.equal(other[k], rest[0][k]) for k in rest[0])


def test_build_model_passes_the_training_context_to_the_encoding(copy_task):
    config = ModelConfig(vocab_size=tasks.model_vocab_size(copy_task), arch="decoder", d_model=D_MODEL,
                         n_heads=N_HEADS)
    model = build_model(config, "randomized:fire", max_len=512, train_len=19, seed=0)
    assert (model.encoding.max_len, model.encoding.train_len) == (512, 19)
    assert model.encoding.inner.init_threshold.item() == 19.0 and model.encoding.max_position == 512
    assert build_model(config, "fire", max_len=512, seed=0).encoding.train_len == 512


def test_divergence_is_reported_not_raised(copy_task):
    model = make_model("sinusoidal", "decoder", copy_task)
    with torch.no_grad():
        model.head.weight.fill_(float("nan"))
    result = train(model, copy_task, TrainConfig(steps=5, batch_size=8, train_max_len=8))
    assert result.status == "diverged"
    assert result.steps_done == 1 and "loss nan" in result.error


def test_learning_rate_schedule():
    config = TrainConfig(steps=100, warmup_steps=10, lr=1e-3, min_lr_ratio=0.1)
    assert learning_rate(0, config) == pytest.approx(1e-4)
    assert learning_rate(9, config) == pytest.approx(1e-3)
    assert learning_rate(10, config) == pytest.approx(1e-3)
    assert learning_rate(99, config) == pytest.approx(1e-4, rel=0.05)
    values = [learning_rate(s, config) for s in range(10, 100)]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))


def test_model_config_rejects_bad_values():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(vocab_size=5, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="arch"):
        ModelConfig(vocab_size=5, arch="seq2seq")


def test_encoding_must_match_model(copy_task):
    config = ModelConfig(vocab_size=12, d_model=32, n_heads=4)
    with pytest.raises(ValueError, match="d_model"):
        Transformer(config, encodings.build("none", d_model=64, n_heads=4, max_len=8, causal=True))
    with pytest.raises(ValueError, match=r"causal=False for a model with arch='decoder'.*build_model"):
        Transformer(config, encodings.build("t5", d_model=32, n_heads=4, max_len=8))


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
@pytest.mark.parametrize("name", all_encoding_names())
def test_build_model_gives_every_encoding_causal_from_the_arch(name, arch, copy_task):
    model = make_model(name, arch, copy_task)
    modules = [m for m in model.encoding.modules() if isinstance(m, encodings.PositionalEncoding)]
    assert all(m.causal == (arch == "decoder") for m in modules)  # wrappers pass it on


def test_causal_is_not_an_encoding_option(copy_task):
    with pytest.raises(ValueError, match=r"'causal' is not an encoding option.*arch='decoder'"):
        make_model("t5", "decoder", copy_task, causal=False)


def test_randomized_t5_decoder_uses_causal_buckets(copy_task):
    """randomized:t5 in a decoder gets T5's causal buckets, as plain t5 does (it used to get bidirectional ones)."""
    wrapped = make_model("randomized:t5", "decoder", copy_task).encoding
    plain = make_model("t5", "decoder", copy_task).encoding
    assert wrapped.inner.causal and plain.causal
    plain.load_state_dict(wrapped.inner.state_dict())
    pos = torch.tensor([[0, 3, 20, 40, 90], [1, 2, 5, 60, 61]])
    torch.testing.assert_close(wrapped.bias(pos, pos), plain.bias(pos, pos), rtol=0, atol=0)
    bidirectional = make_model("randomized:t5", "encoder", copy_task).encoding
    bidirectional.load_state_dict(wrapped.state_dict())
    assert not torch.equal(bidirectional.bias(pos, pos), plain.bias(pos, pos))


@pytest.mark.parametrize("name", [n for n in all_encoding_names() if not n.startswith("randomized:")])
@pytest.mark.parametrize("arch", ["encoder", "decoder"])
def test_explicit_positions_equal_default(name, arch, copy_task):
    """Cached default positions (and the tables and masks cached from them) give exactly what explicit,
    uncached positions give, also for the output suffix and after an evaluation in inference mode."""
    model = make_model(name, arch, copy_task).eval()
    tokens = torch.randint(0, 10, (2, 9))
    for _ in range(2):  # the second pass reads the caches
        assert torch.equal(model(tokens), model(tokens, pos=torch.arange(9)))
        assert torch.equal(model(tokens, outputs=4), model(tokens, pos=torch.arange(9), outputs=4))
    with torch.inference_mode():
        assert torch.equal(model(tokens, outputs=4), model(tokens, pos=torch.arange(9), outputs=4))
    model.train()
    model(tokens, outputs=4).sum().backward()  # tensors cached in inference mode are not reused by training


def test_model_caches_follow_in_place_changes_and_moves(copy_task):
    model = make_model("alibi", "decoder", copy_task).eval()
    tokens = torch.randint(0, 10, (2, 6))
    before = model(tokens)
    pos = model.positions(2, 6, "cpu")
    pos += 1  # a caller modifies the cached positions in place: the model hands out fresh ones
    assert torch.equal(model.positions(2, 6, "cpu"), torch.arange(6))
    with torch.no_grad():
        model.encoding.slopes.mul_(2)  # a buffer changed by hand: caches must be cleared explicitly
    model.clear_caches()
    changed = model(tokens)
    assert not torch.equal(changed, before)
    assert torch.equal(changed, model(tokens, pos=torch.arange(6)))
    model.double()  # a dtype move clears the caches: the mask follows the model's dtype
    assert model(tokens).dtype == torch.float64
    torch.testing.assert_close(model(tokens).float(), changed, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
@pytest.mark.parametrize("name", ["none", "alibi", "t5", "randomized:rope"])
def test_attention_inputs(name, arch, copy_task):
    model = make_model(name, arch, copy_task).eval()
    pos = model.positions(2, 7, "cpu")
    every, last = model.attention_inputs(pos)
    assert every is last and every.q_pos is every.k_pos is pos and every.first_query == 0
    every, last = model.attention_inputs(pos, outputs=3)
    assert last.first_query == 4 and torch.equal(last.q_pos, pos[..., 4:]) and last.k_pos is pos
    assert not last.is_causal  # SDPA aligns is_causal top-left: a query suffix needs the mask written out
    full = every.float_mask("cpu")
    if full is None:
        assert arch == "encoder" and last.mask is None
    else:
        torch.testing.assert_close(torch.broadcast_to(last.mask, full[..., 4:, :].shape), full[..., 4:, :])
        masked = torch.isinf(full).reshape(-1, 7, 7)  # per (batch row and) head
        assert torch.equal(masked, causal_mask(7, "cpu").isinf().expand_as(masked) & (arch == "decoder"))


def test_attention_weights_are_what_the_model_attends_with(copy_task):
    """Attention.weights times the values is the attention output of forward(), for every layer and arch."""
    for name, arch in (("alibi", "decoder"), ("rope", "decoder"), ("t5", "encoder")):
        model = make_model(name, arch, copy_task).eval()
        tokens = torch.randint(0, 10, (2, 8))
        pos = model.positions(2, 8, "cpu")
        every, _ = model.attention_inputs(pos)
        x = model.encoding.embed(model.token_embedding(tokens), pos)
        for layer, block in enumerate(model.blocks):
            weights = model.attention_weights(tokens, layer)  # (B, H, T, T)
            torch.testing.assert_close(weights.sum(-1), torch.ones(2, N_HEADS, 8))
            if arch == "decoder":
                assert float(weights.triu(1).abs().max()) == 0.0
            with torch.no_grad():
                h = block.ln_attn(x)
                _, _, v = block.attn.queries_keys_values(h, model.encoding, every)
                mine = block.attn.proj((weights @ v).transpose(1, 2).reshape(2, 8, D_MODEL))
                # SDPA and an explicit softmax differ by float rounding only
                torch.testing.assert_close(mine, block.attn(h, model.encoding, every), rtol=1e-4, atol=1e-5)
                x = block(x, model.encoding, every)


def content_model(name: str, arch: str, task: tasks.Task) -> Transformer:
    """A model whose encoding uses the content score, with its zero-initialised parameters (CoPE's table)
    made random so that the term is not zero."""
    model = make_model(name, arch, task).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.encoding.parameters():
            if not parameter.any():
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model


@pytest.mark.parametrize("name", [n for n in all_encoding_names() if not n.startswith("randomized:")])
def test_sdpa_unless_the_encoding_uses_the_content_score(name, copy_task, monkeypatch):
    """The fused kernel for every encoding without a content score or a replaced softmax; explicit attention only
    in the blocks whose view of the encoding has one."""
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *args, **kwargs: calls.append(1) or sdpa(*args, **kwargs))
    model = make_model(name, "decoder", copy_task).eval()
    model(torch.randint(0, 10, (2, 6)), outputs=3)
    views = [model.encoding.for_layer(index) for index in range(model.config.n_layers)]
    assert len(calls) == sum(not view.explicit_attention for view in views)
    slot = encodings.meta(name.split(":")[-1])["kind"]
    assert all(view.uses_content_score is (slot == "content") for view in views)
    assert any(view.uses_attention_weights for view in views) is (name.split(":")[-1] in ("fox", "stick_breaking"))


@pytest.mark.parametrize(("name", "arch"), [("transformer_xl", "decoder"), ("transformer_xl", "encoder"),
                                            ("cope", "decoder"), ("cope", "encoder")])
def test_attention_weights_include_the_content_score(name, arch, copy_task):
    """attention_weights returns softmax(logits + mask + content score), the weights forward() attends with."""
    model = content_model(name, arch, copy_task)
    tokens = torch.randint(0, 10, (2, 8))
    pos = model.positions(2, 8, "cpu")
    every, last = model.attention_inputs(pos, outputs=3)
    block = model.blocks[0]
    with torch.no_grad():
        h = block.ln_attn(model.encoding.embed(model.token_embedding(tokens), pos))
        q, k, v = block.attn.queries_keys_values(h, model.encoding, every)
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if arch == "decoder":
            logits = logits + causal_mask(8, "cpu")
        term = model.encoding.content_score(q, k, logits, pos, pos)
        assert term.abs().max() > 1e-3
        weights = model.attention_weights(tokens, 0)
        torch.testing.assert_close(weights, (logits + term).softmax(-1))
        assert not torch.allclose(weights, logits.softmax(-1))
        output = block.attn.proj((weights @ v).transpose(1, 2).reshape(2, 8, D_MODEL))
        assert torch.equal(output, block.attn(h, model.encoding, every))  # the same explicit computation
        # the last block's query suffix: the rows of the full computation
        torch.testing.assert_close(block.attn(h, model.encoding, last), output[:, 5:], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model(tokens, outputs=3), model(tokens)[:, 5:], rtol=1e-5, atol=1e-6)


def test_decoder_is_causal(copy_task):
    """Changing a later token never changes earlier logits."""
    for name in all_encoding_names():
        model = make_model(name, "decoder", copy_task).eval()
        tokens = torch.randint(0, 10, (2, 10))
        changed = tokens.clone()
        changed[:, 6:] = (changed[:, 6:] + 1) % 10
        pos = model.encoding.positions(2, 10, "cpu")  # the same positions for both passes
        torch.testing.assert_close(model(tokens, pos=pos)[:, :6], model(changed, pos=pos)[:, :6], msg=name)


def test_parameter_counts(copy_task):
    plain = make_model("none", "decoder", copy_task)
    learned = make_model("learned", "decoder", copy_task, max_len=64)
    assert plain.encoding_parameters() == 0
    assert learned.encoding_parameters() == 64 * D_MODEL
    assert learned.num_parameters() == plain.num_parameters() + 64 * D_MODEL


def test_evaluate_rows_and_shuffled_condition(copy_task):
    model = make_model("rope", "decoder", copy_task)
    rows = evaluate(model, copy_task, [3, 5], n_examples=10, batch_size=4, conditions=("original", "shuffled"))
    assert [(r["eval_len"], r["condition"]) for r in rows] == [
        (3, "original"), (3, "shuffled"), (5, "original"), (5, "shuffled")
    ]
    for row in rows:
        assert 0 <= row["token_acc"] <= 1 and 0 <= row["seq_acc"] <= row["token_acc"] + 1e-9
        assert row["n"] == 10 and row["loss"] > 0


@pytest.fixture(scope="module")
def perfect_copier(copy_task) -> Transformer:
    """A decoder trained until it copies inputs of length 3 perfectly (a few seconds)."""
    model = make_model("rope", "decoder", copy_task, seed=0)
    train(model, copy_task, TrainConfig(steps=400, batch_size=32, lr=3e-3, warmup_steps=20, train_min_len=3,
                                        train_max_len=3, seed=0))
    return model


def test_evaluate_is_deterministic_and_greedy_matches_teacher_when_perfect(copy_task, perfect_copier):
    teacher = evaluate(perfect_copier, copy_task, [3], n_examples=64)
    assert teacher == evaluate(perfect_copier, copy_task, [3], n_examples=64)
    assert teacher[0]["token_acc"] == teacher[0]["seq_acc"] == 1.0  # the model is perfect under teacher forcing
    greedy = evaluate(perfect_copier, copy_task, [3], n_examples=64, decoding="greedy")
    # fed its own (correct) predictions, a perfect model sees the teacher's inputs: the same row
    assert greedy[0]["decoding"] == "greedy"
    assert {**greedy[0], "decoding": "teacher"} == teacher[0]


def test_evaluate_rejects_unknown_condition(copy_task):
    model = make_model("none", "encoder", copy_task)
    with pytest.raises(ValueError, match="unknown condition"):
        evaluate(model, copy_task, [4], conditions=("reversed",))


def test_shuffled_scores_against_original_targets():
    """A model that has learned copy perfectly loses accuracy when inputs are shuffled."""

    class Oracle(torch.nn.Module):
        # Predicts the next input token of the rendered sequence: a perfect copier.
        def __init__(self):
            super().__init__()
            self.config = ModelConfig(vocab_size=12, arch="decoder", d_model=4, n_heads=1)
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, tokens):
            n, length = tokens.shape
            source_len = (length + 0) // 2
            logits = torch.zeros(n, length, 12)
            for t in range(source_len, length):
                logits[torch.arange(n), t, tokens[:, t - source_len]] = 1.0
            return logits

    task = tasks.get("copy")
    rows = evaluate(Oracle(), task, [8], n_examples=64, conditions=("original", "shuffled"))
    assert rows[0]["token_acc"] == 1.0 and rows[0]["seq_acc"] == 1.0
    assert rows[1]["token_acc"] < 0.5


# --------------------------------------------------------------------------- flat-parameter AdamW


def _loss(model, tokens, labels):
    logits = model(tokens)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=tasks.IGNORE)


def test_flat_adamw_equals_per_parameter_adamw(copy_task):
    """Flat fused AdamW + flat clipping against the textbook per-parameter AdamW and clip_grad_norm_.

    Both optimizers get the same gradients every step (the reference model's, copied into the flat
    model's flat gradient buffers), so their outputs differ by the rounding of each step's update only:
    gradients computed from each model's own, slightly different, weights would let AdamW amplify
    rounding in near-zero gradients (see :func:`assert_adam_trained_close`). That the flat model's
    own backward pass fills its flat gradients is tested below.
    """
    from pebench.learn.train import decays, make_optimizer

    config = TrainConfig(steps=25, batch_size=8, train_max_len=8, lr=3e-3, weight_decay=0.1, warmup_steps=5)
    reference, flat_model = make_model("t5", "decoder", copy_task), make_model("t5", "decoder", copy_task)
    groups = [
        {"params": [p for n, p in reference.named_parameters() if decays(n, p)], "weight_decay": config.weight_decay},
        {"params": [p for n, p in reference.named_parameters() if not decays(n, p)], "weight_decay": 0.0},
    ]
    torch_adamw = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-8)
    optimizer, flat = make_optimizer(flat_model, config)
    generator = torch.Generator().manual_seed(0)
    clip, clipped = 0.5, 0
    for step in range(config.steps):
        tokens, labels = tasks.render(copy_task, copy_task.sample(8, 1 + step % 8, generator), "decoder")
        for group in torch_adamw.param_groups + optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        torch_adamw.zero_grad(set_to_none=True)
        _loss(reference, tokens, labels).backward()
        flat.zero_grad()
        _loss(flat_model, tokens, labels).backward()  # allocates nothing: the gradients are flat views
        with torch.no_grad():
            for a, b in zip(reference.parameters(), flat_model.parameters(), strict=True):
                b.grad.copy_(a.grad)
        norm = float(torch.nn.utils.clip_grad_norm_(list(reference.parameters()), clip))
        clipped += norm > clip
        flat_norm = flat.clip_grad_norm_(clip)
        torch_adamw.step()
        optimizer.step()
        # one sum of squares in another order: rounding only
        assert float(flat_norm) == pytest.approx(norm, rel=1e-5)
    assert clipped > 0  # the clipping path was exercised
    for (name, a), b in zip(reference.named_parameters(), flat_model.parameters(), strict=True):
        # 25 updates of at most lr each, each rounded differently (fused kernel vs foreach): ~1e-8
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=name)
    initial = make_model("t5", "decoder", copy_task)
    assert all(not torch.equal(a, b) for a, b in zip(initial.parameters(), flat_model.parameters(), strict=True))


def test_flat_parameters_are_views_of_the_flat_buffers(copy_task):
    from pebench.learn.train import FlatParameters, decays

    model = make_model("learned", "decoder", copy_task)
    named = dict(model.named_parameters())
    flat = FlatParameters(model)
    assert flat.decay == [True, False]
    assert flat.params[0].numel() == sum(p.numel() for n, p in named.items() if decays(n, p))
    assert sum(p.numel() for p in flat.params) == model.num_parameters()
    assert dict(model.named_parameters()) == named  # the same Parameter objects
    with torch.no_grad():
        flat.params[0].zero_()
    assert float(model.blocks[0].attn.qkv.weight.detach().abs().sum()) == 0.0  # a decayed matrix
    tokens, labels = tasks.render(copy_task, copy_task.sample(4, 5, torch.Generator().manual_seed(1)), "decoder")
    model(tokens).sum().backward()
    table_grad = model.encoding.table.weight.grad  # no decay: lives in the second flat gradient
    assert table_grad.untyped_storage().data_ptr() == flat.grads[1].untyped_storage().data_ptr()
    assert float(flat.grads[1].abs().sum()) > 0
    flat.zero_grad()
    assert float(sum(g.abs().sum() for g in flat.grads)) == 0.0
    assert float(model.head.weight.grad.abs().sum()) == 0.0


def test_flat_parameters_reject_mixed_dtypes(copy_task):
    from pebench.learn.train import FlatParameters

    model = make_model("none", "decoder", copy_task)
    model.head.double()
    with pytest.raises(ValueError, match="one dtype and device"):
        FlatParameters(model)
