"""The suite's time budgets (tests/timing.py): never looser than set where the machine is fast, stretched
by the measured slowness where it is not, and overridable."""

from __future__ import annotations

import pytest
import timing


def test_a_budget_is_never_below_its_setting_and_scales_with_the_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECONARENA_TEST_SLOWNESS", "3")
    assert timing.budget(2.0) == 6.0
    monkeypatch.setenv("ECONARENA_TEST_SLOWNESS", "0.5")  # a faster machine keeps the budget as set
    assert timing.budget(2.0) == 2.0


def test_the_measurement_follows_the_workload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECONARENA_TEST_SLOWNESS", raising=False)
    monkeypatch.setattr(timing, "_last", (-1e9, 1.0))
    monkeypatch.setattr(timing, "REFERENCE_S", 1e-9)  # any real run is far slower: capped
    assert timing.slowness() == timing.MAX_SLOWNESS
    monkeypatch.setattr(timing, "_last", (-1e9, 1.0))
    monkeypatch.setattr(timing, "REFERENCE_S", 1e9)  # never below 1
    assert timing.slowness() == 1.0
    monkeypatch.setattr(timing, "REFERENCE_S", 1e-9)  # a fresh measurement serves the next seconds
    assert timing.slowness() == 1.0
