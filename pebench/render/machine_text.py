"""The report's sentence on the machine effect (:func:`pebench.analysis.machines.machine_effect`), with its numbers."""

from __future__ import annotations

from pebench import metrics
from pebench.analysis.machines import CONFIDENCE, Contrast, MachineEffect
from pebench.render.tables import markdown_text


def machine_effect_text(effect: MachineEffect) -> str:
    """One sentence: each machine's difference from the reference on the metric, with its interval and the cells
    it rests on, or why there is none. Machine names (a folder's text) are escaped for MyST."""
    known = {metric.name: metric.axis_label for metric in metrics.run_metrics()}
    label = known.get(effect.metric, effect.metric)
    runs = sum(effect.runs)
    if not effect.estimable:
        machines = f"{len(effect.machines)} machine{'s' * (len(effect.machines) > 1)}"
        where = (f" ({runs} runs on {machines}, {effect.cells} cells, "
                 f"{effect.spanning_cells} of them on more than one machine)" if effect.machines else "")
        return f"The machine effect on {label} cannot be estimated: {effect.reason}{where}."
    parts = "; ".join(_contrast_text(contrast) for contrast in effect.contrasts)
    return (f"Machine effect on {label}, within cells ({runs} runs on {len(effect.machines)} machines, "
            f"{effect.spanning_cells} of {effect.cells} cells on more than one): {parts}.")


def _contrast_text(contrast: Contrast) -> str:
    """``B minus A: +0.012 (95% CI -0.004 to +0.028; paired over 12 cells)``."""
    over = f"paired over {contrast.cells} cells" if contrast.method == "paired" else f"{contrast.method}, 1 cell"
    return (f"{markdown_text(contrast.machine)} minus {markdown_text(contrast.reference)} {contrast.estimate:+.3f} "
            f"({CONFIDENCE:.0%} CI {contrast.low:+.3f} to {contrast.high:+.3f}; {over})")
