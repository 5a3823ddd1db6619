"""The logs of fixed experiments (every game with its baselines and a garbage-writing scripted seat, plus the
Host's options) equal the golden files: refactors and speed work change no record, metric or prompt.

After an intended change of the logs, regenerate with ``.venv/bin/python tests/golden_experiments.py --write``
and say why in the commit.
"""

from __future__ import annotations

import difflib
import gzip
import json
from pathlib import Path

import pytest
from golden_experiments import experiments, golden_path, play

from econarena.analysis.metrics import summarize

CASES = experiments()


def test_every_game_has_a_golden_experiment() -> None:
    from econarena.games import GAMES

    assert set(GAMES) <= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_logs_equal_the_golden_files(name: str, tmp_path: Path) -> None:
    expected = json.loads(gzip.decompress(golden_path(name).read_bytes()))
    got = play(CASES[name], tmp_path / name)
    assert sorted(got) == sorted(expected), "a log file appeared or disappeared"
    for file, lines in expected.items():
        if got[file] != lines:
            diff = "\n".join(list(difflib.unified_diff(lines, got[file], "golden", "now", lineterm="", n=0))[:12])
            pytest.fail(f"{name}/{file} differs from the golden file:\n{diff[:4000]}")
    # the summary counted while the run wrote (summary.json) is the one recomputed from the logs, to the bit
    written = json.loads((tmp_path / name / "summary.json").read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(summarize(tmp_path / name)))
