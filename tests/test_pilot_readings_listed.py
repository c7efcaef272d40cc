"""The pilot readings the site shows (:data:`pebench.render.pilot_readings.PILOT_READINGS`) name scripts that exist and
say which file they write, and each committed reading holds blocks (:mod:`pebench.render.blocks`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pebench.render.blocks import KINDS
from pebench.render.pilot_readings import PILOT_READINGS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("include", sorted(PILOT_READINGS))
def test_each_pilot_reading_names_the_script_that_writes_it(include):
    name, what, script = PILOT_READINGS[include]
    assert what and name in (ROOT / script).read_text(), f"{script} does not say it writes {name}"
    committed = ROOT / "results" / "pilots" / name
    if committed.exists():
        assert {block["kind"] for block in json.loads(committed.read_text())["blocks"]} <= set(KINDS)
