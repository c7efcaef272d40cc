"""Deletang et al.'s string tasks on their own alphabets, beside pebench's variants of them.

``reverse``, ``duplicate``, ``sort`` and ``parity`` are pebench's versions of
four of their tasks; these are the originals under their names, so the battery
of Deletang et al. (2023) and Ruoss et al. (2023) is complete and comparable.
"""

from __future__ import annotations

from pebench.tasks import register
from pebench.tasks.duplicate import Duplicate
from pebench.tasks.modular import Parity
from pebench.tasks.reverse import Reverse
from pebench.tasks.sort import Sort


@register("reverse_string", paper="deletang2023chomsky", chomsky="context_free")
class ReverseString(Reverse):
    """Reverse a binary string: ``0 1 1 0 1 0 -> 0 1 0 1 1 0``.

    Their example ``011010 -> 010110``. Inputs are uniform bits
    (``vocab_size = 2``, the alphabet of their paper); the output is the input
    back to front, ``L`` tokens. "Reverse string" of Deletang et al. (2023)
    (``tasks/dcf/reverse_string.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a deterministic
    context-free task; pebench's ``reverse`` is the same on 10 symbols.

    Order-dependent. Chance token accuracy is exactly ``1/2``: every output is
    one uniform input bit.
    """

    version = 1
    exchangeable_inputs = True
    vocab_size = 2


@register("duplicate_string", paper="deletang2023chomsky", chomsky="context_sensitive")
class DuplicateString(Duplicate):
    """Write a binary string twice: ``1 0 1 -> 1 0 1 1 0 1``.

    Their examples ``101 -> 101101`` and ``111111 -> 111111111111``. Inputs
    are uniform bits (``vocab_size = 2``, the alphabet of their paper); the
    output has ``2 L`` tokens. "Duplicate string" of Deletang et al. (2023)
    (``tasks/cs/duplicate_string.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a context-sensitive
    task; pebench's ``duplicate`` is the same on 10 symbols.

    Order-dependent. Chance token accuracy is exactly ``1/2``: every output is
    one uniform input bit.
    """

    version = 1
    exchangeable_inputs = True
    vocab_size = 2


@register("bucket_sort", paper="deletang2023chomsky", chomsky="context_sensitive")
class BucketSort(Sort):
    """Sort a string over 5 symbols ascending: ``1 0 2 0 4 1 1 2 -> 0 0 1 1 1 2 2 4``.

    Their example ``10204112 -> 00111224``. Inputs are uniform over
    ``vocab_size = 5`` symbols (the alphabet of their paper); the output has
    ``L`` tokens. "Bucket sort" of Deletang et al. (2023)
    (``tasks/cs/bucket_sort.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a context-sensitive
    task; pebench's ``sort`` is the same on 10 symbols.

    Order-invariant control. Chance: as for ``sort``, computed exactly from
    the order statistics of ``L`` uniform symbols (mean over positions of the
    most likely symbol there); it rises with ``L`` as order statistics
    concentrate.
    """

    version = 1
    exchangeable_inputs = True
    vocab_size = 5


@register("parity_check", paper="deletang2023chomsky", chomsky="regular")
class ParityCheck(Parity):
    """Parity of the number of ones in a bit string: ``1 0 1 0 1 0 0 -> 1``.

    Their examples ``1010100 -> 1`` (three ones) and ``01111 -> 0`` (four).
    Inputs are uniform bits (``vocab_size = 2``); output: 1 token. "Parity
    check" of Deletang et al. (2023) (``tasks/regular/parity_check.py`` of
    google-deepmind/neural_networks_chomsky_hierarchy), a regular task. It is
    the same task as pebench's ``parity`` (same distribution and answer),
    registered under their name so the battery is complete; a suite needs
    only one of the two.

    Order-invariant control. Chance token accuracy is exactly ``1/2``.
    """

    version = 1
    exchangeable_inputs = True
