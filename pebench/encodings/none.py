"""No positional encoding (NoPE)."""

from __future__ import annotations

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


@register("none", kind="none", paper="haviv2022nope", has_parameters=False, baseline=True,
          cites=("kazemnejad2023nope",), label="NoPE",
          summary="No positional information (NoPE); a decoder can still infer order from its causal mask.")
class NoPE(PositionalEncoding):
    """No positional encoding: all three hooks are the identity.

    A bidirectional (encoder) transformer without positional information is
    permutation-equivariant: permuting its input permutes its output in the
    same way (tested). A causal decoder is not, because the causal mask
    breaks the symmetry; Haviv et al. (2022) and Kazemnejad et al. (2023)
    show such decoders learn positional information implicitly.

    References: Haviv et al. 2022, "Transformer Language Models without
    Positional Encodings Still Learn Positional Information";
    Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length
    Generalization in Transformers".

    Args:
        d_model, n_heads: model width and heads (unused).
        max_len, train_len: unused.
        causal: unused.
    """
