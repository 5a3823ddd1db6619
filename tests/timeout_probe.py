"""Run by tests/test_player_input.py in a pytest subprocess (not collected itself): the timeout pytest-timeout
arms for a test with a marker and for one without, on a machine as slow as ECONARENA_TEST_SLOWNESS says."""

import os

import pytest


def _armed(request: pytest.FixtureRequest) -> float:
    marker = request.node.get_closest_marker("timeout")
    return float(marker.args[0]) if marker is not None else float(request.config._env_timeout)


@pytest.mark.timeout(7, func_only=True)
def test_marked(request: pytest.FixtureRequest) -> None:
    assert _armed(request) == 7 * float(os.environ["ECONARENA_TEST_SLOWNESS"])
    assert request.node.get_closest_marker("timeout").kwargs == {"func_only": True}


def test_unmarked(request: pytest.FixtureRequest) -> None:
    assert _armed(request) == 600 * float(os.environ["ECONARENA_TEST_SLOWNESS"])  # setup.cfg's timeout
