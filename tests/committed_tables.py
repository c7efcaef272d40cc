"""How a test compares tables it wrote with the committed ones (imported by tests, not collected: no ``test_`` prefix).

Markdown and LaTeX tables, which show rounded numbers, must be identical byte for byte. A CSV cell holds a float at
full precision, which can differ in its last digits from the committed one on another CPU: numpy dispatches float64
``exp``, ``log`` and reductions to kernels chosen for the CPU's vector extensions (AVX-512 or AVX2), and those
round differently in the last units in the last place. So CSVs are compared cell by cell, floats to a relative
1e-9, far below any digit a table shows and far above those rounding differences (about 1e-15).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

#: relative tolerance of a float cell of a CSV table: see the module's docstring
FLOAT_RTOL = 1e-9


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def same_cell(written: str, committed: str) -> bool:
    """Whether two CSV cells agree: equal text, or two floats (NaN included) within :data:`FLOAT_RTOL`."""
    if written == committed:
        return True
    a, b = _float(written), _float(committed)
    if a is None or b is None:
        return False
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=FLOAT_RTOL, abs_tol=0.0)


def assert_table_alike(written: Path, committed: Path) -> None:
    """``written`` is the committed table ``committed``: byte for byte, or, for a CSV, cell by cell (:func:`same_cell`),
    with the first differing cell named."""
    if written.suffix != ".csv":
        assert written.read_bytes() == committed.read_bytes(), written.name
        return
    ours = list(csv.reader(io.StringIO(written.read_text())))
    theirs = list(csv.reader(io.StringIO(committed.read_text())))
    assert len(ours) == len(theirs), f"{written.name}: {len(ours)} lines, committed {len(theirs)}"
    header = theirs[0] if theirs else []
    for number, (row, committed_row) in enumerate(zip(ours, theirs, strict=True)):
        assert len(row) == len(committed_row), f"{written.name} line {number + 1}: {len(row)} cells"
        for column, (cell, committed_cell) in enumerate(zip(row, committed_row, strict=True)):
            assert same_cell(cell, committed_cell), (
                f"{written.name} line {number + 1}, {header[column] if column < len(header) else column}: "
                f"{cell!r}, committed {committed_cell!r}")
