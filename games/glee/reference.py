"""Reading GLEE's released games (``Data/<kind>/<family>/?/?/?/<id>/``): what the three families share.

Why a module of its own: the released ``game.csv`` files vary (column order follows each model's JSON
keys, extra keys become extra columns, human games write the literal strings ``None`` and ``nan`` for
empty cells, messages hold raw newlines) and the ``config.json`` files come in three versions (deltas in
the player or the game arguments; "infinite" horizons written 25, 30 or 99). Each family's
``from_reference`` reads its rows with these helpers; pure: the importer parses the files and passes

    {"config": <config.json as parsed JSON>, "rows": [{column: text, ...} per game.csv row, in order],
     "human": <whether a person played one seat>}

and, for model players, ``"messages"``: each seat's chat rebuilt from ``log_player_<i>.csv`` (or None).

The outcome of record is GLEE's own reading of its rows (``analyze/configs.py``): the last row's decision
ends the game, an accepted offer is the row before it, the rounds played are the last row's round. The
replay of the same rows through our rules is the check beside it (``ReplayCheck``). ``recorded`` holds
``finished`` (the last row answers: a game that stopped after a proposal is not a finished game),
``payoff`` and ``winners`` (money, as our Outcome), ``metrics`` (the paper's definitions) and
``metrics_code`` (the released code's), ``setup`` (setup values the record fixes, e.g. the first quality),
and what GLEE's tables keep (rounds, the deal, the final price; ``max_rounds_raw``: the config's horizon).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..base import ForeignValue, ReplayCheck, game_number, whole_number
from .common import ANNOUNCED_MAX, NAMES

NULLS = frozenset({"", "None", "nan", "NaN", "NULL", "null"})  # empty cells as the released files write them

# cause code -> (kind, what it means); a disagreement is attributed to the first one present, in this order
CAUSES: dict[str, tuple[str, str]] = {
    "turn_order": ("source inconsistency", "a row is not the move our rules expect next (the other player, or "
                   "another round)"),
    "move_after_end": ("rule difference", "rows follow the move that ends the game by our rules"),
    "unreadable_move": ("parser difference", "a row has no usable offer, price or decision for our rules (GLEE's "
                        "reading keeps it); our replay counts it as a rule break"),
    "unknown_decision": ("parser difference", "a decision GLEE's code accepted but that is none of ours"),
    "ended_before_horizon": ("source inconsistency", "the last row rejects before the configured last round: the "
                             "harness stopped earlier than its config says (GLEE's 'infinite' runs were capped at 25 "
                             "rounds while some configs say 99)"),
    "offer_not_dividing_money": ("malformed move", "an offer's two gains do not add up to the money, or one is "
                                 "negative (GLEE checked this for models only; our rules refuse it, so our replay "
                                 "stops there)"),
    "invalid_move": ("malformed move", "a move our rules refuse (an offer or a price outside the game's bounds); our "
                     "replay stops there"),
    "outside_option_swapped": ("malformed move", "the seller bought from John or the buyer sold to him; GLEE ends "
                               "the game without a trade either way, and so do we"),
    "rounds_short": ("source inconsistency", "fewer rounds than the configured total"),
    "glee_cleaning_drop": ("metric definition", "GLEE's analysis drops this game (more messages than decisions, "
                           "or more decisions than rounds)"),
    "unexplained": ("unexplained", "no known cause applies; read the rows"),
}
INFO_ONLY = frozenset({"outside_option_swapped", "glee_cleaning_drop", "ended_before_horizon", "rounds_short"})


def cell(row: Mapping[str, Any], key: str) -> str | None:
    """A number or decision cell as text; None for an empty cell in any spelling the files use."""
    v = row.get(key)
    if v is None:
        return None
    text = str(v).strip()
    return None if text in NULLS else text


def message(row: Mapping[str, Any], human: bool) -> str | None:
    """A free-text message kept byte for byte; empty is None, and in human games also ``None``/``nan`` (a
    model could legitimately write "None")."""
    v = row.get("message")
    if v is None:
        return None
    text = str(v)
    return None if text == "" or (human and text.strip() in NULLS) else text


def number(row: Mapping[str, Any], key: str) -> float | None:
    """A money cell: ``60.0``, ``60``, ``$1,000``; None when empty or not a number. A number that is not
    finite (``inf``, ``1e400``) is :class:`ForeignValue` ``bad_number``: read as no number, an accepted offer
    of ``1e400`` made GLEE's reading a game without a deal (payoffs 0 and 0)."""
    text = cell(row, key)
    if text is None:
        return None
    try:
        x = float(text.replace("$", "").replace(",", "").strip())
    except ValueError:
        return None
    if not math.isfinite(x):
        raise ForeignValue("bad_number", f"game.csv column {key}: {text[:40]!r} is not a finite number")
    return x


