"""The published numbers are readable, named in pebench's terms and shipped with the package."""

from __future__ import annotations

import pytest

from pebench import encodings
from pebench.analysis import published


@pytest.mark.parametrize("paper", published.papers())
def test_every_paper_has_values_and_claims_with_sources(paper):
    values, claims = published.values(paper), published.claims(paper)
    assert len(values) and len(claims)
    assert (values["source"] != "").all() and (values["metric"] != "").all() and (claims["claim"] != "").all()
    known = set(encodings.names()) | {"n/a"}
    named = {e for e in values["encoding"] if not e.startswith("randomized:<")}  # a claim about every base
    assert named <= known | {f"randomized:{b}" for b in encodings.names()}


def test_kazemnejad_aggregate_ranking_covers_their_five_encodings():
    values = published.values("kazemnejad2023")
    mrr = values[values["metric"] == "mean_reciprocal_rank"].set_index("encoding")["number"]
    assert set(mrr.index) == {"none", "t5", "alibi", "rope", "sinusoidal"}
    assert ((mrr > 0) & (mrr <= 1)).all()


def test_an_unknown_paper_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="kazemnejad2023"):
        published.values("vaswani2017")


def test_the_papers_are_the_files_of_the_published_folder():
    """Read from the folder, not kept by hand: the three papers the replications score against, each with claims."""
    assert published.papers() == ("kazemnejad2023", "press2022", "ruoss2023")
    assert all((published.folder() / f"{paper}_claims.csv").is_file() for paper in published.papers())
