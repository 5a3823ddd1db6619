"""Games that talk (``GameInfo.messages`` is not ``"none"``) as conversations a reader can find and read.

Why generic: every language game logs its public move as ``events["say"]`` (player, message and the
public structured part: offer, proposal, decision) and its secret notes as reply fields that its action
spec marks ``secret``. So one renderer shows any such game: the public message and offer per turn, and
each secret note marked as such (it was never shown to the opponent). A round without a ``say`` event
shows the seats' public reply fields. Everything is HTML-escaped: replies are model (or person) text.

The report lists every included game (up to ``--transcripts`` per directory and a page budget) with its
model pair, outcome and length; a small filter finds games by those three, and each opens as a chat: the
first seat's turns on the left, the other's on the right, offers and decisions as chips, secret notes
marked, the outcome at the end.
"""

from __future__ import annotations

import heapq
import html
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..games import GAMES
from ..games.base import Game
from .scan import Base, Dir

MAX_CHARS = 2000  # a message longer than this is cut in the page (the run directory keeps it whole)
BUDGET = 600_000  # characters of conversations on one page; the rest is counted and left to runs.jsonl
WALK_STEPS = 64

CSS = """
.transcript{border-left:3px solid #c9d3dd;padding:.2rem .8rem;margin:.4rem 0 1rem;font-size:.9rem}
.transcript .turn{margin:.35rem 0;max-width:75%;background:#f3f6f9;border-radius:8px;padding:.3rem .6rem}
.transcript .turn.s1{margin-left:auto;background:#eaf4ea} .transcript .who{font-weight:600;color:#234}
.transcript .end{margin:.5rem 0 .2rem;font-weight:600;color:#333}
.games .pick{display:flex;gap:.8rem;flex-wrap:wrap;align-items:center;font-size:.85rem;margin:.4rem 0}
.games .pick label{min-width:0;max-width:100%} .games .pick select{max-width:24rem}
.games details.game>summary{font-weight:400} .games .count{color:#555}
.transcript .rnd{color:#777;font-size:.8rem;margin-right:.4rem} .transcript .seat{color:#777;font-size:.8rem}
.transcript .msg{white-space:pre-wrap} .transcript .msg,.transcript .who,.transcript .act{unicode-bidi:isolate}
.transcript .act{display:inline-block;background:#eef4fb;border-radius:3px;padding:0 .35rem;margin-left:.3rem}
.transcript .secret{background:#fbeff2;border-left:3px solid #b0306a;padding:.15rem .5rem;margin:.2rem 0 .2rem 1.2rem;
white-space:pre-wrap} .transcript .secret b{color:#8a1f50}
.transcript details.reasoning{margin:.2rem 0 0;font-size:.8rem;color:#444;white-space:pre-wrap}
.transcript details.reasoning>summary{font-weight:400;color:#6b46c1}
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _value(v: Any) -> str:
    """A structured value as a reader writes it: ``X: 5, Y: 2`` for an allocation."""
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + f" [... {len(text) - MAX_CHARS} more characters]"


def secret_fields(game: Game, params: Mapping[str, Any] | None, n_players: int = 2) -> frozenset[str]:
    """Names of the reply fields the game's action specs mark secret, found by playing the game's
    random policy from one drawn configuration (phases differ in what they ask)."""
    names: set[str] = set()
    try:
        setup = game.setup(game.Params(**dict(params or {})), n_players, np.random.default_rng(0))
        state = game.initial_state(setup)
        rng = np.random.default_rng(0)
        for _ in range(WALK_STEPS):
            movers = game.to_move(state)
            if not movers:
                break
            for seat in movers:
                names.update(f.name for f in game.action_spec(state, seat).fields if f.secret)
            if "random" not in game.policies():
                break
            state = game.apply(state, {i: game.strategy(state, i, "random", rng=rng) for i in movers}, rng)
    except Exception:  # noqa: BLE001 - a game that cannot be walked still shows its public transcript
        pass
    return frozenset(names)


def _who(labels: Sequence[str], seat: Any) -> str:
    name = labels[seat] if isinstance(seat, int) and 0 <= seat < len(labels) else "?"
    return f"{_esc(name)} <span class='seat'>(seat {_esc(seat)})</span>"


def _turn(rnd: Any, labels: Sequence[str], seat: Any, message: Any, public: Mapping[str, Any],
          folded: str = "") -> str:
    side = " s1" if isinstance(seat, int) and seat % 2 == 1 else ""
    parts = [f"<div class='turn{side}'><span class='rnd'>round {_esc(rnd)}</span><span class='who'>"
             f"{_who(labels, seat)}</span>:&nbsp;"]
    if message not in (None, ""):
        parts.append(f"<span class='msg'>&ldquo;{_esc(_cut(str(message)))}&rdquo;</span>")
    for k, v in public.items():
        if v is not None:
            parts.append(f"<span class='act'>{_esc(k)}: {_esc(_cut(_value(v)))}</span>")
    return "".join(parts) + folded + "</div>"


def _reasoning(thought: tuple[str, bool, Any] | None) -> str:
    """A decision's reasoning, folded under its turn (a reasoning model's thinking, never shown to anyone
    in the game); hidden reasoning is said to be hidden."""
    if thought is None:
        return ""
    text, hidden, tokens = thought
    count = f", {int(tokens):,} tokens" if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) else ""
    if not text:
        return (f"<details class='reasoning'><summary>reasoning{count}</summary><i>withheld by the provider "
                "(encrypted, redacted or only counted)</i></details>") if hidden or count else ""
    return (f"<details class='reasoning'><summary>reasoning{count}{', partly withheld' if hidden else ''}</summary>"
            f"{_esc(_cut(text))}</details>")


def transcript_html(round_log: Iterable[Mapping[str, Any]], labels: Sequence[str], secret: Iterable[str],
                    reasoning: Mapping[tuple[Any, Any], tuple[str, bool, Any]] | None = None) -> str:
    """One run's transcript: per round each public move (message + structured part), then the secret
    notes of that round, each marked as never shown to the opponent. ``reasoning``: per (round, seat), a
    reasoning model's thinking before that move, folded under it."""
    secret = frozenset(secret)
    reasoning = reasoning or {}
    out = ["<div class='transcript'>"]
    for entry in round_log:
        rnd = entry.get("round", "?")
        events = entry.get("events") or {}
        actions = entry.get("actions") or []
        said = events.get("say") if isinstance(events, Mapping) else None
        says = [said] if isinstance(said, Mapping) else [s for s in said if isinstance(s, Mapping)] \
            if isinstance(said, list) else []
        if says:
            for s in says:
                public = {k: v for k, v in s.items() if k not in ("player", "message") and k not in secret}
                out.append(_turn(rnd, labels, s.get("player"), s.get("message"), public,
                                 _reasoning(reasoning.get((rnd, s.get("player"))))))
        else:  # no public transcript entry: the seats' public reply fields
            for seat, act in enumerate(actions):
                if isinstance(act, Mapping):
                    public = {k: v for k, v in act.items() if k not in secret and k != "message"}
                    out.append(_turn(rnd, labels, seat, act.get("message"), public,
                                     _reasoning(reasoning.get((rnd, seat)))))
        for seat, act in enumerate(actions):
            if not isinstance(act, Mapping):
                continue
            for k in sorted(secret & set(act)):
                if act[k] not in (None, ""):
                    out.append(f"<div class='secret' data-secret='{_esc(k)}'><b>secret {_esc(k)}</b> of "
                               f"{_who(labels, seat)}, never shown to the opponent: {_esc(_cut(str(act[k])))}</div>")
    if len(out) == 1:
        out.append("<p class='meta'>(no moves)</p>")
    return "\n".join(out) + "\n</div>"


