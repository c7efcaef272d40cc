"""Replication of Press et al. (ICLR 2022), "Train Short, Test Long: Attention with Linear Biases Enables Input
Length Extrapolation" (ALiBi), at laptop scale: perplexity of a language model trained at one context L and
scored at L, 2L, 4L, 8L and 16L on the same held-out text with non-overlapping windows.

Pre-registered (committed before any of its runs was made, and never changed after its agreement was seen):

- **Model and data**: a character-level causal LM on the bundled corpus (:mod:`pebench.tasks.charlm`, the
  Python language reference) instead of WikiText-103; pebench's standard model (d_model 64, 2 layers,
  4 heads) instead of the paper's 16-layer, 247M-weight model.
- **Contexts**: trained on windows of :data:`CONTEXT` = 64 characters; scored at 64, 128, 256, 512 and 1024
  (L..16L), each over the same :data:`~pebench.tasks.charlm.EVAL_SPAN` validation characters cut into
  consecutive windows (the paper's non-overlapping protocol; its sliding-window evaluation is not used).
- **Training**: :data:`STEPS` = 4000 steps of 32 windows (AdamW at 3e-3, 100 warm-up steps, cosine decay),
  five times the standard suite's language model, so that the perplexities at L come closer to each other
  as in the paper's Table 2 (whether they do is reported, not tuned). No fit criterion: a language model
  has no accuracy to reach.
- **Encodings**: the paper's four (:data:`PAPER_ENCODINGS`: sinusoidal, rotary, T5 bias, ALiBi) and every other
  encoding pebench compares, as extra rows; :data:`N_SEEDS` = 10 seeds each, so that a pairwise order can be
  resolved by a paired test (with 3 seeds a sign-flip test never reaches p < 0.05).
- **Agreement scores** (pebench.analysis.replication): the perplexity growth of a run is its perplexity at 16L over
  its perplexity at L. Kendall's tau between pebench's mean growth of the four and the paper's (Table 2,
  WikiText-103, L = 512: the perplexity at the longest length it reports up to 16L, 7512 tokens, over that at
  512; computed from pebench/data/published/press2022.csv by :func:`published_aggregate`), with a 95% bootstrap
  interval over seeds; and the sign of each of the 6 orders the paper claims (:data:`CLAIMS`: ALiBi grows
  less than T5 bias, rotary and sinusoidal, Figure 1 and Section 4.1; T5 bias less than rotary and
  sinusoidal, and rotary less than sinusoidal, Section 2), each tested on seed-paired growths with a Holm
  correction over the 6, as agreeing, contradicting or unresolved.
"""

from pathlib import Path

import pandas as pd

from pebench import store
from pebench.analysis import published, replication
from pebench.plan.experiment import replication_experiment
from pebench.protocol import SCALES, SUITE_ENCODINGS
from pebench.store.schema import BASE_VARIANT
from pebench.tasks.charlm import EVAL_SPAN

SUITE = "replication"
NAME = "press2022"
#: the paper's four encodings, least perplexity growth first (the paper's order)
PAPER_ENCODINGS = ("alibi", "t5", "rope", "sinusoidal")
#: the training context (characters) and the scored contexts, L..16L
CONTEXT = 64
EVAL_LENGTHS = [64, 128, 256, 512, 1024]
#: optimizer steps (windows of 32 per step)
STEPS = 4000
N_SEEDS = 10
#: the orders the paper claims, "a's perplexity grows less than b's"
CLAIMS = tuple((a, b) for i, a in enumerate(PAPER_ENCODINGS) for b in PAPER_ENCODINGS[i + 1:])
#: the published reference: WikiText-103, trained at L = 512, non-overlapping evaluation (Table 2)
PUBLISHED_TABLE, PUBLISHED_L = "Table 2", 512
#: tokens per evaluation forward pass at the longest context (bounds attention memory)
EVAL_TOKENS_PER_BATCH = 16_384
#: the paper's setup as it states it (Sections 3-4, Appendix A; pebench/data/published/README.md)
PAPER_SETUP = {
    "model": "decoder-only, 16 layers, 8 heads, d_model 1024, FFN 4096 (247M weights; Baevski & Auli's model)",
    "data": "WikiText-103 (103M training tokens, adaptive input); perplexity on the validation set",
    "training": "205 epochs with the Baevski & Auli recipe, only the position method and L changed; L = 512 in "
                "Table 2 (512, 1024, 3072 for the baselines, 64 to 3072 for ALiBi)",
    "evaluation": "non-overlapping windows of Lvalid = L + k over the validation set, k up to about 15,000 "
                  "(sliding windows in Appendix B)",
    "encodings": "sinusoidal, rotary, T5 bias, ALiBi (learned absolute left out: it cannot extrapolate)",
    "seeds": "one run per encoding and L (the one printed spread: 18.67 +- 0.24 for sinusoidal at L = 3072)",
    "score": "perplexity vs Lvalid",
}


