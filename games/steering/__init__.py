"""Steering (Gemp et al.): one player's prompt action chosen by CFR over sampled replies.

- ``fruit_trade.py``: the paper's two-message fruit trade, a game like any other.
- ``cfr.py``: prompt-action spaces (tones, offers) and the steering subgame solved with OpenSpiel's CFR.
Prompts: ``hosts/templates/fruit_trade.toml``; orchestration: ``hosts/steer.py``; analysis:
``analysis/families/steering.py``.
"""

from .fruit_trade import FruitTrade

GAMES = (FruitTrade(),)
