"""The rest of the field: KERPLE, Sandwich, Transformer-XL relative, CoPE, p-RoPE.

Golden values against the reference code (transcribed below as oracles, each naming its source) and
hand-computed numbers, plus each encoding's defining property. The registry-wide contract tests
(tests/test_encodings.py, tests/test_model.py) cover shapes, caching, determinism and training.
"""

from __future__ import annotations

import math

import pytest
import torch

from pebench import encodings
from pebench.encodings.transformer_xl import relative_sinusoids


def build(name: str, d_model: int = 16, n_heads: int = 4, max_len: int = 64, **options):
    return encodings.build(name, d_model=d_model, n_heads=n_heads, max_len=max_len, **options)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def causal_logits(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q k^T / sqrt(Dh)`` with ``-inf`` above the diagonal (queries are the last Tq keys)."""
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    Tq, Tk = logits.shape[-2:]
    future = torch.ones(Tq, Tk, dtype=torch.bool).triu(Tk - Tq + 1)
    return logits.masked_fill(future, float("-inf"))


# ---------------------------------------------------------------- KERPLE


def kerple_reference(kind: str, bias_p: torch.Tensor, bias_a: torch.Tensor, length: int) -> torch.Tensor:
    """chijames/KERPLE megatron/mpu/layers.py, ParallelKerpleLog / ParallelKerplePower forward (causal).

    Parameters (H, 1, 1) as there, projected onto their constraints first as its forward does
    (``.data.clamp(min=eps)``; the power's exponent also ``max=2``); returns the bias (H, T, T).
    """
    eps = 1e-2
    bias_p = bias_p.clamp(min=eps, max=2) if kind == "power" else bias_p.clamp(min=eps)
    bias_a = bias_a.clamp(min=eps)
    diff = torch.tril(
        torch.arange(length).view(length, 1).repeat(1, length) + torch.arange(0, -length, -1)
    ).to(torch.float32)
    if kind == "log":
        return -bias_p * torch.log(1 + bias_a * diff)  # -p log(1 + a |m - n|)
    return -(diff.pow(bias_p)) * bias_a  # -a |m - n|^p


@pytest.mark.parametrize("seed", [0, 1])
def test_kerple_log_matches_the_reference_code(seed):
    torch.manual_seed(seed)  # the initialisation draws from the global generator, as the reference's does
    pe = build("kerple_log", causal=True)
    with torch.no_grad():
        pe.r1[0], pe.r2[1] = 0.004, 0.002  # below eps: both implementations project them before use
    r1, r2 = pe.r1.detach().clone().view(-1, 1, 1), pe.r2.detach().clone().view(-1, 1, 1)  # before bias() clamps
    pos = torch.arange(12)
    # default float32 tolerance: the same formula, log1p(x) here and log(1 + x) there differ in the last bits
    torch.testing.assert_close(pe.bias(pos, pos), kerple_reference("log", r1, r2, 12))


@pytest.mark.parametrize("seed", [0, 1])
def test_kerple_power_matches_the_reference_code(seed):
    torch.manual_seed(seed)  # the initialisation draws from the global generator, as the reference's does
    pe = build("kerple_power", causal=True)
    with torch.no_grad():
        pe.r1[0], pe.r2[1] = 0.004, 0.002  # below eps: both implementations project them before use
    r1, r2 = pe.r1.detach().clone().view(-1, 1, 1), pe.r2.detach().clone().view(-1, 1, 1)  # before bias() clamps
    pos = torch.arange(12)
    # default float32 tolerance: the same pow and product, broadcast in another order
    torch.testing.assert_close(pe.bias(pos, pos), kerple_reference("power", r2, r1, 12))


def test_kerple_hand_computed_values():
    log, power = build("kerple_log", n_heads=2, d_model=8), build("kerple_power", n_heads=2, d_model=8)
    with torch.no_grad():
        log.r1.copy_(torch.tensor([2.0, 0.5]))
        log.r2.copy_(torch.tensor([1.0, 0.25]))
        power.r1.copy_(torch.tensor([1.0, 0.5]))
        power.r2.copy_(torch.tensor([1.0, 1.5]))
    pos = torch.arange(4)
    first_row = [log.bias(pos, pos)[:, 3].flip(-1), power.bias(pos, pos)[:, 3].flip(-1)]  # distances 0, 1, 2, 3
    torch.testing.assert_close(first_row[0], torch.tensor([[0.0, -1.3862944, -2.1972246, -2.7725887],
                                                           [0.0, -0.1115718, -0.2027326, -0.2798079]]))
    torch.testing.assert_close(first_row[1], torch.tensor([[0.0, -1.0, -2.0, -3.0],
                                                           [0.0, -0.5, -1.4142136, -2.5980762]]))


def test_kerple_initialisation_and_constraints():
    torch.manual_seed(0)
    log, power = build("kerple_log"), build("kerple_power")
    assert 0 <= log.r1.min() and log.r1.max() < 2 and 0 <= log.r2.min() and log.r2.max() < 1
    assert 0 <= power.r1.min() and power.r1.max() < 1 and 0 <= power.r2.min() and power.r2.max() < 2
    with torch.no_grad():
        for pe in (log, power):
            pe.r1.fill_(-1.0)
            pe.r2.fill_(5.0)
    pos = torch.arange(5)
    log.bias(pos, pos), power.bias(pos, pos)  # the reference projects before every use
    assert torch.all(log.r1 == 0.01) and torch.all(log.r2 == 5.0)  # log: r1, r2 >= eps
    assert torch.all(power.r1 == 0.01) and torch.all(power.r2 == 2.0)  # power: 0 < r2 <= 2


@pytest.mark.parametrize("name", ["kerple_log", "kerple_power"])
@pytest.mark.parametrize("causal", [False, True])
def test_kerple_bias_depends_on_distance_only_and_is_monotone(name, causal):
    torch.manual_seed(0)  # the initialisation draws from the global generator
    pe = build(name, causal=causal)
    pos = torch.arange(20)
    bias = pe.bias(pos, pos)  # (H, T, T)
    torch.testing.assert_close(pe.bias(pos + 33, pos + 33), bias)
    distance = (pos[:, None] - pos[None, :]).abs()
    visible = (pos[:, None] >= pos[None, :]) if causal else torch.ones(20, 20, dtype=torch.bool)
    for d in range(20):  # one value per |i - j| (and head)
        values = bias[:, (distance == d) & visible]
        # equal up to float32 rounding: a vectorised pow/log1p may round the same input differently in
        # different SIMD lanes (seen on an AVX-512 Xeon with torch 2.11); a real dependence on i is far larger
        torch.testing.assert_close(values, values[:, :1].expand_as(values), rtol=1e-6, atol=1e-6)
    if not causal:  # symmetric up to the same float32 lane rounding as above
        torch.testing.assert_close(bias, bias.transpose(-1, -2), rtol=1e-6, atol=1e-6)
    by_distance = bias[:, 19].flip(-1)  # last query: distances 0 .. 19
    assert torch.all(by_distance[:, 0] == 0) and torch.all(by_distance[:, 1:] < by_distance[:, :-1])


def test_kerple_is_learnable():
    torch.manual_seed(0)  # the initialisation draws from the global generator
    pe = build("kerple_power")
    pos = torch.arange(6)
    pe.bias(pos, pos).sum().backward()
    assert pe.r1.grad.abs().min() > 0 and pe.r2.grad.abs().min() > 0 and torch.isfinite(pe.r2.grad).all()


# ---------------------------------------------------------------- Sandwich


def nemo_sandwich(relative_position: torch.Tensor, hidden_size: int, num_attention_heads: int, causal: bool):
    """NeMo SandwichRelativePositionEmbedding.forward (positions given), as the oracle: (H, Tq, Tk)."""
    if causal:
        relative_position = torch.tril(relative_position)
    inv_freq = 1.0 / (10000 ** (2 * torch.arange(1, hidden_size / 2 + 1) / hidden_size))
    _bias = torch.sum((relative_position[:, :, None].repeat(1, 1, len(inv_freq)) * inv_freq).cos(), axis=2)
    bias = _bias.repeat(num_attention_heads, 1, 1)
    _bias_scales = torch.arange(1, num_attention_heads + 1, 1)
    bias_scales = _bias_scales[:, None, None]
    return (bias - hidden_size / 2) / (bias_scales * 8 / num_attention_heads)


@pytest.mark.parametrize("causal", [False, True])
def test_sandwich_matches_nemo(causal):
    pe = build("sandwich", d_model=64, n_heads=4, causal=causal)  # d' = head width 16, as NeMo passes it
    pos = torch.arange(30)
    relative_position = pos[:, None] - pos[None, :]  # query - key: NeMo's tril keeps the past
    expected = nemo_sandwich(relative_position, 16, 4, causal)
    torch.testing.assert_close(pe.bias(pos, pos), expected, atol=2e-5, rtol=0)


def test_sandwich_hand_computed_values():
    pe = build("sandwich", d_model=8, n_heads=2, sinusoid_dim=4)  # w = 10000^-0.5, 10000^-1 = 0.01, 1e-4
    bias = pe.bias(torch.tensor([0]), torch.tensor([0, 100]))  # distances 0 and 100
    inner = math.cos(1.0) + math.cos(0.01) - 2  # -0.4597477
    torch.testing.assert_close(bias[:, 0, 1], torch.tensor([inner / 4, inner / 8]))  # 8h/H = 4, 8
    torch.testing.assert_close(bias[:, 0, 1], torch.tensor([-0.1149369, -0.0574685]))
    assert torch.all(bias[:, 0, 0] == 0)


def test_sandwich_has_no_parameters_and_is_relative():
    pe = build("sandwich")
    assert not list(pe.parameters()) and pe.state_dict() == {} and not encodings.meta("sandwich")["has_parameters"]
    pos = torch.arange(25)
    bias = pe.bias(pos, pos)
    torch.testing.assert_close(pe.bias(pos + 100, pos + 100), bias)
    assert torch.equal(bias, bias.transpose(-1, -2)) and float(bias.max()) == 0.0


# ---------------------------------------------------------------- Transformer-XL


def deepmind_relative_attention(q, k, u, v, weight_r, max_time=10000.0):
    """google-deepmind/randomized_positional_encodings models/positional_encodings.py,
    compute_attention_with_relative_encodings (causal=False), in torch, as the oracle.

    q, k: (b, t, h, d) as there; u, v: (h, d); weight_r: Haiku's Linear weight (D_in, D_out).
    Returns the attention logits (b, h, t, T) before the 1 / sqrt(d) scaling.
    """
    batch_size, k_seq_len, num_heads, num_hiddens = k.shape
    hiddens = num_hiddens * num_heads
    content_logits = torch.einsum("bthd,bThd->bhtT", q + u, k)
    freqs = torch.arange(0, hiddens, 2, dtype=torch.float64)
    inv_freq = max_time ** (-freqs / hiddens)
    pos_seq = torch.arange(-k_seq_len, k_seq_len, dtype=torch.float64)
    sinusoid_inp = torch.einsum("i,j->ij", pos_seq, inv_freq)
    positional_encodings = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1).float()
    relative_keys = (positional_encodings @ weight_r).reshape(-1, num_heads, num_hiddens)
    relative_logits = torch.einsum("bthd,Thd->bhtT", q + v, relative_keys)

    def rel_shift_inner(logits, attention_length):  # _rel_shift_inner, on the last two axes
        tq, total_len = logits.shape[-2:]
        logits = logits.reshape(*logits.shape[:-2], total_len, tq)[..., 1:, :]
        return logits.reshape(*logits.shape[:-2], tq, total_len - 1)[..., :attention_length]

    return content_logits + rel_shift_inner(relative_logits, content_logits.shape[-1])


@pytest.mark.parametrize("causal", [False, True])
def test_transformer_xl_matches_deepmind(causal):
    pe = build("transformer_xl", d_model=16, n_heads=2, causal=causal)
    q, k = randn(2, 2, 7, 8, seed=1), randn(2, 2, 7, 8, seed=2)  # (B, H, T, Dh)
    pos = torch.arange(7)
    with torch.no_grad():
        logits = q @ k.transpose(-1, -2) / math.sqrt(8)
        ours = logits + pe.content_score(q, k, logits, pos, pos)
        reference = deepmind_relative_attention(
            q.transpose(1, 2), k.transpose(1, 2), pe.content_bias, pe.position_bias, pe.relative_keys.weight.T
        ) / math.sqrt(8)
    # decoders use the same offsets j - i; the model masks the future keys
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=1e-5)


def test_transformer_xl_offsets_follow_the_reference_shift():
    """The reference's relative_shift docstring: attention length 3 gives [[0, 1, 2], [-1, 0, 1], [-2, -1, 0]]
    (offset j - i), and its sinusoids put the sines first: [sin(o w), cos(o w)]."""
    pe = build("transformer_xl", d_model=4, n_heads=1)
    sinusoids, index = pe.offsets(torch.arange(3), torch.arange(3))
    expected = torch.tensor([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]])
    assert torch.equal(sinusoids[index], relative_sinusoids(expected.flatten(), 4).view(3, 3, 4))
    table = relative_sinusoids(torch.tensor([-1, 2]), 4)  # w = 1, 0.01
    torch.testing.assert_close(table, torch.tensor([[-0.8414710, -0.0099998, 0.5403023, 0.9999500],
                                                    [0.9092974, 0.0199987, -0.4161468, 0.9998000]]))


def test_transformer_xl_score_is_relative_and_content_dependent():
    pe = build("transformer_xl")
    q, k = randn(2, 4, 6, 4, seed=3), randn(2, 4, 6, 4, seed=4)
    pos = torch.arange(6)
    logits = q @ k.transpose(-1, -2)
    with torch.no_grad():
        term = pe.content_score(q, k, logits, pos, pos)
        torch.testing.assert_close(pe.content_score(q, k, logits, pos + 50, pos + 50), term)
        assert not torch.allclose(pe.content_score(q, k.flip(2), logits, pos, pos), term)
    pe.content_score(q, k, logits, pos, pos).sum().backward()
    for name, parameter in pe.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("batched", [False, True])
def test_transformer_xl_scores_far_apart_positions_pair_by_pair(batched):
    """Randomized positions drawn from thousands: R holds only the offsets that occur (not the thousands
    between the smallest and the largest), and every pair's score is (u^T k_j + (q_i + v)^T W_R R_{j-i}) /
    sqrt(Dh) computed directly."""
    pe = build("transformer_xl", d_model=16, n_heads=2)
    q, k = randn(3, 2, 5, 8, seed=5), randn(3, 2, 5, 8, seed=6)
    generator = torch.Generator().manual_seed(0)
    rows = torch.stack([torch.randperm(4096, generator=generator)[:5].sort().values for _ in range(3)])
    pos = rows if batched else rows[0]
    with torch.no_grad():
        ours = pe.content_score(q, k, q @ k.transpose(-1, -2), pos, pos)
        sinusoids, index = pe.offsets(pos, pos)
        distance = pos.unsqueeze(-1) - pos.unsqueeze(-2)  # i - j, so j - i is its negative
        assert sinusoids.shape[0] == len(torch.unique(distance)) <= (3 if batched else 1) * 25
        keys = pe.relative_keys(relative_sinusoids(-distance.flatten(), 16)).view(*distance.shape, 2, 8)
        keys = keys.expand(3, 5, 5, 2, 8) if not batched else keys  # (B, Tq, Tk, H, Dh)
        expected = (torch.einsum("hd,bhkd->bhk", pe.content_bias, k).unsqueeze(2)
                    + torch.einsum("bhqd,bqkhd->bhqk", q + pe.position_bias.view(1, 2, 1, 8), keys)) / math.sqrt(8)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(sinusoids[index], relative_sinusoids(-distance.flatten(), 16).view(*distance.shape, 16))


# ---------------------------------------------------------------- CoPE


def xtransformers_cope(query, attn_logits, pos_emb, max_pos):
    """x-transformers CoPE.forward (Appendix B of Golovneva et al.; no soft one-hot, no talking heads).

    pos_emb: (max_pos, dim) as there.
    """
    gates = attn_logits.sigmoid()
    pos = gates.flip(-1).cumsum(dim=-1).flip(-1)
    pos = pos.clamp(max=max_pos - 1)
    logits_int = torch.einsum("b h n d, p d -> b h n p", query, pos_emb)
    pos_ceil = pos.ceil().long()
    pos_floor = pos.floor().long()
    logits_ceil = logits_int.gather(-1, pos_ceil)
    logits_floor = logits_int.gather(-1, pos_floor)
    w = pos - pos_floor
    return logits_ceil * w + logits_floor * (1 - w)


def cope_with_table(n_positions: int = 9, causal: bool = True, d_model: int = 16, n_heads: int = 4, seed: int = 5):
    pe = build("cope", d_model=d_model, n_heads=n_heads, causal=causal, n_positions=n_positions)
    with torch.no_grad():
        pe.position_embedding.copy_(randn(*pe.position_embedding.shape, seed=seed))  # zero at init
    return pe


@pytest.mark.parametrize("n_positions", [4, 13])  # clamped and not
def test_cope_matches_the_reference_code(n_positions):
    pe = cope_with_table(n_positions)
    q, k = randn(2, 4, 10, 4, seed=6), randn(2, 4, 10, 4, seed=7)
    logits = causal_logits(q, k)
    pos = torch.arange(10)
    with torch.no_grad():
        expected = xtransformers_cope(q, logits, pe.position_embedding.T, n_positions)
        torch.testing.assert_close(pe.content_score(q, k, logits, pos, pos), expected)
        suffix = logits[..., 6:, :]  # the last block's query suffix: same rows
        torch.testing.assert_close(pe.content_score(q[..., 6:, :], k, suffix, pos[6:], pos), expected[..., 6:, :])


def test_cope_positions_count_when_every_gate_is_one():
    pe = build("cope", causal=True)
    ones = causal_logits(torch.ones(1, 1, 4, 1), torch.full((1, 1, 4, 1), 100.0))  # sigmoid(100) = 1
    expected = torch.tensor([[1.0, 0, 0, 0], [2, 1, 0, 0], [3, 2, 1, 0], [4, 3, 2, 1]])  # i - j + 1, 0 in the future
    assert torch.equal(pe.contextual_positions(ones)[0, 0], expected)
    bidirectional = build("cope", causal=False)  # the encoder variant counts to either side: |i - j| + 1
    everywhere = torch.full((1, 1, 4, 4), 100.0)
    assert torch.equal(bidirectional.contextual_positions(everywhere)[0, 0],
                       torch.tensor([[1.0, 2, 3, 4], [2, 1, 2, 3], [3, 2, 1, 2], [4, 3, 2, 1]]))


def test_cope_hand_computed_term():
    """Gates 0.5 (logits 0): positions 0.5 (i - j + 1); q^T e[p] = 10 p is linear, so interpolation is exact."""
    pe = build("cope", d_model=4, n_heads=1, causal=True, n_positions=8)
    with torch.no_grad():
        pe.position_embedding.zero_()
        pe.position_embedding[0] = 10 * torch.arange(8.0)  # e[p] = (10 p, 0, 0, 0)
    q = torch.tensor([1.0, 0, 0, 0]).expand(1, 1, 3, 4)
    logits = causal_logits(torch.zeros(1, 1, 3, 4), torch.zeros(1, 1, 3, 4))
    term = pe.content_score(q, q, logits, torch.arange(3), torch.arange(3))[0, 0]
    assert torch.equal(term, torch.tensor([[5.0, 0, 0], [10, 5, 0], [15, 10, 5]]))


def test_cope_positions_change_with_the_content():
    pe = cope_with_table()
    q, k = randn(1, 4, 8, 4, seed=8), randn(1, 4, 8, 4, seed=9)
    changed = k.clone()
    changed[:, :, 4] = randn(1, 4, 4, seed=10)  # another token at key 4
    before, after = pe.contextual_positions(causal_logits(q, k)), pe.contextual_positions(causal_logits(q, changed))
    # every query from 4 on counts key 4's gate for the keys up to 4; later keys and earlier queries keep theirs
    assert torch.all(before[..., 4:, :5] != after[..., 4:, :5])
    torch.testing.assert_close(before[..., 5:], after[..., 5:])
    torch.testing.assert_close(before[..., :4, :], after[..., :4, :])


def test_cope_starts_at_zero_and_learns():
    pe = build("cope", causal=True)
    q, k = randn(1, 4, 5, 4, seed=11), randn(1, 4, 5, 4, seed=12)
    logits = causal_logits(q, k)
    term = pe.content_score(q, k, logits, torch.arange(5), torch.arange(5))
    assert torch.equal(term, torch.zeros_like(term))  # the table is zero at init, as in both references
    term.sum().backward()
    assert pe.position_embedding.grad.abs().sum() > 0
    assert pe.n_positions == 65  # train_len (None: max_len) + 1, RAM's default (position 0 is possible)
    assert build("cope", causal=True, max_len=4096, train_len=20).n_positions == 21  # the training context


# ---------------------------------------------------------------- p-RoPE


def p_rope_reference(x: torch.Tensor, positions: torch.Tensor, max_wavelength: float, rope_percentage: float):
    """The p-RoPE code of Barbero et al. (Gemma's apply_rope with the removed timescales set to infinity),
    in torch, as the oracle. x: (B, T, H, Dh), positions (B, T)."""
    head_dim = x.shape[-1]
    rope_angles = int(rope_percentage * head_dim // 2)
    nope_angles = head_dim // 2 - rope_angles
    fraction = 2.0 * torch.arange(0, rope_angles, dtype=torch.float32) / head_dim
    timescale = max_wavelength**fraction
    timescale = torch.cat([timescale, torch.full((nope_angles,), float("inf"))])
    sinusoid_imp = positions[..., None].float() / timescale[None, None, :]
    sinusoid_imp = sinusoid_imp[..., None, :]
    sin, cos = torch.sin(sinusoid_imp), torch.cos(sinusoid_imp)
    first_half, second_half = torch.split(x, head_dim // 2, dim=-1)
    first_part = first_half * cos - second_half * sin
    second_part = second_half * cos + first_half * sin
    return torch.cat([first_part, second_part], dim=-1)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75, 1.0])
def test_p_rope_matches_the_reference_code(fraction):
    pe = build("p_rope", d_model=32, n_heads=2, fraction=fraction)  # head_dim 16
    q, k = randn(2, 2, 9, 16, seed=13), randn(2, 2, 9, 16, seed=14)
    pos = torch.arange(3, 12)
    q_rot, _ = pe.rotate(q, k, pos, pos)
    expected = p_rope_reference(q.transpose(1, 2), pos.expand(2, 9), 10000.0, fraction).transpose(1, 2)
    torch.testing.assert_close(q_rot, expected, atol=1e-5, rtol=1e-5)


def test_p_rope_hand_computed_values():
    pe = build("p_rope", d_model=4, n_heads=1, fraction=0.5)  # one of two pairs rotated, at frequency 1
    x = torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 1, 1, 4)
    rotated, _ = pe.rotate(x, x, torch.tensor([1]), torch.tensor([1]))
    # pair (x0, x2) turned by 1 radian, pair (x1, x3) unrotated
    torch.testing.assert_close(rotated.flatten(), torch.tensor([-1.9841106, 2.0, 2.4623779, 4.0]))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_p_rope_leaves_the_dropped_frequencies_unrotated(layout):
    pe = build("p_rope", d_model=32, n_heads=2, fraction=0.75, layout=layout)  # 6 of 8 pairs rotated
    assert pe.rotated_pairs == 6 and torch.all(pe.inv_freq[6:] == 0)
    q, k = randn(1, 2, 10, 16, seed=15), randn(1, 2, 10, 16, seed=16)
    pos = torch.arange(100, 110)
    q_rot, _ = pe.rotate(q, k, pos, pos)
    dropped = [6, 7, 14, 15] if layout == "half" else [12, 13, 14, 15]  # pairs 6 and 7
    kept = [d for d in range(16) if d not in dropped]
    assert torch.equal(q_rot[..., dropped], q[..., dropped])
    assert not torch.allclose(q_rot[..., kept], q[..., kept])


def test_p_rope_differs_from_rope_rotary_fraction():
    """Both rotate half of the pairs; p-RoPE keeps RoPE's highest frequencies (computed with Dh), while
    rotary_fraction recomputes a full spectrum over its Dr dims, reaching down to ~1/theta."""
    p_rope = build("p_rope", d_model=32, n_heads=2, fraction=0.5)  # head_dim 16: 4 of 8 pairs
    partial = build("rope", d_model=32, n_heads=2, rotary_fraction=0.5)  # Dr = 8: 4 pairs
    full = build("rope", d_model=32, n_heads=2)
    torch.testing.assert_close(p_rope.inv_freq[:4], full.inv_freq[:4])  # 1, 10^-0.5, 10^-1, 10^-1.5
    torch.testing.assert_close(p_rope.inv_freq[:4], torch.tensor([1.0, 0.31622777, 0.1, 0.031622777]))
    torch.testing.assert_close(partial.inv_freq, torch.tensor([1.0, 0.1, 0.01, 0.001]))  # theta^(-2i/Dr)
    q, k = randn(1, 2, 6, 16, seed=17), randn(1, 2, 6, 16, seed=18)
    pos = torch.arange(6)
    assert not torch.allclose(p_rope.rotate(q, k, pos, pos)[0], partial.rotate(q, k, pos, pos)[0])


def test_p_rope_ends_are_rope_and_nope():
    q, k = randn(2, 4, 7, 4, seed=19), randn(2, 4, 7, 4, seed=20)
    pos = torch.arange(7) + 5
    rope = build("rope", layout="half")
    for a, b in zip(build("p_rope", fraction=1.0).rotate(q, k, pos, pos), rope.rotate(q, k, pos, pos), strict=True):
        torch.testing.assert_close(a, b)
    for a, b in zip(build("p_rope", fraction=0.0).rotate(q, k, pos, pos), (q, k), strict=True):
        assert torch.equal(a, b)


def test_p_rope_scores_depend_only_on_relative_offset():
    pe = build("p_rope")
    q, k = randn(2, 4, 7, 4, seed=21), randn(2, 4, 7, 4, seed=22)
    pos = torch.arange(7)

    def scores(p):
        q_rot, k_rot = pe.rotate(q, k, p, p)
        return q_rot @ k_rot.transpose(-1, -2)

    torch.testing.assert_close(scores(pos + 41), scores(pos), atol=1e-4, rtol=0)
