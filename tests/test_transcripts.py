"""Report transcripts of games that talk: public messages and offers per turn from ``events["say"]``,
secret notes (reply fields the action spec marks secret) marked as such, everything HTML-escaped.

No registered game talks yet in this branch, so the report test takes a real pirate-game run directory
and, in the test only, declares the game as talking (``GameInfo.messages``) with a secret note field,
then writes ``say`` events and notes into its runs.jsonl by hand.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from econarena.analysis.transcripts import secret_fields, transcript_html
from econarena.games import GAMES
from econarena.games.base import ActionField, ActionSpec

pytest.importorskip("matplotlib")

PIRATE = GAMES["pirate_game"]
ROUND_LOG = [
    {"round": 0, "actions": [{"message": "Fair: <b>600</b> & 400?", "offer": 600, "note": "I'd take 450"}, None],
     "events": {"say": {"player": 0, "message": "Fair: <b>600</b> & 400?", "offer": 600}}},
    {"round": 1, "actions": [None, {"message": None, "decision": "reject", "note": "<script>alert(1)</script>"}],
     "events": {"say": {"player": 1, "message": None, "decision": "reject"}}},
    {"round": 2, "actions": [{"allocation": {"0": 60, "1": 40}}, None], "events": {"phase": "propose"}},
]


def test_transcript_html_turns_secret_notes_and_escaping() -> None:
    page = transcript_html(ROUND_LOG, ["Alice model", "Bob"], {"note"})
    turns = re.findall(r"<div class='turn[^']*'>.*?</div>", page)
    assert len(turns) == 3
    assert "Alice model" in turns[0] and "&ldquo;Fair: &lt;b&gt;600&lt;/b&gt; &amp; 400?&rdquo;" in turns[0]
    assert "<span class='act'>offer: 600</span>" in turns[0] and "note" not in turns[0]
    assert "Bob" in turns[1] and "decision: reject" in turns[1] and "&ldquo;" not in turns[1]
    assert turns[0].startswith("<div class='turn'>") and turns[1].startswith("<div class='turn s1'>")  # chat sides
    # no say event: the seat's public reply fields
    assert "round 2" in turns[2] and "allocation: 0: 60, 1: 40" in turns[2]
    secrets = re.findall(r"<div class='secret' data-secret='note'>.*?</div>", page)
    assert len(secrets) == 2
    assert "never shown to the opponent" in secrets[0] and "I&#x27;d take 450" in secrets[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in secrets[1] and "<script>" not in page
    # without secret fields declared, a note is not shown at all (it is not public)
    assert "I&#x27;d take 450" not in transcript_html(ROUND_LOG, ["A", "B"], ())


def test_long_messages_are_cut_in_the_page() -> None:
    log = [{"round": 0, "actions": [None, None], "events": {"say": {"player": 0, "message": "x" * 2500}}}]
    assert "[... 500 more characters]" in transcript_html(log, ["A", "B"], ())


def _talking_pirates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's stand-in for a language game: the pirate game, declared as talking, with a secret note."""
    cls = type(PIRATE)
    monkeypatch.setattr(cls, "info", dataclasses.replace(cls.info, messages="public+secret"))
    plain = cls.action_spec

    def with_note(self, state, player):  # noqa: ANN001, ANN202
        note = ActionField("note", "text", "a private note", max_length=200, secret=True)
        return ActionSpec((*plain(self, state, player).fields, note))

    monkeypatch.setattr(cls, "action_spec", with_note)


def test_secret_fields_come_from_the_action_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    assert secret_fields(PIRATE, {}, 2) == frozenset()
    _talking_pirates(monkeypatch)
    assert secret_fields(PIRATE, {}, 2) == {"note"}


@pytest.fixture
def talk_dir(arena: SimpleNamespace, tmp_path: Path) -> Path:
    """A pirate run directory (played by scripted pirates), whose runs get say events and notes by hand."""
    doc = arena.experiment_dict("pirate_game", [
        {"agent": "scripted", "label": "RED <model>", "responses": ['{"allocation": {"0": 60, "1": 40}}']},
        {"agent": "scripted", "label": "BLUE", "responses": ['{"vote": "accept"}']}], {}, sessions=4)
    out = tmp_path / "talk"
    arena.run_experiment(doc, out)
    runs = arena.read_jsonl(out / "runs.jsonl")
    for r in runs:
        assert r["complete"] and len(r["round_log"]) == 2
        prop, vote = r["round_log"]
        prop["actions"][0].update(message="Take <40>, friend.", note="secret: BLUE will fold")
        prop["events"]["say"] = {"player": 0, "message": "Take <40>, friend.", "proposal": {"0": 60, "1": 40}}
        vote["actions"][1].update(note="40 beats nothing")
        vote["events"]["say"] = {"player": 1, "message": "Fine.", "decision": "accept"}
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    return out


