"""Test-session hooks shared by every test file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PILOTS = Path(__file__).resolve().parent.parent / "pilots"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (minutes each, e.g. the site build) start first, whatever the order.

    pytest-randomly shuffles before this hook runs (its hook is a wrapper); the stable sort keeps its order
    among the rest. Started first, a long test overlaps the rest of the suite on the other test processes
    (pytest-xdist) instead of starting last and adding its minutes to the suite's time.
    """
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Name the random order's seed at the end (``-q`` hides pytest-randomly's header), so a failure that
    depends on the order can be repeated."""
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.has_plugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(f"tests ran in a random order: -p randomly --randomly-seed={seed} repeats it")


@pytest.fixture(autouse=True)
def private_list_cache(tmp_path_factory, monkeypatch):
    """Each test keeps ``pebench list``'s listings (pebench.cli.list_cache) in a folder of its own: never in the
    user's cache, and never one that another test filled."""
    monkeypatch.setenv("PEBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("list-cache")))


@pytest.fixture(scope="session")
def load_pilot():
    """A loader of declared pilot scripts: ``load_pilot("depth_pilot")`` executes ``pilots/depth_pilot.py`` as a
    module of its own (``<name>_under_test``), with ``pilots/`` importable for the pilots it builds on."""
    def load(name: str):
        if str(PILOTS) not in sys.path:
            sys.path.insert(0, str(PILOTS))
        spec = importlib.util.spec_from_file_location(f"{name}_under_test", PILOTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