def as_bool(v: Any, key: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise ValueError(f"config.json game_args.{key}: expected true or false, got {v!r}")


def game_args(config: Mapping[str, Any]) -> Mapping[str, Any]:
    args = config.get("game_args")
    if not isinstance(args, Mapping):
        raise ValueError("config.json: 'game_args' must be an object")
    return args


def arg(config: Mapping[str, Any], key: str, default: Any = ...) -> Any:
    args = game_args(config)
    if key in args and args[key] is not None:
        return args[key]
    if default is ...:
        raise ValueError(f"config.json: game_args has no {key!r}")
    return default


def number_arg(config: Mapping[str, Any], key: str, default: Any = ...) -> float:
    """A numeric game argument (``60``, ``60.0``, ``"60"``): a finite number within the games' bounds, else
    :class:`ForeignValue` ``bad_parameter`` naming the key (``true`` was read as 1, ``"nan"`` as NaN)."""
    return game_number(arg(config, key, default), f"config.json game_args.{key}", "bad_parameter")


def whole_arg(config: Mapping[str, Any], key: str, default: Any = ...) -> int:
    """A whole-number game argument (a horizon): ``2.5`` is refused, never read as 2."""
    return whole_number(arg(config, key, default), f"config.json game_args.{key}")


def delta(config: Mapping[str, Any], seat: int) -> float:
    """A bargaining delta where any config version keeps it: ``game_args.delta_<i>``, else
    ``player_<i>_args.delta``. A config with neither is refused (``bad_parameter``): GLEE's newest game code
    plays such a game undiscounted, but every released config records its deltas, so a missing one is a
    damaged file, and reading it as 1 changed every payoff and metric of the game without a word."""
    v = game_args(config).get(f"delta_{seat + 1}")
    where = f"config.json game_args.delta_{seat + 1}"
    if v is None:
        p = config.get(f"player_{seat + 1}_args")
        v = p.get("delta") if isinstance(p, Mapping) else None
        where = f"config.json player_{seat + 1}_args.delta"
    if v is None:
        raise ForeignValue("bad_parameter", f"config.json has no delta for {NAMES[seat]} (game_args.delta_{seat + 1} "
                                            f"or player_{seat + 1}_args.delta)")
    return game_number(v, where, "bad_parameter")


def final_decision(rows: Sequence[Mapping[str, Any]], known: Sequence[str]) -> str | None:
    """The last row's decision, which GLEE's reading takes as the game's end (None: the row has none, the game
    did not finish). A decision that is none of the family's (a file cut mid-word: ``accept`` -> ``ac``,
    ``AcceptOffer`` -> ``Accep``) is :class:`ForeignValue` ``bad_move``: GLEE's code read it as "no deal"
    and so did our replay, so the cut file was imported as a finished game that agreed."""
    d = cell(rows[-1], "decision") if rows else None
    if d is not None and d not in known:
        raise ForeignValue("bad_move", f"game.csv row {len(rows) + 1}: the last decision {d[:40]!r} is none of "
                                       f"{', '.join(known)}: the game's end cannot be read (a cut file?)")
    return d


def public_names(config: Mapping[str, Any]) -> tuple[str, str]:
    out = []
    for seat in (0, 1):
        p = config.get(f"player_{seat + 1}_args")
        name = p.get("public_name") if isinstance(p, Mapping) else None
        out.append(str(name) if name else NAMES[seat])
    return out[0], out[1]


def seat_of(player: str | None, names: Sequence[str]) -> int | None:
    """The seat a row's ``player`` names (``the buyer`` is the myopic persuasion buyer); None for Nature."""
    if player is None:
        return None
    p = player.strip()
    if p == names[0]:
        return 0
    if p in (names[1], "the buyer"):
        return 1
    return None


def horizon(raw_max: int, infinite: int) -> int:
    """The grid level of a horizon: GLEE's analysis reads any max_rounds above 20 as infinite
    (``fix_infinity``); here that is the family's own "infinite" value."""
    return raw_max if raw_max <= ANNOUNCED_MAX else infinite


def last_round(rows: Sequence[Mapping[str, Any]]) -> int:
    """The rounds played: the last row's round, a whole number from 1 (GLEE's reading discounts by it, so a
    round that is not one, such as ``one`` or ``-3``, leaves the game without a reading)."""
    r = cell(rows[-1], "round") if rows else None
    try:
        x = float(r) if r is not None else math.nan
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x >= 1 and x.is_integer()):
        raise ValueError(f"game.csv: the last row's round is {r!r}, expected a whole number from 1")
    return int(x)


