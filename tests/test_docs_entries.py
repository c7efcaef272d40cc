"""The encoding and task pages read where a name appears from its entry in ``report.json`` (``entries``, each with
its ``appearances``)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from test_docs import page_fields

from pebench.store.report_file import DIGEST_KEY, StaleReport, raw_digest

EXT = Path(__file__).resolve().parent.parent / "docs" / "_ext"

PAIRS = [["length_extrapolation", "decoder"], ["rope_scaling", "decoder"]]
MAIN = {"header": ["Arch", "Encoding"], "rows": [["decoder", "rope"]]}


@pytest.fixture(scope="module")
def results_sections():
    if str(EXT) not in sys.path:
        sys.path.insert(0, str(EXT))
    from pebench_docs.registry_pages import results_sections

    return results_sections


def reported(root: Path, **report) -> Path:
    """``root/standard``: one run file and a current ``report.json`` holding one table and ``report``."""
    folder = root / "standard"
    (folder / "raw").mkdir(parents=True)
    (folder / "raw" / "run0.csv.gz").write_bytes(gzip.compress(b"run_id,eval_len\nrun0,8\n", mtime=0))
    index = {**page_fields(), DIGEST_KEY: raw_digest(folder), "main_table": "main", "figures": [],
             "tables": [{"name": "main", "title": "Main results", "caption": "", "paths": {}}], **report}
    (folder / "report.json").write_text(json.dumps(index))
    return root


def test_a_page_reads_where_a_name_appears_from_its_entry(results_sections, tmp_path):
    entry = {"appearances": PAIRS, "tables": {"main": MAIN}, "figures": {}}
    results = reported(tmp_path, entries={"encoding": {"rope": entry}, "task": {}})
    lines = results_sections("encoding", "rope", results)
    assert lines[:3] == ["### standard results", "", "{doc}`The standard results </_generated/results/standard>`: "
                         "Length extrapolation, decoder; RoPE scaling, decoder."]
    assert "#### Main results" in lines
    assert results_sections("encoding", "alibi", results) == []


def test_a_page_says_its_entry_s_notes_below_where_it_appears_and_refuses_crafted_ones(results_sections, tmp_path):
    said = "Identical models: iRoPE gave the same rows as RoPE in every one of the 56 runs they share."
    entry = {"appearances": PAIRS, "tables": {"main": MAIN}, "figures": {}, "notes": [said]}
    results = reported(tmp_path / "a", entries={"encoding": {"rope": entry}, "task": {}})
    lines = results_sections("encoding", "rope", results)
    assert lines[3:6] == ["", said, ""]  # below the line that says where it appears, above its tables
    crafted = reported(tmp_path / "b", entries={"encoding": {"rope": {**entry, "notes": said}}, "task": {}})
    with pytest.raises(StaleReport, match="its 'entries' is not an object of entries"):
        results_sections("encoding", "rope", crafted)



def test_an_encoding_page_leads_with_its_own_figures_against_the_others(results_sections, tmp_path):
    """An encoding drawn emphasised against every other (``encoding_figures``) is shown with those figures, not
    with a figure of every encoding whose legend the reader would search; a crafted field is refused."""
    def figure(name: str) -> dict:
        return {"name": name, "title": name.title(), "caption": "", "paths": {"svg": f"figures/{name}.svg"}}

    own = "length_extrapolation_decoder_rope"
    entry = {"appearances": PAIRS, "tables": {}, "figures": {"length_extrapolation_ood_heatmap": "Look for its row.",
                                                             own: "RoPE: the coloured line; grey: every other."}}
    figures = [figure("length_extrapolation_ood_heatmap"), figure(own)]
    results = reported(tmp_path / "a", figures=figures, encoding_figures={own: "rope"},
                       entries={"encoding": {"rope": entry}, "task": {}})
    lines = results_sections("encoding", "rope", results, every=False)
    shown = [line for line in lines if line.startswith(":::{figure}")]
    assert shown == [f":::{{figure}} /_generated/results/standard/figures/{own}.svg"]
    assert f"**{own.title()}.** RoPE: the coloured line; grey: every other." in lines
    # a crafted field is refused with the rest of its report.json, in the one line of every malformed report
    crafted = reported(tmp_path / "b", figures=figures, encoding_figures=[own],
                       entries={"encoding": {"rope": entry}, "task": {}})
    with pytest.raises(StaleReport, match="its 'encoding_figures' is not an object of texts"):
        results_sections("encoding", "rope", crafted, every=False)
