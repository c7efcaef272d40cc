"""Every ``pebench list`` is kept per code, plugins and width (issue 39: a listing in under 2 s; most of the 2.3 s of
computing one is importing torch), and the call that computes one keeps them all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pebench import list_cache
from pebench.cli import LISTS, main

ROOT = Path(__file__).resolve().parent.parent
#: prints a listing and whether torch was imported to make it
LISTED = ("import sys; from pebench.cli import main; code = main(['list', '{what}']); "
          "print('torch imported' if 'torch' in sys.modules else 'no torch'); sys.exit(code)")


@pytest.mark.parametrize("what", ["suites", "experiments", "tasks"])
def test_a_second_listing_is_the_first_without_torch(what, tmp_path):
    env = {**os.environ, list_cache.CACHE_ENV: str(tmp_path / "cache"), "COLUMNS": "100"}
    first, second = (subprocess.run([sys.executable, "-c", LISTED.format(what=what)], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, check=True).stdout for _ in range(2))
    assert first.endswith("torch imported\n") and second.endswith("no torch\n")
    assert first.removesuffix("torch imported\n") == second.removesuffix("no torch\n")
    assert len(list((tmp_path / "cache").glob(f"list-{what}-100-*.txt"))) == 1


def test_the_call_that_computes_a_listing_keeps_them_all(tmp_path):
    """After one listing has imported torch, every other listing (and ``pebench list`` alone) is printed
    without it, and each is what that listing computes; the protocol's constants, which cost a quarter of a second
    more, are computed when they are asked for."""
    env = {**os.environ, list_cache.CACHE_ENV: str(tmp_path / "cache"), "COLUMNS": "100"}

    def listed(what: str) -> str:
        return subprocess.run([sys.executable, "-c", LISTED.format(what=what)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True).stdout

    assert listed("encodings").endswith("torch imported\n")
    kept = {what: listed(what) for what in ("suites", "experiments", "tasks", "metrics")}
    assert all(text.endswith("no torch\n") for text in kept.values())
    assert len(list((tmp_path / "cache").glob("list-*-100-*.txt"))) == len(LISTS)  # `pebench list` alone, no protocol
    assert kept["suites"].startswith("suite") and "standard" in kept["suites"]
    assert kept["tasks"].startswith("task") and "parity_check" in kept["tasks"]
    assert kept["metrics"].startswith("metric")
    assert listed("protocol").endswith("torch imported\n")  # expands every suite: computed only when asked for
    assert listed("protocol").startswith("constant") and listed("protocol").endswith("no torch\n")


def test_the_cached_listing_is_the_computed_one(capsys):
    """The text kept is what the listing computes, and other code, plugins or widths get their own file."""
    from pebench.cli import _suites_listing

    assert main(["list", "suites"]) == 0
    computed = capsys.readouterr().out
    assert main(["list", "suites"]) == 0  # from the cache
    assert capsys.readouterr().out == computed == _suites_listing() + "\n"
    fingerprint = list_cache.code_fingerprint([])
    assert list_cache.code_fingerprint([{"plugin": "mine.py", "sha256": "0" * 64}]) != fingerprint
    assert len(fingerprint) == 64 and fingerprint == list_cache.code_fingerprint([])
    files = list_cache.code_files()
    assert any(path.name == "cli.py" for path in files) and any(path.parent.name == "experiments" for path in files)


def test_a_cache_entry_is_computed_once_never_read_through_a_link_and_optional(tmp_path, monkeypatch):
    calls = []

    def compute() -> dict[str, str]:
        calls.append(1)
        return {"x": "listing\n"}

    monkeypatch.setenv(list_cache.CACHE_ENV, str(tmp_path / "cache"))
    assert list_cache.cached_listing("x", [], compute) == "listing\n" == list_cache.cached_listing("x", [], compute)
    assert len(calls) == 1
    (kept,) = (tmp_path / "cache").iterdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not pebench's\n")
    kept.unlink()
    kept.symlink_to(elsewhere)  # a link where the listing was: computed, never read through
    assert list_cache.cached_listing("x", [], compute) == "listing\n" and len(calls) == 2
    assert elsewhere.read_text() == "not pebench's\n"
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv(list_cache.CACHE_ENV, str(blocked / "cache"))  # cannot be made: computed every time
    assert list_cache.cached_listing("x", [], compute) == "listing\n" and len(calls) == 3
    assert not list(tmp_path.glob(".*"))
