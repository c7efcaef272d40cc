"""The teaching figures: each renders, and the properties they illustrate hold numerically."""

from __future__ import annotations

import io
import math

import pytest
import torch
from matplotlib.figure import Figure

from pebench import encodings, explain

FIGURES = [
    explain.sinusoidal_heatmap,
    explain.sinusoidal_waves,
    explain.rotation_property,
    explain.score_decay_figure,
    explain.bias_figure,
    explain.attention_maps,
    explain.permutation_demo,
    explain.randomized_positions_figure,
]


@pytest.mark.parametrize("make", FIGURES, ids=lambda f: f.__name__)
def test_figure_renders(make):
    fig = make()
    assert isinstance(fig, Figure)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    assert buffer.tell() > 1000


@pytest.mark.parametrize("name", encodings.names())
def test_encoding_example(name):
    example = explain.encoding_example(name)
    if example is not None:
        fig, caption = example
        assert isinstance(fig, Figure) and caption


def test_sinusoidal_shift_is_a_rotation():
    for offset in (1, 5, 17):
        assert explain.sinusoidal_shift_error(offset) < 1e-4


def test_sinusoidal_wavelengths_match_the_paper():
    wavelengths = explain.sinusoidal_wavelengths(64)
    expected = torch.tensor([2 * math.pi * 10000 ** (2 * i / 64) for i in range(32)], dtype=torch.float64)
    torch.testing.assert_close(wavelengths, expected, rtol=1e-6, atol=0)


def test_rope_scores_depend_on_offset_only():
    scores = explain.rope_scores(16, head_dim=16)
    for offset in range(-15, 16):
        diagonal = torch.diagonal(scores, offset)
        assert (diagonal - diagonal[0]).abs().max() < 1e-4


def test_score_decay_starts_at_one_and_decays():
    for name in ("rope", "xpos"):
        decay = explain.score_decay(name, head_dim=64, max_distance=256, n_samples=64)
        assert decay[0] == pytest.approx(1.0)
        assert decay[200:].abs().mean() < 0.5 * decay[:10].mean()


def test_attention_weights_match_the_model():
    demo = explain.demo_model("rope")
    model = demo.model
    tokens = explain.demo_tokens()
    weights = explain.attention_weights(model, tokens)  # (1, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    block = model.blocks[0]
    with torch.no_grad():
        pos = torch.arange(tokens.shape[1])
        x = block.ln_attn(model.encoding.embed(model.token_embedding(tokens), pos))
        B, T, D = x.shape
        v = block.attn.qkv(x).view(B, T, 3, block.attn.n_heads, -1)[:, :, 2].transpose(1, 2)  # (B, H, T, Dh)
        mine = block.attn.proj((weights @ v).transpose(1, 2).reshape(B, T, D))
        theirs = block.attn(x, model.encoding, pos, None, False)
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-4)


def test_demo_models_learn_copy_only_with_positions():
    assert explain.demo_model("rope").token_acc > 0.95
    assert explain.demo_model("none").token_acc < 0.5


def test_permutation_demo_property():
    tokens = explain.demo_tokens()
    perm = explain.permutation(tokens.shape[1])
    assert not torch.equal(perm, torch.arange(len(perm)))
    assert explain.permutation_gap(explain.demo_model("none").model, tokens, perm) < 1e-5
    assert explain.permutation_gap(explain.demo_model("rope").model, tokens, perm) > 0.1
