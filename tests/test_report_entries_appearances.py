"""Each entry of report.json's ``entries`` holds where its name appears (``appearances``: its ``[experiment, arch]``
pairs in the order of the cells), so that a page reads one entry for all it shows (issue 38, 9: one name per
thing)."""

from __future__ import annotations

import pandas as pd

from pebench.report.entries import entries


def test_each_entry_holds_its_experiments_and_architectures_in_the_order_of_the_cells(tmp_path):
    cells = pd.DataFrame({"experiment": ["b", "a", "b", "a"], "task": ["copy", "copy", "sort", "copy"],
                          "encoding": ["rope", "rope", "none", "rope"], "arch": ["encoder", "decoder", "decoder",
                                                                                  "decoder"]})
    found = entries(tmp_path, cells, [])
    assert found["encoding"]["rope"]["appearances"] == [["b", "encoder"], ["a", "decoder"]]
    assert found["task"]["sort"]["appearances"] == [["b", "decoder"]]
    assert found["task"]["copy"]["appearances"] == [["b", "encoder"], ["a", "decoder"]]
    assert found["encoding"]["none"]["appearances"] == [["b", "decoder"]]