def configs():
    """One grid: the character LM at :data:`CONTEXT`, every compared encoding, :data:`N_SEEDS` seeds."""
    base = {
        **SCALES[SUITE],
        "steps": STEPS,
        "batch_size": 32,
        "task": "charlm",
        "arch": "decoder",
        "train_min_len": CONTEXT,
        "train_max_len": CONTEXT,
        "eval_lengths": EVAL_LENGTHS,
        "eval_conditions": ["original"],
        "fit_every": 0,
        "stop_at_fit": False,
        "fit_patience": 0,
        "eval_n_examples": EVAL_SPAN // CONTEXT,
        "eval_batch_size": min(32, EVAL_TOKENS_PER_BATCH // max(EVAL_LENGTHS)),
    }
    return [(base, {"encoding": list(SUITE_ENCODINGS[SUITE]), "seed": list(range(N_SEEDS))})]


def published_aggregate() -> pd.Series:
    """The paper's perplexity growth per encoding: Table 2 (L = 512), the perplexity at the longest length it
    reports up to 16L over the perplexity at L."""
    values = published.values(NAME)
    table = values[values["source"].str.startswith(PUBLISHED_TABLE) & (values["metric"] == "perplexity")
                   & (values["train_length"] == str(PUBLISHED_L)) & (values["eval_protocol"] == "nonoverlapping")]
    table = table.assign(length=table["eval_length"].astype(int)).dropna(subset=["number"])
    longest = table.loc[table["length"] <= 16 * PUBLISHED_L, "length"].max()
    at = table.pivot_table(index="length", columns="encoding", values="number", aggfunc="first")
    return (at.loc[longest] / at.loc[PUBLISHED_L])[list(PAPER_ENCODINGS)].rename("growth")


def score(folder: Path, data: pd.DataFrame | None = None) -> replication.Score | None:
    """The pre-registered agreement scores from the length-level rows of the results in ``folder`` (``data``, or
    None to load them from its run files): ``(RankingAgreement, claims table, the sizes beside the order)``, or
    None when it holds no run of this experiment."""
    if data is None:
        if not (folder / "raw").is_dir():
            return None
        data = store.load(folder)
    rows = data[(data["experiment"] == NAME) & (data["variant"] == BASE_VARIANT)]
    if rows.empty:
        return None
    runs = replication.growth(rows)
    agreement = replication.growth_agreement(runs, published_aggregate())
    return agreement, replication.growth_claims(runs, CLAIMS), _magnitudes(rows, agreement)


def _magnitudes(rows: pd.DataFrame, agreement: replication.RankingAgreement) -> str:
    """What the ranking leaves out: how close the perplexities at L are, and the size of each growth, beside
    the paper's."""
    import numpy as np

    at_l = rows[(rows["eval_len"] == CONTEXT) & rows["encoding"].isin(PAPER_ENCODINGS)]
    ppl = np.exp(at_l.groupby("encoding")["loss"].mean())
    values = published.values(NAME)
    theirs = values[values["source"].str.startswith(PUBLISHED_TABLE) & (values["metric"] == "perplexity")
                    & (values["eval_length"] == str(PUBLISHED_L)) & (values["train_length"] == str(PUBLISHED_L))
                    & (values["eval_protocol"] == "nonoverlapping")].set_index("encoding")["number"]
    theirs = theirs[theirs.index.isin(PAPER_ENCODINGS)]
    sizes = ", ".join(f"{e} {agreement.ours[e]:.2f} vs {agreement.theirs[e]:.2f}" for e in agreement.ours.index)
    return (f"Perplexity at the training context: pebench {ppl.min():.2f}-{ppl.max():.2f} across the paper's four "
            f"(spread {100 * (ppl.max() / ppl.min() - 1):.0f}%), the paper {theirs.min():.2f}-{theirs.max():.2f} "
            f"({100 * (theirs.max() / theirs.min() - 1):.0f}%). Growth, pebench vs paper: {sizes}. The order "
            "is scored; the sizes are not, and where they differ the difference is unresolved: this replication "
            "varies neither the model's scale nor the context, so it cannot say whether scale explains it.")


EXPERIMENT = replication_experiment(
    NAME,
    "Replication of Press et al. 2022: a character LM trained at a context of 64 and scored at 64..1024 with "
    "non-overlapping windows; perplexity growth per encoding.",
    configs, __file__, suite=SUITE,
    layout="perplexity",
    position=210,
    title="Replication: Press et al. 2022",
)

REPLICATION = replication.declare(
    EXPERIMENT,
    paper="press2022alibi",
    metric="loss",
    aggregate_label="perplexity growth, 16L / L (Table 2, L = 512; lower is better)",
    scores="Kendall's tau between pebench's mean perplexity growth (16L / L) of the paper's four encodings and "
           "Table 2's, with a 95% bootstrap interval over seeds, and pebench's verdict on each of the 6 orders the "
           "paper claims, on seed-paired growths.",
    setup=PAPER_SETUP,
    published=published_aggregate,
    claims=CLAIMS,
    score=score,
    declared_in="ed3c572",
)


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", SUITE, "--experiment", EXPERIMENT.name]))
