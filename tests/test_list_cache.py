"""``pebench list`` in under 2 s (issue 39): every listing but the protocol's constants is computed without importing
torch (1.3 s of the 2.3 s a first listing took on a 2-core machine), and each is kept per code, plugins and width, so
that the next call reads it; the call that computes one keeps them all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pebench.cli import LISTS, list_cache, main
from pebench.store import verified_cache

ROOT = Path(__file__).resolve().parent.parent
#: prints a listing and whether torch was imported to make it
LISTED = ("import sys; from pebench.cli import main; code = main(['list'{what}]); "
          "print('torch imported' if 'torch' in sys.modules else 'no torch'); sys.exit(code)")


def listed(what: str | None, env: dict[str, str], folder: Path) -> str:
    """What ``pebench list WHAT`` prints in a new process, and then whether it imported torch."""
    argument = f", {what!r}" if what else ""
    return subprocess.run([sys.executable, "-c", LISTED.format(what=argument)], cwd=folder, env=env,
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("what", [None, *(what for what in LISTS if what != "protocol")])
def test_a_first_listing_needs_no_torch_and_a_second_reads_it(what, tmp_path):
    """The first call, with nothing kept, computes the listing without torch; the second prints the same text."""
    env = {**os.environ, list_cache.CACHE_ENV: str(tmp_path / "cache"), "COLUMNS": "100"}
    first, second = listed(what, env, tmp_path), listed(what, env, tmp_path)
    assert first.endswith("no torch\n") and first == second
    assert len(list((tmp_path / "cache").glob(f"list-{what or 'overview'}-100-*.txt"))) == 1


def test_the_call_that_computes_a_listing_keeps_them_all(tmp_path):
    """After one listing, every other listing (and ``pebench list`` alone) is read from what it kept, and each is
    what that listing computes; the protocol's constants, which expand every suite's run specs and import torch
    (a table of T5's buckets), are computed when they are asked for."""
    env = {**os.environ, list_cache.CACHE_ENV: str(tmp_path / "cache"), "COLUMNS": "100"}
    listed("encodings", env, tmp_path)
    assert len(list((tmp_path / "cache").glob("list-*-100-*.txt"))) == len(LISTS)  # `pebench list` alone, no protocol
    kept = {what: listed(what, env, tmp_path) for what in ("suites", "experiments", "tasks", "metrics")}
    assert len(list((tmp_path / "cache").glob("list-*-100-*.txt"))) == len(LISTS)  # nothing computed again
    assert kept["suites"].startswith("suite") and "standard" in kept["suites"]
    assert kept["tasks"].startswith("task") and "parity_check" in kept["tasks"]
    assert kept["metrics"].startswith("metric")
    assert listed("protocol", env, tmp_path).endswith("torch imported\n")  # computed only when asked for
    assert listed("protocol", env, tmp_path).startswith("constant")
    assert listed("protocol", env, tmp_path).endswith("no torch\n")


def test_the_cached_listing_is_the_computed_one(capsys):
    """The text kept is what the listing computes, and other code, plugins or widths get their own file."""
    from pebench.cli import _suites_listing

    assert main(["list", "suites"]) == 0
    computed = capsys.readouterr().out
    assert main(["list", "suites"]) == 0  # from the cache
    assert capsys.readouterr().out == computed == _suites_listing() + "\n"
    fingerprint = verified_cache.code_fingerprint([])
    assert verified_cache.code_fingerprint([{"plugin": "mine.py", "sha256": "0" * 64}]) != fingerprint
    assert len(fingerprint) == 64 and fingerprint == verified_cache.code_fingerprint([])
    files = verified_cache.code_files()
    assert any(path.parent.name == "cli" for path in files) and any(path.parent.name == "experiments" for path in files)


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
