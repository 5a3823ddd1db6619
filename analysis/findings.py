"""Numbers that read themselves: the sentences that open ``summary``, ``report`` and the bench scorecard.

Pure functions from the tables already computed (the report's long metric table, ``metrics.csv``: one row
per setting, label and metric with its 95% interval; or a run directory's summary, which has no
intervals), so each sentence can be tested against numbers worked out by hand. A sentence states a finding
and its uncertainty in words: who is closest to the equilibrium, who breaks rules, what a payoff ratio
above 1 or a 0 means in that setting, and whether a difference is clear of the noise.

"Clear of the noise" is said only when the two 95% bootstrap intervals do not overlap, a conservative
test (two overlapping intervals can still differ; the report's comparisons give the tests proper).

A ``[grid]`` cell is a setting of its own: players are ranked within a cell, never across cells, and a
player's cells are compared in one sentence of their own (``across_sentences``), in the order the rows
give them (the caller's natural order). Where bidding one's value is dominant (second-price and English
auctions), closeness to the equilibrium is read from ``bid_deviation``, the bid's own distance from the
value: the paper's asset deviation leaves a losing underbid at 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

EQUILIBRIUM_TOLERANCE = 0.05  # a mean deviation within this of 0 is "played the equilibrium" (formats/tally.py's)
SETTING_KEYS = ("run_dir", "experiment", "game", "environment", "history", "prompt", "group", "cell")
BID = "bid_deviation"  # |bid - value| / value, where bidding one's value is dominant (tables.py's metric)
KINDS = {"parse_error_pct": "unreadable replies (parse errors)", "schema_error_pct": "replies of the wrong shape",
         "rule_violation_pct": "moves the rules forbid"}
ENVIRONMENTS = {"melee": "a melee", "rational": "a table of rational agents", "self": "a table of its own copies"}
ANY_TABLE = "a table"
INVALID = "violations_per_decision_pct"  # % of decisions unusable by the model's own fault (tables.py's metric)
CUT = "truncated_pct"  # % of decisions cut at max_tokens before a usable answer (tables.py's metric)


@dataclass(frozen=True)
class Value:
    """One metric of one label: the value, its 95% interval (None: not computed) and the player-runs."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int = 0

    def shown(self, digits: int = 2, pct: bool = False) -> str:
        unit = "%" if pct else ""
        text = f"{self.value:.{digits}f}{unit}"
        if self.low is not None and self.high is not None:
            text += f" [{self.low:.{digits}f}, {self.high:.{digits}f}]"
        return text


@dataclass
class Setting:
    """The labels of one experiment setting and their metrics."""

    title: str
    environment: str = ""
    sessions: int = 0
    labels: dict[str, dict[str, Value]] = field(default_factory=dict)
    cell: str = ""  # the [grid] cell ("" without a grid)
    place: str = ""  # what the cells of one grid share (the setting without its cell)
    baselines: set[str] = field(default_factory=set)  # labels played by a fixed rule (no setting of their own)
    pooled: dict[str, list[str]] = field(default_factory=dict)  # a baseline's label -> [grid.llm] factors pooled

    def metric(self, name: str) -> dict[str, Value]:
        return {label: m[name] for label, m in self.labels.items() if name in m}


