"""Fixed policies a loopback OpenAI-compatible server plays (``FakeLLMServer.reply``), built from the reply
schema the request carries (``structured = "strict"``): the bench's floor, measured without a model.

- ``constant``: every number 50 (clipped to its bounds), every choice its first option, every text "ok";
- ``accept``: "accept" wherever the choice offers it, otherwise as ``constant``;
- ``uniform``: every number uniform within its bounds (capped at 100 above the minimum: a bound of 1e12 is
  not a play), every choice uniform, seeded by the request's text so the same request gets the same reply;
- ``invalid``: text that never parses.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

POLICIES = ("constant", "accept", "uniform", "invalid")


def _value(schema: dict[str, Any], policy: str, rng: random.Random) -> Any:
    if "enum" in schema:
        options = list(schema["enum"])
        if policy == "accept" and "accept" in options:
            return "accept"
        return rng.choice(options) if policy == "uniform" else options[0]
    kind = schema.get("type")
    if kind == "object":
        return {k: _value(v, policy, rng) for k, v in (schema.get("properties") or {}).items()}
    if kind in ("integer", "number"):
        low, high = float(schema.get("minimum", 0)), float(schema.get("maximum", 100))
        x = rng.uniform(low, min(high, low + 100)) if policy == "uniform" else min(max(50.0, low), high)
        return int(round(x)) if kind == "integer" else round(x, 2)
    return "ok"


def policy_reply(policy: str) -> Callable[[str, Any], str]:
    """The server's reply function for one policy (``POLICIES``)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (one of {', '.join(POLICIES)})")

    def reply(protocol: str, body: Any) -> str:
        if policy == "invalid":
            return "no"
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        seed = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
        return json.dumps(_value(schema, policy, random.Random(seed)))

    return reply
