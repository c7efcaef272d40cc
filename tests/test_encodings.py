"""Positional encodings: golden values against the papers' formulas / reference code, and invariances."""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import pytest
import torch

from pebench import encodings
from pebench.encodings.alibi import alibi_slopes
from pebench.encodings.base import PositionalEncoding, PositionCache, cache_key, with_cache_key
from pebench.encodings.t5 import T5RelativeBias, relative_position_bucket
from pebench.protocol import SUITE_ENCODINGS
from pebench.registry import UnknownNameError

D_MODEL, N_HEADS, MAX_LEN = 16, 4, 64
HEAD_DIM = D_MODEL // N_HEADS


@functools.cache
def refuses_the_encoder(name: str) -> bool:
    """Whether encoding ``name`` (or one it wraps) is causal-only and refuses to be built for an encoder (fox)."""
    try:
        with torch.random.fork_rng():  # a probe: the caller's seeded build draws what it would draw without it
            encodings.build(name, d_model=D_MODEL, n_heads=N_HEADS, max_len=MAX_LEN, causal=False)
    except ValueError as error:
        return "causal attention only" in str(error)
    return False


def build(name: str, **options):
    """``encodings.build`` at the test sizes; causal where the encoding refuses the encoder, unless asked (a skip)."""
    if "causal" not in options:
        options["causal"] = refuses_the_encoder(name)
    elif not options["causal"] and refuses_the_encoder(name):
        pytest.skip(f"{name} refuses the encoder (tests/test_encodings_2025.py tests the error)")
    return encodings.build(name, d_model=options.pop("d_model", D_MODEL), n_heads=options.pop("n_heads", N_HEADS),
                           max_len=options.pop("max_len", MAX_LEN), **options)


def qk(batch: int = 2, heads: int = N_HEADS, length: int = 6, head_dim: int = HEAD_DIM, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length, head_dim, generator=generator)
    k = torch.randn(batch, heads, length, head_dim, generator=generator)
    return q, k


def scores(pe, q, k, q_pos, k_pos):
    q, k = pe.rotate(q, k, q_pos, k_pos)
    return q @ k.transpose(-1, -2)  # (B, H, Tq, Tk)


# ---------------------------------------------------------------- sinusoidal


def test_sinusoidal_matches_the_formula():
    pe = build("sinusoidal", d_model=32)
    pos = torch.arange(5, 70)
    table = pe.table(pos).double()
    expected = torch.empty(len(pos), 32, dtype=torch.float64)
    for i in range(16):
        angle = pos.double() / 10000 ** (2 * i / 32)
        expected[:, 2 * i], expected[:, 2 * i + 1] = torch.sin(angle), torch.cos(angle)
    torch.testing.assert_close(table, expected, atol=2e-5, rtol=0)


def test_sinusoidal_toy_values():
    pe = build("sinusoidal", d_model=4, n_heads=1)
    row = pe.table(torch.tensor([1]))[0]
    torch.testing.assert_close(row, torch.tensor([0.841, 0.540, 0.010, 1.000]), atol=5e-4, rtol=0)
    expected = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    torch.testing.assert_close(row, torch.tensor(expected), atol=1e-6, rtol=0)


def test_sinusoidal_shift_is_a_rotation_of_each_frequency_pair():
    d_model, shift = 8, 7
    pe = build("sinusoidal", d_model=d_model, n_heads=1)
    pos = torch.arange(0, 30)
    now, later = pe.table(pos).double(), pe.table(pos + shift).double()
    for i in range(d_model // 2):
        angle = shift / 10000 ** (2 * i / d_model)
        rotation = torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]],
                                dtype=torch.float64)  # acts on (sin, cos)
        pair = now[:, 2 * i: 2 * i + 2]  # (T, 2)
        torch.testing.assert_close(pair @ rotation.T, later[:, 2 * i: 2 * i + 2], atol=1e-5, rtol=0)


def test_sinusoidal_embed_adds_the_table_for_batched_positions():
    pe = build("sinusoidal")
    x = torch.randn(2, 5, D_MODEL)
    pos = torch.tensor([[0, 1, 2, 3, 4], [3, 9, 10, 20, 40]])
    torch.testing.assert_close(pe.embed(x, pos), x + pe.table(pos))
    torch.testing.assert_close(pe.embed(x, pos)[1], x[1] + pe.table(pos[1]))


# ---------------------------------------------------------------- learned


def test_learned_adds_its_table_and_is_trainable():
    pe = build("learned")
    assert pe.table.weight.shape == (MAX_LEN, D_MODEL)
    assert 0.9 < pe.table.weight.std().item() < 1.1  # the token embeddings' scale: position as loud as content
    x = torch.zeros(1, 3, D_MODEL)
    torch.testing.assert_close(pe.embed(x, torch.tensor([0, 5, 63]))[0], pe.table.weight[[0, 5, 63]])


def test_learned_past_max_len_raises_a_clear_error():
    pe = build("learned", max_len=8)
    with pytest.raises(ValueError, match=r"max_len=8.*position 9.*max_len >= 10.*policy='clamp'"):
        pe.embed(torch.zeros(1, 10, D_MODEL), torch.arange(10))


def test_learned_clamp_policy_reuses_the_last_row():
    pe = build("learned", max_len=8, policy="clamp")
    out = pe.embed(torch.zeros(1, 10, D_MODEL), torch.arange(10))[0]
    torch.testing.assert_close(out[8], pe.table.weight[7])
    torch.testing.assert_close(out[9], pe.table.weight[7])
    torch.testing.assert_close(out[:8], pe.table.weight)


