"""configs/glee/: the paper's whole grid, 384 + 576 + 360 = 1,320 configurations, validates and counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from econarena.cli import main
from econarena.hosts.config import load_experiment

GLEE = Path(__file__).resolve().parent.parent / "configs" / "glee"
COUNTS = {"bargaining": 384, "negotiation": 576, "persuasion": 360}
# the paper's regression reference levels (Table 8), which are also the games' defaults
REFERENCE = {
    "bargaining": {"delta_alice": 0.9, "delta_bob": 0.9, "money": 10_000, "complete_information": True,
                   "messages_allowed": False, "max_rounds": 99},
    "negotiation": {"seller_value": 1.0, "buyer_value": 1.0, "money": 10_000, "complete_information": True,
                    "messages_allowed": False, "max_rounds": 1},
    "persuasion": {"p_high": 0.5, "value_high": 1.25, "money": 10_000, "complete_information": True,
                   "message_type": "binary", "buyer": "long-living", "rounds": 20, "value_low": 0.0},
}


@pytest.mark.parametrize("family", sorted(COUNTS))
def test_grid_counts_and_reference_levels(family: str) -> None:
    exp = load_experiment(GLEE / f"{family}.toml")
    assert exp.game.name == family and exp.n_cells() == COUNTS[family]
    assert [p.label for p in exp.players] == ["alice", "bob"] and all(p.agent == "hf" for p in exp.players)
    defaults = exp.game.Params().model_dump()
    cells = [c.section("game") for c in exp.cells()]
    for key, level in REFERENCE[family].items():
        assert defaults[key] == level, key
        axis = [a for a in exp.axes if a.key == key]
        assert not axis or level in axis[0].values, key  # the reference level is one of the grid's values
    assert len({tuple(sorted(c.items())) for c in cells}) == COUNTS[family]


def test_validate_prints_the_cell_counts(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in GLEE.glob("*.toml"))
    assert main(["validate", *files]) == 0
    out = capsys.readouterr().out
    for family, n in COUNTS.items():
        assert f"{family}.toml: ok ({family}, melee, 1 table(s) x {n} grid cells" in out
    assert "models.toml: ok (models file, 2 alias(es))" in out
    assert sum(COUNTS.values()) == 1320


@pytest.mark.parametrize("family", sorted(COUNTS))
def test_a_table_of_three_is_a_clear_error(family: str, arena) -> None:
    from econarena.hosts.config import ConfigError, parse_experiment

    doc = arena.experiment_dict(family, [{"agent": "random", "count": 3}])
    with pytest.raises(ConfigError, match=f"{family} is a two-player game \\(Alice and Bob\\), got 3 players"):
        parse_experiment(doc, "three.toml")
