"""Reading GAMA-Bench's released result files into a repeated game's round log (shared by its games).

A result file is ``{"meta": {...}, "round_records": [...], "player_data": [{"records": [...], ...}]}``.
Player order survives only in ``player_data[i].records`` (some games shuffle ``round_records.responses``
in place), so choices are always read from there. The imported rounds are replayed through the game's own
``apply``/``events`` so imported and native runs carry the same events and are scored by the same code;
``apply`` never judges, so every imported number first passes the game's own judge, as a reply played here
would: a value the reference's parser could not have stored (NaN, text, 33.5 where it stored ``int(...)``)
refuses the file (:class:`ForeignValue` ``bad_move``); a number the reference took but our rules forbid
(it checked no bounds: a guess of 101, 25 tokens of 20) is scored as the reference scored it and the run is
a named disagreement (``answer_outside_our_rules``), never an agreeing one. Labels are scored as the
reference's parser read them (see :func:`judged`); numbers beyond 1e12 are refused by the importer.
Pure: takes the parsed JSON, does no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base import (
    RULE_VIOLATION,
    ForeignValue,
    GameParams,
    ImportedRun,
    ReplayCheck,
    Setup,
    foreign_move_problem,
    whole_number,
)
from ..repeated import RepeatedGame


def _table(raw: Mapping[str, Any], key: str, kind: type) -> Any:
    value = raw.get(key) if isinstance(raw, Mapping) else None
    if not isinstance(value, kind):
        raise ValueError(f"reference result: {key!r} must be a JSON {'object' if kind is dict else 'list'}")
    return value


def reference_meta(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The file's ``meta`` table (the game's parameters as the reference ran it)."""
    return _table(raw, "meta", dict)


def reference_choices(raw: Mapping[str, Any], convert: Callable[[Any], Any] = lambda v: v
                      ) -> tuple[int, list[list[Any]]]:
    """(number of players, per round the choice of each seat) read from ``player_data[i].records``.

    The number of rounds is ``len(round_records)`` (``meta.round_id`` counts the same completed rounds).
    """
    rounds = len(_table(raw, "round_records", list))
    players = _table(raw, "player_data", list)
    if not players:
        raise ValueError("reference result: 'player_data' is empty")
    per_seat = []
    for i, p in enumerate(players):
        records = p.get("records") if isinstance(p, dict) else None
        if not isinstance(records, list) or len(records) < rounds:
            raise ValueError(f"reference result: player_data[{i}].records must list one answer for each of the "
                             f"{rounds} rounds")
        per_seat.append([convert(v) for v in records[:rounds]])
    n = len(players)
    declared = reference_meta(raw).get("player_num", n)
    if declared != n:
        raise ValueError(f"reference result: meta.player_num is {declared!r} but player_data has {n} players")
    return n, [[per_seat[i][r] for i in range(n)] for r in range(rounds)]


def reference_messages(raw: Mapping[str, Any]) -> list[list[dict[str, Any]]] | None:
    """Each seat's stored chat as ``{"role", "content"}`` messages (Gemini's ``parts`` joined)."""
    out = []
    for p in _table(raw, "player_data", list):
        prompt = p.get("prompt") if isinstance(p, dict) else None
        if not isinstance(prompt, list):
            return None
        chat = []
        for m in prompt:
            if not isinstance(m, dict):
                continue
            renamed: dict[Any, Any] = {"model": "assistant"}  # any JSON value may stand in "role"
            role = renamed.get(m.get("role"), m.get("role"))
            if "content" in m:
                content = m["content"]
            else:
                content = "\n".join(x.get("text", "") if isinstance(x, dict) else str(x) for x in m.get("parts", []))
            chat.append({"role": role, "content": content})
        out.append(chat)
    return out


def round_check(raw: Mapping[str, Any], round_log: Sequence[Mapping[str, Any]],
                totals: Sequence[tuple[str, str]]) -> ReplayCheck | None:
    """The reference's per-round totals against our replay's round events: for each (``round_records`` key,
    event key) pair, every round where both are numbers must agree (to 1e-6, relative). None when nothing
    could be compared. A disagreeing round where one of our seats has no usable answer is a parser
    difference (the reference read an answer we could not); otherwise it is unexplained."""
    records = raw.get("round_records")
    if not isinstance(records, list) or not totals:
        return None
    recorded: dict[str, list[Any]] = {k: [] for k, _ in totals}
    replayed: dict[str, list[Any]] = {k: [] for k, _ in totals}
    compared = 0
    bad: list[str] = []
    unreadable = False
    for r, (rec, entry) in enumerate(zip(records, round_log)):
        ev = entry.get("events") or {}
        for ref_key, our_key in totals:
            theirs = rec.get(ref_key) if isinstance(rec, Mapping) else None
            ours = ev.get(our_key)
            recorded[ref_key].append(theirs)
            replayed[ref_key].append(ours)
            if isinstance(theirs, bool) or not isinstance(theirs, (int, float)):
                continue
            compared += 1
            if isinstance(ours, bool) or not isinstance(ours, (int, float)) or not math.isclose(
                    float(theirs), float(ours), rel_tol=1e-6, abs_tol=1e-9):
                bad.append(f"round {r + 1} {ref_key}: recorded {theirs}, ours {ours}")
                unreadable = unreadable or any(a is None for a in entry.get("actions") or [])
    if not compared:
        return None
    if not bad:
        return ReplayCheck(True, recorded, replayed)
    cause = "unreadable_answer" if unreadable else "round_total_differs"
    kind = "parser difference" if unreadable else "unexplained"
    return ReplayCheck(False, recorded, replayed, (cause,), kind, "; ".join(bad[:3]) + (
        f"; and {len(bad) - 3} more" if len(bad) > 3 else ""))