def _num(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def settings_from_table(rows: Iterable[Mapping[str, Any]]) -> list[Setting]:
    """Settings from the long metric table (``metrics.csv`` rows, or the DataFrame's records)."""
    out: dict[tuple[Any, ...], Setting] = {}
    for r in rows:
        value = _num(r.get("value"))
        if value is None:
            continue
        key = tuple(str(r.get(k) or "") for k in SETTING_KEYS)
        if key not in out:
            parts = [str(r.get("experiment") or r.get("run_dir") or "")]
            env = str(r.get("environment") or "")
            if r.get("history") not in (None, "", "none"):
                parts.append(f"history {r['history']}")
            cell = str(r.get("cell") or "")
            title = " / ".join(p for p in parts if p) + (f" [{cell}]" if cell else "")
            out[key] = Setting(title, env, cell=cell, place="\x1f".join(key[:-1]))
        s = out[key]
        if r.get("baseline"):
            s.baselines.add(str(r["label"]))
        sessions = _num(r.get("sessions"))
        if sessions is not None:
            s.sessions = max(s.sessions, int(sessions))
        n = _num(r.get("n"))
        s.labels.setdefault(str(r["label"]), {})[str(r["metric"])] = Value(
            value, _num(r.get("ci_low")), _num(r.get("ci_high")), int(n) if n is not None else 0)
    return list(out.values())


def setting_from_summary(summary: Mapping[str, Any], title: str = "") -> Setting:
    """A setting from one run directory's summary (``summary.json``): values without intervals."""
    s = Setting(title or str(summary.get("run_dir", "")))
    for label, v in summary.get("labels", {}).items():
        n = int(v.get("player_runs") or 0)
        metrics = {}
        for key in ("payoff_ratio", "mean_deviation", BID, "rule_break_rate_pct", "win_rate", "score"):
            x = _num(v.get(key))
            if x is not None:
                metrics[key] = Value(x, n=n)
        counts = v.get("violations") or {}
        total = sum(int(counts.get(k, 0)) for k in ("parse_error", "schema_error", "rule_violation"))
        decisions = int(v.get("decisions") or 0)
        if decisions:  # what share of the replies could be used at all (usable_sentences)
            metrics[INVALID] = Value(100 * total / decisions, n=decisions)
            metrics[CUT] = Value(100 * int(v.get("truncated_replies") or 0) / decisions, n=decisions)
        for k in ("parse_error", "schema_error", "rule_violation"):
            if total:
                metrics[f"{k}_pct"] = Value(100 * int(counts.get(k, 0)) / total, n=n)
        s.labels[str(label)] = metrics
        over = v.get("pooled_over")
        if isinstance(over, list) and over:  # a baseline's runs of several [grid.llm] cells (formats/tally.py)
            s.pooled[str(label)] = [str(x) for x in over]
    return s


def _apart(a: Value, b: Value) -> bool | None:
    """Whether a lies below b with non-overlapping intervals; None when either has no interval."""
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return None
    return a.high < b.low


MAX_NAMED = 4  # a sentence names at most this many players (a [grid] has a label per cell)


def _names(labels: list[str]) -> str:
    if len(labels) > MAX_NAMED:
        return ", ".join(labels[:MAX_NAMED - 1]) + f" and {len(labels) - MAX_NAMED + 1} more"
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def split_cells(s: Setting) -> list[Setting]:
    """A summary's setting, whose labels carry their cell (``level_k [ratio=0.5]``), as one setting per
    cell (in the order the labels come), so that no sentence ranks players of different cells. The
    baselines pooled over [grid.llm] cells (``Setting.pooled``) are a setting of their own: their numbers
    are of every such cell at once."""
    out: dict[tuple[str, bool], Setting] = {}
    for label, m in s.labels.items():
        name, cell = label, ""
        if label.endswith("]") and " [" in label:
            name, cell = label[:label.index(" [")], label[label.index(" [") + 2:-1]
        pooled = label in s.pooled
        part = out.get((cell, pooled))
        if part is None:
            part = out[(cell, pooled)] = Setting(s.title + (f" [{cell}]" if cell else ""), s.environment,
                                                 s.sessions, cell=cell, place=s.title)
        part.labels[name] = m
        if pooled:
            part.baselines.add(name)
            part.pooled[name] = s.pooled[label]
    return list(out.values())


def cell_tag(s: Setting) -> str:
    """How a sentence names its setting's cell: ``[ratio=0.5]``; ``[ratio=0.5; pooled over reasoning_effort]``
    for baselines pooled over [grid.llm] cells; ``""`` outside a grid."""
    over = list(dict.fromkeys(x for xs in s.pooled.values() for x in xs))
    if over:
        return f"[{s.cell + '; ' if s.cell else ''}pooled over {', '.join(over)}]"
    return f"[{s.cell}]" if s.cell else ""


def _closeness(s: Setting) -> tuple[str, dict[str, Value], str]:
    """(metric, values, its words): the bid's own deviation where the game has it, else the paper's."""
    bid = s.metric(BID)
    if bid:
        return BID, bid, "deviation of the bid from the value"
    return "mean_deviation", s.metric("mean_deviation"), "mean deviation"


def equilibrium_sentence(s: Setting) -> str | None:
    """Who is closest to the equilibrium, and whether that is clear of the noise (where bidding one's value
    is dominant, by the bid's own deviation: the asset deviation misses a losing underbid)."""
    _, dev, words = _closeness(s)
    if not dev:
        return None
    order = sorted(dev, key=lambda k: (dev[k].value, k))
    best = order[0]
    if len(order) == 1:
        what = words if words != "mean deviation" else "mean deviation from the equilibrium"
        text = f"{best}'s {what} is {dev[best].shown(3)}"
        return text + (" (it played the equilibrium)." if dev[best].value <= EQUILIBRIUM_TOLERANCE else ".")
    worst = order[-1]
    text = (f"Closest to the equilibrium: {best} ({words} {dev[best].shown(3)}); furthest: {worst} "
            f"({dev[worst].shown(3)}).")
    ties = [k for k in order[1:] if dev[k].value == dev[best].value]
    if ties:
        return text + f" {_names([best, *ties])} are level ({len(ties) + 1} players)."
    missing = sorted(k for k, m in s.labels.items() if k not in dev and "payoff_ratio" in m)
    if missing:
        text += f" {_names(missing)} {'has' if len(missing) == 1 else 'have'} no deviation: no valid reply to measure."
    clear = [_apart(dev[best], dev[k]) for k in order[1:]]
    if any(c is None for c in clear):
        return text  # no intervals: the closing sentence says where they are
    runner = order[1]
    if all(clear):
        return text + f" {best} is closer than every other player, and the 95% intervals do not overlap."
    close = [k for k, c in zip(order[1:], clear) if not c]
    return text + (f" {best} and {_names(close)} cannot be told apart at this sample size: their 95% intervals "
                   f"overlap" + (f" (next closest: {runner})." if len(close) > 1 else "."))


def rule_sentence(s: Setting, said: set[str] | None = None) -> str:
    """Who breaks rules, how often, and mostly how. ``said``: the explanations given already on this page
    (each is given once: the first setting that needs it)."""
    said = set() if said is None else said
    rates = s.metric("rule_break_rate_pct")
    breakers = sorted((k for k, v in rates.items() if v.value > 0), key=lambda k: (-rates[k].value, k))
    if not breakers:
        return "No player broke a rule." if rates else "No rule-break rate was recorded."
    parts = []
    for k in breakers:
        v = rates[k]
        kinds = {name: s.labels[k][key].value for key, name in KINDS.items() if key in s.labels[k]}
        top = max(kinds, key=lambda name: kinds[name]) if kinds and max(kinds.values()) > 0 else None
        runs = f" of {v.n} runs" if v.n else " of its runs"
        parts.append(f"{k} broke a rule in {v.shown(0, pct=True)}{runs}" + (f", mostly {top}" if top else ""))
    clean = sorted(k for k in rates if k not in breakers)
    tail = f"; {_names(clean)} broke none" if clean else ""
    why = "" if "zero" in said else " A run with a rule break scores 0, whatever the game paid."
    said.add("zero")
    return "; ".join(parts) + tail + "." + why


def ratio_sentences(s: Setting, said: set[str] | None = None) -> list[str]:
    """What the payoff ratios mean here: above 1, and the equilibrium player's below 1 (or 0); each meaning
    is explained once per page (``said``, as for :func:`rule_sentence`)."""
    said = set() if said is None else said
    ratio, dev, rules = s.metric("payoff_ratio"), s.metric("mean_deviation"), s.metric("rule_break_rate_pct")
    out = []
    above = sorted((k for k, v in ratio.items() if v.value > 1), key=lambda k: -ratio[k].value)
    if above:
        clear = [k for k in above if (low := ratio[k].low) is not None and low > 1]
        unsure = [k for k in above if (low := ratio[k].low) is not None and low <= 1]
        shown = [f"{k} {ratio[k].shown()}" for k in above[:MAX_NAMED]]
        more = f" and {len(above) - MAX_NAMED} more" if len(above) > MAX_NAMED else ""
        text = ("Payoff ratio above 1" if "above" in said else "A payoff ratio above 1 means earning more than "
                "the equilibrium pays, at the expense of players who left it") + f": {', '.join(shown)}{more}."
        said.add("above")
        if clear and not unsure:
            text += " The intervals lie above 1."
        elif unsure:
            text += f" For {_names(unsure)} the interval reaches down to 1: it may be chance."
        out.append(text)
    eq = [k for k, v in dev.items() if v.value <= EQUILIBRIUM_TOLERANCE and k in ratio and ratio[k].value < 1
          and not (k in rules and rules[k].value > 0)]
    off = [k for k, v in dev.items() if v.value > EQUILIBRIUM_TOLERANCE]
    eq = sorted(eq, key=lambda k: (ratio[k].value, k))
    if eq and off:
        where = ENVIRONMENTS.get(s.environment, ANY_TABLE)
        earned = (f"{eq[0]} played the equilibrium yet earned {ratio[eq[0]].shown()} times the equilibrium payoff"
                  if len(eq) == 1 else f"{_names(eq)} played the equilibrium yet earned as little as "
                  f"{ratio[eq[0]].shown()} times the equilibrium payoff")
        out.append(f"{earned}" + (" (see above)." if "eq" in said else f": in {where} whose other players leave "
                   "the equilibrium, it is no longer the best reply, so a low ratio (even 0) is no mistake of its "
                   "own."))
        said.add("eq")
    zero = sorted(k for k, v in ratio.items() if v.value == 0 and k in rules and rules[k].value >= 100)
    if zero:
        out.append(f"{_names(zero)}: ratio 0 because every run broke a rule.")
    return out


def unusable(s: Setting) -> tuple[list[str], list[str]]:
    """(players with no usable reply, players with most replies unusable): cut at max_tokens or invalid."""
    none, most = [], []
    dev = s.metric("mean_deviation")
    for label, m in sorted(s.labels.items()):
        if dev and label not in dev and "payoff_ratio" in m:  # others were measured, it had no valid move
            none.append(label)
            continue
        if INVALID not in m and CUT not in m:
            continue
        bad = (m[INVALID].value if INVALID in m else 0.0) + (m[CUT].value if CUT in m else 0.0)
        if bad >= 100 - 1e-9:
            none.append(label)
        elif bad > 50:
            most.append(label)
    return none, most


def _unusable_part(m: dict[str, Value]) -> str:
    shares = [(m[k], what) for k, what in ((CUT, "cut at max_tokens"), (INVALID, "invalid"))
              if k in m and m[k].value > 0]
    if not shares:  # nothing cut or invalid: known only from the missing deviation
        return "no valid move to measure"
    n = next((v.n for v, _ in shares if v.n), 0)
    (first, what), rest = shares[0], shares[1:]
    text = f"{first.shown(0, pct=True)} of {f'{n} ' if n else 'its '}replies {what}"
    return text + "".join(f" and {v.shown(0, pct=True)} {w}" for v, w in rest)


def usable_sentences(s: Setting) -> list[str]:
    """The worst news first: a player that gave no usable move (or mostly none) says more about the study
    than any ranking, whose numbers then come from the other players alone."""
    none, most = unusable(s)
    out = []
    if none:
        if len(none) == 1:
            text = f"{none[0]} gave no usable reply ({_unusable_part(s.labels[none[0]])})."
        else:
            detail = "; ".join(f"{k}: {_unusable_part(s.labels[k])}" for k in none[:MAX_NAMED])
            text = f"{_names(none)} gave no usable reply ({detail})."
        if len(s.metric("mean_deviation")) > 1:
            text += " No ranking by distance to the equilibrium is given: it would rank only the others."
        if any(CUT in s.labels[k] and s.labels[k][CUT].value > 0 for k in none):
            text += " Raise max_tokens, or set structured = \"format\"."
        out.append(text)
    for k in most:
        out.append(f"Most of {k}'s replies were unusable ({_unusable_part(s.labels[k])}): its numbers rest "
                   "on the few that were.")
    return out


def setting_sentences(s: Setting, said: set[str] | None = None) -> list[str]:
    """The findings of one setting, most telling first (``said``: explanations already given). A player
    without a usable reply leads, and the equilibrium ranking, which it is absent from, is left out."""
    said = set() if said is None else said
    lead = usable_sentences(s)
    out = list(lead)
    if not unusable(s)[0] or len(s.metric("mean_deviation")) < 2:  # one player's own deviation is no ranking
        out += [x for x in (equilibrium_sentence(s),) if x]
    rules = rule_sentence(s, said)
    if lead and rules == "No player broke a rule.":  # not good news when replies were cut before any move
        rules = "No player broke a rule (a reply cut at max_tokens counts as no break)."
    out.append(rules)
    out += ratio_sentences(s, said)
    return out


def uncertainty_sentence(settings: list[Setting]) -> str:
    """How sure the numbers are, in one sentence."""
    with_ci = any(v.low is not None for s in settings for m in s.labels.values() for v in m.values())
    sessions = [s.sessions for s in settings if s.sessions]
    if not with_ci:
        runs = [v.n for s in settings for m in s.labels.values() for v in m.values() if v.n]
        few = min(runs) if runs else 0
        return (f"Means over {few}+ player-runs per label, without intervals: `econarena report` adds 95% "
                "intervals and says which differences are clear of the noise.")
    if sessions:
        small = min(sessions)
        note = " (few sessions: the intervals are wide)" if small < 10 else ""
        return (f"[brackets]: 95% bootstrap intervals over sessions, {small}"
                f"{'' if small == max(sessions) else f' to {max(sessions)}'} per setting{note}.")
    return "[brackets]: 95% bootstrap intervals over sessions."


def across_sentences(settings: list[Setting]) -> list[str]:
    """Each player's cells of one grid side by side (settings within a player), in the order the settings
    come: the closeness measure per cell, and whether the first and last cells are clear of the noise. A
    baseline is left out: a fixed rule, not a setting's effect."""
    by_place: dict[str, list[Setting]] = {}
    for s in settings:
        if s.cell:
            by_place.setdefault(s.place, []).append(s)
    out = []
    for group in by_place.values():
        if len(group) < 2:
            continue
        labels = list(dict.fromkeys(k for s in group for k in s.labels if k not in s.baselines))
        for label in labels:
            points = []
            for s in group:
                _, values, words = _closeness(s)
                if label in values:
                    points.append((s.cell, values[label], words))
            if len(points) < 2:
                continue
            words = points[0][2]
            shown = "; ".join(f"{cell}: {v.shown(3)}" for cell, v, _ in points)
            text = f"{label} across its cells, {words}: {shown}."
            clear = _apart(points[0][1], points[-1][1]) or _apart(points[-1][1], points[0][1])
            if clear is not None:
                text += (f" {points[0][0]} and {points[-1][0]} are clear of the noise (the 95% intervals do "
                         "not overlap)." if clear else f" {points[0][0]} and {points[-1][0]} cannot be told apart "
                         "at this sample size (paired comparisons: `econarena compare DIR --by FACTOR`).")
            out.append(text)
    return out


def report_findings(rows: Iterable[Mapping[str, Any]], max_settings: int = 3) -> list[tuple[str, list[str]]]:
    """(setting title, sentences) for the report's opening, at most ``max_settings`` settings (the rest are
    in the tables below); the last item is the uncertainty sentence under an empty title. A [grid] cell is
    a setting (its players ranked among themselves); each player's cells are then set side by side."""
    settings = settings_from_table(rows)
    said: set[str] = set()
    out: list[tuple[str, list[str]]] = []
    quiet = 0  # settings shown whose only finding is that nobody broke a rule: one line for all of them
    for s in settings[:max_settings]:
        if not s.labels:
            continue
        sentences = setting_sentences(s, said)
        if sentences == ["No player broke a rule."] and len(settings) > 1:
            quiet += 1
            continue
        out.append((s.title + (f" ({s.environment})" if s.environment else ""), sentences))
    rest = max(0, len(settings) - max_settings)
    if across := across_sentences(settings):
        out.append(("Across the cells of a grid", across[:2 * MAX_NAMED]))
    if quiet:
        out.append(("", [f"{quiet} more setting(s) without an equilibrium to compare: no player broke a rule"
                         + (f"; {rest} more in the tables below." if rest else ".")]))
    elif rest:
        out.append(("", [f"{rest} more setting(s): the tables below."]))
    if settings:
        out.append(("", [uncertainty_sentence(settings)]))
    return out


def summary_findings(summary: Mapping[str, Any], environment: str = "", rank: Any = None) -> list[str]:
    """The sentences that open ``econarena summary`` for one run directory (``environment``: the
    experiment's, when known: melee, rational or self). A [grid] directory's cells are ranked each on its
    own, then each player's cells side by side; ``rank``: a sort key of a cell's text (natural order)."""
    s = setting_from_summary(summary)
    s.environment = environment
    if not s.labels:
        return []
    parts = split_cells(s)
    if len(parts) == 1 and not parts[0].cell and not parts[0].pooled:
        return [*setting_sentences(s), uncertainty_sentence([s])]
    if rank is not None:
        parts.sort(key=lambda p: rank(p.cell))
    said: set[str] = set()
    out = []
    for p in parts:
        sentences = setting_sentences(p, said)
        tag = cell_tag(p)
        out += [f"{tag} {sentences[0]}", *sentences[1:]] if sentences and tag else sentences
    return [*out, *across_sentences(parts), uncertainty_sentence(parts)]


def findings_html(rows: Iterable[Mapping[str, Any]], max_settings: int = 3) -> str:
    """The report's opening: the findings of :func:`report_findings` as HTML (empty when there are none)."""
    import html
    import re

    def inline(text: str) -> str:
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))

    parts = []
    for title, sentences in report_findings(rows, max_settings):  # a paragraph per setting: one screen
        text = " ".join(inline(x) for x in sentences)
        parts.append(f"<p><b>{html.escape(title)}.</b> {text}</p>" if title else f"<p class='meta'>{text}</p>")
    if not parts:
        return ""
    return ("<section class='scorecard findings' id='findings'><h2>What the numbers say</h2>" + "".join(parts)
            + "</section>")


