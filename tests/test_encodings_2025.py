"""The field of 2025-26 (issue 64): FoX, stick-breaking attention, SSMax, NoPE/RoPE interleaves, PoPE, Canon layers.

Each mechanism against a transcription of its reference implementation (written here from the reference's
formula, named in each test) or hand-derived values, its defining properties, a few training steps in every
architecture where it is defined, and seed-batched training equal to separate runs.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from test_batched import assert_adam_trained_close

from pebench import encodings, tasks
from pebench.learn.batched import train_batched
from pebench.learn.train import TrainConfig, train
from pebench.model import AttentionInputs, ModelConfig, attend, attention_probabilities, build_model, causal_mask

D_MODEL, N_HEADS, HEAD_DIM = 16, 2, 8
NEW = ("fox", "stick_breaking", "ssmax", "irope", "pope", "canon")


def config(arch: str, n_layers: int = 2, vocab_size: int = 12) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, arch=arch, d_model=D_MODEL, n_layers=n_layers, n_heads=N_HEADS)


def qkv(batch: int = 2, length: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, N_HEADS, length, HEAD_DIM, generator=generator) for _ in range(3))


def inputs(length: int, causal: bool) -> AttentionInputs:
    pos = torch.arange(length)
    return AttentionInputs(q_pos=pos, k_pos=pos, mask=None, is_causal=causal)


def logits_of(tokens: torch.Tensor, model) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(tokens)


def tokens(length: int = 7, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 12, (3, length), generator=torch.Generator().manual_seed(seed))


# ---- registry ------------------------------------------------------------------------------------------------


def test_new_mechanisms_are_registered_with_their_kind_and_family():
    kinds = {name: encodings.meta(name)["kind"] for name in NEW}
    assert kinds == {"fox": "gate", "stick_breaking": "softmax", "ssmax": "softmax", "irope": "architectural",
                     "pope": "rotary", "canon": "architectural"}
    assert set(encodings.KIND_FAMILIES) == set(encodings.KINDS)
    assert {encodings.KIND_FAMILIES[kind] for kind in kinds.values()} == {
        "data-dependent", "softmax-level", "architectural", "rotary"}
    assert [name for name in NEW if encodings.meta(name)["causal_only"]] == ["fox", "stick_breaking"]
    assert encodings.wraps("ssmax") and encodings.wraps("randomized") and not encodings.wraps("fox")


@pytest.mark.parametrize("name", ["fox", "stick_breaking"])
def test_causal_only_mechanisms_refuse_the_encoder(name):
    with pytest.raises(ValueError, match="causal attention only.*decoder"):
        build_model(config("encoder"), name, max_len=16, seed=0)


def test_existing_encodings_keep_the_fused_path_and_one_view():
    for name in ("none", "rope", "alibi", "t5", "randomized:rope"):
        pe = encodings.build(name, d_model=D_MODEL, n_heads=N_HEADS, max_len=16, n_layers=2)
        assert not pe.explicit_attention and not pe.uses_mix and pe.for_layer(1) is pe
        assert "n_layers" not in pe.resolved_options() and "n_layers" not in encodings.options(name)


def test_model_refuses_an_encoding_built_for_other_depth():
    pe = encodings.build("fox", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True, n_layers=3)
    with pytest.raises(ValueError, match="n_layers=3"):
        from pebench.model import Transformer

        Transformer(config("decoder", n_layers=2), pe)


# ---- FoX -----------------------------------------------------------------------------------------------------


def naive_forgetting_attn(q, k, v, g, scale):
    """fla ``naive_forgetting_attn`` transcribed: q, k, v (B, T, H, D), g (B, T, H) log forget gates."""
    T = q.shape[1]
    gc = g.float().cumsum(1)  # (B, T, H)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    gc = gc.permute(0, 2, 1)  # (B, H, T)
    scores = scores + gc[..., :, None] - gc[..., None, :]
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)


def test_fox_equals_the_fla_naive_reference():
    torch.manual_seed(0)
    view = encodings.build("fox", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True, n_layers=1).for_layer(0)
    with torch.no_grad():
        view.gate.bias.fill_(1.0)  # gates near 0.7: decays that matter over 6 keys
    q, k, v = qkv(length=6)
    x = torch.randn(2, 6, D_MODEL, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = attend(q, k, v, view, inputs(6, causal=True), x=x)  # (B, H, T, Dh)
        g = view.log_forget(x).transpose(1, 2)  # (B, T, H)
        reference = naive_forgetting_attn(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), g,
                                          HEAD_DIM ** -0.5).transpose(1, 2)
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-6)  # float32: the same sums in another order


def test_fox_with_every_gate_one_is_nope():
    fox = build_model(config("decoder"), "fox", max_len=16, seed=3)
    with torch.no_grad():
        for layer in fox.encoding.layers:
            layer.gate.weight.zero_()
            layer.gate.bias.fill_(1e4)  # log sigmoid(1e4) is 0 in float32: f = 1
    nope = build_model(config("decoder"), "none", max_len=16, seed=3)
    # explicit softmax against SDPA's fused kernel: float32 rounding
    torch.testing.assert_close(logits_of(tokens(), fox), logits_of(tokens(), nope), rtol=0, atol=1e-5)


def test_fox_decay_is_the_product_of_the_gates_in_between():
    view = encodings.build("fox", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True, n_layers=1).for_layer(0)
    with torch.no_grad():
        view.gate.weight.zero_()
        view.gate.bias.fill_(math.log(0.5 / 0.5))  # f = sigmoid(0) = 1/2 everywhere
    logits = torch.zeros(1, N_HEADS, 3, 3) + causal_mask(3, "cpu")
    weights = view.attention_weights(logits, torch.zeros(1, 3, D_MODEL), torch.arange(3), torch.arange(3))
    # query 2 weighs keys 0, 1, 2 as 1/4, 1/2, 1, normalised: hand-derived
    expected = torch.tensor([0.25, 0.5, 1.0]) / 1.75
    torch.testing.assert_close(weights[0, 0, 2], expected, rtol=0, atol=1e-6)  # float32 rounding


# ---- stick-breaking ------------------------------------------------------------------------------------------


def stickbreaking_reference(q, k, v):
    """shawntan/stickbreaking-attention ``sb_ref.stickbreaking`` transcribed, with its mask and cum_weight."""
    T = q.shape[-2]
    mask = torch.ones(T, T).triu(0).bool()
    cum_weight = torch.ones(T, T).tril(-1)
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    log_z = F.logsigmoid(logits).masked_fill(mask, -1e5)
    log_beta = F.logsigmoid(-logits).masked_fill(mask, 0)
    re_cum_log_beta = torch.einsum("bhij,jk->bhik", log_beta, cum_weight)
    att = (log_z + re_cum_log_beta).exp()
    return att @ v, 1 - att.sum(dim=-1)


def test_stick_breaking_equals_the_reference():
    sb = encodings.build("stick_breaking", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True)
    q, k, v = qkv(length=7)
    reference, _ = stickbreaking_reference(q, k, v)
    ours = attend(q, k, v, sb, inputs(7, causal=True))
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-6)  # float32: cumsum against einsum


def test_stick_breaking_hand_derived_weights():
    sb = encodings.build("stick_breaking", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True)
    z = torch.tensor([[0.3, -1.0, 2.0]])  # query 2's logits for keys 0, 1, 2
    logits = torch.zeros(1, 1, 3, 3)
    logits[0, 0, 2] = z
    logits = logits + causal_mask(3, "cpu")
    weights = sb.attention_weights(logits, None, torch.arange(3), torch.arange(3))[0, 0, 2]
    s = torch.sigmoid(z[0])
    torch.testing.assert_close(weights, torch.stack([s[0] * (1 - s[1]), s[1], torch.tensor(0.0)]),
                               rtol=0, atol=1e-7)  # float32 rounding of exp(log)
    sb.attend_self = True  # the diagonal first: A_22 = s_2, A_21 = s_1 (1 - s_2), A_20 = s_0 (1 - s_1)(1 - s_2)
    weights = sb.attention_weights(logits, None, torch.arange(3), torch.arange(3))[0, 0, 2]
    torch.testing.assert_close(weights, torch.stack([s[0] * (1 - s[1]) * (1 - s[2]), s[1] * (1 - s[2]), s[2]]),
                               rtol=0, atol=1e-7)  # float32 rounding of exp(log)


def test_stick_breaking_weights_sum_to_at_most_one_and_prefer_the_recent_key():
    sb = encodings.build("stick_breaking", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=True)
    logits = 4 * torch.randn(3, N_HEADS, 9, 9, generator=torch.Generator().manual_seed(0)) + causal_mask(9, "cpu")
    weights = sb.attention_weights(logits, None, torch.arange(9), torch.arange(9))
    assert float(weights.min()) >= 0 and float(weights.sum(-1).max()) <= 1 + 1e-6  # float32 rounding of the sum
    for z in (-3.0, 0.0, 2.5):
        equal = torch.full((1, 1, 3, 3), z) + causal_mask(3, "cpu")  # query 2: keys 0 and 1 with equal logits
        shares = sb.attention_weights(equal, None, torch.arange(3), torch.arange(3))[0, 0, 2]
        assert shares[1] > shares[0] > 0


# ---- SSMax ---------------------------------------------------------------------------------------------------


def scalable_softmax_reference(x, s):
    """gdevos010/Scalable-Softmax ``ScalableSoftmax.forward`` transcribed: softmax(s * log(n) * x), n = row size."""
    return F.softmax(s * math.log(x.size(-1)) * x, dim=-1)


def test_ssmax_equals_the_reference_in_an_encoder_and_the_paper_in_a_decoder():
    scales = torch.tensor([0.43, 1.7])
    q, k, _ = qkv(length=6)
    plain = q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM)  # (B, H, T, T)
    for causal in (False, True):
        view = encodings.build("ssmax:none", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, causal=causal,
                               n_layers=1).for_layer(0)
        with torch.no_grad():
            view.scale.copy_(scales)
        scaled_q, scaled_k = view.rotate(q, k, torch.arange(6), torch.arange(6))
        ours = attention_probabilities(scaled_q, scaled_k, view, inputs(6, causal))
        if not causal:
            expected = torch.stack([scalable_softmax_reference(plain[:, h], float(scales[h])) for h in range(2)], 1)
        else:  # query i attends n = i + 1 keys (the reference's n is the whole row, which is the encoder's)
            n = torch.arange(1, 7, dtype=torch.float32).view(1, 1, 6, 1)
            expected = (scales.view(1, 2, 1, 1) * n.log() * plain + causal_mask(6, "cpu")).softmax(-1)
        torch.testing.assert_close(ours, expected, rtol=0, atol=1e-6)  # float32: scale on q, not on the logits


def test_ssmax_with_s_log_n_one_is_softmax():
    length = 7
    ssmax = build_model(config("encoder"), "ssmax:none", max_len=16, seed=4)
    with torch.no_grad():
        for layer in ssmax.encoding.layers:
            layer.scale.fill_(1 / math.log(length))
    nope = build_model(config("encoder"), "none", max_len=16, seed=4)
    # s log n = 1 up to float32 rounding of 1 / log 7 times log 7
    torch.testing.assert_close(logits_of(tokens(length), ssmax), logits_of(tokens(length), nope), rtol=0, atol=1e-5)


# ---- NoPE/RoPE interleave ------------------------------------------------------------------------------------


def llama4_attn_scales(positions, floor_scale, attn_scale):
    """HF ``Llama4TextAttention`` temperature tuning transcribed: log1p(floor((p + 1) / floor_scale)) * a + 1."""
    return torch.log1p(torch.floor((positions.float() + 1.0) / floor_scale)) * attn_scale + 1.0


def test_irope_layers_and_temperature_follow_llama4():
    pe = encodings.build("irope", d_model=D_MODEL, n_heads=N_HEADS, max_len=64, train_len=8, n_layers=8)
    assert [pe.is_nope(i) for i in range(8)] == [False, False, False, True] * 2  # no_rope_layers, interval 4
    assert pe.temperature_length == 8  # c: the training context
    pos = torch.arange(40)
    torch.testing.assert_close(pe.nope.query_scale(pos), llama4_attn_scales(pos, 8, 0.1), rtol=0, atol=0)
    assert float(pe.nope.query_scale(torch.tensor([6]))) == 1.0  # hand-derived: floor(7 / 8) = 0
    assert math.isclose(float(pe.nope.query_scale(torch.tensor([23]))), 1 + 0.1 * math.log(4), rel_tol=1e-6)
    q, k, _ = qkv(length=40)
    scaled, same = pe.for_layer(3).rotate(q, k, pos, pos)
    assert same is k
    torch.testing.assert_close(scaled, q * llama4_attn_scales(pos, 8, 0.1).view(40, 1), rtol=0, atol=0)


@pytest.mark.parametrize("arch", ["decoder", "encoder"])
def test_irope_with_k_one_is_nope_and_without_nope_layers_is_rope(arch):
    length = 7  # below the temperature length 16: the NoPE blocks' scale is exactly 1
    every_nope = build_model(config(arch), "irope", max_len=32, train_len=16, seed=5, nope_every=1)
    nope = build_model(config(arch), "none", max_len=32, train_len=16, seed=5)
    torch.testing.assert_close(logits_of(tokens(length), every_nope), logits_of(tokens(length), nope),
                               rtol=0, atol=0)  # the same computation
    no_nope = build_model(config(arch), "irope", max_len=32, train_len=16, seed=5, nope_every=0)
    rope = build_model(config(arch), "rope", max_len=32, train_len=16, seed=5)
    torch.testing.assert_close(logits_of(tokens(length), no_nope), logits_of(tokens(length), rope), rtol=0, atol=0)
    mixed = build_model(config(arch), "irope", max_len=32, train_len=16, seed=5, nope_every=2)
    assert not torch.allclose(logits_of(tokens(length), mixed), logits_of(tokens(length), rope))


# ---- PoPE ----------------------------------------------------------------------------------------------------


def pope_reference(q, k, pos, bias, theta=10000.0):
    """lucidrains/PoPE-pytorch ``PoPE.forward`` + ``apply_pope_to_qk`` transcribed (full rotation, real output)."""
    dim = q.shape[-1]
    inv_freqs = theta ** -(torch.arange(dim).float() / dim)
    freqs = pos.float()[:, None] * inv_freqs  # (T, D)
    bias = bias.clamp(-2.0 * math.pi, 0.0)
    freqs_with_bias = freqs + bias[:, None, :]  # (H, T, D)
    q, k = F.softplus(q), F.softplus(k)
    q = torch.stack([q * freqs.cos(), q * freqs.sin()], dim=-1).flatten(-2)  # 'two ... d -> ... (d two)'
    k = torch.stack([k * freqs_with_bias.cos(), k * freqs_with_bias.sin()], dim=-1).flatten(-2)
    return q, k


def pope_view(n_layers: int = 1):
    pe = encodings.build("pope", d_model=D_MODEL, n_heads=N_HEADS, max_len=64, n_layers=n_layers)
    view = pe.for_layer(0)
    with torch.no_grad():  # in range, below -2 pi and above 0: the clamp is exercised
        view.delta.copy_(torch.linspace(-8.0, 1.0, N_HEADS * HEAD_DIM).view(N_HEADS, HEAD_DIM))
    return view


def test_pope_equals_the_reference_and_the_paper_logit():
    view = pope_view()
    q, k, _ = qkv(length=6)
    pos = torch.arange(6)
    ours_q, ours_k = view.rotate(q, k, pos, pos)
    ref_q, ref_k = pope_reference(q, k, pos, view.delta.detach())
    torch.testing.assert_close(ours_q / math.sqrt(2), ref_q, rtol=0, atol=1e-6)  # float32 rounding of sqrt(2)
    torch.testing.assert_close(ours_k, ref_k, rtol=0, atol=0)
    logits = ours_q @ ours_k.transpose(-1, -2) / math.sqrt(2 * HEAD_DIM)  # what the model computes
    theta_c = 10000.0 ** -(torch.arange(HEAD_DIM).float() / HEAD_DIM)
    delta = view.delta.detach().clamp(-2 * math.pi, 0)  # (H, Dh)
    offset = (pos[:, None] - pos[None, :]).float()[..., None] * theta_c  # (T, T, Dh): (t - s) theta_c
    paper = (F.softplus(q)[:, :, :, None, :] * F.softplus(k)[:, :, None, :, :]
             * torch.cos(offset - delta[:, None, None, :])).sum(-1) / math.sqrt(HEAD_DIM)
    torch.testing.assert_close(logits, paper, rtol=0, atol=1e-5)  # float32: cos(a - b) against its expansion


def test_pope_logits_depend_on_positions_only_through_their_difference():
    view = pope_view()
    q, k, _ = qkv(length=6)
    pos = torch.arange(6)
    base = torch.matmul(*view.rotate(q, k, pos, pos)[:1], view.rotate(q, k, pos, pos)[1].transpose(-1, -2))
    for shift in (3, 17):
        shifted_q, shifted_k = view.rotate(q, k, pos + shift, pos + shift)
        # float32 angles at larger positions: sin/cos of t theta rounded
        torch.testing.assert_close(shifted_q @ shifted_k.transpose(-1, -2), base, rtol=0, atol=1e-4)


# ---- Canon ---------------------------------------------------------------------------------------------------


def test_canon_is_the_residual_causal_depthwise_sum():
    pe = encodings.build("canon", d_model=D_MODEL, n_heads=N_HEADS, max_len=16, n_layers=1, kernel_size=3)
    view = pe.for_layer(0)
    x = torch.randn(2, 6, D_MODEL, generator=torch.Generator().manual_seed(2))
    weight = view.conv.weight.detach()[:, 0]  # (D, K)
    expected = x.clone()
    for t in range(6):  # hand-derived: h_t + sum_j w_{c,j} h_{t-j}, w_{c,j} = weight[c, K - 1 - j]
        for j in range(3):
            if t - j >= 0:
                expected[:, t] += weight[:, 2 - j] * x[:, t - j]
    torch.testing.assert_close(view.mix(x), expected, rtol=0, atol=1e-6)  # float32: conv sums in another order


@pytest.mark.parametrize("arch", ["decoder", "encoder"])
def test_canon_with_zero_convolutions_is_nope_and_otherwise_orders_the_encoder(arch):
    canon = build_model(config(arch), "canon", max_len=16, seed=6)
    nope = build_model(config(arch), "none", max_len=16, seed=6)
    trained_weights = [layer.conv.weight.detach().clone() for layer in canon.encoding.layers]
    with torch.no_grad():
        for layer in canon.encoding.layers:
            layer.conv.weight.zero_()
    torch.testing.assert_close(logits_of(tokens(), canon), logits_of(tokens(), nope), rtol=0, atol=0)
    with torch.no_grad():
        for layer, weight in zip(canon.encoding.layers, trained_weights, strict=True):
            layer.conv.weight.copy_(weight)
    if arch == "encoder":  # NoPE's encoder is permutation-equivariant; a causal convolution is not
        x = tokens()
        perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
        for model, equivariant in ((nope, True), (canon, False)):
            out = logits_of(x, model)
            assert torch.allclose(logits_of(x[:, perm], model), out[:, perm], atol=1e-5) is equivariant


# ---- training ------------------------------------------------------------------------------------------------


TRAINED = [("fox", "decoder", {}), ("stick_breaking", "decoder", {}), ("ssmax:rope", "decoder", {}),
           ("ssmax:none", "encoder", {}), ("irope", "decoder", {"nope_every": 2}),
           ("irope", "encoder", {"nope_every": 2}), ("pope", "decoder", {}), ("pope", "encoder", {}),
           ("canon", "decoder", {}), ("canon", "encoder", {"rotary_fraction": 0.5})]


@pytest.fixture(scope="module")
def copy_task() -> tasks.Task:
    return tasks.get("copy")


def make(name: str, arch: str, options: dict, task: tasks.Task, seed: int):
    model_config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch=arch, d_model=D_MODEL, n_heads=N_HEADS)
    return build_model(model_config, name, max_len=32, train_len=20, seed=seed, **options)


@pytest.mark.parametrize(("name", "arch", "options"), TRAINED)
def test_trains_a_few_steps(name, arch, options, copy_task):
    model = make(name, arch, options, copy_task, seed=0)
    before = {key: value.clone() for key, value in model.encoding.state_dict().items()}
    result = train(model, copy_task, TrainConfig(steps=5, batch_size=8, train_max_len=6, warmup_steps=1, seed=0))
    assert result.status == "ok" and result.steps_done == 5
    assert all(math.isfinite(loss) for loss in result.losses)
    if encodings.meta(name)["has_parameters"]:  # the mechanism's own parameters are trained
        after = model.encoding.state_dict()
        assert any(not torch.equal(before[key], after[key]) for key in before)


SEEDS = (0, 1, 2)
BATCHED = [("fox", "decoder", {}), ("stick_breaking", "decoder", {}), ("ssmax:rope", "decoder", {}),
           ("irope", "decoder", {"nope_every": 2}), ("pope", "encoder", {}), ("canon", "encoder", {})]


@pytest.mark.parametrize(("name", "arch", "options"), BATCHED)
def test_batched_equals_separate_runs(name, arch, options, copy_task):
    configs = [TrainConfig(steps=6, batch_size=8, train_max_len=6, warmup_steps=2, seed=s, length_seed=11)
               for s in SEEDS]
    separate_models = [make(name, arch, options, copy_task, seed) for seed in SEEDS]
    separate = [train(model, copy_task, c) for model, c in zip(separate_models, configs, strict=True)]
    batched_models = [make(name, arch, options, copy_task, seed) for seed in SEEDS]
    batched = train_batched(batched_models, copy_task, configs)
    for one, many, model_a, model_b in zip(separate, batched, separate_models, batched_models, strict=True):
        assert many.status == one.status == "ok" and many.steps_done == one.steps_done
        # the losses are means over every output token of a step: bmm against mm rounding moves them ~1e-7
        torch.testing.assert_close(torch.tensor(many.losses), torch.tensor(one.losses), rtol=1e-4, atol=1e-5)
        assert_adam_trained_close(model_b, model_a, configs[0].lr, configs[0].steps)