def _outcome(run: Mapping[str, Any], labels: Sequence[str]) -> str:
    pay = run.get("payoffs") or []
    parts = [f"{labels[i] if i < len(labels) else i}: {_value(p)}" for i, p in enumerate(pay)]
    return "payoffs " + ", ".join(parts) if parts else ""


def outcome_of(run: Mapping[str, Any], labels: Sequence[str]) -> str:
    """A game's outcome in a word or three: agreement or not where the game records it, else who won."""
    metrics = run["metrics"] if isinstance(run.get("metrics"), Mapping) else {}
    agreement = metrics.get("agreement")
    if isinstance(agreement, bool):
        return "agreement" if agreement else "no agreement"
    winners = [w for w in run.get("winners") or [] if isinstance(w, int) and 0 <= w < len(labels)]
    if not winners:
        return "no winner"
    if len(winners) > 1:
        return "tie"
    return f"won by {labels[winners[0]]}"


FILTER_JS = """
(function () {
  var box = document.currentScript.parentNode;
  var pair = box.querySelector('[name=pair]'), outcome = box.querySelector('[name=outcome]');
  var lo = box.querySelector('[name=min]'), hi = box.querySelector('[name=max]'), count = box.querySelector('.count');
  var games = Array.prototype.slice.call(box.querySelectorAll('details.game'));
  function apply() {
    var shown = 0, a = parseInt(lo.value || '0', 10), b = parseInt(hi.value || '1000000', 10);
    games.forEach(function (g) {
      var n = parseInt(g.getAttribute('data-moves'), 10);
      var ok = (!pair.value || g.getAttribute('data-pair') === pair.value) &&
               (!outcome.value || g.getAttribute('data-outcome') === outcome.value) && n >= a && n <= b;
      g.style.display = ok ? '' : 'none';
      shown += ok ? 1 : 0;
    });
    count.textContent = shown + ' of ' + games.length + ' games';
  }
  [pair, outcome, lo, hi].forEach(function (el) { el.addEventListener('input', apply); });
  apply();
})();
"""


