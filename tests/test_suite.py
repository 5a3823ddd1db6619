"""The paper's experiment suite (configs/paper) and ``econarena suite``: shipped files validate, every alias
resolves, and the whole suite runs end to end (resumably) with the aliases mapped to cheap baselines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from econarena.cli.reports import paper_sessions, suite_files
from econarena.hosts.config import load_experiment, read_toml

REPO = Path(__file__).resolve().parent.parent
PAPER = REPO / "configs" / "paper"
ECONARENA = str(Path(sys.executable).with_name("econarena"))
ALIASES = {"GPT4", "GPT3.5", "Claude2", "Claude-I", "PaLM2", "Llama2", "Baichuan2", "ChatGLM2", "ChatGLM3"}

# Every alias as a cheap baseline: level-k thinkers, random players and two scripted rule breakers.
BASELINE_MODELS = """
["GPT4"]
agent = "level_k"
k = 2
["GPT3.5"]
agent = "level_k"
k = 1
["Claude2"]
agent = "level_k"
k = 3
["Claude-I"]
agent = "random"
["PaLM2"]
agent = "scripted"
responses = ['{"answer": 5, "bid": 40, "decision": "stay"}', 'no idea', '{"answer": -1, "bid": -1, "decision": "up"}']
["Llama2"]
agent = "scripted"
responses = ['I would pick something']
["Baichuan2"]
agent = "level_k"
k = 0
["ChatGLM2"]
agent = "random"
["ChatGLM3"]
agent = "level_k"
k = 4
"""


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([ECONARENA, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          stdin=subprocess.DEVNULL)


def experiment_files() -> list[Path]:
    return suite_files([str(PAPER)])


def test_shipped_experiments_validate() -> None:
    files = experiment_files()
    assert len(files) == 27  # 9 settings x 3 games
    r = cli("validate", *map(str, files))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": ok (") == 27


def test_validate_whole_folder_as_shipped() -> None:
    """``econarena validate configs/paper/*.toml`` (the glob includes models.toml)."""
    r = cli("validate", *map(str, sorted(PAPER.glob("*.toml"))))
    assert r.returncode == 0, r.stderr
    assert "models.toml: ok (models file, 9 alias(es))" in r.stdout


def test_models_file_maps_every_alias_to_the_local_default() -> None:
    models = read_toml(PAPER / "models.toml")
    assert set(models) == ALIASES
    for alias, entry in models.items():
        # offline: the bundled default model (no "model" key), no API key, no download
        assert entry["agent"] == "hf" and "model" not in entry, alias


def test_paper_files_cover_section_4() -> None:
    seen = set()
    for f in experiment_files():
        exp = load_experiment(f)
        e = exp.experiment
        assert e.name == f.stem
        assert {p.label for p in exp.players} - {"rational"} <= ALIASES
        assert all(p.agent == "hf" for p in exp.players if p.label != "rational")
        n = paper_sessions(f)
        assert n is not None and n >= e.sessions, f
        kind = f.stem.split("-", 1)[1]
        seen.add((e.game, kind))
        if "history" in kind:
            assert (e.runs, e.max_history) == (6, 3) and e.history != "none"
            assert n * e.runs == 180  # the paper's 180 runs with history
        else:
            assert e.runs == 1 and e.history == "none"
        if kind == "senior":
            assert len(exp.players) == 5
        if kind == "rational-cot":
            assert e.prompt == "cot"
        if e.environment == "rational":
            assert e.players_per_game == 5  # the model and 4 equilibrium agents
    kinds = {"melee", "rational", "rational-cot", "rational-history", "melee-history", "groups-L", "groups-M",
             "groups-H", "senior"}
    assert seen == {(g, k) for g in ("beauty_contest", "second_price_auction", "english_auction") for k in kinds}


def test_paper_group_scales() -> None:
    upper = {g: load_experiment(PAPER / f"bc-groups-{g}.toml").params.upper_bound for g in "LMH"}
    assert upper == {"L": {"uniform": [10, 100]}, "M": {"uniform": [100, 1000]}, "H": {"uniform": [1000, 10000]}}
    for g, (mean, sd, assets) in {"L": (50, 10, 100), "M": (500, 100, 1000), "H": (5000, 1000, 10000)}.items():
        p = load_experiment(PAPER / f"spa-groups-{g}.toml").params
        assert (p.private_value, p.assets) == ({"normal": [mean, sd]}, assets)


def test_sessions_paper_uses_the_noted_counts(tmp_path: Path) -> None:
    models = tmp_path / "m.toml"
    models.write_text(BASELINE_MODELS, encoding="utf-8")
    exp = load_experiment(PAPER / "bc-melee.toml", models=models, overrides={"sessions": paper_sessions(
        PAPER / "bc-melee.toml")})
    assert exp.experiment.sessions == 150


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("suite")
    models = tmp / "baselines.toml"
    models.write_text(BASELINE_MODELS, encoding="utf-8")
    out = tmp / "runs"
    r = cli("suite", str(PAPER), "--models", str(models), "--out", str(out), "--sessions", "2", "--boot", "100",
            "--quiet")
    return models, out, r


def test_suite_runs_everything_and_builds_one_report(suite: tuple[Path, Path, subprocess.CompletedProcess[str]]
                                                     ) -> None:
    _, out, r = suite
    assert r.returncode == 0, r.stderr[-3000:]
    dirs = sorted(p.name for p in out.iterdir() if (p / "runs.jsonl").exists())
    assert dirs == sorted(f.stem for f in experiment_files())
    for d in dirs:
        assert json.loads((out / d / "manifest.json").read_text())["status"] == "complete"
    html = (out / "report" / "report.html").read_text(encoding="utf-8")
    for key in ("fig1_melee_payoff", "fig2_rational_deviation", "fig3_groups", "fig4_action_paths",
                "fig5_rule_breaking", "fig7_win_rates"):
        assert f"data-figure='{key}'" in html
    assert "Not shown: Average payoff after the first 20 / 60 / 100 sessions" in html  # only 2 sessions here
    for alias in ALIASES:
        assert alias in html
    assert "prompt: cot vs default" in html and "history: actions vs none" in html  # comparisons found


def test_suite_is_resumable(suite: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    models, out, _ = suite
    # simulate an interrupted experiment: its last runs never finished
    victim = out / "bc-rational-history"
    lines = (victim / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (victim / "runs.jsonl").write_text("".join(lines[:-5]), encoding="utf-8")
    manifest = json.loads((victim / "manifest.json").read_text())
    (victim / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))

    r = cli("suite", str(PAPER), "--models", str(models), "--out", str(out), "--sessions", "2", "--only", "^bc-",
            "--no-report", "--quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "bc-rational-history: resuming" in r.stdout
    assert r.stdout.count("complete, skipped") == 8
    runs = [json.loads(x) for x in (victim / "runs.jsonl").read_text().splitlines()]
    keys = [(x["lineup"], x["session"], x["run"]) for x in runs]
    assert len(keys) == len(set(keys)) == len(lines)  # every run exactly once
    assert json.loads((victim / "manifest.json").read_text())["status"] == "complete"

    # a different experiment in the same folder is refused, not mixed in
    r = cli("suite", str(PAPER), "--models", str(models), "--out", str(out), "--sessions", "3", "--only",
            "^bc-melee$", "--no-report", "--quiet")
    assert r.returncode == 2 and "holds a different experiment" in r.stderr


def test_suite_rejects_bad_input(tmp_path: Path) -> None:
    r = cli("suite", str(tmp_path))
    assert r.returncode == 2 and "no experiment files" in r.stderr
    r = cli("suite", str(PAPER), "--sessions", "zero")
    assert r.returncode == 2 and "positive integer or 'paper'" in r.stderr
    bad = tmp_path / "bad-models.toml"
    bad.write_text('["GPT4"]\nagent = "level_k"\n', encoding="utf-8")
    r = cli("suite", str(PAPER), "--models", str(bad), "--out", str(tmp_path / "o"), "--no-report")
    assert r.returncode == 2 and "is not defined in" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()  # nothing ran: every file is checked first
