"""A small generic name -> object registry with per-entry metadata, and plugins.

Encodings, tasks, metrics and experiments are all registered by name so that
adding one never edits the model, the runner, the report or the docs by hand::

    ENCODINGS = Registry("encoding", base=PositionalEncoding)

    @ENCODINGS.register("alibi", kind="bias", paper="press2022alibi")
    class ALiBi(PositionalEncoding): ...

Code outside the package registers its own entries the same way and is loaded
as a *plugin*: :func:`load_plugin` imports a ``.py`` file or an importable
module (``pebench --plugin PATH_OR_MODULE <verb>``), and
:func:`load_entry_point_plugins` imports every plugin that an installed
package declares in the ``pebench.plugins`` entry-point group. Worker
processes of a sweep load the same plugins (:func:`plugin_records`) and check
that they are the same versions (:func:`check_plugins`).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


#: what a registered name may be, the one rule every reader of a results folder applies too (run files, manifests,
#: the paths built from names): letters, digits, ``_``, ``-`` and ``.``, not first, at most 100 characters; and not a
#: word that reads as a number or a missing value (:func:`reads_as_number`). A folder may come from anyone, and
#: names become file names, table cells and terminal text
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
NAME = re.compile(NAME_PATTERN)
#: the words of a name's form that pandas reads as a missing value (its default ``na_values``, which tell case:
#: ``none``, NoPE's name, is a word), besides what :func:`float` parses (``nan``, ``inf``)
MISSING_WORDS = frozenset({"NA", "NULL", "None", "null"})
#: the name rule in words, for messages
NAME_RULE = "letters, digits, '_', '-' and '.' (not first), at most 100 characters, not a number"


def reads_as_number(text: str) -> bool:
    """Whether pandas would read ``text`` as a number or a missing value, not as a word."""
    try:
        float(text)
    except ValueError:
        return text in MISSING_WORDS
    return True


def is_name(name: object) -> bool:
    """Whether ``name`` follows the name rule (:data:`NAME_PATTERN`, not :func:`reads_as_number`)."""
    return isinstance(name, str) and NAME.fullmatch(name) is not None and not reads_as_number(name)


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists close matches."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to objects (classes or functions) and their metadata.

    Args:
        kind: what the entries are ("encoding", "task", ...), used in error messages.
        base: if given, every entry must be a subclass of ``base`` (or an instance of it); a function returning
            that class defers importing it to the first registration.
        builtins: if given, imports the modules that register the built-in entries; it is called once, by the
            first use of the registry (a lookup, a listing or a registration, so that plugins register after the
            built-in entries), so that importing the registry imports none of them (the encodings need torch).
    """

    def __init__(
        self, kind: str, base: type | Callable[[], type] | None = None, builtins: Callable[[], None] | None = None,
    ) -> None:
        self.kind = kind
        self._base = base
        self._builtins = builtins
        self._entries: dict[str, T] = {}
        self._meta: dict[str, dict[str, Any]] = {}

    @property
    def base(self) -> type | None:
        """The class every entry must be a subclass (or an instance) of, or None."""
        return self._base if self._base is None or isinstance(self._base, type) else self._base()

    @property
    def loaded(self) -> bool:
        """Whether the built-in entries are registered (always, for a registry given no ``builtins``)."""
        return self._builtins is None

    def _load(self) -> None:
        """Register the built-in entries, the first time only (a module that fails to import fails every use
        again, with its own error, instead of leaving the registry without it)."""
        if self._builtins is not None:
            load, self._builtins = self._builtins, None  # the modules' own registrations must not load again
            try:
                load()
            except BaseException:
                self._builtins = load
                raise

    def register(self, name: str, **meta: Any) -> Callable[[T], T]:
        """Decorator registering ``obj`` under ``name`` with metadata ``meta``.

        Raises:
            ValueError: ``name`` breaks the name rule (:func:`is_name`) or is already registered (the message names the
                module that registered it first), or ``obj`` is not a ``base``.
        """

        def decorator(obj: T) -> T:
            self._load()
            if not is_name(name):
                raise ValueError(f"a {self.kind} name must be {NAME_RULE} (what a results folder's reader "
                                 f"accepts), got {name!r}")
            if name in self._entries:
                first = getattr(self._entries[name], "__module__", "?")
                raise ValueError(f"{self.kind} {name!r} is registered twice (first by {first}); "
                                 f"choose another name")
            if self.base is not None and not _is_a(obj, self.base):
                raise ValueError(f"{self.kind} {name!r} must be a subclass of "
                                 f"{self.base.__module__}.{self.base.__qualname__}, got {obj!r}")
            self._entries[name] = obj
            self._meta[name] = dict(meta)
            return obj

        return decorator

    def get(self, name: str) -> T:
        """Return the entry registered as ``name``.

        Raises:
            UnknownNameError: ``name`` is not registered; the message names the
                closest valid names and lists all of them.
        """
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        """One-line message for an unknown ``name``, suggesting close matches."""
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return f"unknown {self.kind} {name!r}.{hint} Valid: {', '.join(self.names())}."

    def meta(self, name: str) -> dict[str, Any]:
        """Metadata registered with ``name`` (a copy)."""
        self.get(name)
        return dict(self._meta[name])

    def label(self, name: str) -> str:
        """Display name of ``name`` in tables, findings and figures: its ``label`` metadata, else the name itself.

        A name that reads as an ordinary word (the NoPE encoding is registered as ``none``) declares a
        ``label`` so that rendered text cannot be misread; files and CSVs keep the registered name.
        """
        return str(self.meta(name).get("label") or name)

    def names(self) -> list[str]:
        """All registered names, sorted."""
        self._load()
        return sorted(self._entries)

    def in_order(self) -> list[str]:
        """All registered names in the order they were registered."""
        self._load()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __len__(self) -> int:
        self._load()
        return len(self._entries)


