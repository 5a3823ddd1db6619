"""Reading NegotiationArena's released ``game_state.json`` logs: trades, the recorded outcome, the causes.

Why a module of its own: the released logs are the study's record, and our replay of them is a check,
not the outcome. This module reads what the log itself says (pure: parsed JSON in, no I/O) and names what
can make our rules disagree with it; ``common.py`` replays the moves.

The authors' engine (branch ``paper_experiment_code``; spec section 2 and /work notes on fidelity):
- a trade is stored as ``{"_type": "trade", "_value": {side: resources, side: resources}}``; its sides are
  executed by POSITION (the first is what RED gives), both sides at once and netted per resource, with no
  check that anybody holds what it gives and with resource names kept as written (``Z``, ``Any``);
- the END entry's ``summary`` records ``initial_resources``, ``final_resources`` (the executed holdings, or
  the initial ones when the last answer was not exactly ``ACCEPT``), ``final_response`` and
  ``proposed_trade``; the authors' figures are computed from final - initial.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import whole_number

Trade = dict[str, dict[str, int]]  # {"red_gives": {resource: n}, "blue_gives": {resource: n}}
SIDES = ("RED", "BLUE")

# cause code -> (kind, what it means); the order is the order in which a disagreement is attributed
CAUSES: dict[str, tuple[str, str]] = {
    "two_sided_transfer": ("rule difference", "the accepted trade has the responder give something too (e.g. BLUE "
                           "'gives' dollars it does not hold); NegotiationArena executes both sides netted, our "
                           "rules only the part the scenario trades"),
    "side_order_reversed": ("rule difference", "the trade lists BLUE's side first; NegotiationArena executes sides "
                            "by position, so the roles were swapped, ours reads them by name"),
    "nonstandard_side_key": ("parser difference", "a trade side is not named exactly RED or BLUE; NegotiationArena "
                             "executes it by position, ours matches the name"),
    "unknown_resource_accepted": ("malformed move", "the accepted trade names a resource nobody holds; "
                                  "NegotiationArena executed it as a new resource, our rules drop it"),
    "invalid_move": ("malformed move", "a move our rules refuse (a trade outside the game's bounds, such as a "
                     "negative gift or more than a player holds, or an acceptance of it); NegotiationArena executed "
                     "it, our replay reads it as a move that proposes or accepts nothing"),
    "answer_variant": ("parser difference", "an answer is ACCEPT or REJECT only after removing newlines or tabs; "
                       "NegotiationArena strips spaces only and compares exactly, ours strips all whitespace"),
    "unparsed_trade": ("parser difference", "a stored trade could not be read as one; our replay treats the move as "
                       "making no proposal"),
    "summary_ignores_trade": ("source inconsistency", "the summary says ACCEPT and its final holdings equal the "
                              "initial ones, but the accepted trade moves something: the summary contradicts "
                              "itself; final - initial is kept"),
    "zero_net_accept": ("metric definition", "an accepted trade that moves nothing on balance: a deal under our "
                        "rules, 'no deal' (0 / 0) under the paper's ultimatum payoff rule"),
    "outcome_mismatch": ("source inconsistency", "the summary's player_outcome disagrees with final - initial "
                         "resources; final - initial (what the authors' figures use) is kept"),
    "replay_error": ("parser difference", "our replay could not follow the moves (turn order, a move after the "
                     "game ended by our reading)"),
    "unknown_resource_proposed": ("malformed move", "a proposal names a resource nobody holds; our replay keeps "
                                  "only the resources of the game"),
    "unexplained": ("unexplained", "no known cause applies; read the log"),
}


def unwrap(obj: Any) -> Any:
    """The logs' custom encoding: ``{"_type": ..., "_value": ...}``, possibly nested."""
    while isinstance(obj, Mapping) and "_value" in obj:
        obj = obj["_value"]
    return obj


def log_resources(obj: Any, where: str = "resources", category: str = "bad_number") -> dict[str, int]:
    """A resource object as {name: whole number}; :class:`ForeignValue` for an amount that is not a whole
    number within the game's bounds (``2.5`` was read as 2, ``1e308`` overflowed the summary's sums)."""
    value = unwrap(obj)
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a resource object, got {str(obj)[:60]!r}")
    return {str(k): whole_number(v, f"{where}.{str(k)[:40]}", category) for k, v in value.items()}


_SIDE = re.compile(r"Player\s+(RED|BLUE)\s+Gives\s*(.*)", re.I | re.S)


def parse_trade_text(text: str) -> Trade | None:
    """Read the paper's tag syntax (``Player RED Gives X: 5 | Player BLUE Gives Y: 3``); None for ``NONE``.

    Raises ValueError on text that is neither, as the paper's parser did (it aborted the game)."""
    text = text.strip()
    if not text or text.upper() == "NONE":
        return None
    out: Trade = {"red_gives": {}, "blue_gives": {}}
    for part in text.split("|"):
        m = _SIDE.search(part)
        if m is None:
            raise ValueError(f"not a trade: {text[:80]!r}")
        gives = out[f"{m.group(1).lower()}_gives"]
        for item in m.group(2).split(","):
            if not item.strip():
                continue
            name, sep, amount = item.partition(":")
            if not sep:
                raise ValueError(f"not a 'resource: amount' pair: {item[:40]!r}")
            gives[name.strip()] = int(amount.strip())
    return out


