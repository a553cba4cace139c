"""Each question kind's gold answer on a tiny hand-made world."""

from __future__ import annotations

import pytest

from amemgym.families.budget.domain import load_domain
from amemgym.families.budget.model import Change, EntityRecord, QuestionSpec
from amemgym.families.budget.solve import ALL_KINDS, solve
from amemgym.families.budget.views import FactView, Missing, final_view

DOMAIN = load_domain("companies")


def _world() -> FactView:
    def ent(name: str, cat: str, emp: int, rev: float, ceo: str, ex: str, sales: list[float],
            supplies: list[str], competes: list[str]) -> EntityRecord:
        return EntityRecord(name=name, category=cat,
                            attrs={"employees": emp, "revenue": rev, "ceo": ceo, "exchange": ex,
                                   "quarterly_sales": sales, "founded": "2001-05-04"},
                            relations={"supplies_to": supplies, "competes_with": competes})

    entities = [
        ent("Apex Works", "software", 100, 10.0, "Okafor", "NYSE", [1.0, 2.0, 5.0, 4.0], ["Blue Labs"],
            ["Cinder Group"]),
        ent("Blue Labs", "retail", 300, 40.0, "Tanaka", "LSE", [3.0, 3.5], ["Cinder Group"],
            ["Apex Works", "Delta Foods"]),
        ent("Cinder Group", "software", 200, 25.0, "Moreau", "NYSE", [9.0, 7.0], ["Delta Foods"], ["Apex Works"]),
        ent("Delta Foods", "software", 1000, 5.0, "Tanaka", "TSX", [2.0, 2.0], ["Apex Works"], ["Blue Labs"]),
    ]
    # Apex Works' headcount is revised from 100 to 150 after its document.
    return final_view(entities, [Change(entity="Apex Works", attr="employees", old=100, new=150, kind="notice")])


ALL4 = ["Apex Works", "Blue Labs", "Cinder Group", "Delta Foods"]
CASES = [
    ("retrieval", QuestionSpec(entities=["Blue Labs"], attrs=["revenue"]), ("float", 40.0)),
    ("retrieval", QuestionSpec(entities=["Blue Labs"], attrs=["founded"]), ("date", "2001-05-04")),
    ("update", QuestionSpec(entities=["Apex Works"], attrs=["employees"]), ("int", 150)),
    ("counterfactual", QuestionSpec(entities=["Apex Works"], attrs=["employees"]), ("int", 100)),
    ("delta", QuestionSpec(entities=["Apex Works"], attrs=["employees"]), ("int", 50)),
    ("synthesis_max", QuestionSpec(entities=ALL4, attrs=["revenue"]), ("name", "Blue Labs")),
    ("synthesis_min", QuestionSpec(entities=ALL4, attrs=["employees"]), ("name", "Apex Works")),
    ("aggregation", QuestionSpec(entities=["Apex Works", "Blue Labs"], attrs=["employees"]), ("int", 450)),
    ("comparison", QuestionSpec(entities=["Blue Labs", "Cinder Group"], attrs=["revenue"]), ("float", 15.0)),
    ("ratio", QuestionSpec(entities=["Blue Labs", "Delta Foods"], attrs=["revenue"]), ("float", 8.0)),
    ("conditional", QuestionSpec(entities=ALL4, attrs=["employees", "revenue"]), ("float", 5.0)),
    ("multi_hop", QuestionSpec(entities=["Apex Works"], attrs=["employees"], relations=["supplies_to"]),
     ("int", 300)),
    ("outlier", QuestionSpec(entities=ALL4, attrs=["employees"]), ("name", "Delta Foods")),
    ("temporal_trend", QuestionSpec(entities=["Apex Works"], attrs=["quarterly_sales"]), ("float", 3.0)),
    ("temporal_extreme", QuestionSpec(entities=["Apex Works"], attrs=["quarterly_sales"]), ("float", 5.0)),
    ("text_match", QuestionSpec(attrs=["ceo"], value="Moreau"), ("name", "Cinder Group")),
    ("enum_filter", QuestionSpec(entities=ALL4, attrs=["exchange"], value="LSE"), ("name", "Blue Labs")),
    ("multi_count", QuestionSpec(entities=ALL4, attrs=["employees", "revenue"], threshold=120, threshold2=6.0),
     ("int", 3)),
    ("relation_lookup", QuestionSpec(entities=["Cinder Group"], relations=["supplies_to"]), ("name", "Delta Foods")),
    ("relation_hop", QuestionSpec(entities=["Apex Works"], relations=["supplies_to", "supplies_to"]),
     ("name", "Cinder Group")),
    ("relation_count", QuestionSpec(entities=["Apex Works", "Blue Labs"], relations=["competes_with"]), ("int", 3)),
    ("abstention", QuestionSpec(entities=["Nimbus Foods"], attrs=["employees"]), ("refuse", None)),
    ("average", QuestionSpec(entities=["Apex Works", "Blue Labs", "Cinder Group"], attrs=["employees"]),
     ("float", 216.67)),
    ("cross_category", QuestionSpec(entities=ALL4, attrs=["revenue"], category="retail", value="software"),
     ("float", 26.67)),
    ("trend_label", QuestionSpec(entities=["Apex Works"], attrs=["quarterly_sales"]), ("text", "up, up, down")),
    ("trend_label", QuestionSpec(entities=["Delta Foods"], attrs=["quarterly_sales"]), ("text", "flat")),
    ("relation_chain", QuestionSpec(entities=["Apex Works"], relations=["supplies_to", "supplies_to", "supplies_to"]),
     ("name", "Delta Foods")),
    ("relation_filter", QuestionSpec(entities=["Blue Labs"], attrs=["revenue"], relations=["competes_with"]),
     ("float", 10.0)),
]


@pytest.mark.parametrize(("kind", "spec", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_gold(kind: str, spec: QuestionSpec, expected: tuple) -> None:
    assert solve(kind, spec, _world(), DOMAIN) == expected


def test_every_kind_has_a_case() -> None:
    assert {c[0] for c in CASES} == set(ALL_KINDS)


def test_text_match_with_two_holders_has_no_single_answer() -> None:
    with pytest.raises(Missing):
        solve("text_match", QuestionSpec(attrs=["ceo"], value="Tanaka"), _world(), DOMAIN)


def test_a_chain_through_a_fork_has_no_single_answer() -> None:
    with pytest.raises(Missing):
        solve("relation_chain", QuestionSpec(entities=["Apex Works"], relations=["supplies_to", "competes_with"]),
              _world(), DOMAIN)


def test_update_gold_uses_the_corrected_value_not_the_document() -> None:
    view = _world()
    assert view.get("Apex Works", "employees") == 150
    assert view.get("Apex Works", "employees@old") == 100
