"""Positional encodings, one file each, registered by name.

>>> from pebench import encodings
>>> pe = encodings.build("rope", d_model=64, n_heads=4, max_len=128)
>>> "alibi" in encodings.names()
True

``randomized:<base>`` wraps any other encoding with the randomized positions
of Ruoss et al. (2023), e.g. ``build("randomized:rope", ...)``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

from pebench.encodings.base import PositionalEncoding, relative_distance
from pebench.registry import Registry, citation

ENCODINGS: Registry[type[PositionalEncoding]] = Registry("encoding", base=PositionalEncoding)

KINDS = ("none", "input", "rotary", "bias", "content", "wrapper")


def register(
    name: str,
    *,
    kind: str,
    paper: str,
    has_parameters: bool,
    causal_only: bool = False,
    summary: str = "",
    baseline: bool = False,
    cites: tuple[str, ...] = (),
    label: str = "",
):
    """Class decorator registering a :class:`PositionalEncoding` under ``name``.

    Args:
        name: the name users pass to :func:`build`.
        kind: which slot it uses: ``none``, ``input``, ``rotary``, ``bias``, ``content``
            (a score term computed from queries and keys: ``content_score``) or ``wrapper``
            (changes the positions given to another encoding).
        paper: what to cite for it: the BibTeX key of its paper in ``docs/references.bib``, or, for a paper
            that pebench's bibliography does not hold (a plugin's), its DOI or the citation written out
            (:func:`pebench.registry.citation`); its metadata keeps it as ``paper`` and, read, as ``citation``.
        has_parameters: whether it adds trainable parameters.
        causal_only: whether it is only defined for causal (decoder) models.
        summary: one line for listings and docs.
        baseline: the position-free baseline the analysis compares against (NoPE); at most one
            encoding is the baseline.
        cites: BibTeX keys of further papers its docs page cites (e.g. the RoPE scalings).
        label: display name in tables, findings and figures (default: ``name``); files keep ``name``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    cited = citation(paper)

    def decorator(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
        if baseline and baseline_name() is not None:
            raise ValueError(f"encoding {name!r} is declared the baseline, but {baseline_name()!r} already is")
        ENCODINGS.register(
            name,
            kind=kind,
            paper=str(cited),
            citation=cited,
            has_parameters=has_parameters,
            causal_only=causal_only,
            summary=summary or (inspect.getdoc(cls) or "").split("\n")[0],
            baseline=baseline,
            cites=tuple(cites),
            label=label or name,
        )(cls)
        cls.name = name
        return cls

    return decorator


def _import_all() -> None:
    """Import every module of this package so that each registers itself."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


def baseline_name() -> str | None:
    """The encoding registered with ``baseline=True`` (NoPE), or None."""
    return next((n for n in ENCODINGS.in_order() if ENCODINGS.meta(n).get("baseline")), None)


def names() -> list[str]:
    """Names accepted by :func:`build` (``randomized:<base>`` is listed as ``randomized``)."""
    return ENCODINGS.names()


def meta(name: str) -> dict[str, Any]:
    """Registry metadata of ``name`` (kind, paper and its :class:`~pebench.registry.Citation`, has_parameters,
    causal_only, summary, ...)."""
    base, _, inner = name.partition(":")
    info = ENCODINGS.meta(base)
    if inner:  # a wrapper has parameters / is causal-only if what it wraps is
        inner_info = meta(inner)
        info["has_parameters"] = info["has_parameters"] or inner_info["has_parameters"]
        info["causal_only"] = info["causal_only"] or inner_info["causal_only"]
    return info


def options(name: str) -> dict[str, Any]:
    """The keyword options of encoding ``name`` and their defaults.

    ``causal`` is not one: it comes from the model's architecture; nor are ``max_len`` and
    ``train_len``: they come from the protocol (see :func:`build`).
    """
    cls = ENCODINGS.get(name.partition(":")[0])
    params = inspect.signature(cls.__init__).parameters
    not_options = ("self", "d_model", "n_heads", "max_len", "base", "causal", "train_len")
    return {key: p.default for key, p in params.items() if key not in not_options and p.kind is p.KEYWORD_ONLY}


def build(
    name: str,
    *,
    d_model: int,
    n_heads: int,
    max_len: int,
    causal: bool = False,
    train_len: int | None = None,
    **opts: Any,
) -> PositionalEncoding:
    """Build the encoding registered as ``name``.

    Args:
        name: a registered name, or ``randomized:<base>`` for randomized
            positions around any base encoding.
        d_model: model width.
        n_heads: attention heads.
        max_len: the position capacity, a protocol constant (never an
            evaluation length): it sizes fixed-size tables only (``learned``'s
            rows, ``randomized``'s ``max_position``).
        causal: whether the model attends causally (a decoder). Given to every
            encoding's constructor (wrappers pass it on to what they wrap);
            :func:`pebench.model.build_model` sets it from the architecture.
        train_len: the longest rendered training sequence; defaults meaning
            "the training context" read it (FIRE's ``init_threshold``, YaRN's
            ``original_max_len``, CoPE's ``n_positions``). ``None``: ``max_len``.
            An encoding whose constructor does not accept ``train_len`` (an
            older plugin) is built without it, and its :attr:`train_len` is
            set afterwards.
        **opts: encoding-specific options (see :func:`options`).

    Raises:
        UnknownNameError: unknown name (the message suggests close names).
        ValueError: an unknown option or an impossible configuration; the
            message says what to change.
        TypeError: the encoding's constructor does not accept ``causal``.
    """
    base, sep, inner = name.partition(":")
    cls = ENCODINGS.get(base)
    params = inspect.signature(cls.__init__).parameters
    takes_any_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if "causal" not in params and not takes_any_keyword:
        raise TypeError(
            f"encoding {base!r} ({cls.__module__}.{cls.__qualname__}) must accept the keyword argument "
            f"'causal: bool = False' and pass it on: super().__init__(d_model, n_heads, max_len, causal=causal)"
        )
    valid = options(base)
    unknown = sorted(set(opts) - set(valid))
    if unknown:
        raise ValueError(
            f"encoding {base!r} has no option(s) {', '.join(unknown)}; "
            f"valid options: {', '.join(f'{k}={v!r}' for k, v in valid.items()) or 'none'}"
        )
    if sep and "base" not in params:
        raise ValueError(f"encoding {base!r} does not wrap another encoding; use {base!r} without ':'")
    if not sep and "base" in params:
        raise ValueError(f"encoding {base!r} wraps another encoding; write it as '{base}:<base>', e.g. '{base}:rope'")
    arguments: dict[str, Any] = {"d_model": d_model, "n_heads": n_heads, "max_len": max_len, "causal": causal}
    if sep:
        arguments["base"] = inner
    takes_train_len = "train_len" in params or takes_any_keyword
    if takes_train_len:
        arguments["train_len"] = train_len
    encoding = cls(**arguments, **opts)
    if not takes_train_len:  # a plugin written before train_len: it records it, without using it
        encoding.train_len = max_len if train_len is None else train_len
    encoding.given_options = dict(opts)
    return encoding


_import_all()

__all__ = [
    "ENCODINGS", "PositionalEncoding", "baseline_name", "build", "meta", "names", "options", "register",
    "relative_distance",
]
