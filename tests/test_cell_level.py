"""A factor's level is written one way in a cell's name, by the Host and when the analysis reads it back."""

from __future__ import annotations

from typing import Any

import pytest

from econarena.formats.gridcells import cell_level
from econarena.hosts.grid import Cell


@pytest.mark.parametrize(("value", "text"), [
    (0.5, "0.5"), (20.0, "20"), (-3.0, "-3"), (7, "7"), (True, "True"), ("x y", "x y"),
    (1e15, "1000000000000000.0"),  # too large to be sure of as a whole number: left as the float reads
    ({"a": 1, "b": [2, 3]}, "{'a':1,'b':[2,3]}"), ([1.0, 2], "[1.0,2]"),
])
def test_a_level_as_a_cell_writes_it(value: Any, text: str) -> None:
    assert cell_level(value) == text


def test_the_hosts_cell_name_uses_it() -> None:
    cell = Cell(0, (("game.ratio", 0.5), ("game.prize", 20.0), ("llm.stop", ["a", "b"])))
    assert cell.label == "ratio=0.5,prize=20,stop=['a','b']"