def row_round(row: Mapping[str, Any]) -> int | None:
    r = cell(row, "round")
    try:
        return int(float(r)) if r is not None else None
    except ValueError:
        return None


# a row's move in our terms: (the action, or None where the row is unreadable; why our rules refuse it, or None)
Move = Callable[[Mapping[str, Any], Any, int], tuple["dict[str, Any] | None", "str | None"]]


def replay_turns(game: Any, state: Any, rows: Sequence[Mapping[str, Any]], names: Sequence[str], causes: set[str],
                 offer: Move, decide: Move) -> tuple[Any, list[dict[str, Any]], str | None]:
    """Our replay of a game of alternating offers and decisions, one row a move (bargaining, negotiation):
    the state it reached, the log, and where it stopped (None when every row was played). A row out of turn
    or after the end stops it with its cause added to ``causes``; ``offer`` and ``decide`` read a row's move
    in the offer and the decision phase."""
    log: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        where = f"row {i + 2} (round {cell(row, 'round')}, {cell(row, 'player')})"
        if not game.to_move(state):
            causes.add("move_after_end")
            return state, log, f"{where}: a move after the game ended"
        seat = seat_of(cell(row, "player"), names)
        if seat != game.to_move(state)[0] or row_round(row) != state.round:
            causes.add("turn_order")
            return state, log, f"{where}: expected {NAMES[game.to_move(state)[0]]} in round {state.round}"
        assert seat is not None  # the player to move is a seat
        action, refused = (offer if state.phase == "offer" else decide)(row, state, seat)
        if refused is not None:
            return state, log, f"{where}: {refused}"
        after = game.apply(state, {seat: action})
        log.append({"round": len(log), "actions": [action if j == seat else None for j in (0, 1)],
                    "events": game.events(state, after, {seat: action})})
        state = after
    return state, log, None


def verdict(recorded: Mapping[str, Any], replayed: Mapping[str, Any] | None, keys: Sequence[str],
            causes: set[str], error: str | None) -> ReplayCheck:
    """Compare the outcome keys of GLEE's reading and our replay; attribute a disagreement to a cause."""
    rec = {k: recorded.get(k) for k in keys}
    rep = None if replayed is None else {k: replayed.get(k) for k in keys}
    agree = rep is not None and all(_same(rec[k], rep[k]) for k in keys)
    order = [c for c in CAUSES if c in causes]
    if agree:
        return ReplayCheck(True, rec, rep, tuple(order))
    first = next((c for c in order if c not in INFO_ONLY), None) or next(iter(order), "unexplained")
    order = [first] + [c for c in order if c != first]
    detail = f"GLEE's reading {rec}, our replay {rep if rep is not None else 'stopped'}" + (
        f" ({error})" if error else "") + f": {CAUSES[first][1]}"
    return ReplayCheck(False, rec, rep, tuple(order), CAUSES[first][0], detail)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)
