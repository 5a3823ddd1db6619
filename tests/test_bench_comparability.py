"""What must match for bench results to rank together (suite, tier, econarena version, rules and prompts),
what is flagged (generation settings), ranks with ties where intervals overlap, and the exports' columns."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from econarena.analysis import benchmark as B
from econarena.cli import main
from econarena.formats.benchsuite import DEFAULT, load_suite

REPO = Path(__file__).resolve().parent.parent


def _random(tmp_path: Path, name: str, suite: Path = DEFAULT) -> Path:
    out = tmp_path / name
    assert main(["bench", "random", "--suite", str(suite), "--no-baselines", "--quiet", "--out", str(out)]) == 0
    return out / "random" / "bench.json"


def test_v1_results_are_refused_beside_v2_with_the_reason(tmp_path: Path, capsys: Any) -> None:
    _random(tmp_path, "v1", REPO / "configs" / "bench" / "v1.toml")
    _random(tmp_path, "v2")
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "v1"), str(tmp_path / "v2")]) == 2
    err = capsys.readouterr().err
    assert "suite v1" in err and "suite v2" in err and "always-accept score 100" in err


def test_other_rules_or_econarena_versions_are_refused_and_generation_is_flagged(tmp_path: Path,
                                                                                  capsys: Any) -> None:
    path = _random(tmp_path, "a")
    result = json.loads(path.read_text(encoding="utf-8"))
    assert result["comparability"]["rules_sha256"] and result["comparability"]["econarena"]
    assert result["comparability"]["suite"] == "v2" and result["comparability"]["tier"] == "quick"
    for key, value in (("rules_sha256", "0" * 64), ("econarena", "0.0.1")):
        other = json.loads(json.dumps(result))
        other["comparability"][key] = value
        other["model"]["label"] = "other"
        (tmp_path / "b").mkdir(exist_ok=True)
        (tmp_path / "b" / "bench.json").write_text(json.dumps(other), encoding="utf-8")
        capsys.readouterr()
        assert main(["leaderboard", str(path), str(tmp_path / "b" / "bench.json")]) == 2
        err = capsys.readouterr().err
        assert value[:12] in err and "not ranked together" in err
    rows = [{"label": "m1", "generation": {"g": {"max_tokens": 512, "temperature": 1.0}}},
            {"label": "m2", "generation": {"g": {"max_tokens": 512, "reasoning_effort": "high", "temperature": 1.0}}}]
    note = B.generation_note(rows)
    assert note is not None and "reasoning_effort=high" in note and "m2" in note
    assert B.generation_note(rows[:1]) is None


def _row(label: str, score: float, low: float | None, high: float | None, complete: bool = True) -> dict[str, Any]:
    return {"model": {"label": label, "kind": "model"}, "suite": {"version": "v2", "sha256": "s"}, "tier": "standard",
            "complete": complete, "stopped": None if complete else "budget", "spent_usd": None if complete else 1.5,
            "overall": {"score": score, "low": low, "high": high},
            "subscores": {"f": {"title": "F", "score": score, "low": low, "high": high}},
            "games": [{"id": "g1", "score": score, "low": low, "high": high}],
            "comparability": {"econarena": "9.9", "rules_sha256": "r" * 64}}


def test_ranks_tie_where_intervals_overlap_and_exports_carry_everything() -> None:
    rows = B.leaderboard([(Path("a"), _row("a", 92.9, 89.9, 95.9)), (Path("b"), _row("b", 90.7, 87.7, 93.7)),
                          (Path("c"), _row("c", 80.0, 78.0, 82.0)), (Path("d"), _row("d", 50.0, 40.0, 60.0, False))])
    assert [(r["label"], r["rank"], r["tied"]) for r in rows] == [("a", 1, True), ("b", 1, True), ("c", 3, False),
                                                                  ("d", None, False)]
    head, body = B.leaderboard_cells(rows)
    assert [b[0] for b in body] == ["1=", "1=", "3", "-"]
    assert "spent $1.5000" in body[3][-1]
    table = list(csv.DictReader(io.StringIO(B.leaderboard_csv(rows))))
    assert table[0]["suite_sha256"] == "s" and table[0]["econarena"] == "9.9" and table[0]["rules_sha256"] == "r" * 64
    assert float(table[1]["f_low"]) == 87.7 and float(table[1]["game:g1_high"]) == 93.7
    assert table[3]["stopped"] == "budget" and float(table[3]["spent_usd"]) == 1.5 and table[3]["rank"] == ""
    data = json.loads(B.leaderboard_json(rows))
    assert data[2]["families"]["f"] == {"score": 80.0, "low": 78.0, "high": 82.0}
    assert data[2]["games"]["g1"]["score"] == 80.0


def test_bench_hf_names_the_bundled_model_and_its_weights() -> None:
    """The row of `bench hf` said only "hf": the model that plays is named, with its weights' sha256."""
    import hashlib

    import pytest

    from econarena.hosts import bench as H

    hf = pytest.importorskip("econarena.agents.providers.hf")
    try:
        gguf = hf.bundled_gguf()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the bundled model is not installed ({exc})")
    played = H.played_by(H.model_specs("hf")[0])
    assert played == {"model": hf.DEFAULT_MODEL, "weights": gguf.name,
                      "weights_sha256": hashlib.sha256(gguf.read_bytes()).hexdigest()}
    spec = H.model_specs("hf")[0]
    suite = load_suite(DEFAULT)
    assert H.settings(suite, "quick", spec, H.build(suite, "quick", spec))["played_by"] == played