def _is_a(obj: object, base: type) -> bool:
    return isinstance(obj, base) or (isinstance(obj, type) and issubclass(obj, base))


# --------------------------------------------------------------------------- citations

#: a DOI, bare (``10.48550/arXiv.2104.09864``) or as ``doi:...`` or ``https://doi.org/...``
DOI = re.compile(r"(?:doi:\s*|https?://(?:dx\.)?doi\.org/)?(10\.\d{4,9}/\S+)", re.IGNORECASE)
#: a BibTeX key (of pebench's bibliography, ``docs/references.bib``): one word, e.g. ``su2021roformer``
BIBTEX_KEY = re.compile(r"[A-Za-z][\w:.+-]*")


@dataclass(frozen=True)
class Citation:
    """What a registered entry cites (its ``paper=``), read by :func:`citation`.

    Attributes:
        kind: ``bibtex`` (a key of pebench's bibliography, ``docs/references.bib``), ``doi`` or ``text`` (a
            citation written out, for a paper pebench's bibliography does not hold).
        value: the key, the DOI (``10.xxxx/...``) or the text.
    """

    kind: str
    value: str

    @property
    def url(self) -> str:
        """The DOI's address (``https://doi.org/...``); empty for a key or a text."""
        return f"https://doi.org/{self.value}" if self.kind == "doi" else ""

    def __str__(self) -> str:
        return f"doi:{self.value}" if self.kind == "doi" else self.value


def citation(paper: str) -> Citation:
    """Read a ``paper=`` given at registration: a DOI (bare, ``doi:`` or a ``doi.org`` address), a BibTeX key of
    pebench's bibliography (one word), or a citation written out (``"Smith and Lee (2025). My encoding. arXiv
    2501.01234"``), so that a plugin's author whose paper is not in pebench's bibliography can cite it.

    Raises:
        ValueError: ``paper`` is empty or not a string (the message shows the three forms).
    """
    if not isinstance(paper, str) or not paper.strip():
        raise ValueError(f"paper= must name what to cite, got {paper!r}: a BibTeX key of docs/references.bib "
                         "(e.g. 'su2021roformer'), a DOI (e.g. '10.48550/arXiv.2104.09864') or a citation written "
                         "out (e.g. 'Smith and Lee (2025). My encoding. arXiv 2501.01234')")
    text = " ".join(paper.split())
    doi = DOI.fullmatch(text)
    if doi:
        return Citation("doi", doi.group(1))
    return Citation("bibtex" if BIBTEX_KEY.fullmatch(text) else "text", text)


# --------------------------------------------------------------------------- plugins

#: entry-point group in which installed packages declare pebench plugins
ENTRY_POINT_GROUP = "pebench.plugins"

#: plugins loaded in this process, in order (what worker processes load again)
_LOADED: list[str] = []

#: what each loaded plugin was (plugin key -> record of :func:`plugin_records`)
_RECORDS: dict[str, dict[str, Any]] = {}


class PluginError(ValueError):
    """A plugin that cannot be found or fails to import; the message says which and why."""