# ---------------------------------------------------------------- rope


def roformer_reference(x: torch.Tensor, pos: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """RoFormer Eq. 15 by hand: pair (x_2i, x_2i+1) as a complex number times exp(i m theta_i)."""
    head_dim = x.shape[-1]
    pairs = torch.complex(x[..., 0::2].double(), x[..., 1::2].double())  # (..., T, Dh/2)
    freqs = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = pos.double()[:, None] * freqs  # m theta_i
    rotated = pairs * torch.polar(torch.ones((), dtype=torch.float64), angles)  # times exp(i m theta_i)
    return torch.stack((rotated.real, rotated.imag), dim=-1).flatten(-2)


def test_rope_matches_the_roformer_formula():
    pe = build("rope", d_model=32, n_heads=2)
    q, k = qk(heads=2, length=9, head_dim=16)
    pos = torch.arange(3, 12)
    q_rot, k_rot = pe.rotate(q, k, pos, pos)
    torch.testing.assert_close(q_rot.double(), roformer_reference(q, pos), atol=1e-5, rtol=0)
    torch.testing.assert_close(k_rot.double(), roformer_reference(k, pos), atol=1e-5, rtol=0)


@pytest.mark.parametrize("options", [{}, {"layout": "half"}, {"rotary_fraction": 0.5},
                                     {"scaling": "yarn", "scaling_factor": 4.0}])
def test_rope_scores_depend_only_on_relative_offset(options):
    pe = build("rope", **options)
    q, k = qk(length=7)
    pos = torch.arange(7)
    torch.testing.assert_close(scores(pe, q, k, pos + 37, pos + 37), scores(pe, q, k, pos, pos), atol=1e-4, rtol=0)
    batched = torch.stack((pos, pos + 11))  # (B, T): per-row offsets
    shifted = scores(pe, q, k, batched, batched)
    torch.testing.assert_close(shifted, scores(pe, q, k, pos, pos), atol=1e-4, rtol=0)


def test_rope_layouts_agree_up_to_a_permutation_of_head_dims():
    interleaved, half = build("rope"), build("rope", layout="half")
    permutation = torch.cat((torch.arange(0, HEAD_DIM, 2), torch.arange(1, HEAD_DIM, 2)))  # (2i, 2i+1) -> (i, i+Dh/2)
    q, k = qk()
    pos = torch.arange(4, 10)
    q_i, k_i = interleaved.rotate(q, k, pos, pos)
    q_h, k_h = half.rotate(q[..., permutation], k[..., permutation], pos, pos)
    torch.testing.assert_close(q_h, q_i[..., permutation])
    torch.testing.assert_close(k_h, k_i[..., permutation])


def test_rope_partial_rotary_leaves_the_other_dims_untouched():
    pe = build("rope", d_model=32, n_heads=2, rotary_fraction=0.25)  # head_dim 16, rotate 4
    assert pe.rotary_dim == 4
    q, k = qk(heads=2, head_dim=16)
    pos = torch.arange(6) + 3
    q_rot, _ = pe.rotate(q, k, pos, pos)
    torch.testing.assert_close(q_rot[..., 4:], q[..., 4:], atol=0, rtol=0)
    torch.testing.assert_close(q_rot[..., :4].double(), roformer_reference(q[..., :4], pos), atol=1e-5, rtol=0)


@pytest.mark.parametrize("scaling", ["linear", "ntk", "yarn"])
def test_rope_scaling_at_factor_one_is_plain_rope(scaling):
    plain, scaled = build("rope"), build("rope", scaling=scaling, scaling_factor=1.0)
    q, k = qk()
    pos = torch.arange(6) * 9
    for a, b in zip(plain.rotate(q, k, pos, pos), scaled.rotate(q, k, pos, pos), strict=True):
        torch.testing.assert_close(a, b)


def test_rope_linear_scaling_is_plain_rope_at_interpolated_positions():
    plain, linear = build("rope"), build("rope", scaling="linear", scaling_factor=4.0)
    q, k = qk()
    pos = torch.arange(6) * 4
    for a, b in zip(linear.rotate(q, k, pos, pos), plain.rotate(q, k, pos // 4, pos // 4), strict=True):
        torch.testing.assert_close(a, b)


def test_rope_ntk_scaling_changes_the_base():
    head_dim, factor = 16, 8.0
    plain = build("rope", d_model=32, n_heads=2)
    ntk = build("rope", d_model=32, n_heads=2, scaling="ntk", scaling_factor=factor)
    base = 10000 * factor ** (head_dim / (head_dim - 2))
    expected = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    torch.testing.assert_close(ntk.inv_freq.double(), expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(ntk.inv_freq[0], plain.inv_freq[0])  # highest frequency kept
    torch.testing.assert_close(ntk.inv_freq[-1], plain.inv_freq[-1] / factor)  # lowest interpolated by s


def test_rope_yarn_blends_frequencies_and_scales_attention():
    factor = 4.0
    plain = build("rope", d_model=128, n_heads=2)  # head_dim 64
    yarn = build("rope", d_model=128, n_heads=2, scaling="yarn", scaling_factor=factor, original_max_len=2048)
    # ramp bounds for Dh=64, L=2048, theta=1e4: pair index floor(8.06) = 8 (beta_fast) and ceil(20.1) = 21 (beta_slow)
    torch.testing.assert_close(yarn.inv_freq[:9], plain.inv_freq[:9])
    torch.testing.assert_close(yarn.inv_freq[21:], plain.inv_freq[21:] / factor)
    between = yarn.inv_freq[9:21] / plain.inv_freq[9:21]
    assert torch.all((between < 1) & (between > 1 / factor)) and torch.all(between[1:] < between[:-1])
    mscale = 0.1 * math.log(factor) + 1
    assert yarn.attention_factor == pytest.approx(mscale)
    q, k = qk(heads=2, head_dim=64)
    zero = torch.zeros(6, dtype=torch.long)  # no rotation: only the temperature remains
    q_rot, k_rot = yarn.rotate(q, k, zero, zero)
    torch.testing.assert_close(q_rot, q * mscale)
    torch.testing.assert_close(q_rot @ k_rot.transpose(-1, -2), mscale**2 * (q @ k.transpose(-1, -2)))


def test_rope_state_loads_across_scaling_options():
    trained = build("rope")
    assert not list(trained.parameters()) and trained.state_dict() == {}
    build("rope", scaling="yarn", scaling_factor=4.0).load_state_dict(trained.state_dict())


def test_rope_keeps_the_dtype_of_q_and_k():
    q, k = qk()
    pos = torch.arange(6)
    q_rot, k_rot = build("rope").rotate(q.bfloat16(), k.bfloat16(), pos, pos)
    assert q_rot.dtype == k_rot.dtype == torch.bfloat16


def test_rope_cache_is_exact_and_follows_new_positions():
    pe = build("rope")
    q, k = qk()
    pos = with_cache_key(torch.arange(6), ("arange", 6, "cpu"))
    first = pe.rotate(q, k, pos, pos)[0]
    other = with_cache_key(torch.arange(6), ("arange", 6, "cpu"))  # another tensor with the key: cached tables
    torch.testing.assert_close(pe.rotate(q, k, other, other)[0], first, atol=0, rtol=0)
    pos += 5  # in place: the key lapses
    assert cache_key(pos) is None
    torch.testing.assert_close(pe.rotate(q, k, pos, pos)[0], build("rope").rotate(q, k, pos, pos)[0])
    with torch.inference_mode():  # inference tensors have no version counter: never keyed, never cached
        inference_pos = with_cache_key(torch.arange(6), ("arange", 6, "cpu"))
        assert cache_key(inference_pos) is None
        torch.testing.assert_close(pe.rotate(q, k, inference_pos, inference_pos)[0], first)


def test_position_cache_is_keyed_by_cache_keys_and_inference_mode():
    cache, calls = PositionCache(size=2), []

    def compute(pos):
        calls.append(pos)
        return pos * 2

    a = with_cache_key(torch.arange(3), "a")
    assert torch.equal(cache.get(a, compute), torch.arange(3) * 2)
    cache.get(with_cache_key(torch.arange(3), "a"), compute)  # same key, another tensor: a hit
    assert len(calls) == 1
    cache.get(torch.arange(3), compute)  # no key: computed every time
    cache.get(torch.arange(3), compute)
    assert len(calls) == 3
    with torch.inference_mode():
        cache.get(a, compute)  # an entry computed in inference mode is kept apart
    assert len(calls) == 4
    b = with_cache_key(torch.arange(4), "b")
    cache.get((a, b), lambda pair: compute(pair[1]))  # pairs of positions are keyed by both keys
    cache.get((b, a), lambda pair: compute(pair[1]))
    assert len(calls) == 6 and len(cache._entries) == 2  # size 2: the oldest entries went
    cache.clear()
    cache.get(a, compute)
    assert len(calls) == 7


def test_encoding_caches_are_cleared_by_moves_and_loads():
    pe = build("randomized:rope")
    generations = [pe.cache_generation, pe.inner.cache_generation]
    pe.double()
    pe.load_state_dict(pe.state_dict())
    assert pe.cache_generation == generations[0] + 2 and pe.inner.cache_generation >= generations[1] + 2
    pos = with_cache_key(torch.arange(5), "p")
    pe.inner.cos_sin(pos)
    assert len(pe.inner._cache._entries) == 1
    pe.clear_caches()  # also the wrapped encoding's
    assert len(pe.inner._cache._entries) == 0


# ---------------------------------------------------------------- alibi


def get_slopes(n):
    """The ALiBi reference ``get_slopes`` (ofirpress/attention_with_linear_biases), as the oracle."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2])


@pytest.mark.parametrize("n_heads", range(1, 33))
def test_alibi_slopes_equal_the_reference(n_heads):
    assert alibi_slopes(n_heads) == get_slopes(n_heads)


def test_alibi_slopes_for_8_12_16_heads():
    assert alibi_slopes(8) == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    twelve = [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256,
              0.7071067811865476, 0.3535533905932738, 0.1767766952966369, 0.08838834764831845]  # 2^-0.5 .. 2^-3.5
    assert alibi_slopes(12) == pytest.approx(twelve, rel=1e-15)
    assert alibi_slopes(16) == pytest.approx([2 ** (-0.5 * h) for h in range(1, 17)], rel=1e-15)


def test_alibi_causal_and_symmetric_bias_matrices():
    pos = torch.arange(4)
    past = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [2, 1, 0, 0], [3, 2, 1, 0]], dtype=torch.float32)
    causal = build("alibi", n_heads=8, d_model=32, causal=True).bias(pos, pos)  # head slopes 1/2, 1/4, ...
    assert causal.shape == (8, 4, 4) and causal.dtype == torch.float32
    torch.testing.assert_close(causal[0], -0.5 * past)
    torch.testing.assert_close(causal[7], -past / 256)
    symmetric = build("alibi", n_heads=8, d_model=32).bias(pos, pos)
    torch.testing.assert_close(symmetric[1], -0.25 * (past + past.T))
    offset = build("alibi", n_heads=8, d_model=32, past_offset=0.5).bias(pos, pos)
    torch.testing.assert_close(offset[0], -0.5 * (past + past.T) + 0.25 * (past > 0))


def test_alibi_uses_explicit_positions():
    pe = build("alibi", n_heads=8, d_model=32)
    pos = torch.tensor([[0, 3, 7], [10, 11, 30]])
    bias = pe.bias(pos, pos)  # (B, H, T, T)
    assert bias.shape == (2, 8, 3, 3)
    assert bias[0, 0, 2, 0].item() == -0.5 * 7 and bias[1, 0, 2, 1].item() == -0.5 * 19


# ---------------------------------------------------------------- t5


def hf_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """HF transformers ``T5Attention._relative_position_bucket``, as the oracle."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (16, 64), (64, 300)])
def test_t5_buckets_equal_the_reference(causal, num_buckets, max_distance):
    relative = torch.arange(-1000, 1001)
    ours = relative_position_bucket(relative, causal=causal, num_buckets=num_buckets, max_distance=max_distance)
    reference = hf_relative_position_bucket(relative, not causal, num_buckets, max_distance)
    assert torch.equal(ours, reference)


T5_BIDIRECTIONAL = {0: 0, -1: 1, -7: 7, -8: 8, -20: 10, -50: 13, -100: 15, -127: 15, -1000: 15,
                    1: 17, 7: 23, 8: 24, 20: 26, 50: 29, 100: 31, 1000: 31}
T5_CAUSAL = {0: 0, 5: 0, 1000: 0, -1: 1, -15: 15, -16: 16, -20: 17, -50: 24, -100: 30, -200: 31, -1000: 31}


@pytest.mark.parametrize(("causal", "known"), [(False, T5_BIDIRECTIONAL), (True, T5_CAUSAL)])
def test_t5_known_buckets(causal, known):
    # by hand, e.g. bidirectional -50: 8 + floor(log(50/8) / log(128/8) * 8) = 8 + floor(5.29) = 13;
    # causal -50: 16 + floor(log(50/16) / log(128/16) * 16) = 16 + floor(8.77) = 24
    relative = torch.tensor(list(known))
    assert relative_position_bucket(relative, causal=causal).tolist() == list(known.values())


def test_t5_buckets_are_monotone_log_spaced_and_capped():
    distance = torch.arange(0, 400)
    past = relative_position_bucket(-distance, causal=True)
    assert torch.all(past[1:] >= past[:-1])
    assert past[:16].tolist() == list(range(16))  # exact below num_buckets / 2
    assert torch.all(past[113:] == 31) and past[112] == 30  # 31 = [16 * 8^(15/16), inf): capped at max_distance
    widths = torch.bincount(past[16:128])[16:]  # distances per log bucket grow ~geometrically
    assert widths.tolist() == [3, 2, 3, 3, 4, 4, 5, 6, 6, 7, 8, 10, 10, 12, 14, 15]
    future = relative_position_bucket(distance, causal=False)
    assert torch.all(future[1:] >= future[:-1]) and future[0] == 0 and future[1] == 17


def test_t5_bias_is_the_bucket_lookup():
    pe = build("t5", causal=True)
    pos = torch.arange(5) + 3
    bias = pe.bias(pos, pos)
    assert bias.shape == (N_HEADS, 5, 5)
    buckets = relative_position_bucket(pos[None, :] - pos[:, None], causal=True)
    torch.testing.assert_close(bias, pe.relative_attention_bias.weight[buckets].permute(2, 0, 1) * pe.scale)


def test_t5_bias_starts_at_hf_init_scale_and_moves_sqrt_dh_faster():
    """The bias is the table times sqrt(Dh): its initial spread is HF's N(0, 1/D), and a unit step of
    the table (what Adam takes per step, times the learning rate) moves the bias by sqrt(Dh)."""
    d_model, n_heads = 256, 4
    torch.manual_seed(0)
    pe = T5RelativeBias(d_model, n_heads, 64, causal=True)
    assert pe.scale == math.sqrt(d_model // n_heads)
    values = pe.relative_attention_bias.weight.detach() * pe.scale
    assert abs(float(values.std()) - d_model**-0.5) < 0.2 * d_model**-0.5
    pos = torch.arange(4)
    before = pe.bias(pos, pos).clone()
    with torch.no_grad():
        pe.relative_attention_bias.weight += 1.0
    torch.testing.assert_close(pe.bias(pos, pos) - before, torch.full_like(before, pe.scale))


# ---------------------------------------------------------------- xpos


def torchscale_xpos(x, downscale, head_dim, scale_base=512):
    """The torchscale ``XPOS.forward`` formula (offset 0), as the oracle. x: (B, T, Dh)."""
    length = x.shape[1]
    scale_vector = (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim)
    min_pos = -length // 2
    scale = scale_vector ** (torch.arange(min_pos, length + min_pos).float() / scale_base)[:, None]  # (T, Dh/2)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim // 2) / (head_dim // 2)))
    angles = torch.arange(length).float()[:, None] * inv_freq
    sin, cos = torch.sin(angles), torch.cos(angles)
    if downscale:
        scale = 1 / scale
    sin, cos = (torch.repeat_interleave(t * scale, 2, dim=-1) for t in (sin, cos))
    rotated_pairs = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * cos + rotated_pairs * sin


@pytest.mark.parametrize("length", [7, 8])
def test_xpos_matches_torchscale(length):
    pe = build("xpos", d_model=32, n_heads=2)
    q, k = qk(batch=1, heads=2, length=length, head_dim=16)
    pos = torch.arange(length)
    q_rot, k_rot = pe.rotate(q, k, pos, pos)
    torch.testing.assert_close(q_rot[0, 1], torchscale_xpos(q[:, 1], False, 16)[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k_rot[0, 0], torchscale_xpos(k[:, 0], True, 16)[0], atol=1e-5, rtol=1e-5)


def test_xpos_scores_depend_only_on_relative_offset():
    pe = build("xpos")
    q, k = qk(length=8)
    pos = torch.arange(8)
    torch.testing.assert_close(scores(pe, q, k, pos + 300, pos + 300), scores(pe, q, k, pos, pos),
                               atol=1e-4, rtol=1e-4)


def test_xpos_score_decays_with_distance():
    pe = build("xpos", d_model=32, n_heads=2)  # head_dim 16
    content = torch.zeros(1, 1, 1, 16)
    content[..., 14] = 1.0  # the lowest-frequency pair: rotation hardly moves it, the decay dominates
    query_pos = torch.tensor([1000])
    key_pos = torch.arange(0, 1001, 50)
    q, k = pe.rotate(content, content.expand(1, 1, len(key_pos), 16), query_pos, key_pos)
    score = (q @ k.transpose(-1, -2))[0, 0, 0]  # keys from far (distance 1000) to near (0)
    assert torch.all(score[1:] > score[:-1])
    zeta = (14 + 0.4 * 16) / (1.4 * 16)
    assert score[0].item() / score[-1].item() == pytest.approx(zeta ** (1000 / 512) * math.cos(1000 * 1e4 ** -0.875),
                                                               rel=1e-4)


# ---------------------------------------------------------------- fire


def fire_reference(pe, length):
    """The FIRE appendix code (positions 0..T-1), with this module's parameters, as the oracle."""
    positions = torch.arange(length, dtype=torch.float)
    rel_distance = positions[:, None] - positions[None, :]
    threshold = torch.abs(pe.threshold_multiplier * pe.init_threshold)
    pos_normalizer = torch.max(positions, threshold)[:, None]
    rel_distance = torch.log(torch.abs(pe.c * rel_distance) + 1)
    pos_normalizer = torch.log(torch.abs(pe.c * pos_normalizer) + 1) + 1e-6
    return pe.mlp((rel_distance / pos_normalizer).unsqueeze(-1)).permute(2, 0, 1)


def test_fire_matches_the_reference_code():
    pe = build("fire", init_threshold=8.0)
    torch.testing.assert_close(pe.bias(torch.arange(20), torch.arange(20)), fire_reference(pe, 20))


def test_fire_threshold_defaults_to_the_training_context_not_the_capacity():
    pe = build("fire", max_len=4096, train_len=37)
    assert pe.init_threshold.item() == 37.0
    assert build("fire", max_len=96).init_threshold.item() == 96.0  # train_len None: max_len
    assert build("fire", max_len=4096, train_len=37, init_threshold=512.0).init_threshold.item() == 512.0


def test_fire_is_learnable():
    pe = build("fire")
    assert pe.bias(torch.arange(6), torch.arange(6)).shape == (N_HEADS, 6, 6)
    pe.bias(torch.arange(6), torch.arange(6)).square().sum().backward()
    for name, parameter in pe.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_fire_is_defined_far_beyond_training_length():
    pe = build("fire", max_len=16)
    far = torch.arange(0, 160, 3)
    bias = pe.bias(far, far)
    assert bias.shape == (N_HEADS, len(far), len(far)) and torch.isfinite(bias).all()
    batched = torch.stack((far, far + 7))
    assert pe.bias(batched, batched).shape == (2, N_HEADS, len(far), len(far))


# ---------------------------------------------------------------- randomized


def test_randomized_positions_are_sorted_unique_and_in_range():
    pe = build("randomized:rope", max_position=50)
    pe.train()
    pos = pe.positions(16, 30, "cpu")
    assert pos.shape == (16, 30) and pos.dtype == torch.int64
    assert torch.all(pos[:, 1:] > pos[:, :-1])  # sorted and unique
    assert pos.min() >= 0 and pos.max() < 50
    assert not torch.equal(pos[0], pos[1])  # one subset per example
    full = pe.positions(2, 50, "cpu")
    assert torch.equal(full, torch.arange(50).expand(2, 50))


def test_randomized_positions_are_deterministic_under_a_seed():
    pe = build("randomized:sinusoidal")
    torch.manual_seed(3)
    first = pe.positions(4, 10, "cpu")
    torch.manual_seed(3)
    assert torch.equal(first, pe.positions(4, 10, "cpu"))
    pe.generator = torch.Generator().manual_seed(3)
    own = pe.positions(4, 10, "cpu")
    pe.generator = torch.Generator().manual_seed(3)
    assert torch.equal(own, pe.positions(4, 10, "cpu"))


def test_randomized_eval_positions():
    random_eval = build("randomized:rope").eval()
    pos = random_eval.positions(3, 20, "cpu")  # the reference code samples at test time too
    assert pos.shape == (3, 20) and torch.all(pos[:, 1:] > pos[:, :-1])
    arange_eval = build("randomized:rope", eval_positions="arange").eval()
    assert torch.equal(arange_eval.positions(3, 20, "cpu"), torch.arange(20))
    assert build("randomized:rope", per_example=False).positions(3, 20, "cpu").shape == (20,)


def test_randomized_rejects_lengths_beyond_max_position():
    pe = build("randomized:rope", max_position=10)
    with pytest.raises(ValueError, match="max_position=10"):
        pe.positions(2, 11, "cpu")


def test_randomized_builds_its_base_with_max_position_and_options():
    pe = build("randomized:learned", max_position=200)
    assert pe.inner.table.weight.shape == (200, D_MODEL)
    x = torch.zeros(2, 30, D_MODEL)
    assert pe.embed(x, pe.positions(2, 30, "cpu")).shape == x.shape
    assert build("randomized:rope", base_options={"layout": "half"}).inner.layout == "half"


# ---------------------------------------------------------------- build errors


def test_unknown_name_suggests_close_names():
    with pytest.raises(UnknownNameError, match="Did you mean 'rope'"):
        build("ropee")


def test_unknown_option_lists_valid_options():
    with pytest.raises(ValueError, match=r"no option\(s\) base_freq.*valid options: theta=10000.0"):
        build("rope", base_freq=500.0)


@pytest.mark.parametrize("name", ["rope", "xpos"])
def test_odd_head_dim_fails_at_build(name):
    with pytest.raises(ValueError, match="even"):
        build(name, d_model=12, n_heads=4)  # head_dim 3


def test_odd_rotary_dims_fail_at_build():
    with pytest.raises(ValueError, match="rotary_fraction"):
        build("rope", rotary_fraction=0.75)  # head_dim 4 -> 3 rotated dims


def test_wrapper_syntax_errors():
    with pytest.raises(ValueError, match="'randomized:<base>'"):
        build("randomized")
    with pytest.raises(ValueError, match="does not wrap"):
        build("rope:alibi")
    with pytest.raises(ValueError, match="twice"):
        build("randomized:randomized:rope")


# ---------------------------------------------------------------- every encoding (the contract)
#
# Parametrised over the registry, so every new encoding file or plugin gets these tests: every
# registered encoding, and every wrapper around every other encoding.


def plain_encodings() -> list[str]:
    return [name for name in encodings.names() if not encodings.wraps(name)]


def every_encoding() -> list[str]:
    """Every plain encoding; randomized positions around each; every other wrapper around the first encoding of
    each kind (what such a wrapper changes is the attention's scale, the same for every base of a slot: one base
    per slot tests each path it passes on, and keeps the suite's time)."""
    plain = plain_encodings()
    per_kind = list({encodings.meta(name)["kind"]: name for name in reversed(plain)}.values())[::-1]
    wrappers = [name for name in encodings.names() if encodings.wraps(name)]
    wrapped = [f"{wrapper}:{base}" for wrapper in wrappers for base in (plain if wrapper == "randomized" else per_kind)]
    compared = [name for names in SUITE_ENCODINGS.values() for name in names if ":" in name]  # ssmax:rope too
    return plain + list(dict.fromkeys(wrapped + compared))


def slot(name: str) -> str:
    """The slot an encoding uses: its own kind, or that of the encoding it wraps."""
    return encodings.meta(name.split(":")[-1])["kind"]


def hook_inputs(batched: bool, T: int = 7, B: int = 2):
    pos = torch.arange(5, 5 + T)  # offset positions
    if batched:
        pos = torch.stack((pos, pos + 3))
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(B, T, D_MODEL, generator=generator)
    q, k = qk(batch=B, length=T)
    return x, q, k, pos


def logits_of(q, k):
    return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, Tq, Tk)


def hook_outputs(pe, x, q, k, pos):
    with torch.no_grad():
        return [pe.embed(x, pos), *pe.rotate(q, k, pos, pos), pe.bias(pos, pos),
                pe.content_score(q, k, logits_of(q, k), pos, pos)]


def assert_same_outputs(first, second):
    for a, b in zip(first, second, strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


@pytest.mark.parametrize("name", every_encoding())
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_hooks_have_the_documented_shapes_and_are_identities_where_unused(name, batched, causal):
    pe = build(name, causal=causal)
    x, q, k, pos = hook_inputs(batched)
    B, T = x.shape[:2]
    embedded, q_out, k_out, bias, score = hook_outputs(pe, x, q, k, pos)
    assert embedded.shape == x.shape and embedded.dtype == x.dtype and torch.isfinite(embedded).all()
    assert q_out.shape == q.shape and k_out.shape == k.shape and q_out.dtype == k_out.dtype == q.dtype
    kind = slot(name)
    if kind != "input":
        assert torch.equal(embedded, x)
    if kind != "rotary":
        assert torch.equal(q_out, q) and torch.equal(k_out, k)
    if kind == "bias":
        assert bias.shape == ((B, N_HEADS, T, T) if batched else (N_HEADS, T, T))
        assert bias.dtype == torch.float32 and torch.isfinite(bias).all()
    else:
        assert bias is None
    assert pe.uses_content_score is (kind == "content")
    if kind == "content":
        assert score.shape == (B, N_HEADS, T, T) and score.dtype == q.dtype and torch.isfinite(score).all()
    else:
        assert score is None


@pytest.mark.parametrize("name", every_encoding())
@pytest.mark.parametrize("causal", [False, True])
def test_causal_is_given_to_every_encoding_and_passed_on_by_wrappers(name, causal):
    pe = build(name, causal=causal)
    modules = [m for m in pe.modules() if isinstance(m, PositionalEncoding)]
    assert modules and all(m.causal is causal for m in modules)
    assert f"causal={causal}" in repr(pe)
    assert "causal" not in encodings.options(name)  # it comes from the architecture, not from the user


@pytest.mark.parametrize("name", every_encoding())
def test_build_is_deterministic_under_a_seed(name):
    x, q, k, pos = hook_inputs(batched=False)
    built = []
    for _ in range(2):
        torch.manual_seed(0)
        built.append(build(name))
    a, b = built
    assert a.state_dict().keys() == b.state_dict().keys()
    assert all(torch.equal(a.state_dict()[key], b.state_dict()[key]) for key in a.state_dict())
    assert_same_outputs(hook_outputs(a, x, q, k, pos), hook_outputs(b, x, q, k, pos))


@pytest.mark.parametrize("name", every_encoding())
def test_defaults_are_the_options_and_state_round_trips(name):
    x, q, k, pos = hook_inputs(batched=True)
    torch.manual_seed(0)
    default = build(name)
    torch.manual_seed(0)
    explicit = build(name, **encodings.options(name))  # every option at its listed default: the same encoding
    assert repr(explicit) == repr(default)
    assert_same_outputs(hook_outputs(default, x, q, k, pos), hook_outputs(explicit, x, q, k, pos))
    torch.manual_seed(1)
    other = build(name)
    other.load_state_dict(default.state_dict())  # a trained encoding's state loads into a fresh build
    assert_same_outputs(hook_outputs(default, x, q, k, pos), hook_outputs(other, x, q, k, pos))


@pytest.mark.parametrize("name", every_encoding())
def test_metadata_matches_the_module(name):
    meta = encodings.meta(name)
    assert meta["kind"] in encodings.KINDS and meta["summary"]
    pe = build(name)
    assert bool(list(pe.parameters())) == meta["has_parameters"]
    if not meta["has_parameters"]:
        assert pe.state_dict() == {}  # e.g. RoPE's frequencies: a model trained with one loads into a variant


@pytest.mark.parametrize("name", every_encoding())
def test_unknown_options_and_causal_options_are_rejected(name):
    with pytest.raises(ValueError, match=r"no option\(s\) no_such_option.*valid options"):
        build(name, no_such_option=1)
    base, _, inner = name.partition(":")
    if inner:
        with pytest.raises(ValueError, match="causal.*architecture"):
            build(name, base_options={"causal": True})


@pytest.mark.parametrize("name", every_encoding())
def test_positions_are_sorted_int64_and_arange_unless_sampled(name):
    pe = build(name).train()
    pos = pe.positions(3, 6, "cpu")
    assert pos.dtype == torch.int64 and pos.shape[-1] == 6 and pos.shape in ((6,), (3, 6))
    assert torch.all(pos[..., 1:] > pos[..., :-1]) and pos.min() >= 0
    if type(pe).positions is PositionalEncoding.positions:
        assert torch.equal(pos, torch.arange(6))


@pytest.mark.parametrize("name", every_encoding())
@pytest.mark.parametrize("batched", [False, True])
def test_cached_tables_equal_computed_ones(name, batched):
    """Positions with a cache key (the model's default positions and their suffixes) give exactly what the
    same positions without a key give: caches never change values, also when read a second time."""
    pe = build(name)
    x, q, k, plain = hook_inputs(batched)
    expected = hook_outputs(pe, x, q, k, plain)
    for _ in range(2):
        keyed = with_cache_key(plain.clone(), ("positions", batched))
        assert_same_outputs(hook_outputs(pe, x, q, k, keyed), expected)
    suffix = with_cache_key(plain[..., 3:].clone(), ("suffix", batched))
    keyed = with_cache_key(plain.clone(), ("positions", batched))
    with torch.no_grad():
        rotated = pe.rotate(q[..., 3:, :], k, suffix, keyed)
        bias = pe.bias(suffix, keyed)
        q_suffix = q[..., 3:, :]
        logits = logits_of(q_suffix, k)
        score = pe.content_score(q_suffix, k, logits, suffix, keyed)
        assert_same_outputs([*rotated, bias, score], [*pe.rotate(q_suffix, k, plain[..., 3:], plain),
                                                      pe.bias(plain[..., 3:], plain),
                                                      pe.content_score(q_suffix, k, logits, plain[..., 3:], plain)])


def test_plugins_without_train_len_still_build_and_record_it(monkeypatch):
    class Older(PositionalEncoding):
        def __init__(self, d_model: int, n_heads: int, max_len: int, *, causal: bool = False, width: int = 1) -> None:
            super().__init__(d_model, n_heads, max_len, causal=causal)

    lookup = encodings.ENCODINGS.get
    monkeypatch.setattr(encodings.ENCODINGS, "get", lambda name: Older if name == "older" else lookup(name))
    pe = build("older", max_len=256, train_len=21, width=3)
    assert (pe.max_len, pe.train_len) == (256, 21)
    assert pe.resolved_options() == {"max_len": 256, "train_len": 21, "width": 3}  # width from build's options
    assert build("older", max_len=256).train_len == 256


@pytest.mark.parametrize("name", every_encoding())
@pytest.mark.parametrize("causal", [False, True])
def test_resolved_options_rebuild_the_same_encoding(name, causal):
    pe = build(name, max_len=96, train_len=21, causal=causal)
    resolved = pe.resolved_options()
    assert json.loads(json.dumps(resolved)) == resolved
    assert (resolved["max_len"], resolved["train_len"]) == (96, 21)
    assert not {"d_model", "n_heads", "causal"} & set(resolved)
    options = {k: v for k, v in resolved.items() if k not in ("max_len", "train_len")}
    again = build(name, max_len=96, train_len=21, causal=causal, **options)
    assert again.resolved_options() == resolved

    def nones(options: dict, prefix: str = "") -> set[str]:
        found = set()
        for key, value in options.items():
            found |= nones(value, f"{key}.") if isinstance(value, dict) else {prefix + key} if value is None else set()
        return found

    # documented: rope's original_max_len is None unless scaling="yarn" (no other option resolves to None)
    allowed = {"original_max_len", "base_options.original_max_len"} if name.split(":")[-1] == "rope" else set()
    assert nones(resolved) <= allowed


def test_resolved_options_replace_none_defaults_by_the_values_used():
    assert build("fire", max_len=96, train_len=21).resolved_options()["init_threshold"] == 21.0
    assert build("cope", max_len=96, train_len=21).resolved_options()["n_positions"] == 22
    assert build("sandwich").resolved_options()["sinusoid_dim"] == HEAD_DIM
    yarn = build("rope", max_len=96, train_len=21, scaling="yarn", scaling_factor=2.0).resolved_options()
    assert yarn["original_max_len"] == 21
    wrapped = build("randomized:fire", max_len=96, train_len=21).resolved_options()
    assert wrapped["max_position"] == 96 and wrapped["base_options"]["init_threshold"] == 21.0
    assert build("randomized:fire", max_len=96, train_len=21).inner.max_len == 96


def test_encodings_must_accept_causal(monkeypatch):
    class Old(PositionalEncoding):
        def __init__(self, d_model: int, n_heads: int, max_len: int, *, width: int = 1) -> None:
            super().__init__(d_model, n_heads, max_len)

    lookup = encodings.ENCODINGS.get  # a lookup that knows Old, instead of a registration that would stay
    monkeypatch.setattr(encodings.ENCODINGS, "get", lambda name: Old if name == "old" else lookup(name))
    with pytest.raises(TypeError, match=r"must accept the keyword argument 'causal.*causal=causal\)"):
        build("old")


@pytest.mark.parametrize("name", ["alibi", "t5"])
def test_relative_biases_ignore_a_common_offset(name):
    pe = build(name)
    pos = torch.arange(9)
    torch.testing.assert_close(pe.bias(pos + 40, pos + 40), pe.bias(pos, pos))


def test_every_paper_key_is_in_the_bibliography():
    bibliography = (Path(__file__).parents[1] / "docs" / "references.bib").read_text()
    keys = set(re.findall(r"^@\w+\{([^,]+),", bibliography, flags=re.MULTILINE))
    for name in encodings.names():
        assert encodings.meta(name)["paper"] in keys, name
    assert {"chen2023pi", "bloc97ntk2023", "peng2023yarn", "devlin2019bert", "kazemnejad2023nope"} <= keys


def test_what_the_source_declares_is_what_the_registry_holds():
    """Listings read the built-in encodings' metadata from their ``@register(...)`` lines without importing them
    (:func:`pebench.encodings.declared`, no torch): it is the registry's once they are imported, in its order."""
    declared = encodings.declared()
    assert declared is not None, "a built-in registration is not written with literal arguments"
    builtins = [name for name in encodings.in_order()
                if encodings.ENCODINGS.get(name).__module__.startswith("pebench.encodings.")]
    assert list(declared) == builtins == sorted(builtins)  # plots give colours in this order
    assert {name: encodings.ENCODINGS.meta(name) for name in builtins} == declared


def test_importing_the_encodings_imports_none_of_them_until_one_is_used():
    """Importing the package registers nothing (and imports no torch); the first lookup imports every built-in
    encoding, and what :func:`pebench.encodings.names` and :func:`~pebench.encodings.meta` said before is what
    the registry says after."""
    import subprocess
    import sys

    script = ("import sys; from pebench import encodings; "
              "before = (encodings.names(), encodings.meta('alibi'), encodings.baseline_name()); "
              "assert not encodings.ENCODINGS.loaded and 'torch' not in sys.modules; "
              "encodings.ENCODINGS.get('rope'); "
              "assert encodings.ENCODINGS.loaded and 'torch' in sys.modules; "
              "assert before == (encodings.names(), encodings.meta('alibi'), encodings.baseline_name()) "
              "== (encodings.ENCODINGS.names(), encodings.ENCODINGS.meta('alibi'), 'none'), before")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_labels_and_names_are_known_without_importing_the_encodings():
    """``known`` and ``label`` (what tables and findings print) answer from the source before the registry has
    imported the encodings, and as the registry does after."""
    import subprocess
    import sys

    script = ("import sys; from pebench import encodings; "
              "before = [(n, encodings.known(n), encodings.label(n)) for n in ('none', 't5', 'rope')]; "
              "assert not encodings.known('mine') and 'torch' not in sys.modules, 'torch imported'; "
              "encodings.ENCODINGS.get('rope'); "
              "after = [(n, n in encodings.ENCODINGS, encodings.ENCODINGS.label(n)) for n in ('none', 't5', 'rope')]; "
              "assert before == after and before[0][2] == 'NoPE' and not encodings.known('mine'), (before, after)")
    subprocess.run([sys.executable, "-c", script], check=True)