def replay(game: RepeatedGame, params: GameParams, n_players: int, choices: Sequence[Sequence[Any]],
           raw: Mapping[str, Any], totals: Sequence[tuple[str, str]] = ()) -> ImportedRun:
    """Play the imported choices through the game's rules: round log (Host shape), payoffs, chats, and the
    check of the reference's per-round ``totals`` against ours (see :func:`round_check`)."""
    setup: Setup = game.setup(params, n_players, np.random.default_rng(0))
    state = game.initial_state(setup)
    log = []
    problems: list[str] = []
    for r, row in enumerate(choices):
        actions = {i: None if v is None else {game.action_key: v} for i, v in enumerate(row)}
        problems += judged(game, state, actions, r)
        after = game.apply(state, actions)
        log.append({"round": r, "actions": [actions[i] for i in range(n_players)],
                    "events": game.events(state, after, actions)})
        state = after
    return ImportedRun(params=params.model_dump(), n_players=n_players, round_log=log,
                       payoffs=list(game.outcome(state).payoffs), messages=reference_messages(raw),
                       check=outside_rules(round_check(raw, log, totals), problems))


def player_count(raw: Mapping[str, Any]) -> int:
    """``meta.player_num``, which must be the number of ``player_data`` entries (a file claiming 10**9
    players made the battle royale build a list of 10**9 hit rates)."""
    players = _table(raw, "player_data", list)
    n = whole_number(reference_meta(raw).get("player_num", len(players)), "meta.player_num")
    if n != len(players):
        raise ForeignValue("bad_parameter", f"meta.player_num is {n} but player_data has {len(players)} players")
    return n


OUTSIDE_RULES = "answer_outside_our_rules"


def judged(game: Any, state: Any, actions: Mapping[int, Mapping[str, Any] | None], r: int) -> list[str]:
    """Every numeric answer of round ``r`` through the game's own judge at ``state``. One the reference's
    parser could not have written (not a whole number where it stored ``int(...)``) is :class:`ForeignValue`
    (``bad_move``); one our rules forbid but the reference took (a guess above the maximum, more tokens than
    one holds: the reference checked no bounds) is returned as a line for :func:`outside_rules`, so the run is
    scored as the reference scored it and listed as a disagreement. A label (a ``choice`` answer) is left to
    the scoring, which reads it as the reference's parser did (the spec's Mixtral labels such as ``chea``)."""
    problems = []
    for i, action in sorted(actions.items()):
        if action is None or all(f.kind == "choice" for f in game.action_spec(state, i).fields):
            continue
        problem = foreign_move_problem(game, state, i, action)
        if problem is None:
            continue
        if problem[0] != RULE_VIOLATION:
            raise ForeignValue("bad_move", f"round {r + 1}, player {i}: {problem[1]}")
        problems.append(f"round {r + 1}, player {i}: {problem[1]}")
    return problems


def outside_rules(check: ReplayCheck | None, problems: Sequence[str]) -> ReplayCheck | None:
    """The replay check of a run whose answers include ones our rules forbid: a disagreement (rule
    difference) whatever the round totals say, naming the first answers; ``check`` unchanged without any."""
    if not problems:
        return check
    detail = (f"the reference took {len(problems)} answer(s) our rules refuse: " + "; ".join(problems[:3])
              + (f"; and {len(problems) - 3} more" if len(problems) > 3 else ""))
    if check is not None and check.detail:
        detail += f"; {check.detail}"
    causes = (OUTSIDE_RULES, *(c for c in (check.causes if check is not None else ()) if c != OUTSIDE_RULES))
    return ReplayCheck(False, check.recorded if check is not None else None,
                       check.replayed if check is not None else None, causes, "rule difference", detail)


def as_int(value: Any) -> int:
    """A recorded whole-number answer (the reference stored ints; a numeric string is read too)."""
    return whole_number(value, "reference result: an answer", "bad_move")


def as_label(value: Any) -> str:
    """A recorded text answer, lower-cased as the reference stored it."""
    if not isinstance(value, str):
        raise ValueError(f"reference result: expected a text answer, got {value!r}")
    return value.lower()
