"""The task interface and how a task is rendered for an encoder or a decoder.

A task is a versioned, seeded generator of (input, output) token pairs over a
fixed vocabulary of ``vocab_size`` symbols ``0..vocab_size-1``. "Length" is
always the input length. Two special tokens are appended to every task's
vocabulary when it is rendered for a model: ``SEP = vocab_size`` and
``BLANK = vocab_size + 1`` (so a model needs ``vocab_size + 2`` embeddings,
see :func:`model_vocab_size`).

Rendering (Deletang et al. 2023 for the encoder):

* decoder: tokens ``[x, SEP, y[:-1]]``, labels ``[-100 x len(x), y]`` — the
  model reads the input and the separator and predicts the output with
  teacher forcing (the label of position ``t`` is the token at ``t + 1``);
* encoder: tokens ``[x, SEP, BLANK x len(y)]``, labels
  ``[-100 x (len(x)+1), y]`` — the output is predicted at the blank positions
  in one non-autoregressive pass.

Labels equal to ``IGNORE = -100`` carry no loss (PyTorch's cross-entropy default).

A task's input space at a length is split in two by a fixed hash of the input (its symbols and length,
:func:`is_held_out`): one input in :data:`HELD_OUT_SHARE` belongs to the held-out part, which the fit criterion of
protocol v3 draws from and training never sees (:mod:`pebench.learn.heldout`). A task says whether a length is
split (:meth:`Task.is_split`) and how many distinct inputs it draws from (:meth:`Task.distinct_inputs`). The hash is
exact integer arithmetic below 2**63 (no overflow), so the split is the same on every machine.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pebench.lazy_torch import torch

if TYPE_CHECKING:
    from torch import Tensor

IGNORE = -100
ARCHS = ("encoder", "decoder")

#: one input in this many belongs to the held-out part of its input space
HELD_OUT_SHARE = 8
#: a length is split only if its held-out part holds at least this many distinct inputs
MIN_HELD_OUT_INPUTS = 16
#: draws of the probe that decides whether a length is split (:meth:`Task.is_split`)
PROBE_DRAWS = 4096
#: draws of the probe that counts distinct inputs (:meth:`Task.distinct_inputs`), at most, in chunks of
#: :data:`COUNT_CHUNK`; it stops once it has seen :data:`COUNT_ENOUGH` (more than any fit check's examples)
COUNT_DRAWS = 65_536
COUNT_CHUNK = 8_192
COUNT_ENOUGH = 1_024

_MODULUS = 2**31 - 1  # a prime: the rolling hash stays below it, so key * multiplier < 2**63
_MULTIPLIER = 1_000_003
_MIX = 2_654_435_761  # Knuth's multiplicative hash constant, < 2**32


def input_keys(inputs: Tensor) -> Tensor:
    """A 32-bit hash (N,) of each input row (N, L) and its length, in exact int64 arithmetic."""
    n, length = inputs.shape
    key = torch.full((n,), length, dtype=torch.long)
    for column in inputs.long().cpu().unbind(1):  # (N,) each
        key = (key * _MULTIPLIER + column + 1) % _MODULUS
    return (key * _MIX) % 2**32


def is_held_out(inputs: Tensor) -> Tensor:
    """Which input rows (N, L) belong to the held-out part of their input space (bool (N,))."""
    return (input_keys(inputs) >> 16) % HELD_OUT_SHARE == 0


@dataclass(frozen=True)
class Batch:
    """A batch of task examples.

    Attributes:
        inputs: (N, L) int64 symbols in ``[0, vocab_size)``.
        targets: (N, L_out) int64 symbols in ``[0, vocab_size)``.
    """

    inputs: Tensor
    targets: Tensor


class Task:
    """Base class of every task.

    Subclasses set the class attributes below and implement
    :meth:`generate_inputs` and :meth:`solve`; :meth:`sample` combines them.

    Attributes:
        name: registry name (set by :func:`pebench.tasks.register`).
        version: bump whenever the distribution of (input, output) pairs changes;
            it is recorded in every result row.
        order_dependent: whether permuting the input can change the output.
        vocab_size: number of symbols used by inputs and outputs.
        min_length: smallest input length the task is defined for.
        max_length: largest input length the task is defined for, or ``None``
            if there is no limit (e.g. ``count`` writes its answer in three digits).
        exchangeable_inputs: whether :meth:`generate_inputs` draws exchangeable inputs (iid symbols, or
            a fixed number of blanks at uniformly random places), so that ``P(x)`` depends on the bag of
            ``x`` only: the position-free floor of an order-dependent task is then estimated without bias
            (``monte_carlo``), otherwise it is a lower bound (``permutation``; :mod:`pebench.tasks.floors`).
    """

    name: str = "base"
    version: int = 1
    order_dependent: bool = True
    vocab_size: int = 0
    min_length: int = 1
    max_length: int | None = None
    exchangeable_inputs: bool = False

    def output_length(self, length: int) -> int:
        """Output length for inputs of ``length`` (the same for every example)."""
        raise NotImplementedError

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        """(n, length) int64 random inputs drawn with ``generator``."""
        raise NotImplementedError

    def solve(self, inputs: Tensor) -> Tensor:
        """The correct outputs (n, output_length) for ``inputs`` (n, length)."""
        raise NotImplementedError

    def check_length(self, length: int) -> None:
        """Raise ``ValueError`` if the task is not defined for ``length``."""
        if length < self.min_length:
            raise ValueError(f"task {self.name!r} needs input length >= {self.min_length}, got {length}")
        if self.max_length is not None and length > self.max_length:
            raise ValueError(f"task {self.name!r} needs input length <= {self.max_length}, got {length}")

    def sample(self, n: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        """``n`` examples of input length ``length``; deterministic in ``generator``'s state.

        ``split`` is ``"train"`` or ``"eval"``; synthetic tasks draw both from
        the same distribution (fresh samples), a corpus task draws them from
        disjoint parts of its text.
        """
        self.check_length(length)
        inputs = self.generate_inputs(n, length, generator)
        return Batch(inputs=inputs, targets=self.solve(inputs))

    def eval_batches(self, length: int, n_examples: int, batch_size: int, generator: torch.Generator) -> list[Batch]:
        """The examples :func:`pebench.learn.evaluate.evaluate` scores at ``length``, in batches.

        The default is ``n_examples`` fresh ``split="eval"`` examples drawn with
        ``generator``, in batches of at most ``batch_size``. A task with a fixed
        evaluation text overrides it to score the same text at every length
        (``charlm``); it may then ignore ``n_examples`` and ``generator``, and
        says so.
        """
        return [
            self.sample(min(batch_size, n_examples - start), length, generator, split="eval")
            for start in range(0, n_examples, batch_size)
        ]

    def render(self, batch: Batch, arch: str) -> tuple[Tensor, Tensor]:
        """Model tokens and labels for ``arch``; see :func:`render` (tasks may override, and then override
        :meth:`rendered_length` too)."""
        return render_pair(self, batch, arch)

    def rendered_length(self, length: int, arch: str) -> int:
        """Positions of every example of input ``length`` as :meth:`render` renders it for ``arch``: decoder
        ``L + L_out`` (``[x, SEP, y[:-1]]``), encoder ``L + 1 + L_out`` (``[x, SEP, blanks]``)."""
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        return length + self.output_length(length) + (arch == "encoder")

    def chance_accuracy(self, length: int) -> float:
        """Token accuracy of the best input-independent guess at this length.

        It is the accuracy of always predicting, at each output position, the
        most likely output symbol there. The default estimates it from 20,000
        examples drawn with a fixed seed; tasks override it with an exact formula
        where one is known (tests check the two agree).
        """
        generator = torch.Generator().manual_seed(12345)
        targets = self.sample(20_000, length, generator).targets
        counts = torch.nn.functional.one_hot(targets, self.vocab_size).sum(0)  # (L_out, V)
        return float(counts.max(-1).values.sum() / targets.numel())

    def is_split(self, length: int) -> bool:
        """Whether the input space at ``length`` is split into training and held-out inputs: its held-out part
        holds at least :data:`MIN_HELD_OUT_INPUTS` distinct inputs among :data:`PROBE_DRAWS` fixed draws
        (computed once per task version and length: :func:`pebench.tasks.get` makes a new instance per call)."""
        return _is_split(type(self), self.name, self.version, length)

    def distinct_inputs(self, length: int, held_out: bool = False) -> int:
        """How many distinct inputs of ``length`` the task draws from: those of the held-out part where
        ``held_out`` and the length :meth:`is_split`, else of the whole space. Counted among up to
        :data:`COUNT_DRAWS` fixed draws (held-out ones: one in :data:`HELD_OUT_SHARE` of them), so a count of a few
        hundred or fewer is the exact size of a uniformly drawn space; counting stops at :data:`COUNT_ENOUGH` or
        more, where the space holds at least as many (computed once per task version, length and part)."""
        return _distinct_counts(type(self), self.name, self.version, length)[held_out and self.is_split(length)]

    def describe(self) -> str:
        """A one-paragraph description (first paragraph of the docstring)."""
        doc = (type(self).__doc__ or "").strip()
        return doc.split("\n\n")[0].replace("\n", " ")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version})"


@functools.lru_cache(maxsize=4096)
def _is_split(cls: type[Task], name: str, version: int, length: int) -> bool:
    inputs = cls().sample(PROBE_DRAWS, length, torch.Generator().manual_seed(7_919 * length + 1), split="eval").inputs
    held = inputs[is_held_out(inputs)]
    return len(torch.unique(held, dim=0)) >= MIN_HELD_OUT_INPUTS if len(held) else False


@functools.lru_cache(maxsize=4096)
def _distinct_counts(cls: type[Task], name: str, version: int, length: int) -> tuple[int, int]:
    """The distinct inputs of the whole space and of its held-out part among the same fixed draws (one pass
    draws for both: each count stops growing once it reaches :data:`COUNT_ENOUGH`, as it would alone)."""
    task, generator = cls(), torch.Generator().manual_seed(7_919 * length + 2)
    seen = [torch.empty(0, length, dtype=torch.long)] * 2  # the whole space, the held-out part
    for _ in range(COUNT_DRAWS // COUNT_CHUNK):
        inputs = task.sample(COUNT_CHUNK, length, generator, split="eval").inputs.long()
        for part, drawn in enumerate((inputs, inputs[is_held_out(inputs)])):
            if len(seen[part]) < COUNT_ENOUGH:
                seen[part] = torch.unique(torch.cat([seen[part], drawn]), dim=0)
        if min(map(len, seen)) >= COUNT_ENOUGH:
            break
    return len(seen[0]), len(seen[1])


class SequenceTask(Task):
    """A task on uniform random symbols whose output is as long as its input (copy, reverse, ...)."""

    def output_length(self, length: int) -> int:
        return length

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        return torch.randint(0, self.vocab_size, (n, length), generator=generator)


def model_vocab_size(task: Task) -> int:
    """Embedding-table size a model needs for ``task``: its symbols + SEP + BLANK."""
    return task.vocab_size + 2


def render(task: Task, batch: Batch, arch: str) -> tuple[Tensor, Tensor]:
    """Turn a batch into model tokens and labels for ``arch`` (see module doc).

    Calls ``task.render``, which is :func:`render_pair` unless the task
    overrides it (``charlm`` renders a plain next-token stream).

    Returns:
        tokens (N, T) int64 and labels (N, T) int64 with ``IGNORE`` where no loss.
    """
    return task.render(batch, arch)


def render_pair(task: Task, batch: Batch, arch: str) -> tuple[Tensor, Tensor]:
    """The input/output rendering of the module doc (decoder: teacher forcing; encoder: blanks).

    Returns:
        tokens (N, T) int64 and labels (N, T) int64 with ``IGNORE`` where no loss.
    """
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    inputs, targets = batch.inputs, batch.targets
    n, length = inputs.shape
    out_len = targets.shape[1]
    sep = torch.full((n, 1), task.vocab_size, dtype=torch.long, device=inputs.device)
    if arch == "decoder":
        tokens = torch.cat([inputs, sep, targets[:, :-1]], dim=1)  # (N, L + L_out)
        ignore = torch.full((n, length), IGNORE, dtype=torch.long, device=inputs.device)
        labels = torch.cat([ignore, targets], dim=1)
    else:
        blanks = torch.full((n, out_len), task.vocab_size + 1, dtype=torch.long, device=inputs.device)
        tokens = torch.cat([inputs, sep, blanks], dim=1)  # (N, L + 1 + L_out)
        ignore = torch.full((n, length + 1), IGNORE, dtype=torch.long, device=inputs.device)
        labels = torch.cat([ignore, targets], dim=1)
    return tokens, labels


def shuffle_inputs(inputs: Tensor, generator: torch.Generator) -> Tensor:
    """Permute the tokens of each input row independently (for the shuffled condition)."""
    n, length = inputs.shape
    keys = torch.rand(n, length, generator=generator)
    perm = keys.argsort(dim=1).to(inputs.device)
    return torch.gather(inputs, 1, perm)
