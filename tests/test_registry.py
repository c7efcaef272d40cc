"""The registry: base-class checks, duplicates, and plugins from files, modules and entry points."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from pebench import registry
from pebench.registry import PluginError, Registry


class Base:
    pass


def test_registry_checks_the_base_class_and_duplicates():
    things: Registry[type[Base]] = Registry("thing", base=Base)

    @things.register("a", colour="red")
    class A(Base):
        pass

    assert things.get("a") is A and things.meta("a") == {"colour": "red"}
    assert things.label("a") == "a"  # no label declared: the name
    with pytest.raises(ValueError, match="thing 'a' is registered twice"):
        things.register("a")(A)
    with pytest.raises(ValueError, match="must be a subclass of .*Base"):
        things.register("b")(int)
    with pytest.raises(ValueError, match="a thing name must be letters, digits"):
        things.register("")(A)
    assert "b" not in things and things.in_order() == ["a"]
    things.register("c", label="Thing C")(type("C", (Base,), {}))
    assert things.label("c") == "Thing C"



def test_built_in_entries_are_registered_on_first_use_and_before_any_other():
    """A registry given ``builtins`` imports nothing until it is used; then its built-in entries come first, so a
    plugin's entry of the same name is refused as a duplicate, and a ``base`` given as a function is resolved
    at the first registration."""
    loads = []
    things: Registry[type[Base]] = Registry("thing", base=lambda: Base, builtins=lambda: loads.append(1) or
                                            things.register("built-in")(type("BuiltIn", (Base,), {})))
    assert not things.loaded and loads == []

    @things.register("mine")
    class Mine(Base):
        pass

    assert things.loaded and loads == [1] and things.in_order() == ["built-in", "mine"]
    with pytest.raises(ValueError, match="'built-in' is registered twice"):
        things.register("built-in")(Mine)
    with pytest.raises(ValueError, match="must be a subclass of .*Base"):
        things.register("b")(int)
    assert things.names() == ["built-in", "mine"] and loads == [1]
    assert Registry("thing", builtins=lambda: loads.append(2)).names() == [] and loads == [1, 2]

    def broken() -> None:
        raise ImportError("a built-in module that does not import")

    failing = Registry("thing", builtins=broken)
    for _ in range(2):  # every use fails with the module's error, never a registry quietly without it
        with pytest.raises(ImportError, match="does not import"):
            failing.names()

def test_file_plugin_loads_once(tmp_path, monkeypatch):
    counter = tmp_path / "count.txt"
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(f"from pathlib import Path\np = Path({str(counter)!r})\n"
                      "p.write_text(str(int(p.read_text() or 0) + 1) if p.exists() else '1')\n")
    monkeypatch.setattr(registry, "_LOADED", [])
    registry.load_plugin(str(plugin))
    registry.load_plugin(str(plugin))
    assert counter.read_text() == "1"
    assert registry.loaded_plugins() == [str(plugin.resolve())]


def test_plugin_records_hash_the_files_as_loaded(tmp_path, monkeypatch):
    """A manifest records each plugin with the SHA-256 of the file that was loaded (not of a later edit)."""
    import hashlib

    plugin, module = tmp_path / "hashed_plugin.py", tmp_path / "hashed_module_plugin.py"
    plugin.write_text("X = 1\n")
    module.write_text("Y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setattr(registry, "_RECORDS", {})
    registry.load_plugin(str(plugin))
    registry.load_plugin("hashed_module_plugin")
    plugin.write_text("X = 'edited after loading'\n")
    assert registry.plugin_records() == [
        {"plugin": str(plugin.resolve()), "kind": "file", "path": str(plugin.resolve()),
         "sha256": hashlib.sha256(b"X = 1\n").hexdigest()},
        {"plugin": "hashed_module_plugin", "kind": "module", "path": str(module.resolve()),
         "sha256": hashlib.sha256(b"Y = 2\n").hexdigest()},
    ]


def test_module_plugin_and_errors(tmp_path, monkeypatch):
    (tmp_path / "my_module_plugin.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_LOADED", [])
    registry.load_plugin("my_module_plugin")
    assert sys.modules["my_module_plugin"].LOADED
    with pytest.raises(PluginError, match="neither a .py file nor an importable module"):
        registry.load_plugin("no_such_module_anywhere")
    with pytest.raises(PluginError, match="not found"):
        registry.load_plugin(str(tmp_path / "missing.py"))
    (tmp_path / "broken.py").write_text("1 / 0\n")
    with pytest.raises(PluginError, match="failed to load: ZeroDivisionError"):
        registry.load_plugin(str(tmp_path / "broken.py"))
    assert registry.loaded_plugins() == ["my_module_plugin"]  # a failed plugin is not recorded


def test_entry_point_plugins_are_loaded_and_called(tmp_path, monkeypatch):
    (tmp_path / "ep_plugin.py").write_text("CALLS = []\ndef setup():\n    CALLS.append(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_LOADED", [])
    points = [importlib.metadata.EntryPoint("mine", "ep_plugin:setup", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: points if group == registry.ENTRY_POINT_GROUP else [])
    assert registry.load_entry_point_plugins() == ["mine"]
    assert registry.load_entry_point_plugins() == []  # once per process
    assert sys.modules["ep_plugin"].CALLS == [1]
    points[:] = [importlib.metadata.EntryPoint("bad", "no_such_module_x:setup", registry.ENTRY_POINT_GROUP)]
    with pytest.raises(PluginError, match="plugin entry point 'bad'"):
        registry.load_entry_point_plugins()


def test_the_manifest_records_the_loaded_plugins(tmp_path, monkeypatch):
    """``write_manifest`` stores :func:`registry.plugin_records` with each invocation."""
    import hashlib
    import json

    from pebench.store import write_manifest

    plugin = tmp_path / "manifest_plugin.py"
    plugin.write_text("Z = 3\n")
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setattr(registry, "_RECORDS", {})
    registry.load_plugin(str(plugin))
    (tmp_path / "out").mkdir()
    write_manifest(tmp_path / "out", "smoke", n_runs=1, device="cpu", executor="local", workers=1)
    latest = json.loads((tmp_path / "out" / "manifest.json").read_text())["latest"]
    assert [(p["path"], p["sha256"]) for p in latest["plugins"]] == [
        (str(plugin.resolve()), hashlib.sha256(b"Z = 3\n").hexdigest())]


@pytest.fixture
def cited_plugins(monkeypatch):
    """Two plugin encodings whose papers pebench's bibliography does not hold, one cited by its DOI, one by a
    citation written out (registered here, forgotten after the test)."""
    from pebench import encodings

    encodings.ENCODINGS.names()  # the built-in encodings registered first, so that the copies hold them
    monkeypatch.setattr(encodings.ENCODINGS, "_entries", dict(encodings.ENCODINGS._entries))
    monkeypatch.setattr(encodings.ENCODINGS, "_meta", dict(encodings.ENCODINGS._meta))
    nope = encodings.ENCODINGS.get("none")
    encodings.register("doi_pe", kind="none", paper="https://doi.org/10.5555/12345", has_parameters=False,
                       summary="Cited by its DOI.")(type("DoiPE", (nope,), {}))
    encodings.register("text_pe", kind="none", paper="Smith and Lee (2025). My encoding. arXiv 2501.01234",
                       has_parameters=False, summary="Cited as written.")(type("TextPE", (nope,), {}))
    return encodings


def test_paper_takes_a_bibtex_key_a_doi_or_a_citation_written_out(cited_plugins):
    from pebench.registry import Citation, citation

    encodings = cited_plugins
    assert encodings.meta("rope")["citation"] == Citation("bibtex", "su2021roformer")
    assert encodings.meta("doi_pe")["citation"] == Citation("doi", "10.5555/12345")
    assert encodings.meta("doi_pe")["paper"] == "doi:10.5555/12345"
    assert encodings.meta("doi_pe")["citation"].url == "https://doi.org/10.5555/12345"
    assert encodings.meta("text_pe")["citation"] == Citation("text", "Smith and Lee (2025). My encoding. arXiv "
                                                                     "2501.01234")
    assert citation("doi:10.48550/arXiv.2104.09864") == citation("10.48550/arXiv.2104.09864")
    with pytest.raises(ValueError, match="a DOI"):
        encodings.register("uncited", kind="none", paper=" ", has_parameters=False)