def _options(name: str, label: str, values: Iterable[str]) -> str:
    opts = "".join(f"<option value='{_esc(v)}'>{_esc(v)}</option>" for v in values)
    return f"<label>{label} <select name='{name}'><option value=''>any</option>{opts}</select></label>"


class Collector(Base):
    """The scan's consumer for the conversations: per directory of a game that talks, its complete runs'
    count and the first ``max_runs`` in (lineup, session, run) order, kept in a heap while the log streams
    (the page shows a sample: a study of 500,000 games holds as many records here as one of 5,000)."""

    wants_decisions = True  # a reasoning model's thinking, folded under its moves, is in decisions.jsonl

    def __init__(self, max_runs: int = 50) -> None:
        self.max_runs = max_runs
        self.found: list[tuple[Dir, Game, int, list[dict[str, Any]]]] = []
        self.thoughts: dict[tuple[str, Any, Any], dict[tuple[Any, Any], tuple[str, bool, Any]]] = {}
        self._keys: set[tuple[str, Any, Any]] = set()  # the runs in the sample now

    def begin(self, d: Dir) -> bool:
        game = GAMES.get(d.exp.get("game", ""))
        if self.max_runs <= 0 or game is None or game.info.messages == "none" or not d.config:
            return False
        self.game, self.total, self.count = game, 0, 0
        self.heap: list[tuple[_Reversed, dict[str, Any]]] = []  # the runs kept so far, the last in order on top
        self.thoughts, self._keys = {}, set()
        return True

    def decision(self, d: Dir, rec: dict[str, Any]) -> None:
        """Keep the reasoning of the kept runs' decisions (the last attempt of a move wins, as on the page)."""
        if "reasoning" not in rec and "reasoning_hidden" not in rec:
            return
        # the sample as it stands: a reader that follows a run as it plays feeds a run's decisions right after
        # its record, not after every record (a run out of the sample now never enters it later; one that
        # leaves it takes its reasoning with it), so the sample's reasoning is the same either way
        key = (str(rec.get("lineup", "")), rec.get("session", 0), rec.get("run", 0))
        if key not in self._keys:
            return
        text = rec.get("reasoning")
        self.thoughts.setdefault(key, {})[(rec.get("round"), rec.get("player"))] = (
            text[:MAX_CHARS + 1] if isinstance(text, str) else "", rec.get("reasoning_hidden") is True,
            rec.get("reasoning_tokens"))

    def run(self, d: Dir, number: int, r: dict[str, Any]) -> None:
        if not (r.get("complete", True) and r.get("round_log")):
            return
        self.total += 1
        self.count += 1
        key = (str(r.get("lineup", "")), r.get("session", 0), r.get("run", 0))
        item = (_Reversed(key, -self.count), r)  # the largest key on top, ties: the later line first out
        if len(self.heap) < self.max_runs:
            heapq.heappush(self.heap, item)
            self._keys.add(key)
        elif item[0] > self.heap[0][0]:
            out = heapq.heapreplace(self.heap, item)[0].key
            self._keys.discard(out)
            self.thoughts.pop(out, None)
            self._keys.add(key)

    def end(self, d: Dir) -> None:
        if self.total:
            self.found.append((d, self.game, self.total, self._chosen()))
        self.heap = []

    def _chosen(self) -> list[dict[str, Any]]:
        """The runs shown, largest key first, each with its moves' reasoning where the decisions held any."""
        runs = [r for _, r in sorted(self.heap, key=lambda x: x[0], reverse=True)]
        for r in runs:
            found = self.thoughts.get((str(r.get("lineup", "")), r.get("session", 0), r.get("run", 0)))
            if found:
                r["_reasoning"] = found
        return runs

    # ------------------------------------------------------ the columnar copy (analysis/columnar.py)

    copy_name = "transcripts"

    @property
    def copy_version(self) -> str:
        return f"2:{self.max_runs}"  # the sample kept depends on its size; 2: with reasoning

    def save(self, d: Dir, copy: Any) -> None:
        """The count and the sample of games shown, as their JSON (a record no JSON holds: no copy)."""
        import orjson
        import pyarrow as pa

        try:
            texts = [orjson.dumps(r).decode("utf-8") for r in self._chosen()]
        except (TypeError, ValueError):
            return
        copy.put(self.copy_name, self.copy_version, {"runs": pa.table({"record": pa.array(texts, pa.string())})},
                 {"total": self.total})

    def restore(self, d: Dir, copy: Any) -> None:
        import orjson

        total = int(copy.info(self.copy_name)["total"])
        if total:
            texts = copy.table(self.copy_name, "runs").column("record").to_pylist()
            self.found.append((d, self.game, total, [orjson.loads(x) for x in texts]))