def test_report_renders_transcripts(talk_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from econarena.analysis.report import build_report
    from econarena.analysis.transcripts import transcripts_section

    assert transcripts_section([talk_dir]) is None  # not a talking game: no section
    _talking_pirates(monkeypatch)
    rep = build_report([talk_dir], tmp_path / "rep", n_boot=20, transcripts=2)
    page = rep.html.read_text(encoding="utf-8")
    assert "<h2 id='transcripts'>Conversations</h2>" in page and "href='#transcripts'" in page
    section = page.split("<h2 id='transcripts'>Conversations</h2>", 1)[1].split("<h2 ", 1)[0]
    assert "2 of 4 game(s) that talk" in section and "2 more are in the run directories" in section
    assert section.count("<details class='game'") == 2 and section.count("<details class='game' open") == 1
    # found by pair, outcome and length: each game carries them, the filter offers them
    assert section.count("data-pair='RED &lt;model&gt; vs BLUE' data-outcome='won by RED &lt;model&gt;' "
                         "data-moves='2'") == 2
    assert "<option value='RED &lt;model&gt; vs BLUE'>" in section and "name='min'" in section
    assert "Outcome: won by RED &lt;model&gt;; payoffs RED &lt;model&gt;: 60, BLUE: 40" in section
    assert "&ldquo;Take &lt;40&gt;, friend.&rdquo;" in section and "proposal: 0: 60, 1: 40" in section
    assert section.count("data-secret='note'") == 4 and "secret: BLUE will fold" in section
    assert "<40>" not in section
    assert transcripts_section([talk_dir], 4).count("<details class='game'") == 4

    binary = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
                  None)
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    # the section on a page of its own (the report's head and styles), so the screenshot shows it
    head = page.split("<body>", 1)[0]
    alone = tmp_path / "transcripts.html"
    alone.write_text(f"{head}<body><h2 id='transcripts'>Transcripts</h2>{section}</body></html>", encoding="utf-8")
    shot = tmp_path / "transcripts.png"
    url = alone.resolve().as_uri()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1100,900"]
    dom = subprocess.run([binary, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=90)
    assert dom.returncode == 0 and "data-secret=\"note\"" in dom.stdout
    assert ">2 of 2 games</span>" in dom.stdout  # the filter's script ran and counted the games
    r = subprocess.run([binary, *flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    import os

    if os.environ.get("ECONARENA_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["ECONARENA_KEEP_SCREENSHOT"])
    import matplotlib.image as mpimg

    rgb = mpimg.imread(shot)[..., :3]
    assert rgb.std() > 0.05
    # the secret notes' pink background is on screen
    pink = (abs(rgb[..., 0] - 0xfb / 255) < 0.02) & (abs(rgb[..., 1] - 0xef / 255) < 0.02) & \
        (abs(rgb[..., 2] - 0xf2 / 255) < 0.02)
    assert pink.sum() > 500


def test_a_message_cannot_reorder_the_turn_around_it() -> None:
    """A message ending in a right-to-left override (U+202E) reordered what followed it in the turn: in
    Chromium the closing quote moved past the harness's offer, which then read as part of the player's
    words. Each player text (message, name) and each structured part is its own bidi island."""
    from econarena.analysis.transcripts import CSS

    log = [{"round": 0, "actions": [None, None],
            "events": {"say": {"player": 0, "message": "deal\u202e", "offer": 6000}}}]
    page = transcript_html(log, ["Ali\u202ece", "Bob"], ())
    assert "<span class='msg'>&ldquo;deal\u202e&rdquo;</span><span class='act'>offer: 6000</span>" in page
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", CSS))
    isolated = {sel.strip() for sels, body in rules.items() if "unicode-bidi:isolate" in body
                for sel in sels.split(",")}
    assert {".transcript .msg", ".transcript .who", ".transcript .act"} <= isolated
