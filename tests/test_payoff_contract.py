"""``run`` refuses a payoff the contract refuses: a game error naming game, session and value, never a null."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import run_experiment

from econarena.games import get_game
from econarena.games.base import GameError, payoff_problem

DOC: dict[str, Any] = {"experiment": {"name": "broken", "game": "prisoners_dilemma", "sessions": 2, "runs": 1,
                                      "seed": 3},
                       "players": [{"agent": "rational"}, {"agent": "random"}]}


@pytest.mark.parametrize("payoffs, problem", [
    ((1.0, math.nan), "seat 1's payoff nan is not a finite number"),
    ((math.inf, 0.0), "seat 0's payoff inf is not a finite number"),
    ((1e200, 0.0), "seat 0's payoff 1e+200 is outside the declared bounds [-100.0, 100.0]"),
])
def test_a_run_with_a_payoff_the_contract_refuses_stops_with_a_game_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payoffs: tuple[float, float], problem: str) -> None:
    game = get_game("prisoners_dilemma")
    honest = type(game).outcome

    def broken(self: Any, state: Any) -> Any:
        return dataclasses.replace(honest(self, state), payoffs=payoffs)

    monkeypatch.setattr(type(game), "outcome", broken)
    monkeypatch.setattr(type(game), "payoff_bounds", lambda self, setup: (-100.0, 100.0))
    with pytest.raises(GameError) as caught:
        run_experiment(DOC, tmp_path / "out")
    message = str(caught.value)
    assert message.startswith("game prisoners_dilemma, lineup ")
    assert ", session 0, run 0: " in message and problem in message
    runs = (tmp_path / "out" / "runs.jsonl")
    assert not runs.exists() or "null" not in runs.read_text()  # nothing half-recorded as a result


def test_the_payoff_rule_by_hand() -> None:
    assert payoff_problem((0.0, 5, 10.0), (0.0, 10.0)) is None
    assert payoff_problem((10.0 + 1e-12,), (0.0, 10.0)) is None  # rounding slack of 1e-9, relative
    assert payoff_problem((10.1,), (0.0, 10.0)) == "seat 0's payoff 10.1 is outside the declared bounds [0.0, 10.0]"
    assert payoff_problem((True,), None) == "seat 0's payoff True is not a finite number"
    assert payoff_problem((1e300,), None) is None  # no bounds declared: finite is all that is asked


def test_the_cli_says_a_game_error_in_one_line_with_the_error_exit_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A game that breaks its contract is the game's fault, not the file's: exit 1, as for a game that raises."""
    from econarena.cli.common import EXIT_ERROR, failed_job

    error = GameError("game g, lineup main, session 2, run 0: seat 1's payoff nan is not a finite number")
    assert failed_job(error, tmp_path, "run") == EXIT_ERROR
    assert "session 2, run 0: seat 1's payoff nan is not a finite number" in capsys.readouterr().err