class _Reversed:
    """A run's sort key, ordered backwards, so that the heap's top is the largest key kept."""

    __slots__ = ("key", "line")

    def __init__(self, key: tuple[str, int, int], line: int) -> None:
        self.key, self.line = key, line

    def __lt__(self, other: _Reversed) -> bool:
        return (self.key, -self.line) > (other.key, -other.line)

    def __gt__(self, other: _Reversed) -> bool:
        return other.__lt__(self)


def conversations_section(run_dirs: Iterable[str | Path], max_runs: int = 50,
                          collected: Collector | None = None) -> str | None:
    """Every directory's games that talk (up to ``max_runs`` each, and :data:`BUDGET` characters in all),
    each a collapsible chat with its pair, outcome and length; a filter over those three. None when no
    directory holds such a game. ``collected``: the report's scan already gathered them."""
    if collected is None:
        from .scan import scan

        collected = Collector(max_runs)
        scan([Path(d) for d in run_dirs], [collected])
    blocks: list[str] = []
    pairs: set[str] = set()
    outcomes: set[str] = set()
    size, left_out, total, first = 0, 0, 0, True
    for d, game, count, runs in collected.found:
        cfg, exp = d.config, d.exp
        total += count
        n = len(runs[0].get("labels") or []) or 2
        secret = secret_fields(game, cfg.get("game"), n)
        for run in runs[:max_runs]:
            labels = [str(x) for x in run.get("labels") or []]
            pair, outcome, moves = " vs ".join(labels), outcome_of(run, labels), len(run["round_log"])
            chat = transcript_html(run["round_log"], labels, secret, run.get("_reasoning"))
            if size + len(chat) > BUDGET:
                left_out += 1
                continue
            size += len(chat)
            pairs.add(pair)
            outcomes.add(outcome)
            head = (f"{exp.get('name', d.path.name)} ({game.info.title}): {pair}; {outcome}; {moves} move(s); "
                    f"table {run.get('lineup', '')}, session {run.get('session')}, run {run.get('run')}")
            end = f"<div class='end'>Outcome: {_esc(outcome)}; {_esc(_outcome(run, labels))}</div>"
            blocks.append(f"<details class='game'{' open' if first else ''} data-pair='{_esc(pair)}' "
                          f"data-outcome='{_esc(outcome)}' data-moves='{moves}'><summary>{_esc(head)}</summary>"
                          f"{chat}{end}</details>")
            first = False
    if not blocks:
        return None
    shown = len(blocks)
    more = total - shown
    intro = (f"<p>{shown} of {total} game(s) that talk, each a conversation: public messages and offers per "
             "turn, secret notes (<span style='color:#8a1f50'>marked</span>) that the opponent never saw, and the "
             "outcome. Find games by model pair, outcome and length.")
    if more:
        why = f" ({left_out} over the page budget)" if left_out else ""
        intro += (f" {more} more{why} are in the run directories' <code>runs.jsonl</code>; "
                  "<code>econarena report --transcripts N</code> includes up to N per directory.")
    pick = ("<div class='pick'>" + _options("pair", "pair", sorted(pairs)) + _options("outcome", "outcome",
            sorted(outcomes)) + "<label>moves from <input name='min' type='number' min='0' style='width:4em'>"
            "</label><label>to <input name='max' type='number' min='0' style='width:4em'></label>"
            "<span class='count'></span></div>")
    return (f"<style>{CSS}</style><div class='games'>" + intro + "</p>" + pick + "\n".join(blocks)
            + f"<script>{FILTER_JS}</script></div>")


def transcripts_section(run_dirs: Iterable[str | Path], max_runs: int = 3) -> str | None:
    """The conversations of up to ``max_runs`` games per directory (kept for callers of the old name)."""
    return conversations_section(run_dirs, max_runs)