def wrapped(sentences: Iterable[str], width: int = 100) -> str:
    """Sentences as a paragraph for the terminal, wrapped at ``width``."""
    import textwrap

    return "\n".join(textwrap.fill(x, width) for x in sentences)


LEGEND = ("ratio: mean payoff / the equilibrium's payoff (above 1: gained from players who left the "
          "equilibrium; a run with a rule break scores 0). deviation: distance from the equilibrium action "
          "(0: played it; '-': no valid reply).")


def _interval_of(d: Mapping[str, Any]) -> str:
    s = _num(d.get("score"))
    lo, hi = _num(d.get("low")), _num(d.get("high"))
    return "-" if s is None else f"{s:.1f}" + (f" [{lo:.1f}, {hi:.1f}]" if lo is not None and hi is not None else "")


def bench_findings(result: Mapping[str, Any], baselines: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """The sentences that open a bench scorecard (``bench.json`` and the baselines' results)."""
    label = str(result.get("model", {}).get("label", "the model"))
    o = result.get("overall", {})
    score, low, high = _num(o.get("score")), _num(o.get("low")), _num(o.get("high"))
    out = []
    if score is None:
        return [f"{label} has no overall score yet: a weighted family is missing a game's score."]
    first = f"{label} scores {_interval_of(o)} out of 100"
    if not result.get("complete", True):
        first += " so far (incomplete: not ranked)"
    out.append(first + ".")
    for b in baselines:
        name = str(b.get("model", {}).get("label", "baseline"))
        bo = b.get("overall", {})
        bs, bl, bh = _num(bo.get("score")), _num(bo.get("low")), _num(bo.get("high"))
        if bs is None:
            continue
        if low is not None and bh is not None and low > bh:
            verdict = "above it, and the intervals do not overlap"
        elif high is not None and bl is not None and high < bl:
            verdict = "below it, and the intervals do not overlap"
        elif low is not None and high is not None and low <= bs <= high:
            verdict = "not clearly apart from it: its score lies in the model's interval"
        else:
            verdict = "above it" if score > bs else "below it" if score < bs else "level with it"
        out.append(f"The {name} baseline scores {_interval_of(bo)}; {label} is {verdict}.")
    subs = {k: v for k, v in result.get("subscores", {}).items() if _num(v.get("score")) is not None}
    if len(subs) >= 2:
        order = sorted(subs, key=lambda k: float(subs[k]["score"]))
        best, worst = subs[order[-1]], subs[order[0]]
        out.append(f"Best family: {best.get('title', order[-1])} ({_interval_of(best)}); weakest: "
                   f"{worst.get('title', order[0])} ({_interval_of(worst)}).")
    games = [g for g in result.get("games", []) if _num(g.get("rule_break_pct")) is not None]
    broke = sorted((g for g in games if float(g["rule_break_pct"]) > 0), key=lambda g: -float(g["rule_break_pct"]))
    if broke:
        top = broke[0]
        out.append(f"It broke a rule in {len(broke)} of {len(games)} games, most in {top.get('id')} "
                   f"({float(top['rule_break_pct']):.0f}% of its runs); a run with a rule break scores 0.")
    elif games:
        out.append(f"It broke no rule in any of the {len(games)} games.")
    return out
