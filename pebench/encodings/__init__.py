"""Positional encodings, one file each, registered by name.

>>> from pebench import encodings
>>> pe = encodings.build("rope", d_model=64, n_heads=4, max_len=128)
>>> "alibi" in encodings.names()
True

``randomized:<base>`` wraps any other encoding with the randomized positions
of Ruoss et al. (2023), e.g. ``build("randomized:rope", ...)``.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench.registry import Registry, citation

if TYPE_CHECKING:
    from pebench.encodings.base import PositionalEncoding

KINDS = ("none", "input", "rotary", "bias", "content", "gate", "softmax", "architectural", "wrapper")

#: the family of the field each kind belongs to, for grouping encodings on the site
KIND_FAMILIES = {
    "none": "none", "input": "absolute", "rotary": "rotary", "bias": "additive bias", "content": "data-dependent",
    "gate": "data-dependent", "softmax": "softmax-level", "architectural": "architectural", "wrapper": "wrapper",
}

#: the modules of this package that register no encoding
SHARED_MODULES = ("base", "_rotary")


def _import_all() -> None:
    """Import every module of this package so that each registers itself (the first use of :data:`ENCODINGS`
    does: importing this package imports neither them nor torch)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in SHARED_MODULES:
            importlib.import_module(f"{__name__}.{module.name}")


def _base_class() -> type:
    from pebench.encodings.base import PositionalEncoding

    return PositionalEncoding


ENCODINGS: Registry[type[PositionalEncoding]] = Registry("encoding", base=_base_class, builtins=_import_all)


