"""The teaching figures: each renders, and the properties they illustrate hold numerically."""

from __future__ import annotations

import io
import math

import pytest
import torch
from matplotlib.figure import Figure

from pebench import encodings, explain
from pebench.encodings.t5 import relative_position_bucket

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


def drawn(fig: Figure) -> int:
    """Number of data artists (images, lines, point collections) on the figure's axes."""
    return sum(len(ax.images) + len(ax.lines) + len(ax.collections) for ax in fig.axes)


@pytest.mark.parametrize("name", encodings.names())
def test_encoding_example(name):
    example = explain.encoding_example(name)
    if name not in explain.EXAMPLES:
        assert example is None  # no example figure: the encoding page shows none
        return
    fig, caption = example
    assert isinstance(fig, Figure) and drawn(fig) > 0
    assert caption.endswith(".") and len(caption) > 30
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    assert buffer.tell() > 1000


def test_examples_are_of_registered_encodings():
    assert set(explain.EXAMPLES) <= set(encodings.names())
    assert {"sinusoidal", "rope", "alibi", "t5", "fire", "randomized"} <= set(explain.EXAMPLES)


def test_bias_figure_shows_the_encodings_biases():
    matrices = explain.bias_matrices(n_positions=16, n_heads=4)
    titles = list(matrices)
    alibi = encodings.build("alibi", d_model=32, n_heads=4, max_len=16)
    pos = torch.arange(16)
    torch.testing.assert_close(matrices[titles[0]], alibi.bias(pos, pos)[0])
    torch.testing.assert_close(matrices[titles[1]], alibi.bias(pos, pos)[-1])
    buckets = matrices[titles[2]]
    assert torch.equal(buckets, relative_position_bucket(pos[None, :] - pos[:, None], causal=False).float())
    fire = matrices[titles[3]]
    assert float(fire.min()) >= 0 and float(fire.max()) <= 1 + 1e-6 and torch.all(fire.diagonal() == 0)
    for only, panels in (("ALiBi", 2), ("T5", 1), ("FIRE", 1)):
        assert len(explain.bias_figure(only=only).axes) == 2 * panels  # each panel with its colorbar


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
        pos = model.positions(1, tokens.shape[1], "cpu")
        inputs, _ = model.attention_inputs(pos)
        x = block.ln_attn(model.encoding.embed(model.token_embedding(tokens), pos))
        B, T, D = x.shape
        _, _, v = block.attn.queries_keys_values(x, model.encoding, inputs)  # (B, H, T, Dh)
        mine = block.attn.proj((weights @ v).transpose(1, 2).reshape(B, T, D))
        theirs = block.attn(x, model.encoding, inputs)
    # SDPA against an explicit softmax of the same scores: float rounding only
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


@pytest.mark.parametrize("make", [explain.sinusoidal_waves, explain.rotation_property, explain.score_decay_figure,
                                  explain.bias_figure, explain.rope_example, explain.randomized_positions_figure],
                         ids=lambda f: getattr(f, "__name__", str(f)))
def test_legends_and_titles_stay_inside_their_own_panel(make):
    """No legend or title reaches into a neighbouring panel (the waves' legend of five columns once did)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = make()
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    for ax in panels:
        own = [ax.get_legend(), ax.title] if ax.get_legend() else [ax.title]
        for artist in own:
            box = artist.get_window_extent(renderer)
            for other in fig.axes:
                if other is not ax and box.width and box.overlaps(other.get_window_extent(renderer)):
                    raise AssertionError(f"{artist} of panel {ax.get_title()!r} overlaps another panel")


def test_the_concepts_page_shows_every_concept_figure():
    """Each of explain.CONCEPT_FIGURES (the figures the site saves for the Concepts page) is one the page shows."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "concepts.md").read_text()
    assert set(explain.CONCEPT_FIGURES) == set(re.findall(r"figures/(\w+)\.svg", page))
