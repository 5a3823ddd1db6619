"""Whole games with LLM players: every provider kind at one table, and the real bundled SmolLM2 model.

The API providers talk to the loopback fake server with their real SDKs; the ``hf`` player is a tiny
random Llama built by the test (seconds) or, in the slow test, the bundled SmolLM2 default.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from fakeservers import FakeLLMServer  # noqa: E402
from hf_fixtures import build_tiny_llama  # noqa: E402

ECONARENA = str(Path(sys.executable).with_name("econarena"))
API_SUFFIX = {"openai": "/v1", "anthropic": "", "google": "", "zhipuai": "/api/paas/v4"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ECONARENA, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def test_one_melee_with_all_five_provider_kinds(server: FakeLLMServer, tmp_path: Path) -> None:
    model_dir = build_tiny_llama(tmp_path / "tiny-llama")
    server.reply = lambda protocol, body: '{"answer": 30}'
    players = "\n".join(
        f'[[players]]\nagent = "{name}"\nlabel = "{name}"\nmodel = "fake-{name}"\n'
        f'base_url = "{server.url}{suffix}"\n' for name, suffix in API_SUFFIX.items())
    players += f'[[players]]\nagent = "hf"\nlabel = "hf"\nmodel = "{model_dir}"\nmax_tokens = 8\n'
    toml = tmp_path / "all.toml"
    toml.write_text('[experiment]\nname = "all-five"\ngame = "beauty_contest"\nsessions = 2\nruns = 1\n'
                    'seed = 3\n[game]\nupper_bound = 100\n' + players, encoding="utf-8")
    assert run_cli("validate", str(toml), cwd=tmp_path).returncode == 0
    r = run_cli("run", str(toml), "--out", "out", "--quiet", "--no-cache", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    decisions = read_jsonl(tmp_path / "out" / "decisions.jsonl")
    assert sorted({d["label"] for d in decisions}) == ["anthropic", "google", "hf", "openai", "zhipuai"]
    assert len(decisions) == 2 * 5 and all(d["error"] is None for d in decisions)
    api = [d for d in decisions if d["label"] != "hf"]
    assert all(d["valid"] and d["action"] == 30.0 and d["tokens_out"] for d in api)
    local = [d for d in decisions if d["label"] == "hf"]
    # random weights speak gibberish to the token limit: recorded as cut there (not as the model's parse
    # error), with the raw text and its token counts
    assert all(d["violation"] == "truncated" and d["truncated"] and d["tokens_out"] == 8 and d["tokens_in"]
               for d in local)
    runs = read_jsonl(tmp_path / "out" / "runs.jsonl")
    assert len(runs) == 2 and all(r["complete"] and r["winners"] == [0, 1, 2, 3] for r in runs)
    assert all(r["valid"] == [True, True, True, True, False] for r in runs)


@pytest.mark.slow
@pytest.mark.timeout(600, func_only=True)  # converting the bundled model is the session fixture's
def test_bundled_smollm2_plays_a_real_game(tmp_path: Path, bundled_model: Path) -> None:
    toml = tmp_path / "smol.toml"
    toml.write_text('[experiment]\nname = "smol"\ngame = "second_price_auction"\nenvironment = "rational"\n'
                    'players_per_game = 3\nsessions = 2\nruns = 1\n[game]\nprivate_value = [40, 60, 50]\n'
                    'assets = 100\n[[players]]\nagent = "hf"\nlabel = "SmolLM2"\nmax_tokens = 48\n',
                    encoding="utf-8")
    r = run_cli("run", str(toml), "--out", "out", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    decisions = read_jsonl(tmp_path / "out" / "decisions.jsonl")
    smol = [d for d in decisions if d["label"] == "SmolLM2"]
    assert len(smol) == 2 and all(d["model"] == "SmolLM2-135M-Instruct" for d in smol)
    assert all(d["response"].strip() and 0 < d["tokens_out"] <= 48 and d["error"] is None for d in smol)
    # whatever the small model says is judged: a valid bid or a recorded violation with its raw text
    assert all(d["valid"] or (d["violation"] and d["detail"]) for d in smol)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["runs_complete"] == 2 and summary["labels"]["SmolLM2"]["tokens_out"] > 0