def import_file(module_name: str, path: Path) -> Any:
    """Import the Python file ``path`` as module ``module_name`` (a plugin, an experiment script); a file that fails
    leaves no module behind, so that the next import runs it again instead of taking it as imported."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def load_plugin(source: str) -> None:
    """Import user code that registers encodings, tasks, metrics or experiments.

    Args:
        source: a path to a ``.py`` file, or the name of an importable module
            (``my_project.pebench_plugin``). Loading the same source twice does nothing.

    Raises:
        PluginError: the file or module does not exist, or importing it raised
            (the message names the plugin and the error).
    """
    key = _plugin_key(source)
    if key in _LOADED:
        return
    path = Path(source)
    try:
        if source.endswith(".py") or path.is_file():
            if not path.is_file():
                raise PluginError(f"plugin file {source} not found")
            digest = hashlib.sha256(key.encode()).hexdigest()[:8]
            module_name = f"pebench_plugins.{path.stem}_{digest}"
            record = {"plugin": key, "kind": "file", "path": key, "sha256": _sha256(path)}  # the bytes loaded
            module = import_file(module_name, path)
        else:
            if importlib.util.find_spec(source) is None:
                raise PluginError(f"plugin {source!r} is neither a .py file nor an importable module")
            module = importlib.import_module(source)
            record = {"plugin": key, "kind": "module", **_module_file(module)}
    except PluginError:
        raise
    except ModuleNotFoundError as exc:
        raise PluginError(f"plugin {source!r} is neither a .py file nor an importable module ({exc})") from None
    except Exception as exc:  # noqa: BLE001 (any error in user code is reported as one line)
        raise PluginError(f"plugin {source} failed to load: {type(exc).__name__}: {exc}") from exc
    _LOADED.append(key)
    _RECORDS[key] = record


def _plugin_key(source: str) -> str:
    """Files by absolute path (the same file given two ways loads once), modules by name."""
    path = Path(source)
    return str(path.resolve()) if source.endswith(".py") or path.is_file() else source


def load_entry_point_plugins() -> list[str]:
    """Load every plugin declared in the :data:`ENTRY_POINT_GROUP` entry-point group.

    An entry point names a module (importing it registers its entries) or a
    callable (called with no arguments), e.g. in the plugin's ``pyproject.toml``::

        [project.entry-points."pebench.plugins"]
        my_encodings = "my_project.pebench_plugin"

    Returns:
        The names of the entry points loaded now.

    Raises:
        PluginError: an entry point fails to load (the message names it).
    """
    loaded = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = f"entry-point:{entry.name}={entry.value}"
        if key in _LOADED:
            continue
        try:
            target = entry.load()
            if callable(target):
                target()
        except Exception as exc:  # noqa: BLE001 (any error in user code is reported as one line)
            raise PluginError(f"plugin entry point {entry.name!r} ({entry.value}) failed to load: "
                              f"{type(exc).__name__}: {exc}") from exc
        _LOADED.append(key)
        module = sys.modules.get(entry.module)
        dist = getattr(entry, "dist", None)
        _RECORDS[key] = {"plugin": key, "kind": "entry point",
                         "distribution": f"{dist.name} {dist.version}" if dist is not None else None,
                         **(_module_file(module) if module is not None else {"path": None, "sha256": None})}
        loaded.append(entry.name)
    return loaded


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _module_file(module: Any) -> dict[str, Any]:
    """The source file of an imported module and its SHA-256 (``None`` for a module without one)."""
    file = getattr(module, "__file__", None)
    return {"path": str(Path(file).resolve()), "sha256": _sha256(Path(file))} if file else {"path": None,
                                                                                           "sha256": None}


def plugin_records() -> list[dict[str, Any]]:
    """What the plugins loaded in this process were, for a manifest: per plugin, in load order, its
    ``plugin`` key, ``kind`` (``file``, ``module`` or ``entry point``), source ``path`` and the SHA-256 of
    that file as it was loaded (an entry point's also its ``distribution`` and version). A module's hash
    covers its own file, not the package around it."""
    return [dict(_RECORDS[key]) for key in _LOADED if key in _RECORDS]


def check_plugins(expected: Iterable[dict[str, Any]], where: str = "in this process") -> None:
    """Check that each plugin of ``expected`` (records of :func:`plugin_records`, e.g. of the process that
    started a sweep) loaded here is the same version, by the SHA-256 of its file. A process loads a plugin
    once, so a long-lived worker keeps the version it loaded for an earlier sweep.

    Raises:
        PluginError: one line naming the plugin whose file differs here.
    """
    for record in expected:
        key, wanted = record.get("plugin"), record.get("sha256")
        held = _RECORDS.get(key, {}).get("sha256") if isinstance(key, str) else None
        if wanted and held and held != wanted:
            raise PluginError(f"plugin {key} {where} is not the version the sweep loaded (SHA-256 {held[:12]}, "
                              f"not {wanted[:12]}): a process loads a plugin once, so restart the workers (with the "
                              "same file on each)")


def loaded_plugins() -> list[str]:
    """Plugin files and modules loaded in this process with :func:`load_plugin`, in order."""
    return [key for key in _LOADED if not key.startswith("entry-point:")]


def load_plugins(sources: Iterable[str], entry_points: bool = True) -> None:
    """Load the entry-point plugins (unless ``entry_points`` is False), then each of ``sources``."""
    if entry_points:
        load_entry_point_plugins()
    for source in sources:
        load_plugin(source)
