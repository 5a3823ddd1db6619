"""config.toml: the resolved experiment written back out, every default filled in and no secret."""

from __future__ import annotations

from typing import Any

from .experiment import Experiment


def resolved_data(exp: Experiment) -> dict[str, Any]:
    """The experiment with every default filled in, as TOML data. Never a key: only variable names, and
    a base_url with its credentials masked."""
    from ..agents.calls import public_urls
    from ..agents.keys import key_value

    # the keys the experiment's players send: a base_url may hold one in its path (a proxy's URL)
    keys = [key_value(p.agent, p.llm.api_key_env) for p in [*exp.players, exp.judge] if p is not None and p.llm]

    def masked(llm: dict[str, Any]) -> dict[str, Any]:
        return {k: public_urls(v, keys) if k == "base_url" else v for k, v in llm.items()}

    doc: dict[str, Any] = {"experiment": exp.experiment.model_dump(exclude_none=True),
                           "game": exp.params.model_dump()}
    if exp.llm_defaults:
        doc["llm"] = masked(exp.llm_defaults)
    if exp.prompts:
        doc["prompts"] = dict(exp.prompts)
    if exp.tournament is not None:  # its entrants, as the file gave them: a count is no key of theirs
        entrants = [_player(p, masked) for p in exp.players]
        for e in entrants:
            e.pop("count", None)
        doc["tournament"] = {**exp.tournament.model_dump(exclude_none=True, exclude={"entrants"}),
                             "entrants": entrants}
    else:
        doc["players"] = [_player(p, masked) for p in exp.players]
    if exp.axes:
        grid: dict[str, dict[str, Any]] = {}
        for a in exp.axes:
            values = [public_urls(v, keys) if a.key == "base_url" else v for v in a.values]
            grid.setdefault(a.section, {})[a.key] = values
        doc["grid"] = grid
    if exp.steer is not None:
        doc["steer"] = exp.steer.model_dump()
    if exp.judge is not None:
        judge = _player(exp.judge, masked)
        judge.pop("count", None)
        doc["judge"] = judge
    return doc


def _player(p: Any, masked: Any) -> dict[str, Any]:
    """One player entry (or the judge) as written: its agent's keys only, a base_url masked."""
    entry: dict[str, Any] = {"agent": p.agent, "label": p.label, "count": p.count}
    if p.agent == "scripted":
        entry["responses"] = list(p.responses)
    if p.agent == "level_k":
        entry["k"] = p.k
    if p.agent == "policy":
        entry["policy"] = p.policy
    if p.persona is not None:
        entry["persona"] = p.persona
    if p.llm is not None:
        entry.update(masked(p.llm.model_dump(exclude_none=True)))
    return entry


def resolved_toml(exp: Experiment) -> str:
    """config.toml: :func:`resolved_data` written by tomli-w, which escapes every control character (a
    hand-written writer let a carriage return or a NUL make the file unreadable for report and suite)."""
    import tomli_w

    return "# Resolved by econarena: every default filled in.\n" + tomli_w.dumps(resolved_data(exp))