def side_keys(obj: Any) -> list[str]:
    """The side names of a stored trade object, in stored order ([] for text or ``NONE``)."""
    value = unwrap(obj)
    return [str(k) for k in value] if isinstance(value, Mapping) else []


def _side_of(key: str) -> str | None:
    low = key.strip().lower()
    hits = [s for s in SIDES if s.lower() in low]
    return hits[0] if len(hits) == 1 else None


def read_trade(obj: Any) -> tuple[Trade | None, set[str]]:
    """A stored trade by OUR reading (sides by name, case-insensitively; by position only when a name says
    neither side), with the cause codes of what deviates from the standard form. Never raises on content:
    a trade that cannot be read is None with ``unparsed_trade``."""
    flags: set[str] = set()
    if obj is None:
        return None, flags
    if isinstance(obj, str):
        try:
            return parse_trade_text(obj), flags
        except ValueError:
            return None, {"unparsed_trade"}
    value = unwrap(obj)
    if not isinstance(value, Mapping):
        return None, {"unparsed_trade"}
    keys = [str(k) for k in value]
    if keys == ["BLUE", "RED"]:
        flags.add("side_order_reversed")
    elif sorted(keys) != sorted(SIDES):
        flags.add("nonstandard_side_key")
    sides: dict[str, Any] = {}
    for pos, (k, v) in enumerate(value.items()):
        name = _side_of(str(k)) or (SIDES[pos] if pos < 2 else None)
        if name is not None and name not in sides:
            sides[name] = v
    try:
        return {"red_gives": log_resources(sides.get("RED", {})),
                "blue_gives": log_resources(sides.get("BLUE", {}))}, flags
    except (ValueError, TypeError):
        return None, flags | {"unparsed_trade"}


def executed_by_position(obj: Any) -> Trade | None:
    """A stored trade as NegotiationArena's engine executes it: the first side is what RED gives."""
    value = unwrap(obj)
    if not isinstance(value, Mapping) or len(value) < 2:
        return None
    first, second = list(value.values())[:2]
    try:
        return {"red_gives": log_resources(first), "blue_gives": log_resources(second)}
    except (ValueError, TypeError):
        return None


def names_in(trade: Trade | None) -> set[str]:
    return set() if trade is None else set(trade["red_gives"]) | set(trade["blue_gives"])


def end_summary(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the log records as the game's end (None when there is no END entry with a summary: the game did
    not finish, and the authors' loader skips such logs too).

    ``initial``/``final``: holdings per seat (RED first, every key kept); ``delta``: final - initial per
    resource; ``accepted``: the last answer was exactly ``ACCEPT``; ``trade``: the summary's last proposed
    trade as stored (key order kept), or None."""
    states = raw.get("game_state")
    end = states[-1] if isinstance(states, list) and states else None
    if not isinstance(end, Mapping) or end.get("current_iteration") != "END" or not isinstance(end.get("summary"),
                                                                                                Mapping):
        return None
    s = end["summary"]
    missing = [k for k in ("initial_resources", "final_resources") if not isinstance(s.get(k), list)]
    if missing:
        raise ValueError(f"the END summary has no {' or '.join(missing)} list")
    init = [log_resources(x, f"END summary initial_resources[{i}]") for i, x in enumerate(s["initial_resources"])]
    final = [log_resources(x, f"END summary final_resources[{i}]") for i, x in enumerate(s["final_resources"])]
    if len(init) != 2 or len(final) != 2:
        raise ValueError("the summary must record the resources of two players")
    delta = [{k: final[i].get(k, 0) - init[i].get(k, 0) for k in sorted(set(init[i]) | set(final[i]))}
             for i in (0, 1)]
    trade = s.get("proposed_trade")
    outcome = s.get("player_outcome")
    return {"initial": init, "final": final, "delta": delta, "final_response": str(s.get("final_response")),
            "accepted": s.get("final_response") == "ACCEPT",
            "trade": None if trade is None or isinstance(trade, str) else trade,
            "player_outcome": [unwrap(x) for x in outcome] if isinstance(outcome, list) else None}


def answer_differs(stored: Any) -> bool:
    """Whether our reading of an answer (all whitespace stripped) is ACCEPT / REJECT and the engine's (spaces
    stripped, then compared exactly) is not."""
    text = str(stored)
    return text.strip() in ("ACCEPT", "REJECT") and text.strip(" ") != text.strip()


def primary(causes: Sequence[str]) -> str:
    """The cause a disagreement is attributed to: the first present in the order of :data:`CAUSES`."""
    for c in CAUSES:
        if c in causes and c != "unknown_resource_proposed":
            return c
    return "unexplained"