def __getattr__(name: str) -> Any:
    """``PositionalEncoding`` and ``relative_distance`` of :mod:`pebench.encodings.base`, imported on first use
    (PEP 562): they need torch, and listing the encodings does not."""
    if name in ("PositionalEncoding", "relative_distance"):
        from pebench.encodings import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
            (a score term computed from queries and keys: ``content_score``), ``gate`` (a gate computed
            from the layer input: ``attention_weights``), ``softmax`` (replaces or rescales the softmax),
            ``architectural`` (a per-layer choice or a change to the block: ``for_layer``, ``mix``) or
            ``wrapper`` (changes the positions given to another encoding). :data:`KIND_FAMILIES` groups them.
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
    metadata = _metadata(name, kind=kind, paper=paper, has_parameters=has_parameters, causal_only=causal_only,
                         summary=summary, baseline=baseline, cites=cites, label=label)

    def decorator(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
        if baseline and baseline_name() is not None:
            raise ValueError(f"encoding {name!r} is declared the baseline, but {baseline_name()!r} already is")
        ENCODINGS.register(name, **{**metadata, "summary": summary or _first_line(inspect.getdoc(cls))})(cls)
        cls.name = name
        return cls

    return decorator


def _metadata(
    name: str, *, kind: str, paper: str, has_parameters: bool, causal_only: bool = False, summary: str = "",
    baseline: bool = False, cites: tuple[str, ...] = (), label: str = "",
) -> dict[str, Any]:
    """The registry metadata of the arguments of :func:`register` (``summary`` as given)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    cited = citation(paper)
    return {"kind": kind, "paper": str(cited), "citation": cited, "has_parameters": has_parameters,
            "causal_only": causal_only, "summary": summary, "baseline": baseline, "cites": tuple(cites),
            "label": label or name}


def _first_line(doc: str | None) -> str:
    return (doc or "").split("\n")[0]


@functools.cache
def declared() -> dict[str, dict[str, Any]] | None:
    """The metadata of every built-in encoding, read from the ``@register(...)`` lines of this package's source
    without running it (so without torch), in the order of :func:`in_order`; ``None`` where a registration is
    not written with literal arguments (then the modules are imported instead). What the registry holds once they
    are imported is the same (a test compares them)."""
    found: dict[str, dict[str, Any]] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name in SHARED_MODULES:
            continue
        try:
            tree = ast.parse(Path(__file__).with_name(f"{module.name}.py").read_text(encoding="utf-8"))
        except OSError:  # installed without its source (compiled files only): the modules are imported instead
            return None
        for node in tree.body:
            for decorator in getattr(node, "decorator_list", []):
                called = decorator.func if isinstance(decorator, ast.Call) else decorator
                if getattr(called, "id", getattr(called, "attr", None)) != "register":
                    continue
                try:
                    name = ast.literal_eval(decorator.args[0])
                    arguments = {keyword.arg: ast.literal_eval(keyword.value) for keyword in decorator.keywords}
                    found[name] = _metadata(name, **arguments)
                except (AttributeError, IndexError, TypeError, ValueError):
                    return None
                found[name]["summary"] = found[name]["summary"] or _first_line(ast.get_docstring(node))
    return found


def baseline_name() -> str | None:
    """The encoding registered with ``baseline=True`` (NoPE), or None."""
    return next((name for name in in_order() if meta(name).get("baseline")), None)


def names() -> list[str]:
    """Names accepted by :func:`build` (``randomized:<base>`` is listed as ``randomized``)."""
    builtins = _unloaded_builtins()
    return sorted(builtins) if builtins is not None else ENCODINGS.names()


def meta(name: str) -> dict[str, Any]:
    """Registry metadata of ``name`` (kind, paper and its :class:`~pebench.registry.Citation`, has_parameters,
    causal_only, summary, ...)."""
    base, _, inner = name.partition(":")
    builtins = _unloaded_builtins()
    info = dict(builtins[base]) if builtins and base in builtins else ENCODINGS.meta(base)  # unknown: its error
    if inner:  # a wrapper has parameters / is causal-only if what it wraps is
        inner_info = meta(inner)
        info["has_parameters"] = info["has_parameters"] or inner_info["has_parameters"]
        info["causal_only"] = info["causal_only"] or inner_info["causal_only"]
    return info


def known(name: str) -> bool:
    """Whether ``name`` is a registered encoding (a built-in one answered from the source while the registry has not
    imported them)."""
    builtins = _unloaded_builtins()
    return name in builtins if builtins is not None else name in ENCODINGS


def label(name: str) -> str:
    """Display name of ``name`` in tables, findings and figures: its ``label`` metadata, else the name
    (:meth:`pebench.registry.Registry.label`, without importing the encodings)."""
    return str(meta(name).get("label") or name)


def in_order() -> list[str]:
    """Every encoding's name: the built-in ones in the order of their modules and, within one, of their source,
    then the plugins' in the order they were registered. (The registry's own order depends on which module was
    imported first, since importing one built-in encoding's module registers the others before it.)"""
    builtins = _unloaded_builtins()
    if builtins is not None:  # read from the source: they are all there is
        return list(builtins)
    builtins, registered = declared() or {}, ENCODINGS.in_order()
    return [*(name for name in builtins if name in ENCODINGS), *(name for name in registered if name not in builtins)]


def _unloaded_builtins() -> dict[str, dict[str, Any]] | None:
    """:func:`declared` while the registry has not imported the built-in encodings (then they are all there is);
    else None: the registry answers."""
    return None if ENCODINGS.loaded else declared()


def options(name: str) -> dict[str, Any]:
    """The keyword options of encoding ``name`` and their defaults.

    ``causal`` is not one: it comes from the model's architecture; nor are ``max_len`` and
    ``train_len``: they come from the protocol (see :func:`build`).
    """
    cls = ENCODINGS.get(name.partition(":")[0])
    params = inspect.signature(cls.__init__).parameters
    not_options = ("self", "d_model", "n_heads", "max_len", "base", "causal", "train_len", "n_layers")
    return {key: p.default for key, p in params.items() if key not in not_options and p.kind is p.KEYWORD_ONLY}


def wraps(name: str) -> bool:
    """Whether encoding ``name`` wraps another one (is built as ``name:<base>``, e.g. ``randomized:rope``)."""
    return "base" in inspect.signature(ENCODINGS.get(name.partition(":")[0]).__init__).parameters


def build(
    name: str,
    *,
    d_model: int,
    n_heads: int,
    max_len: int,
    causal: bool = False,
    train_len: int | None = None,
    n_layers: int | None = None,
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
        n_layers: the model's number of blocks, for encodings with per-layer parts
            (:meth:`~pebench.encodings.base.PositionalEncoding.for_layer`); passed to constructors
            that name it, set as :attr:`n_layers` on the others. ``None``: built without a model.
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
    if "n_layers" in params:
        arguments["n_layers"] = n_layers
    encoding = cls(**arguments, **opts)
    if "n_layers" not in params:
        encoding.n_layers = n_layers
    if not takes_train_len:  # a plugin written before train_len: it records it, without using it
        encoding.train_len = max_len if train_len is None else train_len
    encoding.given_options = dict(opts)
    return encoding


__all__ = [
    "ENCODINGS", "KIND_FAMILIES", "KINDS", "PositionalEncoding", "baseline_name", "build", "declared", "in_order",
    "known", "label", "meta", "names", "options", "register", "relative_distance", "wraps",
]
