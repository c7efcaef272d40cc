"""Character-level language modelling on a fixed, offline English corpus."""

from __future__ import annotations

import functools
import gzip
import hashlib
from importlib import resources
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Batch, Task

if TYPE_CHECKING:
    from torch import Tensor

CORPUS_FILE = "python_reference.txt.gz"
#: sha256 of the uncompressed corpus (UTF-8), recorded in every result row
CORPUS_SHA256 = "37d06970fc926e60c16dff401e441b84752446a36b6b64516c229fdec77e992c"
#: characters with their own token; everything else maps to UNKNOWN
ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
UNKNOWN = len(ALPHABET)
VALIDATION_FRACTION = 0.1
#: characters of the validation split scored at every evaluation length (see CharLM.eval_batches):
#: 11 * 4096, so every power-of-two length up to 4096 cuts it into whole windows; it is 97% of the
#: split (46,497 characters) and puts the standard error of the loss near 0.01 nats or below
EVAL_SPAN = 45_056


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[Tensor, Tensor]:
    """The encoded corpus split into (train, validation) int64 tensors.

    The text is the Python 3.11.7 language reference as shipped with CPython
    (``pydoc_data.topics``: the "topics" help text, all topics joined in sorted
    order), vendored as ``pebench/data/python_reference.txt.gz`` so results do
    not depend on the local Python version; its SHA-256 is checked on load.
    The last 10% of characters are the validation split.
    """
    raw = gzip.decompress(resources.files("pebench.data").joinpath(CORPUS_FILE).read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CORPUS_SHA256:
        raise RuntimeError(f"corpus {CORPUS_FILE} has sha256 {digest}, expected {CORPUS_SHA256}; reinstall pebench")
    lookup = {ch: i for i, ch in enumerate(ALPHABET)}
    ids = torch.tensor([lookup.get(ch, UNKNOWN) for ch in raw.decode("utf-8")], dtype=torch.long)
    cut = int(len(ids) * (1 - VALIDATION_FRACTION))
    return ids[:cut], ids[cut:]


@register("charlm", paper="press2022alibi", decoder_only=True, label="character LM")
class CharLM(Task):
    """Next-character prediction on the Python language reference (466k characters of English).

    The protocol of Press et al. (2022) at laptop scale: a causal model is
    trained on windows of at most ``train_max_len`` characters and its
    per-character loss (perplexity ``exp(loss)``) is measured on held-out text
    with longer windows. "Length" is the context length: an example is a
    window ``c_0 .. c_L`` of the corpus, the input is ``c_0 .. c_{L-1}`` and the
    output ``c_1 .. c_L`` (every position predicts the next character), so the
    task renders without separator (:meth:`render`).

    Training windows start at uniform random offsets in the first 90% of the
    corpus (the last 10% is the validation split). Evaluation follows the
    ALiBi paper's non-overlapping protocol (:meth:`eval_batches`): at every
    length the model predicts the same :data:`EVAL_SPAN` validation
    characters, in consecutive windows, so a loss-vs-length curve compares
    contexts on one text. 96 characters have their own token (newline and
    printable ASCII), the rest share one. Chance token accuracy is the
    frequency of the most common character in the training split (the space).
    Decoder only.
    """

    #: 2: evaluation scores one fixed validation span in non-overlapping windows (1: random windows)
    version = 2
    order_dependent = True
    vocab_size = len(ALPHABET) + 1
    decoder_only = True

    def output_length(self, length: int) -> int:
        return length

    def sample(self, n: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        """``n`` windows of ``length + 1`` characters from the ``train`` or ``eval`` split."""
        self.check_length(length)
        if split not in ("train", "eval"):
            raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
        text = corpus()[0 if split == "train" else 1]
        if length + 1 > len(text):
            raise ValueError(f"charlm windows of {length + 1} characters exceed the {split} split ({len(text)})")
        starts = torch.randint(0, len(text) - length, (n,), generator=generator)  # (n,)
        windows = text[starts.unsqueeze(1) + torch.arange(length + 1)]  # (n, L + 1)
        return Batch(inputs=windows[:, :-1], targets=windows[:, 1:])

    def eval_batches(self, length: int, n_examples: int, batch_size: int, generator: torch.Generator) -> list[Batch]:
        """The validation span cut into non-overlapping windows of ``length``, in batches of ``batch_size``.

        With ``c_0 .. c_S`` the first ``S + 1`` characters of the validation
        split (``S`` = :data:`EVAL_SPAN`), window ``k`` has input
        ``c_{kL} .. c_{kL+L-1}`` and targets ``c_{kL+1} .. c_{kL+L}``, for
        ``k < S // L``: each of ``c_1 .. c_S`` is predicted exactly once, and
        the first character of each window is predicted from a context of one
        (Press et al. 2022, non-overlapping evaluation; their sliding-window
        variant is not used). Where ``L`` does not divide ``S``, the last
        ``S mod L`` characters are not scored at that length; every
        power-of-two length up to 4096 divides it.

        ``n_examples`` and ``generator`` are ignored: the text scored is fixed,
        and the number of windows is ``S // L``.

        Noise: the row's ``loss_se`` treats windows as independent, but
        neighbouring windows share a topic, so at short ``L`` it understates how
        much the loss would move on other text (a 200-step model: 0.02 nats
        across 32-character windows, 0.06 across 512-character blocks). That
        part is common to every length and encoding, which all score this
        text; the change of loss with ``L`` is measured on the same
        characters, with a paired standard error below 0.01 nats for that model.
        """
        self.check_length(length)
        if length > EVAL_SPAN:
            raise ValueError(f"charlm evaluates contexts of at most {EVAL_SPAN} characters (EVAL_SPAN), got {length}")
        n_windows = EVAL_SPAN // length
        span = corpus()[1][: n_windows * length + 1]
        inputs, targets = span[:-1].view(n_windows, length), span[1:].view(n_windows, length)  # (S // L, L)
        return [
            Batch(inputs=inputs[start : start + batch_size], targets=targets[start : start + batch_size])
            for start in range(0, n_windows, batch_size)
        ]

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return self.sample(n, length, generator).inputs

    def solve(self, inputs: Tensor) -> Tensor:
        raise NotImplementedError("charlm targets are the next characters of the corpus, not a function of the input")

    def render(self, batch: Batch, arch: str) -> tuple[Tensor, Tensor]:
        """Tokens are the input characters, labels the next characters (no separator)."""
        if arch != "decoder":
            raise ValueError("charlm is a causal language-modelling task: use arch='decoder'")
        return batch.inputs, batch.targets

    def rendered_length(self, length: int, arch: str) -> int:
        """A window as it is: ``length`` tokens."""
        if arch != "decoder":
            raise ValueError("charlm is a causal language-modelling task: use arch='decoder'")
        return length

    def chance_accuracy(self, length: int) -> float:
        train = corpus()[0]
        return float(torch.bincount(train, minlength=self.vocab_size).max() / len(train))
