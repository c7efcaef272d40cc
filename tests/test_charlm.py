"""The character-level language-modelling task."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
import torch

import pebench
from pebench import tasks
from pebench.tasks.charlm import ALPHABET, CORPUS_FILE, CORPUS_SHA256, corpus


def test_corpus_is_the_pinned_text():
    """The vendored file, read here without the loader, is the pinned text, and corpus() is its encoding."""
    raw = gzip.decompress((Path(pebench.__file__).parent / "data" / CORPUS_FILE).read_bytes())
    assert len(raw) == 466_117  # UTF-8 bytes
    digest = hashlib.sha256(raw).hexdigest()
    assert digest == "37d06970fc926e60c16dff401e441b84752446a36b6b64516c229fdec77e992c" == CORPUS_SHA256
    text = raw.decode("utf-8")
    assert len(text) == 464_970  # characters
    train, validation = corpus()
    assert len(validation) == pytest.approx(0.1 * len(text), abs=1)
    unknown = len(ALPHABET)  # one token for every character outside the alphabet
    expected = [ALPHABET.index(ch) if ch in ALPHABET else unknown for ch in text]
    assert torch.cat([train, validation]).tolist() == expected


def test_windows_are_next_character_pairs_and_deterministic():
    task = tasks.get("charlm")
    a = task.sample(4, 32, torch.Generator().manual_seed(0))
    b = task.sample(4, 32, torch.Generator().manual_seed(0))
    assert torch.equal(a.inputs, b.inputs) and a.inputs.shape == (4, 32) == a.targets.shape
    assert torch.equal(a.inputs[:, 1:], a.targets[:, :-1])  # targets are inputs shifted by one
    train, validation = corpus()
    text = "".join(ALPHABET[i] if i < len(ALPHABET) else "?" for i in a.inputs[0].tolist())
    assert text in "".join(ALPHABET[i] if i < len(ALPHABET) else "?" for i in train.tolist())


def test_eval_split_is_held_out():
    task = tasks.get("charlm")
    batch = task.sample(8, 64, torch.Generator().manual_seed(1), split="eval")
    validation = corpus()[1]
    joined = ",".join(map(str, validation.tolist()))
    for row in batch.inputs:
        assert ",".join(map(str, row.tolist())) in joined
    with pytest.raises(ValueError, match="split"):
        task.sample(1, 8, torch.Generator(), split="test")


def test_renders_as_plain_stream_and_decoder_only():
    task = tasks.get("charlm")
    batch = task.sample(2, 16, torch.Generator().manual_seed(0))
    tokens, labels = tasks.render(task, batch, "decoder")
    assert torch.equal(tokens, batch.inputs) and torch.equal(labels, batch.targets)
    with pytest.raises(ValueError, match="decoder"):
        tasks.render(task, batch, "encoder")


def test_chance_is_most_frequent_character():
    task = tasks.get("charlm")
    train = corpus()[0]
    space = ALPHABET.index(" ")
    assert task.chance_accuracy(64) == pytest.approx(float((train == space).float().mean()))
    assert 0.15 < task.chance_accuracy(64) < 0.25
